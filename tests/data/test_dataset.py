"""The summaries dataset (core.data.dataset) and the out-of-core preparation that writes it
(core.data.outofcore): the same rows and report as the single file, refused in one line when
broken, released part by part bit for bit as the single file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pytest

from core.citywide.batch import HatBatch, release_all
from core.citywide.pieces import release_batches
from core.cli import main
from core.data import PrepConfig, load_demo, prepare, prepare_file
from core.data.dataset import SIDECAR, DatasetWriter, part_files, parts_ascending
from core.data.outofcore import SpilledHashes, bucket_of, prepare_out_of_core
from core.data.prepare import RowHashes
from core.data.summaries import (
    WRITTEN,
    is_dataset,
    is_summaries,
    metadata_body,
    read_metadata,
    read_summaries,
    read_summary_frame,
    summary_pieces,
)
from core.errors import HexplorerError


def _raw(n=6000, seed=0):
    """Records with rejections, zeros, clamping, exact repeats and a late larger maximum."""
    rng = np.random.default_rng(seed)
    speed = np.round(rng.uniform(0, 30, n), 2)
    speed[rng.random(n) < 0.1] = 0.0
    speed[-40:] = rng.uniform(60, 90, 40)  # the last batch: above U = 65, another scale
    frame = pd.DataFrame(
        {
            "user_id": [f"u{i % 41}" for i in range(n)],
            "lat": 21.17 + rng.uniform(0, 0.08, n),
            "lon": 72.80 + rng.uniform(0, 0.08, n),
            "timestamp": pd.Timestamp("2024-03-05")
            + pd.to_timedelta(rng.integers(0, 9 * 3600, n), "s"),
            "speed": speed,
        }
    )
    frame.loc[5, "lat"] = 95.0
    frame.loc[7, "user_id"] = None
    frame.iloc[400] = frame.iloc[10]  # exact repeats in other batches
    frame.iloc[3000] = frame.iloc[10]
    return frame


@pytest.fixture(scope="module")
def raw_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("raw") / "raw.parquet"
    _raw().to_parquet(path)
    return path, prepare_file(path, config=PrepConfig(resolution=8))


@pytest.mark.parametrize(("batch_rows", "buckets", "part_rows"), [(500, 7, 300), (6000, 1, 10**6)])
def test_out_of_core_file_and_dataset_equal_the_in_memory_engine(
    tmp_path, raw_file, batch_rows, buckets, part_rows
):
    source, expected = raw_file
    config = PrepConfig(resolution=8)
    kwargs = {"batch_rows": batch_rows, "buckets": buckets, "part_rows": part_rows}
    report = prepare_out_of_core(source, tmp_path / "s.parquet", config=config, **kwargs)
    got = read_summaries(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(
        got.summaries, expected.summaries, check_exact=True
    )  # bit for bit
    assert report == expected.report == got.report
    assert report.duplicates == 2 and report.rejected and report.clamped_high
    folder = tmp_path / "ds"
    report = prepare_out_of_core(source, folder, config=config, layout="dataset", **kwargs)
    assert report == expected.report == read_metadata(folder)["report"]
    parts = part_files(folder)
    assert (len(parts) > 3) == (part_rows < 1000)
    assert parts_ascending(folder)  # ranges of HATs in order: published part by part
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # spill removed
    # the parts in name order are the single file's rows; each HAT in one part
    whole = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    pd.testing.assert_frame_equal(whole, expected.summaries, check_exact=True)
    hats = [set(pd.read_parquet(p, columns=["hat"])["hat"]) for p in parts]
    assert sum(len(h) for h in hats) == len(set().union(*hats))
    pd.testing.assert_frame_equal(
        read_summaries(folder).summaries, expected.summaries, check_exact=True
    )


def test_spilled_hashes_count_as_row_hashes(tmp_path):
    rng = np.random.default_rng(2)
    memory, disk = RowHashes(), SpilledHashes(tmp_path)
    for _ in range(4):
        batch = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
        batch[:50] = rng.integers(0, 2**64 - 1, 50, dtype=np.uint64)  # spread over top bits
        batch[100:130] = batch[:30]
        memory.add(batch)
        disk.add(batch)
    assert disk.rows == memory.rows and disk.duplicates() == memory.duplicates() >= 30


def test_bucket_of_puts_a_hat_in_one_bucket_and_spreads_hats():
    cells = np.repeat(np.arange(600_000_000_000, 600_000_000_050, dtype=np.uint64), 24)
    slots = np.tile(np.arange(24), 50)
    b = bucket_of(cells, slots, 8)
    assert np.array_equal(b, bucket_of(cells, slots, 8)) and b.min() >= 0 and b.max() < 8
    assert np.bincount(b, minlength=8).min() > 100  # 1,200 HATs over 8 buckets


def _write(folder, prepared, parts, *, by_hash=True):
    """``prepared`` as a dataset of ``parts`` parts (HATs by a hash: parts interleave)."""
    frame = pl.from_pandas(prepared.summaries)
    hats = frame.get_column("hat")
    key = hats.hash(seed=1) % parts if by_hash else hats.rank("dense") % parts
    writer = DatasetWriter(folder)
    for i in range(parts):
        part = frame.filter(key == i)
        writer.write_part([part.to_arrow().cast(WRITTEN)])
    writer.finish(metadata_body(prepared.config, prepared.columns, prepared.report, "test"))
    return folder


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    prepared = prepare(load_demo().head(30_000))
    folder = _write(tmp_path_factory.mktemp("demo") / "ds", prepared, 4)
    return prepared, folder


def test_a_dataset_reads_back_as_the_single_file(demo):
    prepared, folder = demo
    assert is_dataset(folder) and is_summaries(folder)
    got = read_summaries(folder)
    pd.testing.assert_frame_equal(got.summaries, prepared.summaries, check_exact=True)
    assert got.report == prepared.report and got.config == prepared.config
    frame = read_summary_frame(folder, ["hat", "user_id", "m", "s"])
    assert frame.to_pandas().equals(prepared.summaries[["hat", "user_id", "m", "s"]])


@pytest.mark.parametrize("name", ["arrayavg-best", "opt-arrayavg", "levy"])
def test_release_part_by_part_is_bit_equal_to_the_whole(demo, name):
    prepared, folder = demo
    whole = release_all(name, HatBatch.from_summaries(prepared.summaries), 0.8, seed=11)
    pieces = summary_pieces(folder, ["hat", "user_id", "m", "s"])
    parted = release_batches(name, pieces, 0.8, seed=11, whole_hats=True)
    pd.testing.assert_frame_equal(parted, whole, check_exact=True)
    with pytest.raises(HexplorerError, match="not sorted by HAT"):  # the old path refuses
        release_batches(name, summary_pieces(folder, ["hat", "user_id", "m", "s"]), 0.8, seed=11)


def _broken(tmp_path, demo, name):
    import shutil

    target = tmp_path / name
    shutil.copytree(demo[1], target)
    return target


def test_broken_datasets_are_refused_in_one_line(tmp_path, demo):
    prepared, _ = demo
    no_sidecar = _broken(tmp_path, demo, "interrupted")
    (no_sidecar / SIDECAR).unlink()
    assert is_summaries(no_sidecar)
    bad_json = _broken(tmp_path, demo, "json")
    (bad_json / SIDECAR).write_text('{"format": "hexplorer-summaries/1", ')
    wrong_columns = _broken(tmp_path, demo, "columns")
    first = part_files(wrong_columns)[0]
    pl.read_parquet(first).drop("q").write_parquet(first)
    twice = _broken(tmp_path, demo, "twice")
    parts = part_files(twice)
    stray = pl.read_parquet(parts[0]).head(1)
    pl.concat([pl.read_parquet(parts[1]), stray]).sort("hat", "user_id").write_parquet(parts[1])
    cases = [
        (no_sidecar, f"without '{SIDECAR}'"),
        (bad_json, "is not valid JSON"),
        (wrong_columns, "has columns hat, cell, slot, user_id, m, s; a summaries part has"),
        (twice, "is in two parts"),
    ]
    for folder, needle in cases:
        with pytest.raises(HexplorerError, match=needle) as info:
            read_summaries(folder)
        assert "\n" not in str(info.value)
        with pytest.raises(HexplorerError, match=needle):  # release --all's reader too
            list(summary_pieces(folder, ["hat", "user_id", "m", "s"]))


def test_cli_prepare_dataset_and_release_all_equal_the_file(
    capsys, tmp_path, raw_file, monkeypatch
):
    source, _ = raw_file
    file, folder = tmp_path / "s.parquet", tmp_path / "ds"
    base = ["prepare", str(source), "--resolution", "8", "--batch-rows", "700"]
    assert main([*base, "--output", str(file)]) == 0
    assert main([*base, "--output", str(folder), "--layout", "dataset"]) == 0
    capsys.readouterr()
    assert main([*base, "--output", str(folder), "--layout", "dataset"]) == 2
    assert "is not empty; pass --force" in capsys.readouterr().err
    assert main([*base, "--output", str(tmp_path / "x.parquet"), "--layout", "dataset"]) == 2
    assert "writes a folder" in capsys.readouterr().err
    assert main(["prepare", str(folder), "--output", str(tmp_path / "again.parquet")]) == 2
    assert "already a summaries dataset" in capsys.readouterr().err
    tables = []
    for data in (file, folder):
        out = tmp_path / f"{data.stem}.csv"
        argv = ["release", str(data), "--all", "--mechanism", "opt-arrayavg", "--epsilon", "1"]
        assert main([*argv, "--seed", "4", "--output", str(out)]) == 0
        tables.append(out.read_bytes())
    assert tables[0] == tables[1]
    capsys.readouterr()
    for command in (["hats"], ["plan", "--all", "--target-error", "3"]):
        outs = []
        for data in (file, folder):
            assert main([command[0], str(data), *command[1:], "--json"]) == 0
            outs.append(json.loads(capsys.readouterr().out))
        assert outs[0] == outs[1]
    ledger = tmp_path / "ledger.sqlite"
    published = []
    for data in (folder, file):  # the same summaries: one record, the second reused
        argv = ["release", str(data), "--all", "--mechanism", "arrayavg-best", "--epsilon", "1"]
        out = tmp_path / f"pub-{data.stem}.csv"
        with monkeypatch.context() as patch:
            if data == folder:  # the dataset is published part by part, never whole
                patch.setattr("core.publish.batch.publish_all", None)
            assert main([*argv, "--ledger", str(ledger), "--output", str(out), "--json"]) == 0
        published.append(json.loads(capsys.readouterr().out))
    assert [p["reused"] for p in published] == [False, True]


def test_publishing_a_dataset_part_by_part_is_publish_all(tmp_path, demo):
    from core.publish.batch import publish_all
    from core.publish.ledger import Ledger
    from core.publish.parts import publish_parts
    from core.publish.records import BudgetExceeded

    prepared, hashed = demo
    frame = pl.from_pandas(prepared.summaries)
    rank = frame.get_column("hat").rank("dense") - 1
    ranged = tmp_path / "ranged"  # HAT ranges in order, as hexplorer prepare writes them
    writer = DatasetWriter(ranged)
    n_hats = int(rank.max()) + 1
    for i in range(4):
        part = frame.filter(rank * 4 // n_hats == i)
        writer.write_part([part.to_arrow().cast(WRITTEN)])
    writer.finish(metadata_body(prepared.config, prepared.columns, prepared.report, "test"))
    assert parts_ascending(ranged) and not parts_ascending(hashed)

    def parts():
        for piece in summary_pieces(ranged, ["hat", "user_id", "m", "s"]):
            yield HatBatch.from_summaries(piece)

    whole = HatBatch.from_summaries(prepared.summaries)
    ids = np.unique(prepared.summaries["user_id"].to_numpy().astype(str))
    for accounting in ("per-user", "max"):
        a, b = Ledger(tmp_path / f"a-{accounting}.sqlite"), Ledger(tmp_path / f"b-{accounting}")
        first = publish_parts("opt-arrayavg", parts, 0.5, accounting=accounting, ledger=a)
        again = publish_all("opt-arrayavg", whole, 0.5, accounting=accounting, ledger=a)
        assert not first.reused and again.reused  # one request: the same fingerprint
        pd.testing.assert_frame_equal(again.release.table, first.release.table)
        publish_all("opt-arrayavg", whole, 0.5, accounting=accounting, ledger=b)
        ns = "default"
        assert np.array_equal(a.user_totals(ns, ids.tolist()), b.user_totals(ns, ids.tolist()))
        table = first.release.table
        assert table["hat"].tolist() == whole.hats.tolist()
        expected = release_all("opt-arrayavg", whole, 0.5, seed=0)
        assert np.array_equal(table["m_ub"], expected["m_ub"])
        assert np.array_equal(table["noise_scale"], expected["noise_scale"])
    with pytest.raises(BudgetExceeded):  # all or nothing: past the budget, nothing recorded
        publish_parts("opt-arrayavg", parts, 3.0, ledger=a, budget=a.budget() or 4.0)
    assert len(a.records()) == 1


def test_a_large_input_goes_through_the_buckets_to_one_file(tmp_path, raw_file, monkeypatch):
    import core.data.outofcore as outofcore

    source, expected = raw_file
    config = PrepConfig(resolution=8)
    monkeypatch.setattr(outofcore, "prepare_to_file", None)  # more than 3 batches: buckets
    report = outofcore.prepare_summaries(
        source, tmp_path / "s.parquet", config=config, batch_rows=999
    )
    got = read_summaries(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(got.summaries, expected.summaries, check_exact=True)
    assert report == expected.report
    monkeypatch.undo()
    called = []
    monkeypatch.setattr(outofcore, "prepare_out_of_core", lambda *a, **k: called.append(1))
    outofcore.prepare_summaries(source, tmp_path / "t.parquet", config=config, batch_rows=2000)
    assert not called and read_summaries(tmp_path / "t.parquet").report == expected.report
