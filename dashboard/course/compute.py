"""Cached calls into :mod:`core.course` for the Course page (parameters in, results out).

The ε steps' numbers come from :func:`share_of` and :func:`optimal_of`, uncached: the page's
cached :func:`share` and :func:`optimal` call them, and so does the frames document
(:mod:`dashboard.course.frames`), for all 180 stops without pushing the page's entries out.
"""

from __future__ import annotations

import numpy as np

from core import course, lessons, worstcase
from core.citywide.accounting import PrivacyLoss, privacy_loss
from core.citywide.chop import chop_user
from core.citywide.gridset import GridSet, grid_set
from core.evaluation import ErrorSummary
from core.hat import HatData
from dashboard.common.cache import cached
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec


@cached(max_entries=16)
def grids(spec: DataSpec, slot: str) -> GridSet:
    """The grids (hexagons) of one slot: step 6's city."""
    return grid_set(compute.prepared(spec).summaries, slot=slot)


@cached(max_entries=16)
def answers(spec: DataSpec, label: str, slot: str, seed: int) -> course.Course:
    """The six exact answers for this hexagon-hour and its slot (raises HexplorerError)."""
    return course.course(compute.hat(spec, label), grids(spec, slot), seed=seed)


@cached(max_entries=256)
def share(
    spec: DataSpec, label: str, epsilon: float, within: float, seed: int
) -> tuple[np.ndarray, ErrorSummary]:
    """Step 4's simulated releases at ε (the same runs core's answer walks)."""
    return share_of(compute.hat(spec, label), epsilon, within, seed)


def share_of(
    h: HatData, epsilon: float, within: float, seed: int
) -> tuple[np.ndarray, ErrorSummary]:
    """:func:`share` on the HAT's data, uncached."""
    return course.release_share(h, epsilon, within, seed=seed)


@cached(max_entries=64)
def error_curve(spec: DataSpec, label: str, epsilon: float) -> worstcase.ErrorParts:
    """E1, E2 and E over every m_UB of the HAT (step 3's curve)."""
    h = compute.hat(spec, label)
    return worstcase.worst_case_error(h.counts, h.upper, np.arange(h.m_min, h.m_max + 1), epsilon)


@cached(max_entries=16)
def staircase(spec: DataSpec, label: str) -> list[worstcase.Step]:
    """The m^(ε) staircase of the HAT (step 5)."""
    h = compute.hat(spec, label)
    return worstcase.staircase(h.counts, h.upper)


@cached(max_entries=256)
def user_loss(spec: DataSpec, label: str, user: str, epsilon: float) -> lessons.NoiseNeeded:
    """Step 2: the chosen user's farthest neighbour, record- vs user-level noise at ε."""
    h = compute.hat(spec, label)
    return lessons.record_vs_user(lessons.neighbours(h, user), epsilon)


@cached(max_entries=128)
def loss(spec: DataSpec, slot: str, epsilon: float) -> PrivacyLoss:
    """Step 6: G ε, ε max G_ℓ and K ε after CHOP-USER at ε per hexagon."""
    g = grids(spec, slot)
    return privacy_loss(g, epsilon, chop_user(g, epsilon, upper=spec.upper))


@cached(max_entries=256)
def optimal(spec: DataSpec, label: str, epsilon: float) -> tuple[int, float]:
    """Step 5: (m^(ε), E(m^(ε))) at ε."""
    return optimal_of(compute.hat(spec, label), epsilon)


def optimal_of(h: HatData, epsilon: float) -> tuple[int, float]:
    """:func:`optimal` on the HAT's data, uncached."""
    m = worstcase.m_opt(h.counts, h.upper, epsilon)
    return m, float(worstcase.worst_case_error(h.counts, h.upper, m, epsilon).total)
