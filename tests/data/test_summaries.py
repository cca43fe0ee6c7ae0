"""The summaries file (core.data.summaries) and the streaming engine (core.data.stream)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.data import ColumnMap, PrepConfig, load_demo, prepare, prepare_file
from core.data.stream import prepare_to_file
from core.data.summaries import (
    METADATA_KEY,
    is_summaries,
    read_metadata,
    read_summaries,
    write_summaries,
)
from core.errors import HexplorerError


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    raw = load_demo().head(150_000)
    parquet, csv = folder / "demo.parquet", folder / "demo.csv"
    raw.to_parquet(parquet)
    raw.to_csv(csv, index=False)
    return parquet, csv


def _dirty(n=3000, seed=0):
    """Records with rejections, zeros, clamping and a late, larger maximum (see below)."""
    rng = np.random.default_rng(seed)
    speed = np.round(rng.uniform(0, 30, n), 3)  # early batches: maximum below 32
    speed[rng.random(n) < 0.1] = 0.0
    speed[-50:] = rng.uniform(60, 90, 50)  # the last batch: above U = 65, exponent 7
    frame = pd.DataFrame(
        {
            "user_id": [f"u{i % 37}" for i in range(n)],
            "lat": 21.17 + rng.uniform(0, 0.05, n),
            "lon": 72.80 + rng.uniform(0, 0.05, n),
            "timestamp": pd.Timestamp("2024-03-05")
            + pd.to_timedelta(rng.integers(0, 6 * 3600, n), "s"),
            "speed": speed,
        }
    )
    frame.loc[5, "lat"] = 95.0
    frame.loc[7, "user_id"] = None
    return frame


def test_write_read_round_trip_keeps_everything(tmp_path):
    p = prepare(load_demo().head(5000), config=PrepConfig(slot="30min", upper=60.0))
    path = write_summaries(p, tmp_path / "s.parquet")
    assert is_summaries(path)
    q = read_summaries(path)
    pd.testing.assert_frame_equal(q.summaries, p.summaries)
    assert q.report == p.report and q.config == p.config and q.columns == p.columns
    assert read_metadata(path)["engine"] == "polars"


@pytest.mark.parametrize("batch_rows", [10_000_000, 40_000])
@pytest.mark.parametrize("which", [0, 1])
def test_streaming_equals_in_memory_on_the_demo(tmp_path, demo_files, batch_rows, which):
    source = demo_files[which]
    expected = prepare_file(source)
    out = tmp_path / "s.parquet"
    report = prepare_to_file(source, out, batch_rows=batch_rows)
    got = read_summaries(out)
    pd.testing.assert_frame_equal(got.summaries, expected.summaries)  # s, q bit for bit
    assert report == expected.report == got.report


def test_streaming_redoes_batches_aggregated_at_another_scale(tmp_path):
    """Early batches have a maximum below 32, the last one is clamped to 65: the fixed-point
    scale changes mid-stream, and the result still equals the in-memory engine exactly."""
    raw = _dirty()
    src = tmp_path / "dirty.parquet"
    raw.to_parquet(src)
    expected = prepare_file(src)
    for batch_rows in (500, 2999, 3000):
        report = prepare_to_file(src, tmp_path / f"s{batch_rows}.parquet", batch_rows=batch_rows)
        got = read_summaries(tmp_path / f"s{batch_rows}.parquet")
        pd.testing.assert_frame_equal(got.summaries, expected.summaries)
        assert report == expected.report
        assert report.rejected and report.clamped_high and report.zeros_dropped


def test_streaming_small_first_then_large_max_and_reverse(tmp_path):
    raw = _dirty()
    reverse = raw.iloc[::-1].reset_index(drop=True)  # the large values come first
    src = tmp_path / "rev.csv"
    reverse.to_csv(src, index=False)
    expected = prepare_file(src)
    prepare_to_file(src, tmp_path / "s.parquet", batch_rows=400)
    pd.testing.assert_frame_equal(
        read_summaries(tmp_path / "s.parquet").summaries, expected.summaries
    )


def test_streaming_csv_with_late_text_in_a_number_column(tmp_path):
    raw = _dirty(n=12_000)
    raw["speed"] = raw["speed"].astype(object)
    raw.loc[11_000, "speed"] = "fast"
    src = tmp_path / "late.csv"
    raw.to_csv(src, index=False)
    expected = prepare_file(src)
    report = prepare_to_file(src, tmp_path / "s.parquet", batch_rows=5000)
    pd.testing.assert_frame_equal(
        read_summaries(tmp_path / "s.parquet").summaries, expected.summaries
    )
    assert report == expected.report and "speed not a number" in report.rejected


def test_streaming_errors_are_one_line(tmp_path):
    src = tmp_path / "x.csv"
    src.write_text("a,b\n1,2\n")
    with pytest.raises(HexplorerError, match="Column 'user_id' not found"):
        prepare_to_file(src, tmp_path / "s.parquet")
    zeros = _dirty(n=100)
    zeros["speed"] = 0.0
    zeros.to_parquet(tmp_path / "z.parquet")
    with pytest.raises(HexplorerError, match="keep_zeros"):
        prepare_to_file(tmp_path / "z.parquet", tmp_path / "s.parquet", batch_rows=30)
    with pytest.raises(HexplorerError, match="batch_rows"):
        prepare_to_file(tmp_path / "z.parquet", tmp_path / "s.parquet", batch_rows=0)


def test_missing_or_broken_metadata_is_refused(tmp_path):
    p = prepare(load_demo().head(2000))
    bare = tmp_path / "bare.parquet"
    p.summaries.to_parquet(bare)  # the columns, no metadata
    assert is_summaries(bare)
    with pytest.raises(HexplorerError, match="no 'hexplorer.summaries' metadata"):
        read_summaries(bare)
    table = pa.Table.from_pandas(p.summaries, preserve_index=False)
    broken = tmp_path / "broken.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: "{not json"}), broken)
    with pytest.raises(HexplorerError, match="broken"):
        read_summaries(broken)
    wrong = tmp_path / "wrong.parquet"
    body = json.dumps({"format": "hexplorer-summaries/1", "config": {"upper": -1}})
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: body}), wrong)
    with pytest.raises(HexplorerError, match="broken"):
        read_summaries(wrong)


def test_raw_files_are_not_summaries(tmp_path, demo_files):
    assert not is_summaries(demo_files[0]) and not is_summaries(demo_files[1])
    assert not is_summaries(tmp_path / "absent.parquet")
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "other.parquet")
    assert not is_summaries(tmp_path / "other.parquet")


def test_column_mapping_and_settings_travel_in_the_metadata(tmp_path):
    raw = _dirty(n=500).rename(columns={"user_id": "bus", "speed": "kmh"})
    src = tmp_path / "r.parquet"
    raw.to_parquet(src)
    columns = ColumnMap(user="bus", value="kmh")
    config = PrepConfig(upper=40.0, resolution=8, slot="hour-of-day", keep_zeros=True)
    prepare_to_file(src, tmp_path / "s.parquet", columns, config, batch_rows=77)
    got = read_summaries(tmp_path / "s.parquet")
    assert got.config == config and got.columns == columns
    pd.testing.assert_frame_equal(got.summaries, prepare_file(src, columns, config).summaries)


def _with_repeats(n=400):
    """Clean records with exact repeats: one pair straddling the boundary of 100-row batches
    (rows 99 and 100), a triple spread over three batches, a pair inside one batch, and a
    near-repeat (another value) that is not one."""
    raw = _dirty(n=n, seed=3)
    raw["speed"] = np.round(np.random.default_rng(1).uniform(1, 60, n), 2)
    raw.loc[5, "lat"] = 21.18
    raw.loc[7, "user_id"] = "u7"
    raw.iloc[100] = raw.iloc[99]
    raw.iloc[150] = raw.iloc[10]
    raw.iloc[250] = raw.iloc[10]
    raw.iloc[31] = raw.iloc[30]
    raw.iloc[301] = raw.iloc[300]
    raw.loc[301, "speed"] = raw.loc[300, "speed"] + 0.01
    return raw


def test_repeated_rows_are_counted_over_the_whole_file_not_per_batch(tmp_path):
    raw = _with_repeats()
    expected_count = int(raw.duplicated().sum())
    assert expected_count == 4  # the straddling pair, the triple (2), the pair in one batch
    for suffix in ("parquet", "csv"):
        src = tmp_path / f"rep.{suffix}"
        raw.to_parquet(src) if suffix == "parquet" else raw.to_csv(src, index=False)
        expected = prepare_file(src)
        assert expected.report.duplicates == expected_count
        for batch_rows in (100, 7, 1_000):
            report = prepare_to_file(src, tmp_path / "s.parquet", batch_rows=batch_rows)
            assert report == expected.report
            assert read_summaries(tmp_path / "s.parquet").report.duplicates == expected_count


def test_row_hashes_count_only_exact_repeats():
    from core.data.prepare import RowHashes

    hashes = RowHashes()
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2**64, 5000, dtype=np.uint64)  # all 16 buckets
    hashes.add(values[:3000])
    hashes.add(values[2500:])  # 500 repeats of the first batch
    hashes.add(values[:1])  # one more
    hashes.add(np.zeros(0, dtype=np.uint64))
    assert hashes.rows == 5501 and hashes.duplicates() == 501


def test_time_zone_note_and_time_reason_are_those_of_the_whole_file(tmp_path):
    raw = _dirty(n=300)
    text = raw["timestamp"].dt.strftime("%Y-%m-%d %H:%M:%S").astype(object)
    text[250:] = text[250:] + "+05:30"  # only the last batch carries an offset
    raw["timestamp"] = text
    src = tmp_path / "zones.csv"
    raw.to_csv(src, index=False)
    expected = prepare_file(src)
    assert expected.report.notes and "2 different UTC offsets" in expected.report.notes[0]
    report = prepare_to_file(src, tmp_path / "s.parquet", batch_rows=100)
    assert report == expected.report

    epoch = _dirty(n=300)
    epoch["timestamp"] = epoch["timestamp"].astype("int64") // 10**9
    epoch.loc[280, "timestamp"] = 10**13  # not epoch seconds: the numeric column's reason
    epoch.to_parquet(tmp_path / "epoch.parquet")
    expected = prepare_file(tmp_path / "epoch.parquet")
    assert any("epoch seconds" in reason for reason in expected.report.rejected)
    report = prepare_to_file(tmp_path / "epoch.parquet", tmp_path / "e.parquet", batch_rows=64)
    assert report == expected.report


def test_streaming_refuses_nested_columns_in_one_line(tmp_path):
    raw = pl.from_pandas(_dirty(n=100)).with_columns(pl.concat_list("speed").alias("speed"))
    raw.write_parquet(tmp_path / "nested.parquet")
    with pytest.raises(HexplorerError, match="Column 'speed' holds List"):
        prepare_to_file(tmp_path / "nested.parquet", tmp_path / "s.parquet")


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("m", -5, "m < 1"),
        ("m", 0, "m < 1"),
        ("s", -1.0, r"s outside \[0, m·U\]"),
        ("s", 1e9, r"s outside \[0, m·U\]"),
        ("q", -1.0, "q < 0"),
        ("q", float("nan"), "q < 0 or not a number"),
    ],
)
def test_summaries_values_no_preparation_gives_are_refused(tmp_path, capsys, column, value, reason):
    """A summaries file edited by hand (m = -5, s > m·U, q < 0) is refused on read, by the
    library and by every command, in one line."""
    path = write_summaries(prepare(load_demo().head(2000)), tmp_path / "s.parquet")
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[3] = value
    index = table.schema.get_field_index(column)
    table = table.set_column(index, table.schema.field(column), pa.array(values))
    pq.write_table(table, path)  # the schema's metadata is kept
    with pytest.raises(HexplorerError, match=f"no preparation gives: 1 row with {reason}"):
        read_summaries(path)
    from core.cli import main

    commands = [["hats", str(path)]]
    if column != "q":  # release --all reads hat, user_id, m and s only (polars, piece by piece)
        commands.append(
            [
                "release",
                str(path),
                "--all",
                "--mechanism",
                "arrayavg-best",
                "--epsilon",
                "1",
                "--seed",
                "1",
                "--output",
                str(tmp_path / "all.csv"),
            ]
        )
    for argv in commands:  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "no preparation gives" in err and len(err.strip().splitlines()) == 1
