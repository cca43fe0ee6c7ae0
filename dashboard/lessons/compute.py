"""Cached calls into :mod:`core.lessons` for the lesson page (parameters in, results out)."""

from __future__ import annotations

import numpy as np

from core import lessons
from dashboard.common.cache import cached
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec


def _nb(spec: DataSpec, label: str, user: str, value: float | None) -> lessons.Neighbours:
    return lessons.neighbours(compute.hat(spec, label), user, value)


@cached(max_entries=64)
def neighbours(spec: DataSpec, label: str, user: str, value: float | None) -> lessons.Neighbours:
    """``core.lessons.neighbours`` of the HAT (raises HexplorerError)."""
    return _nb(spec, label, user, value)


@cached(max_entries=128)
def log_ratio(
    spec: DataSpec,
    label: str,
    user: str,
    value: float,
    mechanism: str,
    epsilon: float,
    seed: int,
    n_runs: int,
    noise_factor: float,
) -> lessons.LogRatio:
    """Exact (Laplace) or simulated log-ratio; the seed only matters when simulated."""
    nb = _nb(spec, label, user, value)
    if lessons.has_exact_density(mechanism):
        return lessons.exact_log_ratio(mechanism, nb, epsilon, noise_factor=noise_factor)
    rng = np.random.default_rng([int(seed), 7, 0])
    return lessons.simulated_log_ratio(mechanism, nb, epsilon, n_runs=n_runs, rng=rng)


@cached(max_entries=128)
def record_vs_user(
    spec: DataSpec, label: str, user: str, value: float, epsilon: float
) -> lessons.NoiseNeeded:
    """``core.lessons.record_vs_user`` for the chosen neighbour."""
    return lessons.record_vs_user(_nb(spec, label, user, value), epsilon)
