"""All of the mechanisms' randomness, in three small functions a test can monkeypatch.

Injectable noise (for the empirical privacy tests). Every random draw of every mechanism goes
through this module's attributes (the mechanisms call ``noise._laplace(...)``, never a copy), so
a test can monkeypatch one of them on ``core.mechanisms.noise`` (e.g. halve the Laplace scale, or
double the exponential mechanism's epsilon) and run the real code path:

- :func:`_laplace` ``(rng, scale, size)``: every Laplace draw;
- :func:`_exponential_mechanism` ``(rng, utility, epsilon, sensitivity, size, log_base=None)``:
  every exponential-mechanism draw (PrivateInterval's bin, the private quantile's interval);
- :func:`_private_quantile` ``(rng, values, level, epsilon, *, lo, hi, sensitivity, size)``: every
  private quantile (Smith 2011), which itself calls :func:`_exponential_mechanism`.

The deterministic distributions they sample (:func:`exponential_mechanism_probabilities`,
:func:`private_quantile_distribution`) are public, for exact-value tests and the Learn page.
"""

from __future__ import annotations

import numpy as np

from core.errors import HexplorerError

__all__ = ["exponential_mechanism_probabilities", "private_quantile_distribution"]


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
