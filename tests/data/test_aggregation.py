"""core.data.aggregation: the packed-key group-by equals the three-column group-by, in any
case (text or Enum ids, keys too wide to pack), and combine_fixed sorts as the file does."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from core.data.aggregation import aggregate_fixed, combine_fixed

KEYS = ["cell", "slot", "user"]


def _records(n: int, seed: int, wide: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    if wide:  # random 64-bit ids: no common trailing 1 bits, too wide to pack
        cells = rng.integers(0, 2**63, 40, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    else:  # H3-like: resolution 8 ids end in 21 one bits
        cells = (rng.integers(0, 5000, 40).astype(np.uint64) << np.uint64(21)) | np.uint64(
            2**21 - 1
        )
    users = np.array(["b", "a", "Z", "é", "a2", "10", "9"])
    return pl.DataFrame(
        {
            "cell": pl.Series(cells[rng.integers(0, 40, n)], dtype=pl.UInt64),
            "slot": pl.Series(rng.integers(-5, 70, n), dtype=pl.Int64),
            "user": users[rng.integers(0, users.size, n)],
            "value": rng.uniform(0.0, 65.0, n),
        }
    )


def _reference(records: pl.DataFrame) -> pl.DataFrame:
    value = pl.col("value")
    return (
        records.with_columns(pl.col("user").cast(pl.String))
        .group_by(KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("m"),
            (value * 2.0**33).round().cast(pl.Int64).sum().alias("s"),
            (value * value * 2.0**27).round().cast(pl.Int64).sum().alias("q"),
        )
        .sort(KEYS)
    )


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("enum", [False, True])
def test_packed_group_by_equals_the_three_column_one(wide, enum):
    records = _records(5_000, 1, wide)
    if enum:
        ids = records.get_column("user").unique().sort()
        records = records.with_columns(pl.col("user").cast(pl.Enum(ids)))
    got = aggregate_fixed(records.lazy(), 33, 27).collect()
    assert got.schema == {
        "cell": pl.UInt64,
        "slot": pl.Int64,
        "user": pl.String,
        "m": pl.Int64,
        "s": pl.Int64,
        "q": pl.Int64,
    }
    assert got.sort(KEYS).equals(_reference(records))


@pytest.mark.parametrize("wide", [False, True])
def test_combine_fixed_sums_parts_and_sorts_as_the_file(wide):
    records = _records(6_000, 2, wide)
    parts = [
        aggregate_fixed(records.slice(i, 2_000).lazy(), 33, 27).collect()
        for i in range(0, 6_000, 2_000)
    ]
    assert combine_fixed(parts).sort(KEYS).equals(_reference(records))
    assert combine_fixed(parts, sort=True).equals(_reference(records))  # order included
    assert combine_fixed(parts[:1], sort=True).equals(parts[0].sort(KEYS))


def test_enum_parts_of_different_ids_combine_on_their_codes():
    """Batches whose users are Enums of different ids (each batch its own) merge through the
    union of the ids, without text per row: the same sums and order as the text path."""
    records = _records(6_000, 3, False)
    parts = []
    for i in range(0, 6_000, 2_000):
        piece = records.slice(i, 2_000).filter(pl.col("user") != ["b", "a", "Z"][i // 2_000])
        ids = piece.get_column("user").unique().sort()
        piece = piece.with_columns(pl.col("user").cast(pl.Enum(ids)))
        parts.append(aggregate_fixed(piece.lazy(), 33, 27, text_ids=False).collect())
    assert len({str(p.schema["user"]) for p in parts}) == 3  # three different Enums
    out = combine_fixed(parts, sort=True, text_ids=False)
    assert isinstance(out.schema["user"], pl.Enum)
    kept = pl.concat(
        [
            records.slice(i, 2_000).filter(pl.col("user") != ["b", "a", "Z"][i // 2_000])
            for i in range(0, 6_000, 2_000)
        ]
    )
    assert out.with_columns(pl.col("user").cast(pl.String)).equals(_reference(kept))


def test_packable_records_are_summed_in_the_file_order_and_one_part_is_not_merged_again():
    """Keys that pack (with the row numbers) are summed by one sort: the groups come out sorted
    by (cell, slot, user), so one batch's part needs no merge before it is written."""
    records = _records(5_000, 4, False)
    ids = records.get_column("user").unique().sort()
    enum = records.with_columns(pl.col("user").cast(pl.Enum(ids)))
    got = aggregate_fixed(enum.lazy(), 33, 27, text_ids=False).collect()
    assert got.with_columns(pl.col("user").cast(pl.String)).equals(_reference(records))
    assert combine_fixed([got], sort=True, text_ids=False) is got
    text = aggregate_fixed(records.lazy(), 33, 27).collect()
    assert text.equals(_reference(records))  # text ids: the same order
    assert combine_fixed([text], sort=True, text_ids=False) is not text  # made an Enum
