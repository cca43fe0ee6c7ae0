"""An ITMS-like HAT: a stand-in for the real bus-speed data of the papers, which is not public.

"User-Level Differentially Private Mean Estimation for Real-World Datasets" (Rameshwar, Tandon,
Sharma), section V, publishes a summary of its ITMS dataset: L = 217 buses, N = 17,166 speed
records, m* = 417 records from the busiest bus, m_* = 1 from the quietest, median count 46,
U = 65 km/h, mean μ = 20.66769 and (1/N) variance σ² = 115.135. :func:`itms_like_counts` builds a
counts vector with exactly that summary (a deterministic, smoothly decreasing profile; the real
per-bus counts are not published), and :func:`itms_like_hat` draws projected-Gaussian speeds
``Π[0,U](X)``, ``X ~ N(μ, σ²)`` on it (SPEC section 6). Results on it are results on a synthetic
stand-in, not on the real data: the papers' non-i.i.d. structure is not reproduced.
"""

from __future__ import annotations

import numpy as np

from core.hat import HatData
from core.synthetic import projected_gaussian
from core.worstcase import median_count

__all__ = ["ITMS_SUMMARY", "itms_like_counts", "itms_like_hat", "summary_of"]

#: The published summary of the ITMS dataset (the real data's, which the stand-in matches).
ITMS_SUMMARY = {
    "users": 217,
    "records": 17166,
    "m_max": 417,
    "m_min": 1,
    "median": 46,
    "upper": 65.0,
    "mean": 20.66769,
    "variance": 115.135,
}


def summary_of(counts) -> dict:
    """``{users, records, m_max, m_min, median}`` of a counts vector (median: the ⌈L/2⌉-th
    largest count, as :func:`core.worstcase.median_count`).

    >>> summary_of([5, 2, 1])
    {'users': 3, 'records': 8, 'm_max': 5, 'm_min': 1, 'median': 2}
    """
    c = np.asarray(counts, dtype=np.int64)
    return {
        "users": int(c.size),
        "records": int(c.sum()),
        "m_max": int(c.max()),
        "m_min": int(c.min()),
        "median": median_count(c),
    }


def _profile(n: int, top: float, bottom: float, power: float) -> np.ndarray:
    """n values falling from ``top`` to ``bottom`` log-linearly in ``t**power``, t from 1 to 0."""
    t = np.linspace(1.0, 0.0, n) ** power
    return bottom * (top / bottom) ** t


def itms_like_counts() -> np.ndarray:
    """217 counts (descending) with L, N, m*, m_* and median exactly as published for ITMS.

    The top half (buses 1..109, from m* = 417 down to the median 46) and the bottom half (46 down
    to 1) each fall log-linearly in ``t^p``; p is found by bisection so that the rounded total is
    within a few records of N = 17,166, and the remainder is spread one record at a time over
    the buses strictly between the ends so that the order is kept. Deterministic.

    >>> summary_of(itms_like_counts()) == {k: ITMS_SUMMARY[k] for k in
    ...     ("users", "records", "m_max", "m_min", "median")}
    True
    """
    s = ITMS_SUMMARY
    n_users, total = int(s["users"]), int(s["records"])
    mid = n_users // 2  # ascending index of the median = 108; descending index 108 as well
    top_n, bottom_n = mid + 1, n_users - mid  # 109 values 417..46, 109 values 46..1 (46 shared)

    def build(power: float) -> np.ndarray:
        upper = _profile(top_n, float(s["m_max"]), float(s["median"]), power)
        lower = _profile(bottom_n, float(s["median"]), float(s["m_min"]), power)
        return np.round(np.concatenate((upper, lower[1:]))).astype(np.int64)

    lo, hi = 0.2, 5.0  # total decreases as the power grows
    for _ in range(60):
        p = 0.5 * (lo + hi)
        if build(p).sum() > total:
            lo = p
        else:
            hi = p
    c = build(hi)  # total <= N; the ends are exact: 417, 46 (index 108) and 1
    short = total - int(c.sum())
    while short > 0:  # one more record for buses 1..mid-1, wherever the order allows it
        added = 0
        for i in range(1, mid):
            if short > 0 and c[i] + 1 <= c[i - 1]:
                c[i] += 1
                short -= 1
                added += 1
        if not added:  # cannot happen for the published summary; never loop forever
            raise AssertionError("the ITMS-like profile cannot take the remaining records")
    return c


def itms_like_hat(rng: np.random.Generator) -> HatData:
    """The ITMS-like HAT: :func:`itms_like_counts` with projected-Gaussian speeds (SPEC §6).

    The Gaussian's μ = 20.66769 and σ² = 115.135 are the published mean and variance of the
    real data; values are projected into [0, U], U = 65 (so the drawn data's own mean and
    variance are close to, not exactly, those numbers).
    """
    s = ITMS_SUMMARY
    return projected_gaussian(
        itms_like_counts(),
        mean=float(s["mean"]),
        variance=float(s["variance"]),
        upper=float(s["upper"]),
        rng=rng,
        hat="itms-like",
    )
