"""Plan from an accuracy target: the smallest ε whose error is within a target (SPEC section 4).

Every other part of the project answers "given ε, how large is the error?". This module answers
the reverse question, "how much privacy must be spent for the error one can live with?", for one
HAT (:func:`epsilon_for_error`, :func:`epsilon_for_error_mc`) and for every HAT of a slot, a day
or a file (:func:`city_plan`, :func:`coverage_curve`).

Analytic worst cases (SPEC sections 3 and 4), one per mechanism that has one
(:data:`ANALYTIC_MECHANISMS`), each of the form ``A + B/ε`` on pieces of the ε axis:

- ``opt-arrayavg``: ``W(ε) = min_m E(m, ε) = E(m^(ε), ε)``. With ``t = 1/ε`` it is the lower
  envelope of the lines ``A_m + B_m t``, ``A_m = E1(m)``, ``B_m = c U m / S(m)`` > 0: continuous
  and strictly decreasing in ε. On each step of the m^(ε) staircase m is fixed and the root of
  ``A_m + B_m/ε = target`` is ``ε = B_m / (target − A_m)``. As ε → ∞ it tends to ``E1(m*) = 0``.
- ``baseline``: ``c U m* / (N ε)``, so ``ε = c U m* / (N · target)`` in closed form.
- fixed m_UB rules (``arrayavg-best``: the median; ``opt-arrayavg-convex``: m_UB^(O,2)):
  ``E(m_UB, ε)``; the floor is the clipping error ``E1(m_UB)``, reached only as ε → ∞.
- ``opt-bounding``: ``E^OPT(ε)`` ([5], Theorem III.1). With ``k = ⌈2/ε⌉`` and ``m_(k)`` the
  k-th largest count (0 if k > L), ``T_ε = U m_(k)`` and
  ``E^OPT = U (Σ_{j≤k} m_(j) − k m_(k)) / (2N) + c U m_(k) / (N ε)``: on each piece where ⌈2/ε⌉
  is constant it is ``A + B/ε`` again. For ε below 2/L it is the constant U/2 (T_ε = 0). With
  the "mean" noise measure the pieces join continuously (E^OPT is non-increasing and at most
  U/2); with "std" it jumps up at each piece's left end, so the pieces are scanned one by one.

The smallest ε. On the first piece (in increasing ε) that holds an ε with error ≤ target, the
closed-form root gives a candidate; it is then settled in floating point by bisection on the
bit patterns of the floats (positive floats are ordered like their bits), evaluating the
worst case with the same functions as :mod:`core.worstcase`, so the returned ε is the smallest
float whose computed worst case is ≤ target (far inside the 1e-9 relative tolerance asked for).

Results, not exceptions: ``status`` is ``"ok"`` (ε found), ``"unreachable"`` (the error never
gets down to the target: ``floor`` says how low it goes; a floor approached only as ε → ∞ is not
reached) or ``"any"`` (the target holds for every small enough ε: opt-bounding when the target is
at least U/2, which releasing U/2 achieves without spending privacy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core import worstcase as wc
from core.errors import HexplorerError, NotApplicableError
from core.hat import HatData
from core.params import (
    EPSILON_MIN,
    check_counts,
    check_epsilon,
    check_noise_measure,
    check_positive_int,
    check_upper,
)

__all__ = [
    "ANALYTIC_MECHANISMS",
    "DEFAULT_MC_GRID",
    "STATUSES",
    "MonteCarloPlan",
    "Plan",
    "WorstCase",
    "check_analytic",
    "check_target",
    "epsilon_for_error",
    "epsilon_for_error_mc",
    "opt_bounding_piece_starts",
    "worst_case",
]

#: Mechanisms whose worst-case error SPEC gives in closed form (sections 3 and 4).
ANALYTIC_MECHANISMS = (
    "baseline",
    "arrayavg-best",
    "opt-arrayavg",
    "opt-arrayavg-convex",
    "opt-bounding",
)
#: The outcomes of a plan.
STATUSES = ("ok", "unreachable", "any")
#: The ε grid of the Monte-Carlo plan: 40 points per decade from 0.01 to 100.
DEFAULT_MC_GRID = tuple(float(e) for e in np.geomspace(0.01, 100.0, 161))


# --------------------------------------------------------------------------------------------
# Validation


def check_target(target) -> float:
    """Return the target error as a float, or raise if it is not a finite number >= 0.

    >>> check_target(2)
    2.0
    """
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'target' parameter (target error) must be a number >= 0. Got {target!r} instead."
        ) from None
    if isinstance(target, bool) or not math.isfinite(value) or value < 0:
        raise HexplorerError(
            f"The 'target' parameter (target error) must be a finite number >= 0. "
            f"Got {target!r} instead."
        )
    return value


def check_analytic(mechanism: str) -> str:
    """Return ``mechanism`` if SPEC gives its worst case in closed form, else raise.

    >>> check_analytic("opt-bounding")
    'opt-bounding'
    """
    from core.mechanisms import get_mechanism

    name = get_mechanism(mechanism).name
    if name not in ANALYTIC_MECHANISMS:
        raise HexplorerError(
            f"The 'mechanism' parameter must have an analytic worst case "
            f"({', '.join(ANALYTIC_MECHANISMS)}); {name!r} has none: use the Monte-Carlo "
            "plan (epsilon_for_error_mc) for it."
        )
    return name


def _m_rule(mechanism: str) -> str | None:
    from core.mechanisms import get_mechanism

    return get_mechanism(mechanism).m_ub_rule


def fixed_m_ub(counts, mechanism: str) -> int:
    """The m_UB of a mechanism whose rule reads the counts only (``Rule.counts_only``: median,
    m_UB^(L), m_UB^(O,2), ...), looked up in ``core.mechanisms.RULES``.

    >>> fixed_m_ub([5, 3, 1], "arrayavg-best"), fixed_m_ub([10, 1, 1, 1, 1], "opt-arrayavg-convex")
    (3, 3)
    """
    from core.mechanisms import get_mechanism

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
    c = check_noise_measure(noise_measure)
    name = check_analytic(mechanism)
    if name == "baseline":
        total = wc.baseline_error(c_arr, upper, epsilon, noise_measure)
        return WorstCase(
            mechanism=name, epsilon=epsilon, noise_measure=noise_measure, m_ub=None,
            clipping=0.0, noise=total, total=total,
        )  # fmt: skip
    if name == "opt-bounding":
        t = wc.opt_bounding_threshold(c_arr, upper, epsilon)
        n = int(c_arr.sum())
        noise = c * t / epsilon / n
        total = wc.opt_bounding_error(c_arr, upper, epsilon, noise_measure)
        return WorstCase(
            mechanism=name, epsilon=epsilon, noise_measure=noise_measure, m_ub=None,
            clipping=total - noise, noise=noise, total=total,
        )  # fmt: skip
    if _m_rule(name) == "opt":
        m = wc.m_opt(c_arr, upper, epsilon, noise_measure)
    else:
        m = fixed_m_ub(c_arr, name)
    parts = wc.worst_case_error(c_arr, upper, m, epsilon, noise_measure)
    return WorstCase(
        mechanism=name, epsilon=epsilon, noise_measure=noise_measure, m_ub=int(m),
        clipping=float(parts.clipping), noise=float(parts.noise), total=float(parts.total),
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Pieces A + B/ε of the ε axis


def ceil_two_over_epsilon_array(epsilon: np.ndarray) -> np.ndarray:
    """:func:`core.params.ceil_two_over_epsilon` for an array of ε > 0 (same 1e-9 rule).

    Values beyond 2^62 are capped there (every count-based use treats them as "more than L").

    >>> ceil_two_over_epsilon_array(np.array([0.5, 0.3, 2 / 3, 4.0, 1e300])).tolist()
    [4, 7, 3, 1, 1]
    """
    ratio = np.minimum(2.0 / np.asarray(epsilon, dtype=np.float64), 2.0**62)
    nearest = np.rint(ratio)
    snap = (nearest >= 1) & (np.abs(ratio - nearest) <= 1e-9)  # never 0: 2/ε > 0
    return np.where(snap, nearest, np.ceil(ratio)).astype(np.int64)


_PIECE_STARTS: list[np.ndarray] = [np.array([np.inf, 0.0])]


def opt_bounding_piece_starts(k_max: int) -> np.ndarray:
    """``lo[k]`` = the smallest float ε with ⌈2/ε⌉ ≤ k, for k = 1..k_max (``lo[0] = inf``).

    ⌈2/ε⌉ (SPEC's rounding rule) is non-increasing in ε, so ⌈2/ε⌉ = k exactly on
    ``[lo[k], lo[k-1])``: the pieces on which opt-bounding's threshold T_ε is constant. The
    table depends on k only (not on a HAT) and is kept between calls.

    >>> lo = opt_bounding_piece_starts(4)
    >>> [float(x) for x in lo[1:]] == [2 / (k + 1e-9) for k in (1, 2, 3, 4)]
    False
    >>> from core.params import ceil_two_over_epsilon as c2
    >>> all(c2(lo[k]) == k and c2(np.nextafter(lo[k], 0)) == k + 1 for k in (1, 2, 3, 4))
    True
    """
    k_max = int(k_max)
    have = _PIECE_STARTS[0]
    if have.size - 1 >= k_max:
        return have[: k_max + 1]
    k = np.arange(1, max(k_max, 2 * (have.size - 1)) + 1, dtype=np.float64)
    x = 2.0 / (k + 1e-9)
    kk = k.astype(np.int64)
    for _ in range(64):
        up = ceil_two_over_epsilon_array(x) > kk
        x = np.where(up, np.nextafter(x, np.inf), x)
        prev = np.nextafter(x, 0.0)
        down = ~up & (ceil_two_over_epsilon_array(prev) <= kk)
        x = np.where(down, prev, x)
        if not (up.any() or down.any()):
            break
    table = np.concatenate(([np.inf], x))
    _PIECE_STARTS[0] = table
    return table[: k_max + 1]


@dataclass(frozen=True, kw_only=True, eq=False)
class _Pieces:
    """The ε axis cut into pieces ``[lo, hi)`` (in increasing ε) on which error = a + b/ε."""

    lo: np.ndarray
    hi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    m: np.ndarray  # m_UB on the piece (-1 when the mechanism has none)


def _pieces(c_arr: np.ndarray, upper: float, name: str, noise_measure: str) -> _Pieces:
    c = check_noise_measure(noise_measure)
    n = int(c_arr.sum())
    if name == "baseline":
        m_max = int(c_arr.max())
        return _Pieces(
            lo=np.array([0.0]), hi=np.array([np.inf]), a=np.array([0.0]),
            b=np.array([c * upper * m_max / n]), m=np.array([-1]),
        )  # fmt: skip
    if name == "opt-bounding":
        desc = np.sort(c_arr)[::-1]
        big_l = desc.size
        k = np.arange(big_l, 0, -1)  # pieces in increasing ε: k = L, ..., 1
        lo_tab = opt_bounding_piece_starts(big_l)
        m_k = desc[k - 1]
        top = np.cumsum(desc)[k - 1]
        a = upper * (top - k * m_k) / (2.0 * n)
        b = c * upper * m_k / n
        return _Pieces(
            lo=np.concatenate(([0.0], lo_tab[k])),
            hi=np.concatenate(([lo_tab[big_l]], lo_tab[k - 1])),
            a=np.concatenate(([upper / 2.0], a)),
            b=np.concatenate(([0.0], b)),
            m=np.full(big_l + 1, -1),
        )
    prof_s = lambda m: int(np.minimum(c_arr, m).sum())  # noqa: E731
    if _m_rule(name) == "opt":
        steps = wc.staircase(c_arr, upper, noise_measure)
        ms = np.array([s.m for s in steps], dtype=np.int64)
        s_m = np.array([prof_s(m) for m in ms.tolist()], dtype=np.int64)
        lo = np.array([s.epsilon_from for s in steps])
        hi = np.array([s.epsilon_to for s in steps])
    else:
        m = fixed_m_ub(c_arr, name)
        ms = np.array([m], dtype=np.int64)
        s_m = np.array([prof_s(m)], dtype=np.int64)
        lo, hi = np.array([0.0]), np.array([np.inf])
    return _Pieces(lo=lo, hi=hi, a=upper * (1.0 - s_m / n), b=c * upper * ms / s_m, m=ms)


def _first_candidate(p: _Pieces, target: float) -> tuple[int, float] | None:
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


# --------------------------------------------------------------------------------------------
# One HAT, analytic


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The smallest ε whose worst-case error is within a target, for one HAT.

    Attributes
    ----------
    status : {"ok", "unreachable", "any"}
        "ok": ``epsilon`` is the answer; "unreachable": the worst case never gets down to the
        target (``floor`` is how low it goes); "any": every small enough ε meets the target.
    epsilon : float or None
        The smallest ε (status "ok"), else None.
    m_ub : int or None
        The m_UB to use at ``epsilon`` (m^(ε) for opt-arrayavg, the registry rule's value for
        the fixed rules); None for baseline, opt-bounding or when status is not "ok".
    worst_case_error : float or None
        The worst case at ``epsilon`` (status "ok"; ≤ target), or as ε → 0 (status "any").
    floor : float
        The infimum of the worst case over ε > 0 (0 except for the fixed m_UB rules, whose
        clipping error E1(m_UB) stays); it is approached as ε → ∞, never reached.
    target, mechanism, noise_measure : the inputs.
    """

    status: str
    epsilon: float | None
    m_ub: int | None
    worst_case_error: float | None
    floor: float
    target: float
    mechanism: str
    noise_measure: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise HexplorerError(f"Plan status must be one of {STATUSES}. Got {self.status!r}.")
        if (self.status == "ok") != (self.epsilon is not None):
            raise HexplorerError("A plan has an epsilon exactly when its status is 'ok'.")

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "m_ub": self.m_ub,
            "worst_case_error": self.worst_case_error,
            "floor": self.floor,
            "target": self.target,
            "mechanism": self.mechanism,
            "noise_measure": self.noise_measure,
        }


def epsilon_for_error(
    counts,
    upper: float,
    target: float,
    mechanism: str = "opt-arrayavg",
    noise_measure: str = "mean",
) -> Plan:
    """The smallest ε whose analytic worst-case error is ≤ ``target`` (SPEC section 4).

    Parameters
    ----------
    counts : array-like of int
        The users' record counts m_ℓ (public, SPEC section 1).
    upper : float
        U.
    target : float
        The error one can live with, in the data's unit (>= 0).
    mechanism : str
        One of :data:`ANALYTIC_MECHANISMS` (others: :func:`epsilon_for_error_mc`).
    noise_measure : {"mean", "std"}
        Noise error as E|Lap| (c = 1) or its standard deviation (c = √2).

    Returns
    -------
    Plan
        See :class:`Plan`; "unreachable" and "any" are results, not exceptions.

    Raises
    ------
    HexplorerError
        Bad counts, U, target, noise measure, or a mechanism without an analytic worst case.

    Counts (3, 2, 1), U = 65: E(m^(ε)) = 32.5 at ε = 1 (m^(ε) = 3), so a target of 32.5
    needs ε = 1; the staircase's closed form on the step of m = 3 gives it.

    >>> p = epsilon_for_error([3, 2, 1], 65, 32.5)
    >>> p.status, p.epsilon, p.m_ub, p.worst_case_error
    ('ok', 1.0, 3, 32.5)
    >>> epsilon_for_error([3, 2, 1], 65, 0).status
    'unreachable'
    >>> epsilon_for_error([3, 2, 1], 65, 40, "opt-bounding").status
    'any'
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    target = check_target(target)
    check_noise_measure(noise_measure)
    name = check_analytic(mechanism)
    pieces = _pieces(c_arr, upper, name, noise_measure)
    floor = float(pieces.a[-1]) if name != "opt-bounding" else 0.0

    def result(status: str, eps: float | None, m_ub: int | None, error: float | None) -> Plan:
        return Plan(
            status=status, epsilon=eps, m_ub=m_ub, worst_case_error=error, floor=floor,
            target=target, mechanism=name, noise_measure=noise_measure,
        )  # fmt: skip

    first = _first_candidate(pieces, target)
    if first is None:
        return result("unreachable", None, None, None)
    i, guess = first
    if guess == 0.0:  # a constant piece from ε = 0 meets the target (opt-bounding's U/2)
        return result("any", None, None, float(pieces.a[i]))

    def total(e: float) -> float:
        return worst_case(c_arr, upper, e, name, noise_measure).total

    lowest = total(EPSILON_MIN)  # the smallest ε the project accepts already meets the target
    if guess <= EPSILON_MIN or lowest <= target:
        return result("any", None, None, lowest)
    eps = smallest_float(total, target, guess) if math.isfinite(guess) else None
    if eps is None or not math.isfinite(2.0 / eps):
        return result("unreachable", None, None, None)
    at = worst_case(c_arr, upper, eps, name, noise_measure)
    return result("ok", eps, at.m_ub, at.total)


def baseline_epsilon(counts, upper: float, target: float, noise_measure: str = "mean") -> float:
    """Baseline's closed form: ``ε = c U m* / (N · target)`` (target > 0; SPEC section 4).

    :func:`epsilon_for_error` settles it to the smallest float; the two agree to rounding.

    >>> baseline_epsilon([3, 2, 1], 65, 65.0)
    0.5
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    target = check_target(target)
    if target == 0:
        raise HexplorerError("The 'target' parameter must be > 0 for Baseline's closed form.")
    c = check_noise_measure(noise_measure)
    return float(c * upper * int(c_arr.max()) / (int(c_arr.sum()) * target))


# --------------------------------------------------------------------------------------------
# One HAT, Monte Carlo


@dataclass(frozen=True, kw_only=True, eq=False)
class MonteCarloPlan:
    """The smallest ε of a grid whose simulated error statistic is ≤ target.

    Attributes
    ----------
    status : {"ok", "unreachable"}
        "unreachable": no ε of the grid met the target.
    epsilon : float or None
        The smallest grid ε meeting the target (a smaller ε off the grid may too).
    value, standard_error : float or None
        The statistic at ``epsilon`` and its Monte-Carlo standard error.
    m_ub : int or None
        The m_UB the mechanism used at ``epsilon``.
    statistic : str
        "mae" or "q0.9" (a quantile of |error|).
    mechanism, target, n_runs : the inputs.
    curve : pandas.DataFrame
        epsilon, value, standard_error, m_ub, note for every grid ε evaluated (in increasing ε,
        up to ``epsilon``).
    """

    status: str
    epsilon: float | None
    value: float | None
    standard_error: float | None
    m_ub: int | None
    statistic: str
    mechanism: str
    target: float
    n_runs: int
    curve: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready fields (without the curve)."""
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "value": self.value,
            "standard_error": self.standard_error,
            "m_ub": self.m_ub,
            "statistic": self.statistic,
            "mechanism": self.mechanism,
            "target": self.target,
            "n_runs": self.n_runs,
        }


def _statistic_name(statistic) -> tuple[str, float | None]:
    if statistic == "mae":
        return "mae", None
    try:
        q = float(statistic)
    except (TypeError, ValueError):
        q = math.nan
    if isinstance(statistic, bool) or not 0.0 < q < 1.0:
        raise HexplorerError(
            f"The 'statistic' parameter must be 'mae' or a quantile level in (0, 1). "
            f"Got {statistic!r} instead."
        )
    return f"q{q:g}", q


def epsilon_for_error_mc(
    hat: HatData,
    target: float,
    mechanism: str,
    *,
    statistic: str | float = "mae",
    rng: np.random.Generator,
    n_runs: int,
    grid: Iterable[float] = DEFAULT_MC_GRID,
    m_ub: int | None = None,
) -> MonteCarloPlan:
    """The smallest ε of ``grid`` whose simulated MAE (or quantile of |error|) is ≤ ``target``.

    Any mechanism of SPEC section 3, its randomness redrawn in every run (SPEC section 3,
    Evaluation). The grid is walked in increasing ε and the walk stops at the first ε meeting
    the target, so the answer is "the smallest grid ε whose estimate is ≤ target"; the estimate
    carries a standard error (MAE: std(|error|)/√n; quantile: half the distance between the
    order statistics at ranks ``n q ± √(n q (1 − q))``, the binomial ±1σ band of the rank).

    Raises
    ------
    HexplorerError
        Bad target, statistic, grid, n_runs, rng or mechanism.

    >>> h = HatData.from_arrays([30, 20, 10], [600.0, 400.0, 200.0], upper=65.0)
    >>> p = epsilon_for_error_mc(h, 20.0, "baseline", rng=np.random.default_rng(0), n_runs=4000,
    ...                          grid=[0.5, 1, 2, 4])
    >>> p.status, p.epsilon
    ('ok', 2.0)
    """
    from core.evaluation import abs_error_statistic
    from core.mechanisms import get_mechanism, run_mechanism

    if not isinstance(hat, HatData):
        raise HexplorerError(
            f"The 'hat' parameter must be a HatData. Got {type(hat).__name__} instead."
        )
    target = check_target(target)
    name = get_mechanism(mechanism).name
    label, level = _statistic_name(statistic)
    n_runs = check_positive_int("n_runs", n_runs)
    if not isinstance(rng, np.random.Generator):
        raise HexplorerError(f"The 'rng' parameter must be a numpy Generator. Got {rng!r} instead.")
    try:
        eps_grid = sorted({check_epsilon(e) for e in grid})
    except TypeError:
        raise HexplorerError(f"The 'grid' parameter must be a list of ε. Got {grid!r}.") from None
    if not eps_grid:
        raise HexplorerError("The 'grid' parameter must hold at least one ε > 0. Got [].")
    cache: dict = {}
    rows = []
    found: dict[str, Any] | None = None
    for eps in eps_grid:
        try:
            d = run_mechanism(name, hat, eps, m_ub=m_ub, rng=rng, size=n_runs, _arrays_cache=cache)
        except NotApplicableError as exc:
            rows.append(
                {"epsilon": eps, "value": np.nan, "standard_error": np.nan, "m_ub": None,
                 "note": f"not applicable: {exc}"}
            )  # fmt: skip
            continue
        value, se = abs_error_statistic(np.abs(d.estimates - hat.true_mean), level)
        rows.append(
            {"epsilon": eps, "value": value, "standard_error": se, "m_ub": d.m_ub, "note": d.note}
        )
        if value <= target:
            found = rows[-1]
            break
    curve = pd.DataFrame(rows, columns=["epsilon", "value", "standard_error", "m_ub", "note"])
    curve["m_ub"] = curve["m_ub"].astype("Int64")
    common = {
        "statistic": label,
        "mechanism": name,
        "target": target,
        "n_runs": n_runs,
        "curve": curve,
    }
    if found is None:
        return MonteCarloPlan(
            status="unreachable", epsilon=None, value=None, standard_error=None, m_ub=None,
            **common,
        )  # fmt: skip
    return MonteCarloPlan(
        status="ok",
        epsilon=float(found["epsilon"]),
        value=float(found["value"]),
        standard_error=float(found["standard_error"]),
        m_ub=None if found["m_ub"] is None else int(found["m_ub"]),
        **common,
    )


# --------------------------------------------------------------------------------------------
# A city: every HAT of a slot, a day or a file


def _city_pieces(table, name: str) -> tuple[np.ndarray, _Pieces]:
    """Every HAT's pieces ``a + b/ε`` on ``[lo, hi)``, grouped by HAT: (HAT of each piece, pieces)."""
    u = table.upper
    c = check_noise_measure(table.noise_measure)
    n_h = table.records
    hats = np.arange(table.n_hats)
    if name == "baseline" or _m_rule(name) in ("median", "convex"):
        if name == "baseline":
            a = np.zeros(table.n_hats)
            b = c * u * table.m_max / n_h
            m = np.full(table.n_hats, -1)
        else:
            m, s = (
                (table.median_m, table.median_s)
                if _m_rule(name) == "median"
                else (table.convex_m, table.convex_s)
            )
            a = u * (1.0 - s / n_h)
            b = c * u * m / s
        zero = np.zeros(table.n_hats)
        return hats, _Pieces(lo=zero, hi=np.full(table.n_hats, np.inf), a=a, b=b, m=m)
    if name == "opt-arrayavg":
        hat = np.repeat(hats, np.diff(table.step_starts))
        n = n_h[hat]
        s = table.step_s
        return hat, _Pieces(
            lo=table.step_from,
            hi=table.step_to,
            a=u * (1.0 - s / n),
            b=c * u * table.step_m / s,
            m=table.step_m,
        )
    # opt-bounding: for each HAT the piece ε < lo[L] (T = 0, error U/2), then k = L, ..., 1
    users = table.users
    lo_tab = opt_bounding_piece_starts(int(users.max()))
    hat_pairs = np.repeat(hats, users)
    k = np.arange(table.counts_desc.size) - np.repeat(table.count_starts[:-1], users) + 1
    n = n_h[hat_pairs]
    m_k = table.counts_desc
    hat = np.concatenate((hats, hat_pairs))
    order = np.argsort(hat, kind="stable")
    pieces = _Pieces(
        lo=np.concatenate((np.zeros(table.n_hats), lo_tab[k]))[order],
        hi=np.concatenate((lo_tab[users], lo_tab[k - 1]))[order],
        a=np.concatenate((np.full(table.n_hats, u / 2.0), u * (table.top - k * m_k) / (2.0 * n)))[
            order
        ],
        b=np.concatenate((np.zeros(table.n_hats), c * u * m_k / n))[order],
        m=np.full(hat.size, -1),
    )
    return hat[order], pieces


def _good_intervals(pieces: _Pieces, target: float) -> tuple[np.ndarray, np.ndarray]:
    """Per piece, the part ``[start, hi)`` where a + b/ε ≤ target (start = inf when none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(pieces.a < target, pieces.b / (target - pieces.a), np.inf)
    root = np.where(pieces.b == 0, np.where(pieces.a <= target, 0.0, np.inf), root)
    start = np.maximum(pieces.lo, root)
    start = np.where(start < pieces.hi, start, np.inf)
    return start, pieces.hi


def _refine(table, name: str, target: float, guess: np.ndarray) -> np.ndarray:
    """Vectorised :func:`smallest_float` for every HAT at once (``guess`` finite, > 0)."""
    from core.citywide.errors import totals

    def bad_at(e: np.ndarray) -> np.ndarray:
        return totals(table, e, name)[1] > target

    good = guess.copy()
    step = np.full(good.size, 1e-12)
    for _ in range(200):  # move up until good (rounding of the closed form)
        up = bad_at(good)
        if not up.any():
            break
        good = np.where(up, good * (1.0 + step), good)
        step = np.where(up, step * 2.0, step)
    step = np.full(good.size, 1e-12)
    bad = good * (1.0 - step)
    for _ in range(200):  # move down until bad
        down = ~bad_at(bad)
        if not down.any():
            break
        good = np.where(down, bad, good)
        step = np.where(down, np.minimum(step * 2.0, 0.5), step)
        bad = np.where(down, good * (1.0 - step), bad)
    gi, bi = good.view(np.int64).copy(), bad.view(np.int64).copy()
    while True:
        open_ = gi - bi > 1
        if not open_.any():
            break
        mid = bi + (gi - bi) // 2  # (gi + bi) would overflow int64
        ok = ~bad_at(np.where(open_, mid, gi).view(np.float64))
        gi = np.where(open_ & ok, mid, gi)
        bi = np.where(open_ & ~ok, mid, bi)
    return gi.view(np.float64)


def epsilon_needed(table, target: float, mechanism: str = "opt-arrayavg") -> np.ndarray:
    """Every HAT's smallest ε whose analytic worst case is ≤ ``target`` (vectorised).

    The city version of :func:`epsilon_for_error`, equal to it HAT by HAT: (H,) float64 with 0
    where every small ε meets the target ("any") and inf where no ε does ("unreachable").

    >>> from core.citywide.errors import error_table
    >>> df = pd.DataFrame({"hat": ["a/s"] * 3, "cell": ["a"] * 3, "slot": ["s"] * 3,
    ...     "user_id": ["x", "y", "z"], "m": [3, 2, 1], "s": [3.0, 2.0, 1.0], "q": [3.0, 2.0, 1.0]})
    >>> epsilon_needed(error_table(df, upper=65.0), 32.5).tolist()
    [1.0]
    """
    target = check_target(target)
    name = check_analytic(mechanism)
    hat, pieces = _city_pieces(table, name)
    start, _ = _good_intervals(pieces, target)
    first = np.minimum.reduceat(start, np.searchsorted(hat, np.arange(table.n_hats)))
    out = first.copy()
    fine = np.isfinite(first) & (first > 0)
    if fine.any():
        idx = np.flatnonzero(fine)
        sub = _subtable(table, idx)
        out[idx] = _refine(sub, name, target, first[idx])
    return out


def _subtable(table, idx: np.ndarray):
    """The HATs ``idx`` of an ErrorTable as a table of their own (offsets rebuilt)."""
    from dataclasses import replace

    if idx.size == table.n_hats:
        return table

    def rows(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.diff(starts)[idx]
        new_starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        take = np.repeat(starts[idx] - new_starts[:-1], lengths) + np.arange(new_starts[-1])
        return new_starts, take

    step_starts, steps = rows(table.step_starts)
    count_starts, pairs = rows(table.count_starts)
    return replace(
        table,
        hats=table.hats[idx], cells=table.cells[idx], slots=table.slots[idx],
        users=table.users[idx], records=table.records[idx], m_max=table.m_max[idx],
        step_starts=step_starts, step_to=table.step_to[steps], step_m=table.step_m[steps],
        step_s=table.step_s[steps], median_m=table.median_m[idx], median_s=table.median_s[idx],
        convex_m=table.convex_m[idx], convex_s=table.convex_s[idx], count_starts=count_starts,
        counts_desc=table.counts_desc[pairs], top=table.top[pairs],
    )  # fmt: skip


def coverage_curve(
    table, target: float, epsilons: Iterable[float], mechanism: str = "opt-arrayavg"
) -> pd.DataFrame:
    """The share of HATs whose analytic worst case is within ``target``, against ε.

    Returns
    -------
    pandas.DataFrame
        epsilon, hats_within, hats_total, share (one row per ε, in the order given).
    """
    from core.citywide.errors import errors_at

    target = check_target(target)
    rows = []
    for eps in epsilons:
        within = int(np.count_nonzero(errors_at(table, eps, mechanism).total <= target))
        rows.append(
            {
                "epsilon": check_epsilon(eps),
                "hats_within": within,
                "hats_total": table.n_hats,
                "share": within / table.n_hats,
            }
        )
    return pd.DataFrame(rows, columns=["epsilon", "hats_within", "hats_total", "share"])


def check_coverage(coverage) -> float:
    """Return the share of HATs to cover, a number in (0, 1].

    >>> check_coverage(0.9)
    0.9
    """
    try:
        value = float(coverage)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(coverage, bool) or not 0.0 < value <= 1.0:
        raise HexplorerError(
            f"The 'coverage' parameter must be a share in (0, 1]. Got {coverage!r} instead."
        )
    return value


@dataclass(frozen=True, kw_only=True, eq=False)
class CityPlan:
    """The smallest ε at which a share ``coverage`` of the HATs is within the target.

    Attributes
    ----------
    status : {"ok", "unreachable", "any"}
        "unreachable": fewer than the asked share of HATs can ever reach the target; "any":
        enough HATs meet it at every small ε.
    epsilon : float or None
        The smallest ε (status "ok"); at it, ``hats_reaching`` ≥ ⌈coverage · hats_total⌉.
    coverage, target, mechanism, noise_measure : the inputs.
    hats_total, hats_reaching : int
        HATs in the set and HATs within target at ``epsilon`` (0 without an ε).
    unreachable : tuple of str
        HATs that cannot reach the target at any ε.
    missing : tuple of str
        HATs not within target at ``epsilon`` (all of them without an ε).
    user_loss : PrivacyLoss or None
        The per-user privacy loss of releasing every HAT at ``epsilon``: basic ``G ε``, by users
        ``ε max_ℓ G_ℓ`` and ``K ε`` after CHOP-USER (SPEC section 5), when the grids are given.
    hats : pandas.DataFrame
        One row per HAT: hat, cell, slot, users, records, epsilon_needed (0: any, inf: never),
        m_ub and worst_case_error at ``epsilon``, within_target.
    """

    status: str
    epsilon: float | None
    coverage: float
    target: float
    mechanism: str
    noise_measure: str
    hats_total: int
    hats_reaching: int
    unreachable: tuple[str, ...]
    missing: tuple[str, ...]
    user_loss: Any
    hats: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready fields (the per-HAT table as the lists of HATs)."""
        loss = self.user_loss
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "coverage": self.coverage,
            "share": self.hats_reaching / self.hats_total,
            "hats_reaching": self.hats_reaching,
            "hats_total": self.hats_total,
            "user_loss": None
            if loss is None
            else {"basic": loss.basic, "by_users": loss.by_users, "after_chop": loss.after_chop},
            "target": self.target,
            "mechanism": self.mechanism,
            "noise_measure": self.noise_measure,
            "unreachable": list(self.unreachable),
            "missing": list(self.missing),
        }


def city_plan(
    table,
    target: float,
    *,
    coverage: float = 0.9,
    mechanism: str = "opt-arrayavg",
    grids=None,
) -> CityPlan:
    """The smallest ε at which at least ``coverage`` of the HATs have worst case ≤ ``target``.

    Every HAT's good set of ε is a union of intervals ``[start, hi)``, one per piece of its worst
    case (:func:`epsilon_needed` gives each HAT's first start exactly); the share of HATs within
    target only rises at a start, so one sweep over the sorted starts and ends finds the
    smallest ε at which ⌈coverage · H⌉ HATs are inside. The count at that ε is then taken from
    the worst cases themselves (:func:`core.citywide.errors.errors_at`).

    Parameters
    ----------
    table : ErrorTable
        :func:`core.citywide.errors.error_table` of the HATs (its U and noise measure apply).
    target : float
    coverage : float in (0, 1]
    mechanism : one of :data:`ANALYTIC_MECHANISMS`
    grids : GridSet, optional
        The same HATs' (HAT, user) pairs: with them, ``user_loss`` gives the per-user privacy
        loss at the chosen ε under the three accountings (CHOP-USER is run at that ε).
    """
    from core.citywide.errors import errors_at

    target = check_target(target)
    coverage = check_coverage(coverage)
    name = check_analytic(mechanism)
    n_hats = table.n_hats
    need = max(1, math.ceil(coverage * n_hats - 1e-9))
    needed = epsilon_needed(table, target, name)
    hat, pieces = _city_pieces(table, name)
    start, end = _good_intervals(pieces, target)
    # each HAT's earliest interval starts at its exact smallest ε (intervals are disjoint)
    first_row = np.searchsorted(hat, np.arange(n_hats))
    earliest = np.minimum.reduceat(start, first_row)
    is_first = np.isfinite(start) & (start == earliest[hat])
    start = np.where(is_first, needed[hat], start)
    keep = np.isfinite(start)
    pos = np.concatenate((start[keep], end[keep]))
    delta = np.concatenate((np.ones(keep.sum(), dtype=np.int64), -np.ones(keep.sum(), np.int64)))
    order = np.argsort(pos, kind="stable")
    pos, cum = pos[order], np.cumsum(delta[order])
    last = np.r_[pos[1:] != pos[:-1], True] if pos.size else np.zeros(0, dtype=bool)
    at_pos, count = pos[last], cum[last]
    hit = np.flatnonzero((count >= need) & np.isfinite(at_pos))
    unreachable_idx = np.flatnonzero(~np.isfinite(needed))
    frame = pd.DataFrame(
        {
            "hat": table.hats.astype(str),
            "cell": table.cells.astype(str),
            "slot": table.slots.astype(str),
            "users": table.users,
            "records": table.records,
            "epsilon_needed": needed,
        }
    )
    common = {
        "coverage": coverage,
        "target": target,
        "mechanism": name,
        "noise_measure": table.noise_measure,
        "hats_total": n_hats,
        "unreachable": tuple(frame["hat"].iloc[unreachable_idx]),
    }
    if hit.size == 0 or at_pos[hit[0]] == 0.0:
        status = "unreachable" if hit.size == 0 else "any"
        frame["m_ub"] = pd.array([pd.NA] * n_hats, dtype="Int64")
        frame["worst_case_error"] = np.nan
        frame["within_target"] = status == "any" and np.asarray(needed == 0.0)
        reaching = int(frame["within_target"].sum()) if status == "any" else 0
        return CityPlan(
            status=status, epsilon=None, hats_reaching=reaching,
            missing=tuple(frame["hat"][~frame["within_target"].astype(bool)]),
            user_loss=None, hats=frame, **common,
        )  # fmt: skip
    eps = float(at_pos[hit[0]])
    errs = errors_at(table, eps, name)
    for _ in range(64):  # a later interval's start is the closed form, a few ulps off at most
        if np.count_nonzero(errs.total <= target) >= need:
            break
        eps = math.nextafter(eps, math.inf)
        errs = errors_at(table, eps, name)
    within = errs.total <= target
    m_ub = pd.array(np.where(errs.m_ub >= 0, errs.m_ub, 0), dtype="Int64")
    m_ub[errs.m_ub < 0] = pd.NA
    frame["m_ub"] = m_ub
    frame["worst_case_error"] = errs.total
    frame["within_target"] = within
    loss = None
    if grids is not None:
        from core.citywide.accounting import privacy_loss
        from core.citywide.chop import chop_user

        if list(grids.hats) != list(table.hats):
            raise HexplorerError("The 'grids' parameter must hold the same HATs as the table.")
        loss = privacy_loss(grids, eps, chop_user(grids, eps, upper=table.upper))
    return CityPlan(
        status="ok", epsilon=eps, hats_reaching=int(within.sum()),
        missing=tuple(frame["hat"][~within]), user_loss=loss, hats=frame, **common,
    )  # fmt: skip
