"""Benchmark: every HAT's worst-case error at a new ε, 10^5 HATs; target <= 0.2 s once built.

A synthetic city of 10^5 HATs (users per HAT 1 + Poisson(9), records per user 1 + geometric
with mean 20, about 10^6 (HAT, user) pairs). ``core.citywide.errors.error_table`` builds every
HAT's m^(ε) staircase once (timed, reported apart); then ``errors_at`` answers a new ε for all
HATs with one vectorised lookup: the median over 25 random ε is reported per mechanism with an
analytic worst case. Also times ``core.plan.epsilon_needed`` and ``city_plan`` (without the
CHOP-USER accounting) on the same table.
Run by hand from the repository root: ``python bench/bench_citywide_errors.py [n_hats]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from core import plan
from core.citywide import errors
from core.citywide.gridset import GridSet

TARGET_S = 0.2


def synthetic_grids(n_hats: int, rng: np.random.Generator) -> GridSet:
    users = 1 + rng.poisson(9, n_hats)
    starts = np.concatenate(([0], np.cumsum(users))).astype(np.int64)
    n_pairs = int(starts[-1])
    m = 1 + rng.geometric(1 / 20, n_pairs) - 1
    grid = np.repeat(np.arange(n_hats), users)
    order = np.lexsort((-m, grid))  # count descending within each HAT, as GridSet keeps them
    m = m[order].astype(np.int64)
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
    rng = np.random.default_rng(2026)
    grids = synthetic_grids(n_hats, rng)
    print(f"{grids.n_grids:,} HATs, {grids.n_pairs:,} (HAT, user) pairs")
    for noise_measure in ("mean", "std"):
        t0 = time.perf_counter()
        table = errors.error_table(grids, upper=65.0, noise_measure=noise_measure)
        build = time.perf_counter() - t0
        print(f"[{noise_measure}] build: {build:.1f} s, {table.n_steps:,} staircase steps")
        for mechanism in plan.ANALYTIC_MECHANISMS:
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
