"""Worst-case error of Array-Averaging, the m^(ε) staircase, the other m_UB rules (SPEC §4).

Everything here reads the users' record counts ``{m_ℓ}`` and the bound U only, never values.
For ``m ∈ [m_*, m*]``, ``Γ_ℓ(m) = min(m_ℓ, m)`` and ``S(m) = Σ_ℓ Γ_ℓ(m)``:

- clipping (bias) error ``E1(m) = U (1 − S(m)/N)`` ([1], Lemma V.1; [4], eq. (4));
- noise error ``E2(m) = c U m / (ε S(m))``, ``c = 1`` ("mean", E|Lap|) or ``c = √2`` ("std");
- ``E(m) = E1(m) + E2(m)`` and ``m^(ε)``, its smallest minimiser over the integers of [m_*, m*].

Exactness. Comparisons that decide an argmin/argmax (``m_opt``, ``m_levy``, ``m_convex``, the
staircase's envelope) are screened in float64 and settled in exact integer/rational arithmetic,
so ties are real ties. The staircase's breakpoints are the exact rational thresholds rounded
*down* to a float, so for every float ε the step containing ε (steps are ``(ε_from, ε_to]``)
has ``m == m_opt(ε)``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from core.errors import HexplorerError
from core.grouping import bestfit_fill, clipped_counts
from core.params import (  # check_counts is re-exported: core.worstcase.check_counts is public
    ceil_two_over_epsilon,
    check_counts,
    check_epsilon,
    check_m_ub,
    check_noise_measure,
    check_upper,
)

# Relative tolerance of the float screening; candidates within it are compared exactly.
_SCREEN_RTOL = 1e-9


@dataclass(frozen=True, kw_only=True)
class ErrorParts:
    """Worst-case error of Array-Averaging split into its parts (SPEC section 4).

    Attributes
    ----------
    clipping : float or ndarray
        E1(m), the worst-case bias of clipping to m samples per user.
    noise : float or ndarray
        E2(m), the Laplace noise's expected magnitude ("mean") or standard deviation ("std").
    total : float or ndarray
        E(m) = E1(m) + E2(m).
    """

    clipping: float | np.ndarray
    noise: float | np.ndarray
    total: float | np.ndarray


@dataclass(frozen=True, kw_only=True)
class Step:
    """One step of the m^(ε) staircase: ``m^(ε) = m`` for ε in ``(epsilon_from, epsilon_to]``.

    The first step starts at ``epsilon_from = 0.0`` and the last ends at ``epsilon_to = inf``.
    """

    epsilon_from: float
    epsilon_to: float
    m: int


# --------------------------------------------------------------------------------------------
# Counts and S(m)


@dataclass(frozen=True, kw_only=True, eq=False)
class _Profile:
    """Distinct counts ``v`` (ascending), their multiplicities, and S at each of them."""

    values: np.ndarray  # v_1 < ... < v_D (int64)
    mult: np.ndarray  # users with count v_k
    below: np.ndarray  # P_j = sum_{k<j} mult_k v_k, j = 0..D
    above: np.ndarray  # R_j = sum_{k>=j} mult_k, j = 0..D
    n_users: int
    n_records: int

    @property
    def s_at_values(self) -> np.ndarray:
        """S(v_k) for every distinct count v_k."""
        d = self.values.size
        return self.below[1 : d + 1] + self.values * self.above[1 : d + 1]

    def s_of(self, m: np.ndarray) -> np.ndarray:
        """S(m) = sum_l min(m_l, m) for integer m (any shape), int64."""
        j = np.searchsorted(self.values, m, side="right")
        return self.below[j] + m * self.above[j]


def _profile(counts) -> _Profile:
    c = check_counts(counts)
    m_max = int(c.max())
    if m_max <= 4 * c.size + 1024:
        hist = np.bincount(c)
        values = np.flatnonzero(hist).astype(np.int64)
        mult = hist[values].astype(np.int64)
    else:
        values, mult = np.unique(c, return_counts=True)
        values = values.astype(np.int64)
        mult = mult.astype(np.int64)
    below = np.concatenate(([0], np.cumsum(values * mult)))
    above = np.concatenate((np.cumsum(mult[::-1])[::-1], [0]))
    return _Profile(
        values=values,
        mult=mult,
        below=below,
        above=above,
        n_users=int(c.size),
        n_records=int(below[-1]),
    )


def _check_m(m, prof: _Profile) -> np.ndarray:
    """m as int64 (any shape); every entry must be an integer in [m_*, m*]."""
    arr = np.asarray(m)
    lo, hi = int(prof.values[0]), int(prof.values[-1])
    try:
        as_float = arr.astype(np.float64)
    except (TypeError, ValueError):
        raise HexplorerError(f"The 'm' parameter must be an integer. Got {m!r} instead.") from None
    bad = (
        ~np.isfinite(as_float)
        | (as_float != np.round(as_float))
        | (as_float < lo)
        | (as_float > hi)
    )
    if np.any(bad):
        shown = as_float[bad].flat[0] if arr.ndim else m
        raise HexplorerError(
            f"The 'm' parameter must be an integer in [m_*, m*] = [{lo}, {hi}]. "
            f"Got {shown!r} instead."
        )
    return as_float.astype(np.int64)


def _out(x: np.ndarray, scalar: bool):
    return float(x) if scalar else x


# --------------------------------------------------------------------------------------------
# E1, E2, E


def clipping_error(counts, upper: float, m):
    """Worst-case clipping bias ``E1(m) = U (1 − S(m)/N)`` (SPEC section 4; [1], Lemma V.1).

    Parameters
    ----------
    counts : array-like of int
        The users' record counts m_ℓ (any order).
    upper : float
        The value bound U.
    m : int or array of int
        Clipping level(s) m_UB in [m_*, m*] (vectorised).

    Returns
    -------
    float or ndarray (same shape as ``m``)

    >>> round(clipping_error([3, 2, 1], 65, 2), 9), clipping_error([3, 2, 1], 65, [1, 3]).tolist()
    (10.833333333, [32.5, 0.0])
    """
    prof = _profile(counts)
    upper = check_upper(upper)
    mm = _check_m(m, prof)
    e1 = upper * (1.0 - prof.s_of(mm) / prof.n_records)
    return _out(e1, np.ndim(m) == 0)


def noise_error(counts, upper: float, m, epsilon: float, noise_measure: str = "mean"):
    """Noise error ``E2(m) = c U m / (ε S(m))`` (SPEC section 4), c from ``noise_measure``.

    ``U m / S(m)`` is BestFit's sensitivity in the papers' full-array model (K̄ ≈ S(m)/m),
    divided by ε it is the Laplace scale b; "mean" gives E|Lap(b)| = b, "std" gives √2 b.

    >>> noise_error([3, 2, 1], 65, 2, 0.5)
    52.0
    """
    prof = _profile(counts)
    upper = check_upper(upper)
    epsilon = check_epsilon(epsilon)
    c = check_noise_measure(noise_measure)
    mm = _check_m(m, prof)
    e2 = c * upper * mm / (epsilon * prof.s_of(mm))
    return _out(e2, np.ndim(m) == 0)


def worst_case_error(counts, upper: float, m, epsilon: float, noise_measure: str = "mean"):
    """``E(m) = E1(m) + E2(m)`` with its parts (SPEC section 4; [4], eq. (4)).

    >>> p = worst_case_error([3, 2, 1], 65, 3, 1.0)
    >>> p.clipping, p.noise, p.total
    (0.0, 32.5, 32.5)
    """
    e1 = clipping_error(counts, upper, m)
    e2 = noise_error(counts, upper, m, epsilon, noise_measure)
    return ErrorParts(clipping=e1, noise=e2, total=e1 + e2)


# --------------------------------------------------------------------------------------------
# Exact comparisons


def _sign_x_plus_sqrt2_y(x: Fraction, y: Fraction) -> int:
    """Sign of x + √2 y, exactly."""
    if x >= 0 and y >= 0:
        return 0 if x == 0 and y == 0 else 1
    if x <= 0 and y <= 0:
        return -1
    d = x * x - 2 * y * y  # x and y have opposite signs
    if d == 0:
        return 0
    return (1 if d > 0 else -1) * (1 if x > 0 else -1)


def _e_less(mi: int, si: int, mj: int, sj: int, n: int, eps: Fraction, sqrt2: bool) -> int:
    """Sign of E(m_i) − E(m_j), exactly (U > 0 factored out).

    E/U = 1 − S/N + c m/(ε S), so E_i − E_j ∝ (S_j − S_i)/N + c (m_i/S_i − m_j/S_j)/ε.
    """
    x = Fraction(sj - si, n)
    y = Fraction(mi * sj - mj * si, si * sj) / eps
    if sqrt2:
        return _sign_x_plus_sqrt2_y(x, y)
    v = x + y
    return (v > 0) - (v < 0)


def _screen(values: np.ndarray, *, minimise: bool) -> np.ndarray:
    """Indices whose float value is within the screening tolerance of the best."""
    best = values.min() if minimise else values.max()
    tol = _SCREEN_RTOL * max(abs(float(best)), 1e-300)
    if minimise:
        return np.flatnonzero(values <= best + tol)
    return np.flatnonzero(values >= best - tol)


# --------------------------------------------------------------------------------------------
# m^(ε) and its staircase


def m_opt(counts, upper: float, epsilon: float, noise_measure: str = "mean") -> int:
    """``m^(ε)``: the smallest minimiser of E(m) over the integers of [m_*, m*] (SPEC section 4).

    On ``[v_k, v_{k+1}]`` between consecutive distinct counts, ``S(m) = P + r m`` is affine, E1 is
    affine and ``m / S(m)`` is concave, so E is concave there and its minimum over the interval is
    at an end ([1], Lemma V.2): the smallest minimiser is a count. Candidates are screened in
    float and settled exactly, so ties go to the smaller m.

    Parameters
    ----------
    counts : array-like of int
    upper : float
        U (it scales E but not the minimiser; validated).
    epsilon : float
    noise_measure : {"mean", "std"}

    Returns
    -------
    int

    >>> m_opt([3, 2, 1], 65, 0.1), m_opt([3, 2, 1], 65, 0.5), m_opt([3, 2, 1], 65, 1.0)
    (1, 2, 3)
    """
    prof = _profile(counts)
    check_upper(upper)
    epsilon = check_epsilon(epsilon)
    c = check_noise_measure(noise_measure)
    v = prof.values
    s = prof.s_at_values
    n = prof.n_records
    e = (1.0 - s / n) + c * v / (epsilon * s)
    cand = _screen(e, minimise=True)
    if cand.size == 1:
        return int(v[cand[0]])
    eps = _decimal(epsilon)  # ties are settled on ε as written
    sqrt2 = noise_measure == "std"
    best = int(cand[0])
    for k in cand[1:].tolist():
        if _e_less(int(v[k]), int(s[k]), int(v[best]), int(s[best]), n, eps, sqrt2) < 0:
            best = k
    return int(v[best])


def _decimal(x: float) -> Fraction:
    """The value of ``x`` as the user wrote it: the shortest decimal that round-trips to ``x``.

    ε = 0.1 means 1/10, not the binary float just above it; ties of E(m) at such an ε then go
    to the smaller m, as SPEC's "smallest minimiser" intends (compare its rule for ⌈2/ε⌉).
    Shortest decimals are ordered like their floats, so comparisons stay monotone.
    """
    return Fraction(repr(float(x)))


def _decimal_ratio(x: float) -> tuple[int, int]:
    """:func:`_decimal` of a finite float > 0 as integers ``(digits, exponent)``, value
    ``digits · 10**exponent`` (parsed from ``repr``; much faster than building a Fraction)."""
    text = repr(x)
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    return int(whole + frac), exponent - len(frac)


def _float_floor_times_c(r: Fraction, sqrt2: bool) -> float:
    """The largest float whose decimal value (:func:`_decimal`) is ≤ c·r (c = 1 or √2), r > 0.

    Compared in integers: with ``r = p/q`` and ``decimal(x) = d · 10^e``, ``d 10^e q ≤ p``
    (c = 1) or ``d² 10^(2e) q² ≤ 2 p²`` (c = √2).
    """
    p, q = r.numerator, r.denominator
    power = 2 if sqrt2 else 1
    rhs_p = 2 * p * p if sqrt2 else p
    rhs_q = q * q if sqrt2 else q

    def exact_le(x: float) -> bool:
        d, e = _decimal_ratio(x)
        d **= power
        e *= power
        if e >= 0:
            return d * 10**e * rhs_q <= rhs_p
        return d * rhs_q <= rhs_p * 10 ** (-e)

    f = p / q  # correctly rounded
    if sqrt2:
        f *= math.sqrt(2.0)
    while not exact_le(f):
        f = math.nextafter(f, 0.0)
    while math.isfinite(math.nextafter(f, math.inf)) and exact_le(math.nextafter(f, math.inf)):
        f = math.nextafter(f, math.inf)
    return f


def staircase(counts, upper: float, noise_measure: str = "mean") -> list[Step]:
    """The whole ``m^(ε)`` staircase with exact breakpoints (SPEC section 4).

    With ``t = 1/ε`` each candidate count m is a line ``A_m + B_m t`` (``A_m = E1(m)``,
    ``B_m = c U m / S(m)``); ``min_m E`` is their lower envelope. ``A`` falls and ``B`` rises
    with m, so one convex-hull pass over the distinct counts (largest first, i.e. from t = 0)
    gives the envelope. The hull's shape does not depend on U or c (they scale t), so it is
    computed in exact integer arithmetic; a line that only touches the envelope at a point is
    dropped (the smaller m wins the tie there). The breakpoint between consecutive hull counts
    ``m_i > m_j`` is ``ε = c N (m_i S_j − m_j S_i) / (S_i S_j (S_i − S_j))``, rounded down to a
    float.

    Parameters
    ----------
    counts : array-like of int
    upper : float
    noise_measure : {"mean", "std"}

    Returns
    -------
    list of Step
        Increasing ε (and m), covering (0, ∞): ``m^(ε) = step.m`` for ε in
        ``(step.epsilon_from, step.epsilon_to]``. Equals :func:`m_opt` at every float ε.

    Counts (3, 2, 1): breakpoints 1/5 and 3/5, each shown as the largest float below it.

    >>> [(s.epsilon_from, s.epsilon_to, s.m) for s in staircase([3, 2, 1], 65)]
    [(0.0, 0.2, 1), (0.2, 0.6, 2), (0.6, inf, 3)]
    """
    prof = _profile(counts)
    check_upper(upper)
    check_noise_measure(noise_measure)
    sqrt2 = noise_measure == "std"
    v = prof.values.tolist()
    s = prof.s_at_values.tolist()
    n = prof.n_records
    # Hull over lines with decreasing slope (m descending): stack of indices into v.
    hull: list[int] = []
    for k in range(len(v) - 1, -1, -1):
        m3, s3 = v[k], s[k]
        while len(hull) >= 2:
            i1, i2 = hull[-2], hull[-1]
            m1, s1, m2, s2 = v[i1], s[i1], v[i2], s[i2]
            # t(l1, l3) <= t(l1, l2)  <=>  (S1-S3) S3 (m1 S2 - m2 S1) <= (S1-S2) S2 (m1 S3 - m3 S1)
            if (s1 - s3) * s3 * (m1 * s2 - m2 * s1) <= (s1 - s2) * s2 * (m1 * s3 - m3 * s1):
                hull.pop()
            else:
                break
        hull.append(k)
    # hull: m descending, optimal from t = 0 (ε = ∞) to t = ∞ (ε → 0). Build steps by ε.
    hull.reverse()
    steps: list[Step] = []
    lo = 0.0
    for a, b in zip(hull[:-1], hull[1:], strict=True):
        mj, sj, mi, si = v[a], s[a], v[b], s[b]  # m_j < m_i
        r = Fraction(n * (mi * sj - mj * si), si * sj * (si - sj))
        hi = _float_floor_times_c(r, sqrt2)
        if hi > lo:
            steps.append(Step(epsilon_from=lo, epsilon_to=hi, m=int(mj)))
            lo = hi
    steps.append(Step(epsilon_from=lo, epsilon_to=math.inf, m=int(v[hull[-1]])))
    return steps


def step_at(steps: list[Step], epsilon: float) -> int:
    """The m of the staircase step containing ε (steps are ``(epsilon_from, epsilon_to]``).

    >>> step_at(staircase([3, 2, 1], 65), 0.2), step_at(staircase([3, 2, 1], 65), 1.5)
    (1, 3)
    """
    epsilon = check_epsilon(epsilon)
    ends = [st.epsilon_to for st in steps]
    return steps[bisect.bisect_left(ends, epsilon)].m


# --------------------------------------------------------------------------------------------
# Other m_UB rules


def median_count(counts) -> int:
    """The median of counts: the ⌈L/2⌉-th largest m_ℓ (SPEC section 1; [4], Appendix B).

    >>> median_count([5, 1, 3, 2]), median_count([5, 1, 3]), median_count([9, 9, 1, 1, 1])
    (3, 3, 1)
    """
    c = check_counts(counts)
    k = c.size // 2  # ascending index of the ceil(L/2)-th largest
    return int(np.partition(c, k)[k])


def m_levy(counts) -> int:
    """``m_UB^(L) = argmax_{m ∈ [m_*, m*]} S(m)/√m``, the smallest maximiser (SPEC section 3).

    Between consecutive counts ``S(m)/√m = P/√m + r√m`` falls then rises, so its maximum over
    an interval is at an end: the maximiser is a count. Ties are settled exactly
    (``S_i² m_j`` vs ``S_j² m_i``).

    >>> m_levy([3, 2, 1]), m_levy([4, 1, 1, 1])
    (2, 1)
    """
    prof = _profile(counts)
    v = prof.values
    s = prof.s_at_values
    score = s / np.sqrt(v)
    cand = _screen(score, minimise=False)
    best = int(cand[0])
    for k in cand[1:].tolist():
        if int(s[k]) ** 2 * int(v[best]) > int(s[best]) ** 2 * int(v[k]):
            best = k
    return int(v[best])


def m_convex(counts) -> int:
    """``m_UB^(O,2)``: smallest minimiser of ``Ē(m) = 1 − S(m)/N + max(m, m̄)/m*`` ([4], eq. 5).

    ``m̄ = N/L``. Ē is convex and piecewise linear with kinks at the counts and at m̄, so the
    smallest integer minimiser is a count, ⌊m̄⌋ or ⌈m̄⌉: an exact scan of those candidates
    (integer keys ``L m* N · Ē = L N m* − L m* S(m) + N max(L m, N)``). Not the paper's KKT
    recipe, which misses interior minima (SPEC section 4).

    >>> m_convex([3, 2, 1]), m_convex([10, 1, 1, 1, 1])
    (2, 3)
    """
    prof = _profile(counts)
    n, big_l = prof.n_records, prof.n_users
    lo, hi = int(prof.values[0]), int(prof.values[-1])
    extra = [q for q in (n // big_l, -(-n // big_l)) if lo <= q <= hi]
    cand = np.unique(np.concatenate((prof.values, np.asarray(extra, dtype=np.int64))))
    s = prof.s_of(cand)
    top = hi
    approx = -big_l * top * s.astype(np.float64) + n * np.maximum(big_l * cand, n).astype(
        np.float64
    )
    keep = _screen(approx / (big_l * top * n), minimise=True)
    best_m, best_key = 0, None
    for m, sm in zip(cand[keep].tolist(), s[keep].tolist(), strict=True):
        key = -big_l * top * sm + n * max(big_l * m, n)
        if best_key is None or key < best_key:
            best_m, best_key = m, key
    return int(best_m)


# --------------------------------------------------------------------------------------------
# Baseline, opt-bounding, BestFit's exact bias


def baseline_error(counts, upper: float, epsilon: float, noise_measure: str = "mean") -> float:
    """Baseline's worst-case error ``E(m*) = c U m* / (N ε)`` (SPEC section 4; no bias).

    >>> baseline_error([3, 2, 1], 65, 0.5)
    65.0
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    epsilon = check_epsilon(epsilon)
    c = check_noise_measure(noise_measure)
    return float(c * upper * int(c_arr.max()) / (int(c_arr.sum()) * epsilon))


def opt_bounding_threshold(counts, upper: float, epsilon: float) -> float:
    """``T_ε``: the ⌈2/ε⌉-th largest of ``{U m_ℓ}``, 0 when ⌈2/ε⌉ > L ([5]; SPEC section 3).

    >>> opt_bounding_threshold([3, 2, 1], 65, 1.0), opt_bounding_threshold([3, 2, 1], 65, 0.5)
    (130.0, 0.0)
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    k = ceil_two_over_epsilon(check_epsilon(epsilon))
    if k > c_arr.size:
        return 0.0
    kth = int(np.partition(c_arr, c_arr.size - k)[c_arr.size - k])
    return float(upper * kth)


def opt_bounding_error(counts, upper: float, epsilon: float, noise_measure: str = "mean") -> float:
    """``E^OPT(ε) = (Σ_ℓ max((U m_ℓ − T_ε)/2, 0) + c T_ε / ε) / N`` ([5], Theorem III.1).

    The SPEC's formula has c = 1 (expected |noise|); "std" multiplies the noise part by √2.

    >>> opt_bounding_error([3, 2, 1], 65, 1.0)
    27.083333333333332
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    epsilon = check_epsilon(epsilon)
    c = check_noise_measure(noise_measure)
    k = ceil_two_over_epsilon(epsilon)  # T_ε as opt_bounding_threshold, inputs checked above
    t = (
        0.0
        if k > c_arr.size
        else float(upper * int(np.partition(c_arr, c_arr.size - k)[c_arr.size - k]))
    )
    bias = np.maximum((upper * c_arr - t) / 2.0, 0.0).sum()
    return float((bias + c * t / epsilon) / int(c_arr.sum()))


def bestfit_bias(counts, upper: float, m_ub: int) -> float:
    """Exact worst-case bias of the arrays BestFit actually builds (SPEC section 4).

    ``f_arr = Σ_ℓ α_ℓ x̄_ℓ`` with ``α_ℓ = Γ_ℓ / (K̄ w(array of ℓ))`` and ``Σ α_ℓ = 1``, while
    ``f = Σ_ℓ (m_ℓ/N) x̄_ℓ``; over x̄ ∈ [0, U]^L the worst ``|f_arr − f|`` is
    ``(U/2) Σ_ℓ |α_ℓ − m_ℓ/N|`` (x̄_ℓ = U where α_ℓ > m_ℓ/N, else 0). Unlike E1 (the papers'
    full-array model) it sees BestFit's partially filled arrays; it can be larger or smaller.

    >>> bestfit_bias([2, 1], 6, 2), clipping_error([2, 1], 6, 2)
    (1.0, 0.0)
    """
    c_arr = np.sort(check_counts(counts))[::-1]
    upper = check_upper(upper)
    m_ub = check_m_ub(m_ub, c_arr)
    gamma = clipped_counts(c_arr, m_ub)
    assignment, fills = bestfit_fill(gamma, m_ub)
    alpha = gamma / (fills.size * fills[assignment])
    return float(upper / 2.0 * np.abs(alpha - c_arr / c_arr.sum()).sum())
