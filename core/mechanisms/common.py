"""What the mechanism families share: packaging runs with the final Laplace noise, building the
arrays of a grouping, and clipped means by sorting and prefix sums (SPEC section 3).

Vectorisation (no Python loop per run). The clipped mean ``(1/K̄) Σ Π[a,b](Ā_i)`` for per-run
``[a, b]`` is evaluated with the sorted means, their prefix sums and ``searchsorted``; akmv's
``Σ min(s_ℓ, T̂)`` likewise.
"""

from __future__ import annotations

import numpy as np

from core import grouping
from core.hat import HatData
from core.mechanisms import noise
from core.mechanisms.registry import Draws

__all__ = ["clipped_mean"]


def clipped_mean(values, lo, hi) -> np.ndarray:
    """(1/n) Σ_i Π[lo,hi](v_i) for each pair (lo, hi) of arrays, via sorting and prefix sums.

    >>> clipped_mean([1.0, 5.0, 9.0], np.array([2.0, 0.0]), np.array([6.0, 10.0])).tolist()
    [4.333333333333333, 5.0]
    """
    v = np.sort(np.asarray(values, dtype=np.float64))
    return clipped_sums(v, prefix_sums(v), np.asarray(lo, float), np.asarray(hi, float)) / v.size


def prefix_sums(sorted_values: np.ndarray) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(sorted_values)))


def clipped_sums(sorted_values, prefix, lo, hi) -> np.ndarray:
    """Σ_i min(hi, max(lo, v_i)) for sorted v and per-run lo ≤ hi."""
    n = sorted_values.size
    i_lo = np.searchsorted(sorted_values, lo, side="left")  # #{v < lo}
    i_hi = np.searchsorted(sorted_values, hi, side="right")  # #{v <= hi}
    i_hi = np.maximum(i_hi, i_lo)
    return lo * i_lo + (prefix[i_hi] - prefix[i_lo]) + hi * (n - i_hi)


def arrays_of(hat: HatData, strategy: str, m_ub: int) -> grouping.Arrays:
    """The arrays of ``strategy`` ("wraparound" or "bestfit") at ``m_ub`` (SPEC section 2)."""
    return (
        grouping.wraparound(hat, m_ub) if strategy == "wraparound" else grouping.bestfit(hat, m_ub)
    )


def draws(name, hat, epsilon, m_ub, n_arrays, noiseless, sensitivity, scale, rng, size, **kw):
    """Add the final Laplace noise (``noise._laplace``) and package the runs as :class:`Draws`."""
    noiseless = np.broadcast_to(np.asarray(noiseless, dtype=np.float64), (size,)).copy()
    sensitivity = np.broadcast_to(np.asarray(sensitivity, dtype=np.float64), (size,)).copy()
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (size,)).copy()
    estimates = noiseless + noise._laplace(rng, scale, size)
    return Draws(
        mechanism=name,
        epsilon=epsilon,
        m_ub=m_ub,
        n_arrays=n_arrays,
        true_mean=hat.true_mean,
        noiseless=noiseless,
        sensitivity=sensitivity,
        noise_scale=scale,
        clip_lo=kw.get("clip_lo"),
        clip_hi=kw.get("clip_hi"),
        threshold=kw.get("threshold"),
        estimates=estimates,
        note=kw.get("note", ""),
    )
