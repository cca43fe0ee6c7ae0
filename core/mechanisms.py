"""The single-HAT mechanisms of SPEC section 3, each user-level epsilon-DP, vectorised across runs.

Every mechanism has the same signature, ``(hat, epsilon, m_ub, rng, size) -> Draws``, and is
registered in :data:`MECHANISMS` under the exact name of the SPEC section 3 table:

``baseline, arrayavg-wrap, arrayavg-best, levy-wrap, quantile-fixed-wrap, levy, quantile-fixed,
quantile-eps, opt-arrayavg, opt-arrayavg-convex, opt-bounding, akmv``.

:func:`run_mechanism` draws ``size`` independent runs at once (all of a mechanism's randomness,
interval estimation included, is redrawn per run); :func:`release` is one run with scalar fields.

Vectorisation (no Python loop per run). Given the data, the distribution of every private
sub-step is fixed: PrivateInterval's costs and the private quantile's interval probabilities
depend on the array means (or user sums) only, so all runs' bins / intervals are sampled at
once (cumulative probabilities + ``searchsorted``). The clipped mean
``(1/K̄) Σ Π[a,b](Ā_i)`` for per-run ``[a, b]`` is evaluated with the sorted means, their prefix
sums and ``searchsorted``; akmv's ``Σ min(s_ℓ, T̂)`` likewise.

Injectable noise (for the empirical privacy tests). All randomness goes through three small
module-level functions, so a test can monkeypatch one of them (e.g. halve the Laplace scale, or
double the exponential mechanism's epsilon) and run the real code path:

- :func:`_laplace` ``(rng, scale, size)``: every Laplace draw;
- :func:`_exponential_mechanism` ``(rng, utility, epsilon, sensitivity, size, log_base=None)``:
  every exponential-mechanism draw (PrivateInterval's bin, the private quantile's interval);
- :func:`_private_quantile` ``(rng, values, level, epsilon, *, lo, hi, sensitivity, size)``: every
  private quantile (Smith 2011), which itself calls :func:`_exponential_mechanism`.

WrapAround variants (SPEC section 3, "K in place of K̄ and twice the sensitivity"): one user can
straddle two WrapAround arrays, so *every* stage that reads array means gets the factor 2: the
Laplace scale ``4(b−a)/(Kε)``, the exponential mechanism's score sensitivity 2 in PrivateInterval
and the private quantile's utility sensitivity 2. Without the factor 2 in the interval stages they
would only be 2ε'-DP. (``arrayavg-wrap`` is charged the papers' ``2U/K``, SPEC section 2.)

One user (L = 1): every mechanism runs. With m_* = m* = m_UB there is one array (K = K̄ = 1);
opt-bounding releases the constant U/2 (T_ε = 0) unless ⌈2/ε⌉ = 1 (then it is Baseline); akmv's
quantile level 1 − ⌈2/ε⌉ is clamped to 0; quantile-eps' levels cross and are both 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.params import ceil_two_over_epsilon, check_epsilon, check_m_ub, check_positive_int

#: Levy's failure probability gamma in tau (SPEC section 3, "PrivateInterval ... γ = 0.2").
LEVY_GAMMA = 0.2
#: Levels of quantile-fixed (FixedQuantile, seed 000 section III-E1).
FIXED_QUANTILE_LEVELS = (0.1, 0.9)

__all__ = [
    "FIXED_QUANTILE_LEVELS",
    "LEVY_GAMMA",
    "MECHANISMS",
    "Draws",
    "Mechanism",
    "Release",
    "clipped_mean",
    "default_m_ub",
    "IntervalDistribution",
    "akmv_level",
    "exponential_mechanism_probabilities",
    "get_mechanism",
    "levy_tau",
    "private_interval_distribution",
    "private_quantile_distribution",
    "quantile_eps_levels",
    "release",
    "resolve",
    "run_mechanism",
]


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class Draws:
    """``size`` independent runs of one mechanism on one HAT (SPEC section 3).

    Attributes
    ----------
    mechanism : str
        Name from :data:`MECHANISMS`.
    epsilon : float
        Total privacy loss of each run.
    m_ub : int or None
        Array length used; None for mechanisms without arrays (baseline, opt-bounding, akmv),
        which ignore a user-chosen ``m_ub`` (``note`` says so).
    n_arrays : int or None
        K̄ (BestFit) or K (WrapAround); None without arrays.
    true_mean : float
        f = Σ s_ℓ / N, the value being estimated.
    noiseless : ndarray (size,)
        The value before the final Laplace noise (clipped mean for the given run's interval).
    sensitivity : ndarray (size,)
        User-level sensitivity of ``noiseless`` given the run's interval (charged 2U/K for
        arrayavg-wrap).
    noise_scale : ndarray (size,)
        Laplace scale b of the final noise (E|noise| = b).
    clip_lo, clip_hi : ndarray (size,) or None
        The clipping interval of the run: of array means for levy / quantile mechanisms, of user
        sums ([0, T̂]) for akmv; None where there is no common interval (baseline, arrayavg,
        opt-bounding, whose intervals are per user).
    threshold : ndarray (size,) or None
        T_ε (opt-bounding, constant) or T̂ (akmv, private); None otherwise.
    estimates : ndarray (size,)
        The released values, ``noiseless + Lap(noise_scale)``.
    note : str
        Anything a reader should know (m_ub ignored, T_ε = 0, ...); empty otherwise.
    """

    mechanism: str
    epsilon: float
    m_ub: int | None
    n_arrays: int | None
    true_mean: float
    noiseless: np.ndarray
    sensitivity: np.ndarray
    noise_scale: np.ndarray
    clip_lo: np.ndarray | None
    clip_hi: np.ndarray | None
    threshold: np.ndarray | None
    estimates: np.ndarray
    note: str = ""

    @property
    def size(self) -> int:
        """Number of runs."""
        return int(self.estimates.size)

    @property
    def abs_errors(self) -> np.ndarray:
        """|M(D) − f(D)| per run (SPEC section 3, Evaluation)."""
        return np.abs(self.estimates - self.true_mean)


@dataclass(frozen=True, kw_only=True)
class Release:
    """One run of a mechanism, with what produced it (scalars; see :class:`Draws`)."""

    mechanism: str
    epsilon: float
    m_ub: int | None
    n_arrays: int | None
    sensitivity: float
    noise_scale: float
    clip_interval: tuple[float, float] | None
    threshold: float | None
    noiseless: float
    estimate: float
    true_mean: float
    note: str = ""


RunFn = Callable[..., Draws]


@dataclass(frozen=True, kw_only=True)
class Mechanism:
    """One entry of :data:`MECHANISMS`.

    Attributes
    ----------
    name : str
        The SPEC section 3 name.
    title : str
        A human label following the papers.
    grouping : str or None
        "wraparound", "bestfit" or None.
    m_ub_rule : str or None
        Default m_UB: "median", "levy" (m_UB^(L)), "opt" (m^(ε)), "convex" (m_UB^(O,2)) or None
        when the mechanism has no arrays (a user-chosen m_ub is then ignored).
    reference : str
        Where it comes from.
    run : callable
        ``run(hat, epsilon, m_ub, rng, size) -> Draws`` with validated inputs and ``m_ub``
        already resolved (None for mechanisms without arrays).
    laplace_share : float
        The share of ε spent by the final Laplace step (1, or 1/2 when an interval or threshold
        is estimated privately first); publishing checks OpenDP's accounting against it.
    """

    name: str
    title: str
    grouping: str | None
    m_ub_rule: str | None
    reference: str
    run: RunFn = field(repr=False)
    laplace_share: float = 1.0

    @property
    def uses_m_ub(self) -> bool:
        """Whether the mechanism builds arrays of length m_UB."""
        return self.m_ub_rule is not None


# ---------------------------------------------------------------------------------------------
# Injectable randomness (monkeypatch these in privacy tests)
# ---------------------------------------------------------------------------------------------


def _laplace(rng: np.random.Generator, scale, size: int) -> np.ndarray:
    """Zero-mean Laplace noise with scale ``scale`` (scalar or (size,)); scale 0 gives 0."""
    return rng.laplace(0.0, scale, size)


def exponential_mechanism_probabilities(
    utility, epsilon: float, sensitivity: float, log_base=None
) -> np.ndarray:
    """Probabilities ∝ ``base · exp(ε · utility / (2 · sensitivity))``, computed in log space.

    Parameters
    ----------
    utility : array (k,)
        Score of each outcome (higher is better).
    epsilon : float
        Budget of this exponential mechanism.
    sensitivity : float
        Sensitivity of the utility.
    log_base : array (k,) or None
        Log of a base measure (e.g. interval widths); ``-inf`` gives probability 0.

    >>> p = exponential_mechanism_probabilities([0.0, -4.0], 1.0, 1.0)
    >>> bool(abs(p[0] / p[1] - np.exp(2.0)) < 1e-12)
    True
    """
    logw = (epsilon / (2.0 * sensitivity)) * np.asarray(utility, dtype=np.float64)
    if log_base is not None:
        logw = logw + np.asarray(log_base, dtype=np.float64)
    top = np.max(logw)
    if not np.isfinite(top):
        raise HexplorerError("The exponential mechanism got no outcome with positive probability.")
    weights = np.exp(logw - top)
    return weights / weights.sum()


def _sample_index(rng: np.random.Generator, probabilities: np.ndarray, size: int) -> np.ndarray:
    """Indices drawn from ``probabilities`` (cumulative sums + searchsorted), never a 0-prob one."""
    cdf = np.cumsum(probabilities)
    idx = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
    last_positive = int(np.flatnonzero(probabilities > 0)[-1])
    return np.minimum(idx, last_positive)


def _exponential_mechanism(
    rng: np.random.Generator,
    utility,
    epsilon: float,
    sensitivity: float,
    size: int,
    log_base=None,
) -> np.ndarray:
    """``size`` independent draws of the exponential mechanism (indices into ``utility``)."""
    probs = exponential_mechanism_probabilities(utility, epsilon, sensitivity, log_base)
    return _sample_index(rng, probs, size)


def _private_quantile(
    rng: np.random.Generator,
    values,
    level: float,
    epsilon: float,
    *,
    lo: float,
    hi: float,
    sensitivity: float = 1.0,
    size: int,
) -> np.ndarray:
    """``size`` independent private ``level``-quantiles of ``values`` (Smith 2011, Algorithm 2).

    See :func:`private_quantile_distribution`; a uniform point is drawn inside the chosen interval.
    """
    edges, probs = private_quantile_distribution(
        values, level, epsilon, lo=lo, hi=hi, sensitivity=sensitivity
    )
    widths = np.diff(edges)
    log_base = np.full(widths.shape, -np.inf)
    log_base[widths > 0] = np.log(widths[widths > 0])
    n = edges.size - 2
    idx = _exponential_mechanism(
        rng, -np.abs(np.arange(n + 1) - level * n), epsilon, sensitivity, size, log_base
    )
    return edges[idx] + rng.random(size) * widths[idx]


# ---------------------------------------------------------------------------------------------
# Deterministic building blocks (exact values for tests and the Learn page)
# ---------------------------------------------------------------------------------------------


def private_quantile_distribution(
    values, level: float, epsilon: float, *, lo: float, hi: float, sensitivity: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Interval edges and probabilities of Smith's private quantile (SPEC section 3).

    Values are clamped to [lo, hi] and sorted to z_1 ≤ … ≤ z_n; z_0 = lo, z_{n+1} = hi. Interval
    i ∈ {0..n} = [z_i, z_{i+1}] is chosen with probability
    ∝ (z_{i+1} − z_i) · exp(−ε |i − q n| / (2 · sensitivity)) (sensitivity 1 in the SPEC; 2 for
    WrapAround arrays), computed in log space; empty intervals get probability 0.

    Returns
    -------
    edges : ndarray (n + 2,)
        z_0..z_{n+1}.
    probabilities : ndarray (n + 1,)

    >>> e, p = private_quantile_distribution([1.0, 3.0], 0.5, 2.0, lo=0.0, hi=4.0)
    >>> e.tolist(), [round(float(x), 6) for x in p / p[1]]  # e^-1 / 2 = 0.18394
    ([0.0, 1.0, 3.0, 4.0], [0.18394, 1.0, 0.18394])
    """
    z = np.sort(np.clip(np.asarray(values, dtype=np.float64), lo, hi))
    edges = np.concatenate(([lo], z, [hi]))
    widths = np.diff(edges)
    n = z.size
    log_base = np.full(widths.shape, -np.inf)
    log_base[widths > 0] = np.log(widths[widths > 0])
    probs = exponential_mechanism_probabilities(
        -np.abs(np.arange(n + 1) - level * n), epsilon, sensitivity, log_base
    )
    return edges, probs


def levy_tau(upper: float, n_arrays: int, m_ub: int, gamma: float = LEVY_GAMMA) -> float:
    """Concentration radius τ = U · sqrt(log(2K̄/γ) / (2 m_UB)) (seed 001, eq. (8)).

    >>> round(levy_tau(10.0, 2, 2), 6)  # 10 * sqrt(log(20) / 4)
    8.654092
    """
    return float(upper * math.sqrt(math.log(2.0 * n_arrays / gamma) / (2.0 * m_ub)))


def _n_bins(upper: float, tau: float) -> int:
    """⌈U/τ⌉ (at least 1), treating U/τ within 1e-9 of an integer as that integer."""
    ratio = upper / tau
    nearest = round(ratio)
    if abs(ratio - nearest) <= 1e-9 * max(1.0, ratio):
        return max(1, int(nearest))
    return max(1, int(math.ceil(ratio)))


@dataclass(frozen=True, kw_only=True, eq=False)
class IntervalDistribution:
    """PrivateInterval's deterministic part (seed 001, Algorithm 3).

    Attributes: ``tau``, ``midpoints`` T, ``assigned`` (index of each value's μ_i in T),
    ``costs`` c(x) for x in T, ``probabilities`` of selecting each x, and the interval ends
    ``lo``/``hi`` each x would give (a = max(0, x − 3τ/2), b = min(U, x + 3τ/2)).
    """

    tau: float
    midpoints: np.ndarray
    assigned: np.ndarray
    costs: np.ndarray
    probabilities: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def private_interval_distribution(
    means, epsilon: float, tau: float, upper: float, *, sensitivity: float = 1.0
) -> IntervalDistribution:
    """PrivateInterval of seed 001, Algorithm 3, as SPEC section 3 settles it (budget ε/2).

    Split (0, U] into ⌈U/τ⌉ bins of width τ with midpoints T (one bin if τ ≥ U); map each mean
    to its nearest midpoint μ_i (halfway → the lower); cost c(x) = max(#{μ_i < x}, #{μ_i > x});
    select x with probability ∝ exp(−ε c(x) / 4), i.e. the exponential mechanism with budget
    ε/2 and score sensitivity 1 (``sensitivity`` = 2 for WrapAround arrays gives exp(−ε c / 8)).

    Parameters
    ----------
    means : array
        The array means Ā_i.
    epsilon : float
        The mechanism's *total* ε (this step spends ε/2).
    """
    n_bins = _n_bins(upper, tau)
    # Bins (jτ, (j+1)τ], j < ⌈U/τ⌉: when U/τ is not an integer the last bin (and possibly its
    # midpoint) reaches past U; b = min(U, μ̂ + 3τ/2) brings the interval back into [0, U].
    mids = (np.arange(n_bins) + 0.5) * tau
    x = np.asarray(means, dtype=np.float64)
    # argmin_j |x - T_j|, ties to the lower midpoint: compare the two neighbours explicitly.
    right = np.clip(np.searchsorted(mids, x, side="left"), 0, n_bins - 1)
    left = np.maximum(right - 1, 0)
    assigned = np.where(np.abs(x - mids[left]) <= np.abs(mids[right] - x), left, right)
    per_bin = np.bincount(assigned, minlength=n_bins)
    at_or_below = np.cumsum(per_bin)
    below = at_or_below - per_bin
    above = x.size - at_or_below
    costs = np.maximum(below, above)
    probs = exponential_mechanism_probabilities(-costs, epsilon / 2.0, sensitivity)
    return IntervalDistribution(
        tau=float(tau),
        midpoints=mids,
        assigned=assigned,
        costs=costs,
        probabilities=probs,
        lo=np.maximum(0.0, mids - 1.5 * tau),
        hi=np.minimum(upper, mids + 1.5 * tau),
    )


def clipped_mean(values, lo, hi) -> np.ndarray:
    """(1/n) Σ_i Π[lo,hi](v_i) for each pair (lo, hi) of arrays, via sorting and prefix sums.

    >>> clipped_mean([1.0, 5.0, 9.0], np.array([2.0, 0.0]), np.array([6.0, 10.0])).tolist()
    [4.333333333333333, 5.0]
    """
    v = np.sort(np.asarray(values, dtype=np.float64))
    return _clipped_sums(v, _prefix(v), np.asarray(lo, float), np.asarray(hi, float)) / v.size


def _prefix(sorted_values: np.ndarray) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(sorted_values)))


def _clipped_sums(sorted_values, prefix, lo, hi) -> np.ndarray:
    """Σ_i min(hi, max(lo, v_i)) for sorted v and per-run lo ≤ hi."""
    n = sorted_values.size
    i_lo = np.searchsorted(sorted_values, lo, side="left")  # #{v < lo}
    i_hi = np.searchsorted(sorted_values, hi, side="right")  # #{v <= hi}
    i_hi = np.maximum(i_hi, i_lo)
    return lo * i_lo + (prefix[i_hi] - prefix[i_lo]) + hi * (n - i_hi)


# ---------------------------------------------------------------------------------------------
# The mechanisms
# ---------------------------------------------------------------------------------------------


def _arrays(hat: HatData, strategy: str, m_ub: int):
    from core import grouping

    return (
        grouping.wraparound(hat, m_ub) if strategy == "wraparound" else grouping.bestfit(hat, m_ub)
    )


def _draws(name, hat, epsilon, m_ub, n_arrays, noiseless, sensitivity, scale, rng, size, **kw):
    """Add the final Laplace noise and package the runs."""
    noiseless = np.broadcast_to(np.asarray(noiseless, dtype=np.float64), (size,)).copy()
    sensitivity = np.broadcast_to(np.asarray(sensitivity, dtype=np.float64), (size,)).copy()
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (size,)).copy()
    estimates = noiseless + _laplace(rng, scale, size)
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


def _baseline(hat, epsilon, m_ub, rng, size):
    """f + Lap(U m* / (N ε)) (seed 000, section III-B): no clipping, sensitivity U m*/N."""
    sens = hat.upper * hat.m_max / hat.n_records
    return _draws(
        "baseline", hat, epsilon, None, None, hat.true_mean, sens, sens / epsilon, rng, size
    )


def _arrayavg(strategy: str, name: str) -> RunFn:
    def run(hat, epsilon, m_ub, rng, size, *, arrays=None):
        """f_arr + Lap(U / (K̄ ε)) (BestFit) or the papers' charged Lap(2U / (K ε)) (WrapAround)."""
        arr = arrays if arrays is not None else _arrays(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        sens = factor * hat.upper / arr.n_arrays
        return _draws(
            name, hat, epsilon, m_ub, arr.n_arrays, arr.f_arr, sens, sens / epsilon, rng, size
        )

    return run


def _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size):
    """(1/K̄) Σ Π[a,b](Ā_i) + Lap(2 · factor (b − a) / (K̄ ε)) with per-run a ≤ b (budget ε/2)."""
    means = np.sort(np.clip(np.asarray(arr.means, dtype=np.float64), 0.0, hat.upper))
    k = arr.n_arrays
    noiseless = _clipped_sums(means, _prefix(means), a, b) / k
    sens = factor * (b - a) / k
    return _draws(
        name, hat, epsilon, m_ub, k, noiseless, sens, 2.0 * sens / epsilon, rng, size,
        clip_lo=a, clip_hi=b,
    )  # fmt: skip


def _levy(strategy: str, name: str) -> RunFn:
    def run(hat, epsilon, m_ub, rng, size, *, arrays=None):
        """Levy (seed 001, section III-D): PrivateInterval with ε/2, γ = 0.2, then clipped mean."""
        arr = arrays if arrays is not None else _arrays(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        tau = levy_tau(hat.upper, arr.n_arrays, m_ub)
        dist = private_interval_distribution(arr.means, epsilon, tau, hat.upper, sensitivity=factor)
        idx = _exponential_mechanism(rng, -dist.costs, epsilon / 2.0, factor, size)
        a, b = dist.lo[idx], dist.hi[idx]
        return _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size)

    return run


def _quantile_interval(rng, means, levels, epsilon, upper, factor, size):
    """a', b': private quantiles at ``levels`` with ε/4 each (range [0, U]); swapped if reversed."""
    q_lo, q_hi = levels
    a = _private_quantile(
        rng, means, q_lo, epsilon / 4.0, lo=0.0, hi=upper, sensitivity=factor, size=size
    )
    b = _private_quantile(
        rng, means, q_hi, epsilon / 4.0, lo=0.0, hi=upper, sensitivity=factor, size=size
    )
    return np.minimum(a, b), np.maximum(a, b)


def quantile_eps_levels(epsilon: float, n_arrays: int) -> tuple[float, float]:
    """Levels t/K̄ and 1 − t/K̄, t = ⌈2/ε⌉, both 0.5 if they cross (seed 000, section III-E2).

    >>> quantile_eps_levels(0.5, 10), quantile_eps_levels(0.5, 7)
    ((0.4, 0.6), (0.5, 0.5))
    """
    t = ceil_two_over_epsilon(epsilon)
    lo, hi = t / n_arrays, 1.0 - t / n_arrays
    if lo > hi:
        return 0.5, 0.5
    return lo, hi


def _quantile(strategy: str, name: str, eps_dependent: bool) -> RunFn:
    def run(hat, epsilon, m_ub, rng, size, *, arrays=None):
        """Quantile (seed 001, section III-E): private interquantile interval, then clipped mean."""
        arr = arrays if arrays is not None else _arrays(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        levels = (
            quantile_eps_levels(epsilon, arr.n_arrays) if eps_dependent else FIXED_QUANTILE_LEVELS
        )
        a, b = _quantile_interval(rng, arr.means, levels, epsilon, hat.upper, factor, size)
        return _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size)

    return run


def _opt_bounding(hat, epsilon, m_ub, rng, size):
    """(1/N) Σ m_ℓ Π[a_ℓ,b_ℓ](x̄_ℓ) + Lap(T_ε / (N ε)) (seed 004, Theorem III.1, d = 1).

    T_ε depends on counts only (public), so there is no budget split. When T_ε = 0
    (⌈2/ε⌉ > L) every interval is {U/2}: the release is the constant U/2 with no noise.
    """
    from core.worstcase import opt_bounding_threshold

    m = hat.counts.astype(np.float64)
    u = hat.upper
    t_eps = float(opt_bounding_threshold(hat.counts, u, epsilon))
    a = np.maximum((u * m - t_eps) / (2.0 * m), 0.0)
    b = np.minimum((u * m + t_eps) / (2.0 * m), u)
    noiseless = float(np.sum(m * np.clip(hat.user_means, a, b)) / hat.n_records)
    sens = t_eps / hat.n_records
    note = (
        "T_eps = 0 (ceil(2/eps) > L): the release is the constant U/2, no noise."
        if t_eps == 0
        else ""
    )
    return _draws(
        "opt-bounding", hat, epsilon, None, None, noiseless, sens, sens / epsilon, rng, size,
        threshold=np.full(size, t_eps), note=note,
    )  # fmt: skip


def akmv_level(epsilon: float, n_users: int) -> float:
    """Quantile level of akmv's T̂: 1 − ⌈2/ε⌉/L clamped to [0, 1] (SPEC section 3)."""
    return float(min(1.0, max(0.0, 1.0 - ceil_two_over_epsilon(epsilon) / n_users)))


def _akmv(hat, epsilon, m_ub, rng, size):
    """(1/N) Σ min(s_ℓ, T̂) + Lap(2 T̂ / (N ε)), T̂ a private quantile with ε/2 on [0, U m*].

    Amin et al. 2019 adapted (SPEC section 3): T̂ estimates the ⌈2/ε⌉-th largest user sum.
    """
    sums = np.sort(hat.sums)
    t_hat = _private_quantile(
        rng, sums, akmv_level(epsilon, hat.n_users), epsilon / 2.0,
        lo=0.0, hi=hat.upper * hat.m_max, sensitivity=1.0, size=size,
    )  # fmt: skip
    zero = np.zeros(size)
    noiseless = _clipped_sums(sums, _prefix(sums), zero, t_hat) / hat.n_records
    sens = t_hat / hat.n_records
    return _draws(
        "akmv", hat, epsilon, None, None, noiseless, sens, 2.0 * sens / epsilon, rng, size,
        clip_lo=zero, clip_hi=t_hat, threshold=t_hat,
    )  # fmt: skip


_S0 = "seed 000 section III"
MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(name="baseline", title="Baseline", grouping=None, m_ub_rule=None,
                  reference=f"{_S0}-B", run=_baseline),
        Mechanism(name="arrayavg-wrap", title="Array-Averaging (WrapAround)",
                  grouping="wraparound", m_ub_rule="median", reference=f"{_S0}-C",
                  run=_arrayavg("wraparound", "arrayavg-wrap")),
        Mechanism(name="arrayavg-best", title="Array-Averaging (BestFit)", grouping="bestfit",
                  m_ub_rule="median", reference=f"{_S0}-C",
                  run=_arrayavg("bestfit", "arrayavg-best")),
        Mechanism(name="levy-wrap", title="Levy (WrapAround)", grouping="wraparound",
                  m_ub_rule="levy", reference=f"{_S0}-D, Figure 1",
                  run=_levy("wraparound", "levy-wrap"), laplace_share=0.5),
        Mechanism(name="quantile-fixed-wrap", title="FixedQuantile (WrapAround)",
                  grouping="wraparound", m_ub_rule="levy", reference=f"{_S0}-E1, Figure 1",
                  run=_quantile("wraparound", "quantile-fixed-wrap", eps_dependent=False), laplace_share=0.5),
        Mechanism(name="levy", title="Levy (BestFit)", grouping="bestfit", m_ub_rule="levy",
                  reference=f"{_S0}-D", run=_levy("bestfit", "levy"), laplace_share=0.5),
        Mechanism(name="quantile-fixed", title="FixedQuantile (BestFit)", grouping="bestfit",
                  m_ub_rule="levy", reference=f"{_S0}-E1",
                  run=_quantile("bestfit", "quantile-fixed", eps_dependent=False), laplace_share=0.5),
        Mechanism(name="quantile-eps", title="ε-DependentQuantile (BestFit)", grouping="bestfit",
                  m_ub_rule="levy", reference=f"{_S0}-E2",
                  run=_quantile("bestfit", "quantile-eps", eps_dependent=True), laplace_share=0.5),
        Mechanism(name="opt-arrayavg", title="OPT-Array-Averaging", grouping="bestfit",
                  m_ub_rule="opt", reference="seed 003 (m_UB^(O,1) = m^(ε))",
                  run=_arrayavg("bestfit", "opt-arrayavg")),
        Mechanism(name="opt-arrayavg-convex", title="OPT-Array-Averaging (convex proxy)",
                  grouping="bestfit", m_ub_rule="convex", reference="seed 003, eq. (5)",
                  run=_arrayavg("bestfit", "opt-arrayavg-convex")),
        Mechanism(name="opt-bounding", title="Worst-case-optimal bounding", grouping=None,
                  m_ub_rule=None, reference="seed 004, Theorem III.1", run=_opt_bounding),
        Mechanism(name="akmv", title="AKMV bounding", grouping=None, m_ub_rule=None,
                  reference="Amin et al. 2019, adapted (SPEC section 3)", run=_akmv, laplace_share=0.5),
    )
}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------


def get_mechanism(name: str) -> Mechanism:
    """The :class:`Mechanism` called ``name``; the error lists the valid names."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise HexplorerError(
            f"The 'mechanism' parameter must be one of {', '.join(MECHANISMS)}. "
            f"Got {name!r} instead."
        ) from None


def _check_hat(hat) -> HatData:
    if not isinstance(hat, HatData):
        raise HexplorerError(
            f"The 'hat' parameter must be a HatData. Got {type(hat).__name__} instead."
        )
    return hat


def default_m_ub(name: str, hat: HatData, epsilon: float) -> int | None:
    """The m_UB a mechanism uses when the user gives none (SPEC section 3 table); None if no arrays.

    median → ``median_count``; levy → m_UB^(L) (``m_levy``); opt → m^(ε) (``m_opt``, noise
    measure "mean"); convex → m_UB^(O,2) (``m_convex``).
    """
    mech = get_mechanism(name)
    _check_hat(hat)
    epsilon = check_epsilon(epsilon)
    if mech.m_ub_rule is None:
        return None
    from core import worstcase

    counts = hat.counts
    if mech.m_ub_rule == "median":
        return int(worstcase.median_count(counts))
    if mech.m_ub_rule == "levy":
        return int(worstcase.m_levy(counts))
    if mech.m_ub_rule == "opt":
        return int(worstcase.m_opt(counts, hat.upper, epsilon))
    return int(worstcase.m_convex(counts))


def resolve(
    name: str, hat: HatData, epsilon: float, m_ub=None
) -> tuple[Mechanism, float, int | None, str]:
    """Validate inputs and resolve m_UB: returns (mechanism, epsilon, m_ub, note).

    A user-chosen ``m_ub`` is validated (an integer in [m_*, m*]) and overrides the default of
    mechanisms with arrays; mechanisms without arrays ignore it (m_ub None, note says so).
    """
    mech = get_mechanism(name)
    _check_hat(hat)
    epsilon = check_epsilon(epsilon)
    note = ""
    if m_ub is not None:
        m_ub = check_m_ub(m_ub, hat.counts)
        if not mech.uses_m_ub:
            note = f"{mech.name} uses no arrays; m_ub = {m_ub} was ignored."
            m_ub = None
    elif mech.uses_m_ub:
        m_ub = default_m_ub(name, hat, epsilon)
    return mech, epsilon, m_ub, note


def run_mechanism(
    name: str,
    hat: HatData,
    epsilon: float,
    *,
    m_ub: int | None = None,
    rng: np.random.Generator,
    size: int,
    _arrays_cache: dict | None = None,
) -> Draws:
    """``size`` independent runs of mechanism ``name`` on ``hat`` (SPEC section 3), vectorised.

    Parameters
    ----------
    name : str
        One of :data:`MECHANISMS`.
    hat : HatData
    epsilon : float
        Privacy loss of each run (> 0).
    m_ub : int, optional
        Overrides the mechanism's default m_UB (must lie in [m_*, m*]); ignored (and reported
        as None) by baseline, opt-bounding and akmv.
    rng : numpy.random.Generator
    size : int
        Number of runs (>= 1).
    _arrays_cache : dict, optional
        Private: arrays keyed by (strategy, m_UB), shared across calls by
        :func:`core.evaluation.monte_carlo` so each grouping is built once per table.

    Raises
    ------
    HexplorerError
        Unknown name (the message lists the valid ones), epsilon <= 0, m_ub outside [m_*, m*].
    NotApplicableError
        No array can be formed (K = 0).

    >>> from core.hat import HatData
    >>> h = HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)
    >>> d = run_mechanism("baseline", h, 1.0, rng=np.random.default_rng(0), size=3)
    >>> float(d.sensitivity[0]), d.estimates.shape
    (5.714285714285714, (3,))
    """
    mech, epsilon, m_ub, note = resolve(name, hat, epsilon, m_ub)
    size = check_positive_int("size", size)
    if not isinstance(rng, np.random.Generator):
        raise HexplorerError(f"The 'rng' parameter must be a numpy Generator. Got {rng!r} instead.")
    kwargs = {}
    if mech.grouping is not None and _arrays_cache is not None:
        key = (mech.grouping, m_ub)
        if key not in _arrays_cache:
            _arrays_cache[key] = _arrays(hat, mech.grouping, cast(int, m_ub))
        kwargs["arrays"] = _arrays_cache[key]
    draws = mech.run(hat, epsilon, m_ub, rng, size, **kwargs)
    if note:
        joined = f"{note} {draws.note}".strip()
        draws = replace(draws, note=joined)
    return draws


def release(
    name: str, hat: HatData, epsilon: float, *, m_ub: int | None = None, rng: np.random.Generator
) -> Release:
    """One run of mechanism ``name`` (see :func:`run_mechanism`), as scalars.

    This is a *simulated* release (SPEC section 7): a published release goes through
    ``core.publish`` with a vetted sampler and a ledger.
    """
    d = run_mechanism(name, hat, epsilon, m_ub=m_ub, rng=rng, size=1)
    clip = None
    if d.clip_lo is not None and d.clip_hi is not None:
        clip = (float(d.clip_lo[0]), float(d.clip_hi[0]))
    return Release(
        mechanism=d.mechanism,
        epsilon=d.epsilon,
        m_ub=d.m_ub,
        n_arrays=d.n_arrays,
        sensitivity=float(d.sensitivity[0]),
        noise_scale=float(d.noise_scale[0]),
        clip_interval=clip,
        threshold=None if d.threshold is None else float(d.threshold[0]),
        noiseless=float(d.noiseless[0]),
        estimate=float(d.estimates[0]),
        true_mean=d.true_mean,
        note=d.note,
    )
