"""How the preparation writes a summaries file: text as dictionaries, read back as text.

``label_table`` hands the writer each row group's distinct labels once and an index per row
(:data:`core.data.schema.WRITTEN`); a Parquet dictionary holds distinct values, so rows that
are not in (cell, slot) order get theirs by hashing. The file keeps no Arrow schema: every
reader gets :data:`core.data.schema.SCHEMA`'s strings and the footer's metadata.
"""

from __future__ import annotations

import h3
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.data import PrepConfig
from core.data.aggregation import label_frame, label_table, labels_for
from core.data.schema import SCHEMA, WRITTEN, summaries_writer
from core.data.summaries import METADATA_KEY, read_metadata

CONFIG = PrepConfig(resolution=8)


def _aggregated(seed: int, n: int = 3_000) -> pl.DataFrame:
    """Aggregated rows (cell, slot, user, m, s, q) sorted by (cell, slot, user); the users an
    Enum whose ids are not all present, as the preparation gives them."""
    rng = np.random.default_rng(seed)
    around = h3.grid_disk(h3.latlng_to_cell(21.17, 72.83, 8), 2)
    cells = np.array(sorted(h3.str_to_int(c) for c in around), dtype=np.uint64)
    ids = [f"u{i:03d}" for i in range(40)]
    frame = pl.DataFrame(
        {
            "cell": cells[rng.integers(0, cells.size, n)],
            "slot": rng.integers(470_000, 470_012, n),
            "user": pl.Series([ids[i] for i in rng.integers(0, 30, n)], dtype=pl.Enum(ids)),
            "m": rng.integers(1, 9, n),
            "s": rng.uniform(0, 60, n),
            "q": rng.uniform(0, 3600, n),
        }
    )
    return frame.unique(["cell", "slot", "user"]).sort(["cell", "slot", "user"])


def _written(tmp_path, table: pa.Table) -> pa.Table:
    path = tmp_path / "s.parquet"
    with summaries_writer(path, {METADATA_KEY: "{}"}) as writer:
        writer.write_table(table)
    return pq.read_table(path)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_written_rows_read_back_as_the_labelled_frame(tmp_path, order):
    """Sorted rows take the dictionaries made per run; shuffled ones hash theirs. Every
    dictionary is distinct and both read back as label_frame's text. (Taking the runs' labels
    as the dictionary of shuffled rows repeats labels: this test fails. pyarrow 26 still reads
    such a file back right, but a dictionary page of repeated values is not what Parquet
    describes, so the writer is not given one.)"""
    agg = _aggregated(3)
    if order == "shuffled":
        agg = agg.sample(fraction=1.0, shuffle=True, seed=4)
    labels = labels_for(agg, CONFIG)
    table = label_table(agg, *labels)
    assert table.schema == WRITTEN
    for name in ("hat", "cell", "slot", "user_id"):
        dictionary = table[name].chunk(0).dictionary
        assert len(pa.compute.unique(dictionary)) == len(dictionary), name
    back = pl.from_arrow(_written(tmp_path, table))
    expected = label_frame(agg, *labels).with_columns(pl.col("user_id").cast(pl.String))
    assert back.schema == pl.Schema(dict(zip(SCHEMA.names, expected.dtypes, strict=True)))
    assert back.equals(expected)


def test_the_users_dictionary_holds_only_the_ids_present():
    agg = _aggregated(5).filter(pl.col("user").cast(pl.String) < "u010")
    users = label_table(agg, *labels_for(agg, CONFIG))["user_id"].chunk(0)
    assert users.dictionary.to_pylist() == sorted(set(agg.get_column("user").cast(pl.String)))


def test_an_empty_row_group_is_written(tmp_path):
    agg = _aggregated(6).head(0)
    back = _written(tmp_path, label_table(agg, *labels_for(agg, CONFIG)))
    assert back.num_rows == 0 and back.schema.remove_metadata() == SCHEMA


def test_a_prepared_file_holds_text_its_metadata_and_statistics_of_hat_only(tmp_path):
    from core.data.stream import prepare_to_file

    rng = np.random.default_rng(8)
    n = 4_000
    raw = tmp_path / "raw.parquet"
    pl.DataFrame(
        {
            "user_id": [f"bus-{i}" for i in rng.integers(0, 15, n)],
            "lat": 21.17 + rng.normal(0, 0.01, n),
            "lon": 72.83 + rng.normal(0, 0.01, n),
            "timestamp": pl.datetime_range(
                pl.datetime(2024, 3, 5), pl.datetime(2024, 3, 6), "1m", eager=True
            ).sample(n, with_replacement=True, seed=2),
            "speed": rng.uniform(0.5, 60, n),
        }
    ).write_parquet(raw)
    target = tmp_path / "s.parquet"
    prepare_to_file(raw, target, config=CONFIG)
    assert pq.read_schema(target).remove_metadata() == SCHEMA
    assert read_metadata(target)["format"] == "hexplorer-summaries/1"
    group = pq.ParquetFile(target).metadata.row_group(0)
    with_statistics = [
        group.column(i).path_in_schema
        for i in range(group.num_columns)
        if group.column(i).is_stats_set
    ]
    assert with_statistics == ["hat"]
    assert pl.read_parquet(target).get_column("hat").dtype == pl.String
