"""Benchmark CHOP-USER on a synthetic city (SPEC section 5). Target: 10⁴ grids, 10⁵ users, ≤ 10 s.

Run by hand: ``python bench/bench_chop.py [--grids 10000] [--users 100000]``.

The city: grid popularity is Zipf-like (a few busy hexagons, a long tail of quiet ones); each
user's number of grids G_ℓ is log-normal (median 6, a tail to a few hundred), its grids drawn
by popularity; records per (grid, user) are log-normal (median 3, heavy tail). Values are
uniform in [0, U] (they do not affect CHOP-USER, which reads counts only).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from core.citywide.chop import chop_user  # noqa: E402
from core.citywide.grids import grid_errors  # noqa: E402
from core.citywide.gridset import GridSet  # noqa: E402


def synthetic_city(n_grids: int, n_users: int, rng: np.random.Generator) -> pd.DataFrame:
    """Per-(HAT, user) summaries of a synthetic city (columns of ``core.data``)."""
    upper = 65.0
    g_user = np.clip(np.round(rng.lognormal(np.log(6.0), 0.9, n_users)), 1, 300).astype(np.int64)
    user = np.repeat(np.arange(n_users), g_user)
    weight = 1.0 / np.arange(1, n_grids + 1) ** 0.8
    grid = rng.choice(n_grids, size=user.size, p=weight / weight.sum())
    key = np.unique(user * n_grids + grid)  # a user counts once per grid
    user, grid = key // n_grids, key % n_grids
    # every grid gets at least one user
    empty = np.setdiff1d(np.arange(n_grids), grid)
    user = np.concatenate((user, rng.integers(0, n_users, empty.size)))
    grid = np.concatenate((grid, empty))
    m = np.clip(np.round(rng.lognormal(np.log(3.0), 1.0, user.size)), 1, 2000).astype(np.int64)
    mean = rng.uniform(0, upper, user.size)
    return pd.DataFrame(
        {
            "hat": np.char.add(np.char.add("c", grid.astype(str)), "/2024-03-05T08:00"),
            "cell": np.char.add("c", grid.astype(str)),
            "slot": "2024-03-05T08:00",
            "user_id": np.char.add("u", user.astype(str)),
            "m": m,
            "s": mean * m,
            "q": mean * mean * m,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0, 5.0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    summaries = synthetic_city(args.grids, args.users, rng)
    grids = GridSet.from_summaries(summaries)
    t1 = time.perf_counter()
    print(
        f"city: {grids.n_grids} grids, {grids.n_users} users, {grids.n_pairs} (grid, user) pairs, "
        f"max G_l = {grids.max_grids_per_user}, median G_l = {np.median(grids.grids_per_user):g}, "
        f"max records per pair = {grids.m.max()} (built in {t1 - t0:.1f} s)"
    )
    for eps in args.epsilon:
        t0, c0 = time.perf_counter(), time.process_time()
        res = chop_user(grids, eps, upper=65.0)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        after = grid_errors(grids, eps, upper=65.0, retained=res.retained).total.max()
        print(
            f"eps={eps:g}: CHOP-USER {dt:.2f} s wall, {cpu:.2f} s CPU (target <= 10 s); "
            f"K {res.k_initial} -> {res.k_final} "
            f"in {len(res.k_history) - 1} rounds, {res.n_suppressed} pairs suppressed, "
            f"threshold {res.threshold:.4g}, max error after {after:.4g}"
        )


if __name__ == "__main__":
    main()
