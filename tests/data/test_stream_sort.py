"""core.data.stream.sorted_aggregate: the one-integer-key sort orders rows as the three columns
do, and its counts are the distinct users, HATs, cells and slots."""

from __future__ import annotations

import numpy as np
import polars as pl

from core.data.stream import sorted_aggregate


def test_sorted_aggregate_is_the_column_sort_with_its_counts():
    rng = np.random.default_rng(4)
    n = 5_000
    users = np.array(["u10", "u9", "a", "ä", "U", "b b", "z"])  # text order is not number order
    agg = pl.DataFrame(
        {
            "cell": rng.integers(0, 40, n).astype(np.uint64) + np.uint64(2**62),
            "slot": rng.integers(-5, 30, n),
            "user": users[rng.integers(0, users.size, n)],
            "m": np.arange(n),
        }
    ).unique(["cell", "slot", "user"], keep="first", maintain_order=True)
    out, counts = sorted_aggregate(agg)
    assert out.equals(agg.sort(["cell", "slot", "user"]))
    assert counts == {
        "users": agg["user"].n_unique(),
        "hats": agg.select(pl.struct("cell", "slot").n_unique()).item(),
        "cells": agg["cell"].n_unique(),
        "slots": agg["slot"].n_unique(),
    }


def test_one_batch_sorted_by_its_aggregation_is_not_checked_again(tmp_path, monkeypatch):
    """A file of one batch is summed by one sort of the packed key, so its rows come out in
    (cell, slot, user) order: the stream takes them as they are (a row-by-row check of that
    order cost ~0.1 CPU s at 10^7 records), and the file equals the one checked and merged
    through combine_fixed (several batches)."""
    import pyarrow.parquet as pq

    from core.data import PrepConfig, aggregation
    from core.data.stream import prepare_to_file

    src = _raw(tmp_path, 3_000, users=40, days=2)
    config = PrepConfig(resolution=8)
    several = prepare_to_file(src, tmp_path / "several.parquet", config=config, batch_rows=700)

    def refuse(*_args, **_kw):
        raise AssertionError("one sorted part checked again")

    monkeypatch.setattr(aggregation, "_in_key_order", refuse)
    one = prepare_to_file(src, tmp_path / "one.parquet", config=config)
    assert one == several
    a = pq.read_table(tmp_path / "one.parquet")
    b = pq.read_table(tmp_path / "several.parquet")
    assert a.equals(b) and a.num_rows > 100


def _records(seed: int, n: int, users: int = 30) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    names = np.array([f"u{i}" for i in range(users)])
    return pl.DataFrame(
        {
            "cell": rng.integers(0, 25, n).astype(np.uint64) * np.uint64(16) + np.uint64(15),
            "slot": rng.integers(100, 140, n),
            "user": names[rng.integers(0, users, n)],
            "value": np.round(rng.uniform(0, 65, n), 3),
        },
        schema_overrides={"cell": pl.UInt64},
    )


def test_sorted_runs_sum_any_slice_as_the_whole_sort_does():
    """SortedRuns (the summaries made one row group at a time while the previous one is
    written) give, slice by slice, the rows of _sums_by_sort, and its counts are those of the
    summed frame, with and without repeated keys."""
    from core.data.aggregation import fixed_shifts, sorted_counts
    from core.data.packing import SortedRuns, _sums_by_sort

    for seed, n, users in ((1, 4_000, 30), (2, 50, 400), (3, 1, 1)):
        frame = _records(seed, n, users)
        shifts = fixed_shifts(float(frame["value"].max()))
        whole = _sums_by_sort(frame, text_ids=True, shifts=shifts)
        runs = SortedRuns.of(frame, shifts, text_ids=True)
        assert runs is not None and runs.height == whole.height
        assert runs.counts() == sorted_counts(whole)
        assert runs.most_records() == whole["m"].max()
        for size in (1, 7, 333, whole.height):
            pieces = [runs.rows(lo, lo + size) for lo in range(0, runs.height, size)]
            assert pl.concat(pieces).equals(whole), (seed, size)


def test_a_file_summed_row_group_by_row_group_is_the_file_summed_whole(tmp_path, monkeypatch):
    """prepare_to_file sums a one-batch input as it writes it (SortedRuns); the file is byte for
    byte the one written from the whole summed frame, here in many row groups."""
    from core.data import PrepConfig, packing, stream

    raw = _raw(tmp_path, 5_000)
    config = PrepConfig(resolution=8)
    monkeypatch.setattr(stream, "WRITE_ROWS", 97)
    by_groups = stream.prepare_to_file(raw, tmp_path / "groups.parquet", config=config)
    monkeypatch.setattr(packing.SortedRuns, "of", classmethod(lambda *a, **k: None))
    whole = stream.prepare_to_file(raw, tmp_path / "whole.parquet", config=config)
    assert by_groups == whole
    first, second = (tmp_path / "groups.parquet").read_bytes(), (tmp_path / "whole.parquet")
    assert first == second.read_bytes() and len(first) > 10_000


def test_too_many_records_of_one_user_in_one_hat_are_refused_before_writing(tmp_path, monkeypatch):
    import pytest

    from core.data import PrepConfig, aggregation, stream
    from core.errors import HexplorerError

    raw = _raw(tmp_path, 2_000, users=2)
    monkeypatch.setattr(aggregation, "_SPARE_BITS", 3)  # at most 7 records per (HAT, user)
    with pytest.raises(HexplorerError, match="more than 8 records in one HAT"):
        stream.prepare_to_file(raw, tmp_path / "s.parquet", config=PrepConfig(resolution=8))
    assert not (tmp_path / "s.parquet").exists()


def _raw(tmp_path, n: int, users: int = 12, days: int = 1):
    """A raw Parquet file of ``n`` records of ``users`` buses around one point over ``days``."""
    rng = np.random.default_rng(11)
    raw = pl.DataFrame(
        {
            "user_id": [f"u{i}" for i in rng.integers(0, users, n)],
            "lat": 21.17 + rng.normal(0, 0.01, n),
            "lon": 72.83 + rng.normal(0, 0.01, n),
            "timestamp": pl.datetime_range(
                pl.datetime(2024, 3, 5), pl.datetime(2024, 3, 5 + days), "1m", eager=True
            ).sample(n, with_replacement=True, seed=2),
            "speed": rng.uniform(0.5, 60, n),
        }
    )
    path = tmp_path / "raw.parquet"
    raw.write_parquet(path)
    return path
