"""Benchmark: every HAT's worst-case error at a new ε, 10^5 HATs; target <= 0.2 s once built.

A synthetic city of 10^5 HATs (users per HAT 1 + Poisson(9), records per user geometric with
mean 20, about 10^6 (HAT, user) pairs), each HAT's counts drawn from a pool of ``n_distinct``
count vectors (default 5,000; real cities repeat small HATs, and ``error_table`` builds one
staircase per distinct multiset of counts). ``core.citywide.errors.error_table`` builds the
staircases once (timed, reported apart); then ``errors_at`` answers a new ε for all HATs with
one vectorised lookup over the whole table (its size grows with the HATs, not with the pool):
the median over 25 random ε per mechanism with an analytic worst case. Also times
``core.plan.epsilon_needed`` and ``city_plan`` (without the CHOP-USER accounting).
Run by hand from the repository root:
``python bench/bench_citywide_errors.py [n_hats] [n_distinct]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from core import plan
from core.citywide import errors
from core.citywide.gridset import GridSet
from core.mechanisms import analytic_names

TARGET_S = 0.2


def synthetic_grids(n_hats: int, n_distinct: int, rng: np.random.Generator) -> GridSet:
    pool_users = 1 + rng.poisson(9, n_distinct)
    pool = [np.sort(rng.geometric(1 / 20, u))[::-1] for u in pool_users.tolist()]
    pick = rng.integers(0, n_distinct, n_hats)
    users = pool_users[pick]
    starts = np.concatenate(([0], np.cumsum(users))).astype(np.int64)
    n_pairs = int(starts[-1])
    m = np.concatenate([pool[i] for i in pick.tolist()]).astype(np.int64)
    grid = np.repeat(np.arange(n_hats), users)
    user = (np.arange(n_pairs) - np.repeat(starts[:-1], users)).astype(np.int64)
    means = rng.uniform(5, 60, n_pairs)
    labels = np.array([f"c{h:06d}/s" for h in range(n_hats)], dtype=object)
    return GridSet(
        hats=labels,
        cells=np.array([f"c{h:06d}" for h in range(n_hats)], dtype=object),
        slots=np.full(n_hats, "s", dtype=object),
        user_ids=np.array([f"u{i}" for i in range(int(users.max()))], dtype=object),
        grid=grid,
        user=user,
        m=m,
        s=m * means,
        q=m * means**2,
        starts=starts,
        grids_per_user=np.bincount(user).astype(np.int64),
    )


def main() -> None:
    n_hats = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    n_distinct = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000
    rng = np.random.default_rng(2026)
    grids = synthetic_grids(n_hats, n_distinct, rng)
    print(f"{grids.n_grids:,} HATs ({n_distinct:,} distinct), {grids.n_pairs:,} pairs")
    for noise_measure in ("mean", "std"):
        t0 = time.perf_counter()
        table = errors.error_table(grids, upper=65.0, noise_measure=noise_measure)
        build = time.perf_counter() - t0
        print(f"[{noise_measure}] build: {build:.1f} s, {table.n_steps:,} staircase steps")
        for mechanism in analytic_names():
            times = []
            for eps in np.exp(rng.uniform(np.log(0.05), np.log(10.0), 25)):
                t0 = time.perf_counter()
                errors.errors_at(table, float(eps), mechanism)
                times.append(time.perf_counter() - t0)
            med = float(np.median(times))
            flag = "ok" if med <= TARGET_S else "SLOW"
            print(f"  errors_at {mechanism:<20} median {med * 1000:7.1f} ms  [{flag}]")
        if noise_measure == "mean":
            t0 = time.perf_counter()
            plan.epsilon_needed(table, 5.0)
            print(f"  epsilon_needed (opt-arrayavg): {time.perf_counter() - t0:.2f} s")
            t0 = time.perf_counter()
            plan.city_plan(table, 5.0, coverage=0.9)
            print(f"  city_plan (opt-arrayavg, no accounting): {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
