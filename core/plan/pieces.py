"""The shared machinery of planning (SPEC section 4): checks, each analytic mechanism's worst case at
one ε (:func:`worst_case`), the pieces ``A + B/ε`` of the ε axis and the smallest float with an
error within target (:func:`smallest_float`). See :mod:`core.plan` for the mathematics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core import worstcase as wc
from core.errors import HexplorerError
from core.params import (
    check_counts,
    check_epsilon,
    check_noise_measure,
    check_upper,
)

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


def m_rule(mechanism: str) -> str | None:
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
    if m_rule(name) == "opt":
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
class Pieces:
    """The ε axis cut into pieces ``[lo, hi)`` (in increasing ε) on which error = a + b/ε."""

    lo: np.ndarray
    hi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    m: np.ndarray  # m_UB on the piece (-1 when the mechanism has none)


def pieces_of(c_arr: np.ndarray, upper: float, name: str, noise_measure: str) -> Pieces:
    c = check_noise_measure(noise_measure)
    n = int(c_arr.sum())
    if name == "baseline":
        m_max = int(c_arr.max())
        return Pieces(
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
        return Pieces(
            lo=np.concatenate(([0.0], lo_tab[k])),
            hi=np.concatenate(([lo_tab[big_l]], lo_tab[k - 1])),
            a=np.concatenate(([upper / 2.0], a)),
            b=np.concatenate(([0.0], b)),
            m=np.full(big_l + 1, -1),
        )
    prof_s = lambda m: int(np.minimum(c_arr, m).sum())  # noqa: E731
    if m_rule(name) == "opt":
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
    return Pieces(lo=lo, hi=hi, a=upper * (1.0 - s_m / n), b=c * upper * ms / s_m, m=ms)


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
