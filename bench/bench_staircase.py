"""Benchmark: the exact m^(ε) staircase (SPEC section 4) for 10^6 users; target <= 0.5 s.

Counts up to a few thousand: what matters is the number D of distinct counts (the envelope is
built over them; S(m) at all of them costs one ``bincount`` and prefix sums). Two collections:
heavy-tailed (discretised Pareto, capped at 5000) and the adversarial case of every count in
1..5000 (D = 5000). Also times m_opt, m_levy, m_convex and E(m) over all of [m_*, m*].
Run by hand from the repository root: ``python bench/bench_staircase.py``.
"""

from __future__ import annotations

import time

import numpy as np

from core import worstcase as wc

N_USERS = 1_000_000
TARGET_S = 0.5


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(2026)
    collections = {
        "heavy-tailed": np.minimum(np.floor(rng.pareto(1.2, N_USERS) * 3 + 1), 5000).astype(
            np.int64
        ),
        "lognormal": np.minimum(np.ceil(rng.lognormal(np.log(46), 1.0, N_USERS)), 5000).astype(
            np.int64
        ),
        "uniform 1..5000": rng.integers(1, 5001, N_USERS),
    }
    for name, counts in collections.items():
        distinct = np.unique(counts).size
        for measure in ("mean", "std"):
            t = best_of(lambda c=counts, nm=measure: wc.staircase(c, 65.0, nm))
            steps = wc.staircase(counts, 65.0, measure)
            status = "OK" if t <= TARGET_S else "MISSED"
            print(
                f"{name:16s} L={counts.size:,} D={distinct:5d} staircase[{measure}]: "
                f"{t:.3f} s, {len(steps)} steps (target <= {TARGET_S} s) {status}"
            )
        t_opt = best_of(lambda c=counts: wc.m_opt(c, 65.0, 1.0))
        t_levy = best_of(lambda c=counts: wc.m_levy(c))
        t_conv = best_of(lambda c=counts: wc.m_convex(c))
        all_m = np.arange(counts.min(), counts.max() + 1)
        t_e = best_of(lambda c=counts, m=all_m: wc.worst_case_error(c, 65.0, m, 1.0))
        print(
            f"{'':16s} m_opt {t_opt:.3f} s, m_levy {t_levy:.3f} s, m_convex {t_conv:.3f} s, "
            f"E(m) for {all_m.size} m {t_e:.3f} s"
        )


if __name__ == "__main__":
    main()
