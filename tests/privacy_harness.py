"""Empirical privacy audit: is an observed pair of output samples consistent with ε-DP?

A mechanism M is ε-DP on a pair of neighbouring datasets (D, D') only if, for every event E,
``P[M(D) ∈ E] ≤ e^ε · P[M(D') ∈ E]`` and the same with D and D' swapped. This module draws n
outputs of M(D) and of M(D'), counts how many fall in a family of events, and flags a violation
only when exact (Clopper–Pearson) confidence bounds *prove* one of these inequalities false:

    lower_bound(P_D(E)) > e^ε · upper_bound(P_D'(E))    (or with D and D' swapped).

Events (all counted on the same samples): for thresholds t_1 < … < t_T, the one-sided tails
``{X ≤ t_j}`` and ``{X > t_j}`` (a Laplace output with the wrong scale is seen best there: beyond
the shift, the tail ratio of Lap(b) shifted by Δ is exactly e^{Δ/b}) and the T + 1 histogram bins
``(t_j, t_{j+1}]``. Thresholds come from quantiles of an independent *pilot* sample, so the
events are fixed before the counted samples are drawn and the confidence bounds stay valid.

False-alarm probability. Each of the 4·M one-sided bounds (lower and upper, for P_D and P_D', over
M events) is computed at level α / (4M). If every bound holds — which by Bonferroni (the union
bound) happens with probability ≥ 1 − α, whatever the dependence between the bounds — and the
mechanism is ε-DP, then ``lower(P_D(E)) ≤ P_D(E) ≤ e^ε P_D'(E) ≤ e^ε upper(P_D'(E))`` for every E:
no flag. So **an ε-DP mechanism is flagged with probability at most α** (default 1e-6). The
converse has no guarantee (an audit is a lower bound): ``epsilon_lower_bound`` of the verdict is a
certified (probability ≥ 1 − α) lower bound on the privacy loss of the mechanism on this pair.

The beta quantiles are computed here (regularised incomplete beta by Lentz's continued fraction,
then Newton's method from the Chernoff bound), because scipy is not a dependency of the project;
``tests/test_privacy.py`` checks them against closed forms and exact binomial sums.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Sampler = Callable[[int, np.random.Generator], np.ndarray]

_TINY = 1e-300
_EPS = 1e-14


def _log_beta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def _beta_cf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Continued fraction of the incomplete beta (modified Lentz), vectorised over its arguments."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1.0 / d
    h = d.copy()
    max_iter = int(20 * math.sqrt(float(np.max(np.maximum(a, b)))) + 200)
    done = np.zeros(x.shape, dtype=bool)
    result = np.empty(x.shape)
    for m in range(1, max_iter + 1):
        m2 = 2.0 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            d = 1.0 / d
            delta = d * c
            h = h * delta
        newly = ~done & (np.abs(delta - 1.0) < _EPS)
        result[newly] = h[newly]
        done |= newly
        if done.all():
            return result
    raise RuntimeError("incomplete beta continued fraction did not converge")


def betainc(a, b, x) -> np.ndarray:
    """Regularised incomplete beta I_x(a, b) for a, b > 0, x in [0, 1] (broadcast, float64).

    >>> float(betainc(1.0, 1.0, 0.25))  # uniform CDF
    0.25
    """
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, x)))
    out = np.empty(x.shape)
    inner = (x > 0) & (x < 1)
    out[x <= 0] = 0.0
    out[x >= 1] = 1.0
    if np.any(inner):
        ai, bi, xi = a[inner], b[inner], x[inner]
        log_front = ai * np.log(xi) + bi * np.log1p(-xi) - _log_beta(ai, bi)
        direct = xi < (ai + 1.0) / (ai + bi + 2.0)
        val = np.empty(xi.shape)
        if np.any(direct):
            s = direct
            val[s] = np.exp(log_front[s]) * _beta_cf(ai[s], bi[s], xi[s]) / ai[s]
        if np.any(~direct):
            s = ~direct
            val[s] = 1.0 - np.exp(log_front[s]) * _beta_cf(bi[s], ai[s], 1.0 - xi[s]) / bi[s]
        out[inner] = np.clip(val, 0.0, 1.0)
    return out


def _log_betainc_lower(a: np.ndarray, b: np.ndarray, x: np.ndarray, log_b: np.ndarray):
    """log I_x(a, b) and log of the Beta(a, b) density at x, for 0 < x < 1 (vectorised)."""
    log_front = a * np.log(x) + b * np.log1p(-x) - log_b
    direct = x < (a + 1.0) / (a + b + 2.0)
    out = np.empty(x.shape)
    if np.any(direct):
        s = direct
        out[s] = log_front[s] + np.log(_beta_cf(a[s], b[s], x[s]) / a[s])
    if np.any(~direct):
        s = ~direct
        tail = np.exp(log_front[s]) * _beta_cf(b[s], a[s], 1.0 - x[s]) / b[s]
        out[s] = np.log1p(-np.minimum(tail, 1.0))
    log_pdf = log_front - np.log(x) - np.log1p(-x)
    return out, log_pdf


def _kl_bernoulli(p_hat: np.ndarray, p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(p_hat > 0, p_hat * np.log(p_hat / p), 0.0)
        t2 = np.where(p_hat < 1, (1 - p_hat) * np.log((1 - p_hat) / (1 - p)), 0.0)
    return t1 + t2


def _binomial_lower_bound(k: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Exact (Clopper–Pearson) lower bound: the p with P(Bin(n, p) >= k) = level, for k >= 1.

    P(Bin(n, p) >= k) = I_p(k, n - k + 1). Start from the Chernoff bound p0 (the p < k/n with
    n KL(k/n || p) = log(1/level)), which satisfies P(Bin(n, p0) >= k) <= level, so p0 lies left
    of the root. log I_p is concave in p (Beta densities with a, b >= 1 are log-concave, so are
    their CDFs), so Newton's iterates on log I_p(k, n-k+1) - log(level) increase monotonically to
    the root and never overshoot it: every iterate is a valid, conservative lower bound.
    """
    p_hat = k / n
    target = math.log(1.0 / level)
    lo, hi = np.zeros(k.shape), p_hat.copy()
    for _ in range(80):  # bisection for the Chernoff start (cheap closed form)
        mid = 0.5 * (lo + hi)
        far = n * _kl_bernoulli(p_hat, mid) > target
        lo = np.where(far, mid, lo)
        hi = np.where(far, hi, mid)
    p = np.maximum(lo, 1e-300)
    a, b = k.astype(np.float64), (n - k + 1).astype(np.float64)
    log_b = _log_beta(a, b)
    log_level = math.log(level)
    for _ in range(60):
        log_f, log_pdf = _log_betainc_lower(a, b, p, log_b)
        step = (log_level - log_f) * np.exp(log_f - log_pdf)  # G / G' with G = log F - log level
        step = np.maximum(step, 0.0)  # monotone from the left (guards rounding near the root)
        p_new = np.minimum(p + step, p_hat)
        if np.all(np.abs(p_new - p) <= 1e-13 * p_new):
            return p_new
        p = p_new
    return p


def clopper_pearson(k, n, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided exact binomial confidence bounds, each holding with probability ≥ 1 − ``level``.

    ``lower`` solves P(Bin(n, p) ≥ k) = level (0 when k = 0); ``upper`` solves
    P(Bin(n, p) ≤ k) = level (1 when k = n), i.e. one minus the lower bound for n − k failures.
    Clopper & Pearson (1934): the ``level`` and ``1 − level`` quantiles of Beta distributions.

    >>> lo, hi = clopper_pearson(0, 100, 0.05)
    >>> float(lo[()]), round(float(hi[()]), 10) == round(1 - 0.05 ** (1 / 100), 10)
    (0.0, True)
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), k.shape).copy()
    if np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)):
        raise ValueError("counts must be integers in [0, n]")
    lower = np.zeros(k.shape)
    upper = np.ones(k.shape)
    pos = k > 0
    if np.any(pos):
        lower[pos] = _binomial_lower_bound(k[pos], n[pos], level)
    notall = k < n
    if np.any(notall):
        upper[notall] = 1.0 - _binomial_lower_bound(n[notall] - k[notall], n[notall], level)
    return lower, upper


@dataclass(frozen=True, kw_only=True)
class PrivacyVerdict:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    epsilon : the claimed ε.
    alpha : bound on the probability of flagging an ε-DP mechanism.
    violated : True when some event's confidence bounds prove ``P_D(E) > e^ε P_D'(E)`` (or swapped).
    epsilon_lower_bound : max over events and directions of log(lower / upper); a lower bound on
        the mechanism's privacy loss on this pair holding with probability ≥ 1 − alpha.
    epsilon_point : max over events of the plug-in log ratio of the counts (for messages only).
    worst_event : description of the event attaining ``epsilon_lower_bound``.
    n_events : number M of events tested; n : samples per dataset.
    """

    epsilon: float
    alpha: float
    violated: bool
    epsilon_lower_bound: float
    epsilon_point: float
    worst_event: str
    n_events: int
    n: int

    def __str__(self) -> str:
        return (
            f"claimed eps={self.epsilon:.4g}: certified lower bound {self.epsilon_lower_bound:.4g} "
            f"(plug-in {self.epsilon_point:.4g}) at {self.worst_event}; "
            f"{'VIOLATION' if self.violated else 'consistent'} "
            f"(M={self.n_events} events, n={self.n}, alpha={self.alpha:g})"
        )


def _event_counts(x: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, list[str]]:
    t = thresholds
    at_most = np.searchsorted(np.sort(x), t, side="right")  # #{x <= t_j}
    n = x.size
    bins = np.diff(np.concatenate(([0], at_most, [n])))
    counts = np.concatenate((at_most, n - at_most, bins))
    names = (
        [f"X <= {v:.6g}" for v in t]
        + [f"X > {v:.6g}" for v in t]
        + [
            f"X in ({lo:.6g}, {hi:.6g}]"
            for lo, hi in zip(np.r_[-np.inf, t], np.r_[t, np.inf], strict=True)
        ]
    )
    return counts, names


def compare_samples(
    x: np.ndarray,
    y: np.ndarray,
    epsilon: float,
    thresholds: np.ndarray,
    *,
    alpha: float = 1e-6,
) -> PrivacyVerdict:
    """Decide whether samples ``x`` ~ M(D) and ``y`` ~ M(D') are consistent with ε-DP.

    ``thresholds`` must not depend on ``x`` or ``y`` (use a pilot sample, see :func:`audit`).
    Outputs are compared as real numbers; map any other output to a real first.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.size != y.size or x.size == 0:
        raise ValueError("x and y must be non-empty samples of the same size")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("samples must be finite")
    t = np.unique(np.asarray(thresholds, dtype=np.float64))
    cx, names = _event_counts(x, t)
    cy, _ = _event_counts(y, t)
    n_events = cx.size
    level = alpha / (4.0 * n_events)
    lo_x, hi_x = clopper_pearson(cx, x.size, level)
    lo_y, hi_y = clopper_pearson(cy, y.size, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        lb_xy = np.log(lo_x) - np.log(hi_y)  # proves P_D(E) / P_D'(E) >= e^lb
        lb_yx = np.log(lo_y) - np.log(hi_x)
        point = np.abs(np.log(cx / x.size) - np.log(cy / y.size))
    point = np.where(np.isfinite(point), point, 0.0)
    both = np.concatenate((lb_xy, lb_yx))
    j = int(np.argmax(both))
    direction = "P_D/P_D'" if j < n_events else "P_D'/P_D"
    return PrivacyVerdict(
        epsilon=float(epsilon),
        alpha=float(alpha),
        violated=bool(both[j] > epsilon),
        epsilon_lower_bound=float(max(both[j], 0.0)),
        epsilon_point=float(point.max()),
        worst_event=f"{names[j % n_events]} ({direction})",
        n_events=int(n_events),
        n=int(x.size),
    )


def audit(
    sample_d: Sampler,
    sample_dprime: Sampler,
    epsilon: float,
    *,
    rng: np.random.Generator,
    n: int = 200_000,
    n_pilot: int = 20_000,
    n_thresholds: int = 40,
    alpha: float = 1e-6,
) -> PrivacyVerdict:
    """Audit a mechanism on one neighbouring pair: is it ε-DP there, as far as n samples show?

    Parameters
    ----------
    sample_d, sample_dprime : ``(size, rng) -> array`` of ``size`` independent outputs of M(D)
        and M(D') (vectorised; real-valued outputs).
    epsilon : the claimed privacy loss.
    rng : source of all the randomness (seeded by the test, so the audit is reproducible).
    n : outputs counted per dataset; n_pilot : outputs per dataset used only to place thresholds.
    n_thresholds : T thresholds at evenly spaced quantiles of the pooled pilot sample (ties
        merged, so discrete outputs get one threshold per atom at most); M = 3T + 1 events.
    alpha : bound on the false-alarm probability (see the module docstring).

    Returns
    -------
    PrivacyVerdict
    """
    pilot = np.concatenate(
        (
            np.asarray(sample_d(n_pilot, rng), dtype=np.float64),
            np.asarray(sample_dprime(n_pilot, rng), dtype=np.float64),
        )
    )
    qs = np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1]
    thresholds = np.unique(np.quantile(pilot, qs, method="inverted_cdf"))
    x = sample_d(n, rng)
    y = sample_dprime(n, rng)
    return compare_samples(x, y, epsilon, thresholds, alpha=alpha)
