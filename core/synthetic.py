"""Synthetic HATs for experiments (SPEC section 6; [1], 003, 004).

- Values: projected-Gaussian samples ``Π[0,U](X)``, ``X ~ N(μ, σ²)`` with μ and the (1/N)
  variance σ² of a source HAT ([4], section V-B), and uniform samples on (0, U] ([5]).
  Every sample of every user is drawn at once and summed per user with ``np.add.reduceat``; the
  result is a :class:`~core.hat.HatData` of per-user (m, s, q), like real data.
- Counts: sample scaling (``m̂_ℓ = λ m_ℓ``) and user scaling (every user repeated λ times)
  ([4], section V-B), and [5]'s geometric and extreme-valued collections.

Every stochastic function takes ``rng: np.random.Generator``.
"""

from __future__ import annotations

import math

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.params import check_counts, check_number, check_positive_int, check_upper


def _from_samples(
    counts: np.ndarray, samples: np.ndarray, upper: float, hat: str | None
) -> HatData:
    """Per-user (m, s, q) from one flat array of samples laid out user after user."""
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    sums = np.add.reduceat(samples, starts)
    sumsq = np.add.reduceat(samples * samples, starts)
    ids = np.array([f"s{i:07d}" for i in range(counts.size)], dtype=object)
    return HatData.from_arrays(counts, sums, sumsq, ids, upper=upper, hat=hat)


# --------------------------------------------------------------------------------------------
# Values


def gaussian_params(source: HatData) -> tuple[float, float]:
    """``(μ, σ²)`` of a HAT: the true mean f and the (1/N) variance ``Σq/N − f²`` ([4], V-B).

    Raises
    ------
    HexplorerError
        If the HAT has no sums of squares (``sumsq`` is NaN).

    >>> h = HatData.from_arrays([2, 2], [2.0, 6.0], [2.0, 18.0])
    >>> gaussian_params(h)
    (2.0, 1.0)
    """
    if not np.all(np.isfinite(source.sumsq)):
        raise HexplorerError(
            "The source HAT has no sums of squares (sumsq); its variance is unknown."
        )
    n = source.n_records
    mu = float(source.sums.sum() / n)
    var = float(max(source.sumsq.sum() / n - mu * mu, 0.0))
    return mu, var


def projected_gaussian(
    counts,
    *,
    mean: float,
    variance: float,
    upper: float = 65.0,
    rng: np.random.Generator,
    hat: str | None = None,
) -> HatData:
    """Samples ``Π[0,U](X)``, ``X ~ N(mean, variance)`` i.i.d., ``m_ℓ`` for user ℓ (SPEC §6).

    Parameters
    ----------
    counts : array-like of int
        Per-user sample counts m_ℓ >= 1.
    mean, variance : float
        μ and σ² >= 0 of the Gaussian before projection into [0, U].
    upper : float
        U.
    rng : numpy.random.Generator
    hat : str, optional
        Label of the resulting HAT.

    Returns
    -------
    HatData
        Users ``s0000000, s0000001, ...`` in the order of ``counts`` (then sorted as usual).

    >>> rng = np.random.default_rng(0)
    >>> h = projected_gaussian([3, 1], mean=80.0, variance=0.0, upper=65, rng=rng)
    >>> h.counts.tolist(), h.sums.tolist(), h.sumsq.tolist()
    ([3, 1], [195.0, 65.0], [12675.0, 4225.0])
    """
    c = check_counts(counts)
    upper = check_upper(upper)
    mean, variance = check_number("mean", mean), check_number("variance", variance)
    if variance < 0:
        raise HexplorerError(f"The 'variance' parameter must be >= 0. Got {variance!r} instead.")
    x = rng.normal(mean, math.sqrt(variance), int(c.sum()))
    np.clip(x, 0.0, upper, out=x)
    return _from_samples(c, x, upper, hat)


def projected_gaussian_like(
    source: HatData, *, rng: np.random.Generator, counts=None, hat: str | None = None
) -> HatData:
    """Projected-Gaussian data with the source HAT's μ and (1/N) σ² ([4], section V-B).

    ``counts`` defaults to the source's counts; pass :func:`sample_scaled` or
    :func:`user_scaled` counts for the scaling experiments.

    >>> src = HatData.from_arrays([2, 2], [2.0, 6.0], [2.0, 18.0], upper=65)
    >>> projected_gaussian_like(src, rng=np.random.default_rng(1)).counts.tolist()
    [2, 2]
    """
    mu, var = gaussian_params(source)
    use = source.counts if counts is None else counts
    return projected_gaussian(use, mean=mu, variance=var, upper=source.upper, rng=rng, hat=hat)


def uniform(
    counts, *, upper: float = 65.0, rng: np.random.Generator, hat: str | None = None
) -> HatData:
    """Samples uniform on (0, U], i.i.d., ``m_ℓ`` for user ℓ ([5], section V; SPEC §6).

    >>> h = uniform([4, 2], upper=65, rng=np.random.default_rng(0))
    >>> h.counts.tolist(), bool(np.all((h.sums > 0) & (h.sums <= 65 * h.counts)))
    ([4, 2], True)
    """
    c = check_counts(counts)
    upper = check_upper(upper)
    x = upper * (1.0 - rng.random(int(c.sum())))  # [0, 1) -> (0, U]
    return _from_samples(c, x, upper, hat)


def truncated_gaussian(
    counts,
    *,
    mean: float,
    variance: float,
    upper: float = 65.0,
    rng: np.random.Generator,
    hat: str | None = None,
) -> HatData:
    """Samples of ``N(mean, variance)`` conditioned on (0, U], by rejection ([5], section V).

    Seed 004 draws its "projected Gaussian" samples this way (rejection into (0, U], not the
    projection Π[0,U] that [1]/[4] and :func:`projected_gaussian` use). Rejected draws are
    redrawn in vectorised rounds.

    Raises
    ------
    HexplorerError
        If variance <= 0 or the acceptance probability is below 1e-6.

    >>> rng = np.random.default_rng(0)
    >>> h = truncated_gaussian([5], mean=32.5, variance=16.25, upper=65, rng=rng)
    >>> bool(0 < h.sums[0] <= 5 * 65)
    True
    """
    c = check_counts(counts)
    upper = check_upper(upper)
    mean, variance = check_number("mean", mean), check_number("variance", variance)
    if variance <= 0:
        raise HexplorerError(f"The 'variance' parameter must be > 0. Got {variance!r} instead.")
    sd = math.sqrt(variance)

    def phi(z: float) -> float:
        return 0.5 * math.erfc(-z / math.sqrt(2.0))

    accept = phi((upper - mean) / sd) - phi(-mean / sd)
    if not accept >= 1e-6:
        raise HexplorerError(
            f"N({mean:g}, {variance:g}) puts too little mass ({accept:.2g}) on (0, U]; "
            "rejection sampling would not end."
        )
    n = int(c.sum())
    x = rng.normal(mean, sd, n)
    bad = np.flatnonzero((x <= 0) | (x > upper))
    while bad.size:
        redraw = rng.normal(mean, sd, bad.size)
        x[bad] = redraw
        bad = bad[(redraw <= 0) | (redraw > upper)]
    return _from_samples(c, x, upper, hat)


# --------------------------------------------------------------------------------------------
# Counts


def sample_scaled(counts, lam: int) -> np.ndarray:
    """Sample scaling: same users, ``m̂_ℓ = λ m_ℓ`` ([4], section V-B).

    >>> sample_scaled([3, 1], 10).tolist()
    [30, 10]
    """
    return check_counts(counts) * check_positive_int("lam", lam)


def user_scaled(counts, lam: int) -> np.ndarray:
    """User scaling: every user repeated λ times, ``m̂_{λ(ℓ−1)+i} = m_ℓ`` ([4], V-B).

    >>> user_scaled([3, 1], 2).tolist()
    [3, 3, 1, 1]
    """
    return np.repeat(check_counts(counts), check_positive_int("lam", lam))


def scale_samples(hat: HatData, lam: int) -> HatData:
    """Sample scaling of a HAT's summaries: every sample repeated λ times (means unchanged).

    ``m, s, q`` are multiplied by λ; user ids are kept. For the paper's experiment (fresh
    i.i.d. samples) use ``projected_gaussian_like(hat, counts=sample_scaled(hat.counts, λ))``.

    >>> scale_samples(HatData.from_arrays([2], [10.0], [60.0]), 3).sums.tolist()
    [30.0]
    """
    lam = check_positive_int("lam", lam)
    return HatData.from_arrays(
        hat.counts * lam,
        hat.sums * lam,
        hat.sumsq * lam,
        hat.user_ids,
        upper=hat.upper,
        hat=hat.hat,
    )


def scale_users(hat: HatData, lam: int) -> HatData:
    """User scaling of a HAT's summaries: every user repeated λ times under new ids ``ID#i``.

    >>> h = scale_users(HatData.from_arrays([2, 1], [10.0, 5.0], user_ids=["a", "b"]), 2)
    >>> h.user_ids.tolist(), h.counts.tolist()
    (['a#0', 'a#1', 'b#0', 'b#1'], [2, 2, 1, 1])
    """
    lam = check_positive_int("lam", lam)
    ids = np.array(
        [f"{uid}#{i}" for uid in hat.user_ids.tolist() for i in range(lam)], dtype=object
    )
    return HatData.from_arrays(
        np.repeat(hat.counts, lam),
        np.repeat(hat.sums, lam),
        np.repeat(hat.sumsq, lam),
        ids,
        upper=hat.upper,
        hat=hat.hat,
    )


def geometric_counts(M: int = 6) -> np.ndarray:  # noqa: N803 (the paper's name)
    """Seed 004's geometric collection: for i = 0..M, 2^i users with 2^(M−i) samples each.

    ``L = 2^(M+1) − 1`` users (127 for M = 6), sorted descending.

    >>> c = geometric_counts(2)
    >>> c.tolist(), geometric_counts().size
    ([4, 2, 2, 1, 1, 1, 1], 127)
    """
    try:
        m_int = int(M)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'M' parameter must be an integer >= 0. Got {M!r} instead."
        ) from None
    if m_int != M or not 0 <= m_int <= 30:
        raise HexplorerError(f"The 'M' parameter must be an integer in [0, 30]. Got {M!r} instead.")
    i = np.arange(m_int + 1)
    return np.repeat(2 ** (m_int - i), 2**i).astype(np.int64)


def extreme_counts(n_users: int = 101, m_star: int = 10) -> np.ndarray:
    """Seed 004's extreme-valued collection: one user with m* samples, L − 1 users with one.

    Defaults L = 101, m* = 10 as in the paper.

    >>> c = extreme_counts()
    >>> c.size, int(c[0]), int(c[1:].max())
    (101, 10, 1)
    """
    n_users = check_positive_int("n_users", n_users)
    m_star = check_positive_int("m_star", m_star)
    c = np.ones(n_users, dtype=np.int64)
    c[0] = m_star
    return c
