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
