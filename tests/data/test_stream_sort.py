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

    rng = np.random.default_rng(7)
    n = 3_000
    raw = pl.DataFrame(
        {
            "user_id": [f"u{i}" for i in rng.integers(0, 40, n)],
            "lat": 21.17 + rng.normal(0, 0.02, n),
            "lon": 72.83 + rng.normal(0, 0.02, n),
            "timestamp": pl.datetime_range(
                pl.datetime(2024, 3, 5), pl.datetime(2024, 3, 7), "1m", eager=True
            ).sample(n, with_replacement=True, seed=1),
            "speed": rng.uniform(0.5, 60, n),
        }
    )
    src = tmp_path / "raw.parquet"
    raw.write_parquet(src)
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
