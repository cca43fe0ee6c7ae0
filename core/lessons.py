"""Neighbouring datasets made visible: the computations behind the "lesson you can touch".

User-level ε-DP (SPEC section 1 and 3) promises that for two datasets D, D' that differ in *all*
the records of one user, the densities of a mechanism's output satisfy
``|log p_D(x) − log p_D'(x)| ≤ ε`` for every output x (for a mechanism with a density). As in the
papers, the number of users L and their record counts {m_ℓ} are public, so a neighbour keeps every
count and changes the *speeds* of one user: :func:`neighbours` sets all m_ℓ records of user ℓ to
one value in [0, U] (by default the end of [0, U] farthest from the user's mean, the change that
moves a release most).

Two ways to see the log-ratio:

- exact, :func:`exact_log_ratio`, for the mechanisms whose output is a deterministic noiseless value
  plus Laplace noise (``laplace_share`` = 1: baseline, Array-Averaging, OPT-Array-Averaging,
  opt-bounding). The noiseless value and the scale come from :func:`core.mechanisms.run_mechanism`
  on each dataset (its :class:`~core.mechanisms.Draws`), so the lesson shows the real code path;
  ``log p_D(x)/p_D'(x) = log(b'/b) + |x − μ'|/b' − |x − μ|/b``.
- simulated, :func:`simulated_log_ratio`, for the others (a privately chosen interval first):
  ``n_runs`` seeded runs on each dataset, a shared histogram, and the log-ratio of the bin
  frequencies with its standard error (delta method, ``sqrt(1/c + 1/c')`` for counts c, c').

:func:`record_vs_user` puts the same release (the plain mean, Baseline) next to itself
protecting one *record* (sensitivity U/N) and one *user* (sensitivity U m*/N), and reports the
privacy loss the chosen user would actually suffer under record-level noise (m_ℓ times ε, up to
the shift of the mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import get_mechanism, run_mechanism
from core.params import check_epsilon, check_positive_int

__all__ = [
    "LogRatio",
    "Neighbours",
    "NoiseNeeded",
    "exact_log_ratio",
    "has_exact_density",
    "laplace_log_ratio",
    "laplace_pdf",
    "log_ratio",
    "neighbours",
    "record_vs_user",
    "simulated_log_ratio",
    "user_table",
]


@dataclass(frozen=True, kw_only=True, eq=False)
class Neighbours:
    """Two user-level neighbouring datasets of one HAT.

    Attributes
    ----------
    original : HatData
        D, the data as it is.
    changed : HatData
        D', the same counts with every record of ``user_id`` set to ``value``.
    user_id : str
    value : float
        The changed user's new speed (all its records), in [0, U].
    old_mean : float
        The user's mean x̄_ℓ in D.
    count : int
        m_ℓ, the user's number of records (public, unchanged).
    """

    original: HatData
    changed: HatData
    user_id: str
    value: float
    old_mean: float
    count: int

    def __post_init__(self) -> None:
        if not np.array_equal(self.original.counts, self.changed.counts):
            raise HexplorerError("Neighbouring datasets must keep every user's record count.")


def _user_index(hat: HatData, user_id) -> int:
    ids = hat.user_ids.astype(str)
    hit = np.flatnonzero(ids == str(user_id))
    if hit.size == 0:
        raise HexplorerError(
            f"The 'user' parameter must be a user of this HAT. Got {user_id!r} instead."
        )
    return int(hit[0])


def neighbours(hat: HatData, user_id, value: float | None = None) -> Neighbours:
    """D and its neighbour D' in which every record of ``user_id`` has speed ``value``.

    Parameters
    ----------
    hat : HatData
    user_id : str
        One of ``hat.user_ids``.
    value : float, optional
        The new speed in [0, U]; by default the end of [0, U] farthest from the user's mean
        (U if x̄_ℓ < U/2, else 0), which moves the mean f by the most this user can.

    Raises
    ------
    HexplorerError
        Unknown user, or ``value`` outside [0, U].

    >>> h = HatData.from_arrays([3, 1], [30.0, 5.0], user_ids=["a", "b"], upper=65.0)
    >>> nb = neighbours(h, "a")
    >>> nb.value, nb.changed.sums.tolist(), nb.changed.counts.tolist()
    (65.0, [195.0, 5.0], [3, 1])
    """
    i = _user_index(hat, user_id)
    m = int(hat.counts[i])
    old = float(hat.user_means[i])
    if value is None:
        value = hat.upper if old < hat.upper / 2.0 else 0.0
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'value' parameter must be a number in [0, U]. Got {value!r} instead."
        ) from None
    if not (math.isfinite(value) and 0.0 <= value <= hat.upper):
        raise HexplorerError(
            f"The 'value' parameter must lie in [0, U] = [0, {hat.upper:g}]. Got {value!r} instead."
        )
    sums = hat.sums.copy()
    sumsq = hat.sumsq.copy()
    sums[i] = m * value
    sumsq[i] = m * value * value
    changed = HatData.from_arrays(
        hat.counts, sums, sumsq, hat.user_ids, upper=hat.upper, hat=hat.hat
    )
    return Neighbours(
        original=hat, changed=changed, user_id=str(user_id), value=value, old_mean=old, count=m
    )


# ---------------------------------------------------------------------------------------------
# Laplace densities
# ---------------------------------------------------------------------------------------------


def laplace_pdf(x, loc: float, scale: float) -> np.ndarray:
    """Density of loc + Lap(scale) at x.

    >>> float(laplace_pdf(0.0, 0.0, 2.0))
    0.25
    """
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.abs(x - loc) / scale) / (2.0 * scale)


def laplace_log_ratio(x, loc: float, scale: float, loc2: float, scale2: float) -> np.ndarray:
    """log of the density ratio of loc + Lap(scale) over loc2 + Lap(scale2) at x.

    ``log(scale2/scale) + |x − loc2|/scale2 − |x − loc|/scale``; with equal scales it lies in
    ``±|loc − loc2| / scale`` and reaches both ends (outside the two locations).

    >>> laplace_log_ratio([-10.0, 10.0], 0.0, 1.0, 1.0, 1.0).tolist()
    [1.0, -1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    return math.log(scale2 / scale) + np.abs(x - loc2) / scale2 - np.abs(x - loc) / scale


# ---------------------------------------------------------------------------------------------
# Log-ratio of the two output distributions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class LogRatio:
    """The output distributions of one mechanism on D and D', and their log-ratio.

    Attributes
    ----------
    mechanism : str
    epsilon : float
    m_ub : int or None
        The m_UB both runs used (counts are equal, so the default is the same on both).
    exact : bool
        True when the densities are known in closed form (Laplace), False when simulated.
    x : ndarray (k,)
        Output values (a grid for exact, bin centres for simulated).
    density, density_changed : ndarray (k,)
        Output density on D and on D' at ``x`` (bin frequency / width when simulated).
    log_ratio : ndarray (k,)
        log(density / density_changed); NaN where a simulated bin has too few runs.
    stderr : ndarray (k,) or None
        Standard error of a simulated log-ratio; None when exact.
    edges : ndarray (k + 1,) or None
        The histogram's bin edges (simulated only).
    noiseless, noiseless_changed : float or None
        The value before noise on D and D' (exact only).
    scale, scale_changed : float or None
        Laplace scale b on D and D' (exact only).
    n_runs : int or None
        Runs per dataset (simulated only).
    """

    mechanism: str
    epsilon: float
    m_ub: int | None
    exact: bool
    x: np.ndarray
    density: np.ndarray
    density_changed: np.ndarray
    log_ratio: np.ndarray
    stderr: np.ndarray | None = None
    edges: np.ndarray | None = None
    noiseless: float | None = None
    noiseless_changed: float | None = None
    scale: float | None = None
    scale_changed: float | None = None
    n_runs: int | None = None

    @property
    def max_abs(self) -> float:
        """The largest |log-ratio| shown (NaN bins ignored); ≤ ε for an ε-DP mechanism."""
        finite = self.log_ratio[np.isfinite(self.log_ratio)]
        return float(np.max(np.abs(finite))) if finite.size else 0.0

    @property
    def worst_excess_z(self) -> float:
        """Simulated only: max over bins of (|log-ratio| − ε) / stderr (≤ ~4 if ε-DP holds)."""
        if self.stderr is None:
            raise HexplorerError("worst_excess_z is defined for simulated log-ratios only.")
        ok = np.isfinite(self.log_ratio) & (self.stderr > 0)
        if not ok.any():
            return -math.inf
        return float(np.max((np.abs(self.log_ratio[ok]) - self.epsilon) / self.stderr[ok]))


def has_exact_density(name: str) -> bool:
    """Whether ``name`` is a deterministic value plus Laplace noise (its whole ε on the noise).

    >>> has_exact_density("baseline"), has_exact_density("levy")
    (True, False)
    """
    return get_mechanism(name).laplace_share == 1.0


def exact_log_ratio(
    name: str,
    nb: Neighbours,
    epsilon: float,
    *,
    m_ub: int | None = None,
    n_points: int = 801,
    noise_factor: float = 1.0,
) -> LogRatio:
    """Exact output densities on D and D' and their log-ratio, for a Laplace mechanism.

    The noiseless values μ, μ' and the scales b, b' are read from one run of
    :func:`core.mechanisms.run_mechanism` on each dataset (the Laplace draw itself is not used).
    The grid spans the two centres ± 8 scales. When the scale is 0 (opt-bounding with T_ε = 0)
    both outputs are the same constant: the log-ratio is 0.

    ``noise_factor`` multiplies both scales: 0.5 shows what a mechanism with half the noise it
    needs would leak (the lesson's "too little noise" switch); 1 is the mechanism as it is.

    Raises
    ------
    HexplorerError
        For a mechanism without a closed-form density (see :func:`has_exact_density`).
    """
    if not has_exact_density(name):
        raise HexplorerError(
            f"{name} chooses an interval privately before its Laplace noise; its output density "
            "has no closed form here: use simulated_log_ratio."
        )
    epsilon = check_epsilon(epsilon)
    n_points = check_positive_int("n_points", n_points)
    if not (math.isfinite(noise_factor) and noise_factor > 0):
        raise HexplorerError(
            f"The 'noise_factor' parameter must be > 0. Got {noise_factor!r} instead."
        )
    rng = np.random.default_rng(0)  # only the discarded Laplace draw uses it
    d = run_mechanism(name, nb.original, epsilon, m_ub=m_ub, rng=rng, size=1)
    d2 = run_mechanism(name, nb.changed, epsilon, m_ub=m_ub, rng=rng, size=1)
    mu, mu2 = float(d.noiseless[0]), float(d2.noiseless[0])
    b = float(d.noise_scale[0]) * noise_factor
    b2 = float(d2.noise_scale[0]) * noise_factor
    if b <= 0.0 or b2 <= 0.0:
        x = np.array([mu])
        ones = np.ones(1)
        ratio = np.zeros(1) if mu == mu2 else np.array([np.inf])
        return LogRatio(
            mechanism=name, epsilon=epsilon, m_ub=d.m_ub, exact=True, x=x, density=ones,
            density_changed=ones if mu == mu2 else np.zeros(1), log_ratio=ratio,
            noiseless=mu, noiseless_changed=mu2, scale=b, scale_changed=b2,
        )  # fmt: skip
    spread = 8.0 * max(b, b2)
    x = np.linspace(min(mu, mu2) - spread, max(mu, mu2) + spread, n_points)
    return LogRatio(
        mechanism=name,
        epsilon=epsilon,
        m_ub=d.m_ub,
        exact=True,
        x=x,
        density=laplace_pdf(x, mu, b),
        density_changed=laplace_pdf(x, mu2, b2),
        log_ratio=laplace_log_ratio(x, mu, b, mu2, b2),
        noiseless=mu,
        noiseless_changed=mu2,
        scale=b,
        scale_changed=b2,
    )


def simulated_log_ratio(
    name: str,
    nb: Neighbours,
    epsilon: float,
    *,
    m_ub: int | None = None,
    n_runs: int = 200_000,
    rng: np.random.Generator,
    n_bins: int = 40,
    min_count: int = 100,
) -> LogRatio:
    """Histogram estimate of the two output distributions and of their log-ratio.

    ``n_runs`` runs on each dataset (all of the mechanism's randomness redrawn); ``n_bins``
    equal bins between the 0.5 % and 99.5 % quantiles of the pooled runs. A bin's log-ratio
    is ``log(c/c')`` (equal run counts), NaN unless both counts reach ``min_count``; its standard
    error is ``sqrt(1/c + 1/c')``. The ratio of two bins' probabilities is an average of the
    density ratio over the bin, so for an ε-DP mechanism it lies in ±ε up to sampling error.

    Raises
    ------
    NotApplicableError
        No array can be formed at this m_UB (from core.mechanisms).
    """
    epsilon = check_epsilon(epsilon)
    n_runs = check_positive_int("n_runs", n_runs)
    n_bins = check_positive_int("n_bins", n_bins)
    d = run_mechanism(name, nb.original, epsilon, m_ub=m_ub, rng=rng, size=n_runs)
    d2 = run_mechanism(name, nb.changed, epsilon, m_ub=m_ub, rng=rng, size=n_runs)
    pooled = np.concatenate([d.estimates, d2.estimates])
    lo, hi = np.quantile(pooled, [0.005, 0.995])
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, n_bins + 1)
    c = np.histogram(d.estimates, edges)[0].astype(np.float64)
    c2 = np.histogram(d2.estimates, edges)[0].astype(np.float64)
    width = np.diff(edges)
    ok = (c >= min_count) & (c2 >= min_count)
    ratio = np.full(n_bins, np.nan)
    stderr = np.full(n_bins, np.nan)
    ratio[ok] = np.log(c[ok] / c2[ok])
    stderr[ok] = np.sqrt(1.0 / c[ok] + 1.0 / c2[ok])
    return LogRatio(
        mechanism=name,
        epsilon=epsilon,
        m_ub=d.m_ub,
        exact=False,
        x=0.5 * (edges[1:] + edges[:-1]),
        density=c / (n_runs * width),
        density_changed=c2 / (n_runs * width),
        log_ratio=ratio,
        stderr=stderr,
        edges=edges,
        n_runs=n_runs,
    )


def log_ratio(
    name: str,
    nb: Neighbours,
    epsilon: float,
    *,
    m_ub: int | None = None,
    n_runs: int = 200_000,
    rng: np.random.Generator,
) -> LogRatio:
    """Exact when the mechanism's density is known (:func:`has_exact_density`), else simulated."""
    if has_exact_density(name):
        return exact_log_ratio(name, nb, epsilon, m_ub=m_ub)
    return simulated_log_ratio(name, nb, epsilon, m_ub=m_ub, n_runs=n_runs, rng=rng)


# ---------------------------------------------------------------------------------------------
# Record-level vs user-level
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NoiseNeeded:
    """The plain mean f released with Laplace noise, protecting one record or one user.

    Attributes
    ----------
    epsilon : float
    sensitivity_record : float
        U/N: one record moves f by at most this.
    sensitivity_user : float
        U m*/N: one user (all its records, up to m* of them) moves f by at most this.
    scale_record, scale_user : float
        Laplace scales b = sensitivity/ε (E|noise| = b).
    half_width_record, half_width_user : float
        90 % of the noise lies within ± b·ln 10.
    user_shift : float
        |f(D) − f(D')| for the chosen neighbour (m_ℓ |x̄_ℓ − value| / N).
    loss_record_noise : float
        The privacy loss the chosen user actually gets under record-level noise:
        user_shift / scale_record (can be up to m_ℓ · ε).
    loss_user_noise : float
        The same under user-level noise: user_shift / scale_user (≤ ε).
    """

    epsilon: float
    sensitivity_record: float
    sensitivity_user: float
    scale_record: float
    scale_user: float
    half_width_record: float
    half_width_user: float
    user_shift: float
    loss_record_noise: float
    loss_user_noise: float

    @property
    def noise_ratio(self) -> float:
        """How many times more noise protecting a user needs than protecting a record (m*)."""
        return self.scale_user / self.scale_record


def record_vs_user(nb: Neighbours, epsilon: float) -> NoiseNeeded:
    """Noise the plain mean needs to protect one record vs one user (seed-000 Baseline).

    >>> h = HatData.from_arrays([4, 1], [40.0, 10.0], user_ids=["a", "b"], upper=50.0)
    >>> r = record_vs_user(neighbours(h, "a", 50.0), 1.0)
    >>> r.sensitivity_record, r.sensitivity_user, r.noise_ratio, r.loss_record_noise
    (10.0, 40.0, 4.0, 3.2)
    """
    epsilon = check_epsilon(epsilon)
    hat = nb.original
    n = hat.n_records
    sens_rec = hat.upper / n
    sens_user = hat.upper * hat.m_max / n
    shift = abs(nb.changed.true_mean - hat.true_mean)
    b_rec, b_user = sens_rec / epsilon, sens_user / epsilon
    return NoiseNeeded(
        epsilon=epsilon,
        sensitivity_record=sens_rec,
        sensitivity_user=sens_user,
        scale_record=b_rec,
        scale_user=b_user,
        half_width_record=b_rec * math.log(10.0),
        half_width_user=b_user * math.log(10.0),
        user_shift=shift,
        loss_record_noise=shift / b_rec,
        loss_user_noise=shift / b_user,
    )


def user_table(hat: HatData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user ids, counts, means) of a HAT, busiest first, for a picker."""
    return hat.user_ids.astype(str), hat.counts.copy(), hat.user_means.copy()
