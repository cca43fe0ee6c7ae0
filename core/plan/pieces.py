"""The shared machinery of planning (SPEC section 4): checks, each analytic mechanism's worst case at
one ε (:func:`worst_case`), the pieces ``A + B/ε`` of the ε axis and the smallest float with an
error within target (:func:`smallest_float`). The worst cases and their pieces are the registry
entries' (``Mechanism.worst_case``, :mod:`core.mechanisms.forms`). See :mod:`core.plan` for the
mathematics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.errors import HexplorerError
from core.mechanisms import analytic_form, get_analytic, get_mechanism
from core.mechanisms.forms import (  # re-exported: core.plan's public names
    Pieces,
    ceil_two_over_epsilon_array,
    opt_bounding_piece_starts,
)
from core.params import (  # check_target: re-exported
    check_counts,
    check_epsilon,
    check_noise_measure,
    check_target,
    check_upper,
    log_grid,
)

__all__ = [
    "DEFAULT_MC_GRID",
    "STATUSES",
    "Pieces",
    "WorstCase",
    "ceil_two_over_epsilon_array",
    "check_analytic",
    "check_target",
    "first_candidate",
    "fixed_m_ub",
    "m_rule",
    "opt_bounding_piece_starts",
    "pieces_of",
    "smallest_float",
    "worst_case",
    "worst_case_of",
]

#: The outcomes of a plan.
STATUSES = ("ok", "unreachable", "any")
#: The ε grid of the Monte-Carlo plan: 40 points per decade from 0.01 to 100.
DEFAULT_MC_GRID = log_grid(0.01, 100.0, 161)


# --------------------------------------------------------------------------------------------
# Validation


def check_analytic(mechanism: str) -> str:
    """Return ``mechanism`` if its registry entry has a closed-form worst case, else raise.

    >>> check_analytic("opt-bounding")
    'opt-bounding'
    """
    return get_analytic(mechanism).name


def m_rule(mechanism: str) -> str | None:
    """The mechanism's default m_UB rule (a key of ``core.mechanisms.RULES``)."""
    return get_mechanism(mechanism).m_ub_rule


def fixed_m_ub(counts, mechanism: str) -> int:
    """The m_UB of a mechanism whose rule reads the counts only (``Rule.counts_only``: median,
    m_UB^(L), m_UB^(O,2), ...), looked up in ``core.mechanisms.RULES``.

    >>> fixed_m_ub([5, 3, 1], "arrayavg-best"), fixed_m_ub([10, 1, 1, 1, 1], "opt-arrayavg-convex")
    (3, 3)
    """
    rule = get_mechanism(mechanism).rule
    if rule is None or not rule.counts_only:
        raise HexplorerError(f"{mechanism!r} has no m_UB rule that is independent of ε.")
    return rule(counts, math.nan, math.nan)


# --------------------------------------------------------------------------------------------
# The worst case of a mechanism at one ε


@dataclass(frozen=True, kw_only=True)
class WorstCase:
    """Worst-case error of one mechanism on one HAT at one ε (SPEC sections 3 and 4).

    Attributes
    ----------
    mechanism, epsilon, noise_measure : the inputs.
    m_ub : int or None
        The m_UB the mechanism uses (its registry rule; m^(ε) under ``noise_measure`` for
        opt-arrayavg); None for baseline and opt-bounding.
    clipping, noise, total : float
        Bias part, noise part (E|Lap| or its std) and their sum.
    """

    mechanism: str
    epsilon: float
    noise_measure: str
    m_ub: int | None
    clipping: float
    noise: float
    total: float


def worst_case(
    counts, upper: float, epsilon: float, mechanism: str = "opt-arrayavg", noise_measure="mean"
) -> WorstCase:
    """The analytic worst-case error of ``mechanism`` at ``epsilon`` (SPEC sections 3 and 4).

    opt-arrayavg: E(m^(ε)); arrayavg-best / opt-arrayavg-convex: E(m_UB) at the median /
    m_UB^(O,2); baseline: ``c U m* / (N ε)``; opt-bounding: E^OPT(ε). The totals are the values
    of :mod:`core.worstcase`'s functions (``worst_case_error``, ``baseline_error``,
    ``opt_bounding_error``).

    >>> w = worst_case([3, 2, 1], 65, 1.0)
    >>> w.m_ub, w.total
    (3, 32.5)
    >>> worst_case([3, 2, 1], 65, 1.0, "opt-bounding").total
    27.083333333333332
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    epsilon = check_epsilon(epsilon)
    check_noise_measure(noise_measure)
    return worst_case_of(c_arr, upper, epsilon, check_analytic(mechanism), noise_measure)


def worst_case_of(
    c_arr: np.ndarray, upper: float, epsilon: float, name: str, noise_measure: str
) -> WorstCase:
    """:func:`worst_case` on checked inputs (the inner loop of the plan's bisection)."""
    p = analytic_form(name).one(c_arr, upper, epsilon, noise_measure)
    return WorstCase(
        mechanism=name, epsilon=epsilon, noise_measure=noise_measure, m_ub=p.m_ub,
        clipping=p.clipping, noise=p.noise, total=p.total,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Pieces A + B/ε of the ε axis


def pieces_of(c_arr: np.ndarray, upper: float, name: str, noise_measure: str) -> Pieces:
    """One HAT's pieces ``a + b/ε`` (the registry's worst-case form of ``name``)."""
    return analytic_form(name).pieces(c_arr, upper, noise_measure)


def first_candidate(p: Pieces, target: float) -> tuple[int, float] | None:
    """(piece index, smallest ε of the first piece holding an ε with a + b/ε ≤ target)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(p.a < target, p.b / (target - p.a), np.inf)
    root = np.where(p.b == 0, np.where(p.a <= target, 0.0, np.inf), root)
    cand = np.maximum(p.lo, root)
    good = np.flatnonzero(cand < p.hi)
    if good.size == 0:
        return None
    i = int(good[0])
    return i, float(cand[i])


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _float(bits: int) -> float:
    return float(np.int64(bits).view(np.float64))


def smallest_float(f: Callable[[float], float], target: float, guess: float) -> float | None:
    """The smallest float ε > 0 near ``guess`` with ``f(ε) <= target``, where f goes from above
    the target to at most the target there (a root of a decreasing piece, or a piece's start).

    Widens a bracket around ``guess`` (relative steps 1e-12, 2e-12, ...) and bisects on the bit
    patterns of the floats in between. None if no ε above ``guess`` is good.

    >>> smallest_float(lambda e: 1.0 / e, 4.0, 0.25)
    0.25
    """
    good = guess
    step = 1e-12
    while f(good) > target:
        good = good * (1.0 + step)
        step *= 2.0
        if step > 2.0**64 or not math.isfinite(good):
            return None
    step = 1e-12
    for _ in range(80):
        bad = good * (1.0 - min(step, 0.5))
        if f(bad) > target:
            break
        good = bad  # good further down than guessed (rounding at a piece's start): keep going
        step *= 2.0
    else:
        return good
    gi, bi = _bits(good), _bits(bad)
    while gi - bi > 1:
        mid = (gi + bi) // 2
        if f(_float(mid)) <= target:
            gi = mid
        else:
            bi = mid
    return _float(gi)
