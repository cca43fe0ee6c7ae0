"""Levy and the quantile mechanisms ([1] sections III-D, III-E; [2]; SPEC section 3):
clip the array means into a privately chosen interval [a, b] (half the budget), then average
and add Laplace noise of the interval's width (the other half).

- Levy: PrivateInterval ([2], Algorithm 3) with ε/2 and γ = 0.2;
- FixedQuantile: private 0.1- and 0.9-quantiles of the array means, ε/4 each;
- ε-DependentQuantile: private quantiles at levels t/K̄ and 1 − t/K̄, t = ⌈2/ε⌉, ε/4 each.

Vectorisation: PrivateInterval's costs and the private quantile's interval probabilities depend on
the array means only, so all runs' bins / intervals are sampled at once (cumulative
probabilities + ``searchsorted``; see :mod:`core.mechanisms.noise`).

WrapAround variants (SPEC section 3, "K in place of K̄ and twice the sensitivity"): one user can
straddle two WrapAround arrays, so *every* stage that reads array means gets the factor 2: the
Laplace scale ``4(b−a)/(Kε)``, the exponential mechanism's score sensitivity 2 in PrivateInterval
and the private quantile's utility sensitivity 2. Without the factor 2 in the interval stages they
would only be 2ε'-DP.

One user (L = 1): with m_* = m* = m_UB there is one array (K = K̄ = 1); quantile-eps' levels
cross and are both 0.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.mechanisms import noise
from core.mechanisms.common import arrays_of, clipped_sums, draws, prefix_sums
from core.mechanisms.noise import exponential_mechanism_probabilities
from core.mechanisms.registry import Mechanism, RunFn, register
from core.params import ceil_two_over_epsilon

#: Levy's failure probability gamma in tau (SPEC section 3, "PrivateInterval ... γ = 0.2").
LEVY_GAMMA = 0.2
#: Levels of quantile-fixed (FixedQuantile, [1] section III-E1).
FIXED_QUANTILE_LEVELS = (0.1, 0.9)

__all__ = [
    "FIXED_QUANTILE_LEVELS",
    "LEVY_GAMMA",
    "IntervalDistribution",
    "levy_tau",
    "private_interval_distribution",
    "quantile_eps_levels",
]


def levy_tau(upper: float, n_arrays: int, m_ub: int, gamma: float = LEVY_GAMMA) -> float:
    """Concentration radius τ = U · sqrt(log(2K̄/γ) / (2 m_UB)) ([2], eq. (8)).

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
    """PrivateInterval's deterministic part ([2], Algorithm 3).

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
    """PrivateInterval of [2], Algorithm 3, as SPEC section 3 settles it (budget ε/2).

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


def _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size):
    """(1/K̄) Σ Π[a,b](Ā_i) + Lap(2 · factor (b − a) / (K̄ ε)) with per-run a ≤ b (budget ε/2)."""
    means = np.sort(np.clip(np.asarray(arr.means, dtype=np.float64), 0.0, hat.upper))
    k = arr.n_arrays
    noiseless = clipped_sums(means, prefix_sums(means), a, b) / k
    sens = factor * (b - a) / k
    return draws(
        name, hat, epsilon, m_ub, k, noiseless, sens, 2.0 * sens / epsilon, rng, size,
        clip_lo=a, clip_hi=b,
    )  # fmt: skip


def _levy(strategy: str, name: str) -> RunFn:
    def run(hat, epsilon, m_ub, rng, size, *, arrays=None):
        """Levy ([2], section III-D): PrivateInterval with ε/2, γ = 0.2, then clipped mean."""
        arr = arrays if arrays is not None else arrays_of(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        tau = levy_tau(hat.upper, arr.n_arrays, m_ub)
        dist = private_interval_distribution(arr.means, epsilon, tau, hat.upper, sensitivity=factor)
        idx = noise._exponential_mechanism(rng, -dist.costs, epsilon / 2.0, factor, size)
        a, b = dist.lo[idx], dist.hi[idx]
        return _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size)

    return run


def _quantile_interval(rng, means, levels, epsilon, upper, factor, size):
    """a', b': private quantiles at ``levels`` with ε/4 each (range [0, U]); swapped if reversed."""
    q_lo, q_hi = levels
    a = noise._private_quantile(
        rng, means, q_lo, epsilon / 4.0, lo=0.0, hi=upper, sensitivity=factor, size=size
    )
    b = noise._private_quantile(
        rng, means, q_hi, epsilon / 4.0, lo=0.0, hi=upper, sensitivity=factor, size=size
    )
    return np.minimum(a, b), np.maximum(a, b)


def quantile_eps_levels(epsilon: float, n_arrays: int) -> tuple[float, float]:
    """Levels t/K̄ and 1 − t/K̄, t = ⌈2/ε⌉, both 0.5 if they cross ([1], section III-E2).

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
        """Quantile ([2], section III-E): private interquantile interval, then clipped mean."""
        arr = arrays if arrays is not None else arrays_of(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        levels = (
            quantile_eps_levels(epsilon, arr.n_arrays) if eps_dependent else FIXED_QUANTILE_LEVELS
        )
        a, b = _quantile_interval(rng, arr.means, levels, epsilon, hat.upper, factor, size)
        return _clip_and_noise(name, hat, epsilon, m_ub, arr, factor, a, b, rng, size)

    return run


_S0 = "[1] section III"
_INTERVAL = "then the clipped mean of the array means plus Laplace noise 2(b−a)/(K̄ε) (ε/2)"
for _mechanism in (
    Mechanism(
        name="levy-wrap", title="Levy (WrapAround)", family="Levy and quantile",
        description=(
            "Levy on WrapAround arrays, with K in place of K̄ and every stage's sensitivity "
            "doubled (the papers' Figure 1 comparison)."
        ),
        reference=f"{_S0}-D, Figure 1", spec="SPEC §2, §3", grouping="wraparound",
        m_ub_rule="levy", colour="#88CCEE", run=_levy("wraparound", "levy-wrap"),
        laplace_share=0.5,
    ),
    Mechanism(
        name="quantile-fixed-wrap", title="FixedQuantile (WrapAround)",
        family="Levy and quantile",
        description=(
            "FixedQuantile on WrapAround arrays, with K in place of K̄ and every stage's "
            "sensitivity doubled (the papers' Figure 1 comparison)."
        ),
        reference=f"{_S0}-E1, Figure 1", spec="SPEC §2, §3",
        grouping="wraparound", m_ub_rule="levy", colour="#DDCC77",
        run=_quantile("wraparound", "quantile-fixed-wrap", eps_dependent=False),
        laplace_share=0.5,
    ),
    Mechanism(
        name="levy", title="Levy (BestFit)", family="Levy and quantile",
        description=f"[a, b] from PrivateInterval (ε/2, γ = 0.2), {_INTERVAL}.",
        reference=f"{_S0}-D", spec="SPEC §3 (PrivateInterval)", grouping="bestfit",
        m_ub_rule="levy", colour="#CC79A7", run=_levy("bestfit", "levy"), laplace_share=0.5,
        default=True,
    ),
    Mechanism(
        name="quantile-fixed", title="FixedQuantile (BestFit)", family="Levy and quantile",
        description=f"[a, b] = private 0.1- and 0.9-quantiles of the array means (ε/4 each), {_INTERVAL}.",
        reference=f"{_S0}-E1", spec="SPEC §3 (private quantile)",
        grouping="bestfit", m_ub_rule="levy", colour="#E69F00",
        run=_quantile("bestfit", "quantile-fixed", eps_dependent=False), laplace_share=0.5,
    ),
    Mechanism(
        name="quantile-eps", title="ε-DependentQuantile (BestFit)", family="Levy and quantile",
        description=(
            f"[a, b] = private quantiles at levels t/K̄ and 1 − t/K̄, t = ⌈2/ε⌉ (ε/4 each), "
            f"{_INTERVAL}."
        ),
        reference=f"{_S0}-E2", spec="SPEC §3 (private quantile)",
        grouping="bestfit", m_ub_rule="levy", colour="#D55E00",
        run=_quantile("bestfit", "quantile-eps", eps_dependent=True), laplace_share=0.5,
    ),
):  # fmt: skip
    register(_mechanism)
