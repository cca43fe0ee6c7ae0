"""Monte-Carlo evaluation of the single-HAT mechanisms (SPEC section 3, "Evaluation").

The papers' error measure is the mean absolute error over n independent runs,
``E_MAE = (1/n) Σ_{i≤n} |M^(i)(D) − f(D)|`` ([1], section IV: n = 10⁴, ε from 0.5 to 2),
where every run redraws all of the mechanism's randomness, interval estimation included.
:func:`monte_carlo` evaluates a grid of mechanisms × epsilons with the runs of each cell drawn
at once by :func:`core.mechanisms.run_mechanism` (no Python loop per run); the arrays each
grouping builds are computed once per (strategy, m_UB) and shared by the cells that use them.

Mechanisms that cannot run on the HAT (:class:`core.errors.NotApplicableError`, e.g. no array of
m_UB samples can be formed) do not abort the table: their rows have ``mae`` NaN and a ``note``
saying why, so a sweep over many HATs or epsilons still returns every other cell. Bad input
(unknown mechanism, epsilon <= 0, m_ub outside [m_*, m*], n_runs < 1) raises
:class:`core.errors.HexplorerError` before any work is done.

Seeds keyed by name: :func:`monte_carlo` draws one seed word set from the caller's generator and
gives each mechanism its own stream, ``core.mechanisms.mechanism_rng(words, name)``. A
mechanism's rows therefore depend on the generator and its *name* only: not on its position in
the registry, nor on which other mechanisms are in the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.errors import HexplorerError, NotApplicableError
from core.hat import HatData
from core.mechanisms import MECHANISMS, get_mechanism, mechanism_rng, run_mechanism
from core.params import check_epsilon, check_m_ub, check_positive_int

__all__ = [
    "COLUMNS",
    "ErrorSummary",
    "abs_error_statistic",
    "error_summary",
    "mae_samples",
    "monte_carlo",
    "simulate",
]

#: Columns of the :func:`monte_carlo` table, in order.
COLUMNS = (
    "mechanism",
    "epsilon",
    "m_ub",
    "n_arrays",
    "mae",
    "mae_se",
    "mean",
    "std",
    "q05",
    "q95",
    "n_runs",
    "note",
)


def _mechanism_names(mechanisms) -> list[str]:
    if mechanisms is None:
        return list(MECHANISMS)
    if isinstance(mechanisms, str):
        mechanisms = [mechanisms]
    names = [get_mechanism(name).name for name in mechanisms]
    if not names:
        raise HexplorerError(
            "The 'mechanisms' parameter must name at least one mechanism. Got [] instead."
        )
    return names


def _epsilons(epsilons) -> list[float]:
    if np.isscalar(epsilons):
        epsilons = [epsilons]
    values = [check_epsilon(e) for e in epsilons]
    if not values:
        raise HexplorerError(
            "The 'epsilons' parameter must hold at least one value > 0. Got [] instead."
        )
    return values


def monte_carlo(
    hat: HatData,
    epsilons: Iterable[float] | float,
    mechanisms: Sequence[str] | str | None = None,
    *,
    n_runs: int,
    rng: np.random.Generator,
    m_ub: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Monte-Carlo MAE of each mechanism at each epsilon (SPEC section 3, Evaluation).

    Parameters
    ----------
    hat : HatData
    epsilons : float or iterable of float
        Privacy losses (> 0).
    mechanisms : names, optional
        Subset of :data:`core.mechanisms.MECHANISMS` (all, in registry order, by default).
    n_runs : int
        Independent runs per (mechanism, epsilon) cell.
    rng : numpy.random.Generator
        Source of all randomness: four seed words are drawn from it once, and each mechanism's
        cells come from its own stream ``mechanism_rng(words, name)`` (keyed by name, so a seed
        fixes each mechanism's rows whatever else is in the table).
    m_ub : int, optional
        Overrides the default m_UB of the mechanisms that use arrays (ignored by the others,
        whose ``m_ub`` is NaN and whose ``note`` says so).
    progress : callable, optional
        ``progress(done, total)`` after each (mechanism, epsilon) cell.

    Returns
    -------
    pandas.DataFrame
        One row per (mechanism, epsilon), mechanism-major, with :data:`COLUMNS`: ``mae`` the
        mean absolute error, ``mae_se`` its standard error (std of |error| / sqrt(n)); ``mean``,
        ``std``, ``q05``, ``q95`` of the released values; ``m_ub``/``n_arrays`` as used (NaN
        without arrays); ``note`` non-empty when the mechanism ignored m_ub, released a constant,
        or is not applicable (then ``mae`` etc. are NaN).

    Raises
    ------
    HexplorerError
        Unknown mechanism, epsilon <= 0, m_ub outside [m_*, m*], n_runs < 1.
    """
    if not isinstance(hat, HatData):
        raise HexplorerError(
            f"The 'hat' parameter must be a HatData. Got {type(hat).__name__} instead."
        )
    eps_list = _epsilons(epsilons)
    names = _mechanism_names(mechanisms)
    n_runs = check_positive_int("n_runs", n_runs)
    if m_ub is not None:
        m_ub = check_m_ub(m_ub, hat.counts)
    if not isinstance(rng, np.random.Generator):
        raise HexplorerError(f"The 'rng' parameter must be a numpy Generator. Got {rng!r} instead.")
    total = len(names) * len(eps_list)
    words = rng.integers(0, 2**63, size=4, dtype=np.int64).tolist()
    cache: dict = {}
    rows = []
    done = 0
    f = hat.true_mean
    for name in names:
        stream = mechanism_rng(words, name)
        for eps in eps_list:
            try:
                d = run_mechanism(
                    name, hat, eps, m_ub=m_ub, rng=stream, size=n_runs, _arrays_cache=cache
                )
            except NotApplicableError as exc:
                rows.append(
                    {
                        "mechanism": name,
                        "epsilon": eps,
                        "n_runs": n_runs,
                        "note": f"not applicable: {exc}",
                    }
                )
            else:
                est = d.estimates
                err = np.abs(est - f)
                q05, q95 = np.quantile(est, [0.05, 0.95])
                rows.append(
                    {
                        "mechanism": name,
                        "epsilon": eps,
                        "m_ub": d.m_ub,
                        "n_arrays": d.n_arrays,
                        "mae": float(err.mean()),
                        "mae_se": float(err.std(ddof=1) / np.sqrt(n_runs))
                        if n_runs > 1
                        else np.nan,
                        "mean": float(est.mean()),
                        "std": float(est.std(ddof=1)) if n_runs > 1 else np.nan,
                        "q05": float(q05),
                        "q95": float(q95),
                        "n_runs": n_runs,
                        "note": d.note,
                    }
                )
            done += 1
            if progress is not None:
                progress(done, total)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["m_ub"] = table["m_ub"].astype("Int64")
    table["n_arrays"] = table["n_arrays"].astype("Int64")
    table["note"] = table["note"].fillna("").astype(str)
    for col in ("epsilon", "mae", "mae_se", "mean", "std", "q05", "q95"):
        table[col] = table[col].astype(np.float64)
    table["n_runs"] = table["n_runs"].astype(np.int64)
    return table


def simulate(
    hat: HatData,
    mechanism: str,
    epsilon: float,
    *,
    n_runs: int,
    rng: np.random.Generator,
    m_ub: int | None = None,
) -> np.ndarray:
    """The raw released values of ``n_runs`` independent runs (for ``hexplorer simulate``).

    Raises NotApplicableError (unlike :func:`monte_carlo`) if the mechanism cannot run.
    """
    n_runs = check_positive_int("n_runs", n_runs)
    return run_mechanism(mechanism, hat, epsilon, m_ub=m_ub, rng=rng, size=n_runs).estimates


def mae_samples(
    hat: HatData,
    mechanism: str,
    epsilon: float,
    *,
    n_runs: int,
    rng: np.random.Generator,
    m_ub: int | None = None,
) -> np.ndarray:
    """|M^(i)(D) − f(D)| for ``n_runs`` independent runs; their mean is the MAE."""
    return np.abs(
        simulate(hat, mechanism, epsilon, n_runs=n_runs, rng=rng, m_ub=m_ub) - hat.true_mean
    )


def abs_error_statistic(errors: np.ndarray, level: float | None = None) -> tuple[float, float]:
    """The MAE (``level`` None) or the ``level``-quantile of |error|, with its standard error.

    MAE: ``std(|error|) / √n``. Quantile: half the distance between the order statistics at
    ranks ``n q ± √(n q (1 − q))`` (the binomial ±1σ band of the number of runs below the
    quantile, so the band covers the true quantile with probability ≈ 68 %); NaN when n < 2.

    >>> abs_error_statistic(np.array([1.0, 3.0]))
    (2.0, 1.0)
    >>> v, se = abs_error_statistic(np.arange(1001.0), 0.5)
    >>> v, se
    (500.0, 16.5)
    """
    x = np.asarray(errors, dtype=np.float64)
    n = x.size
    if n == 0:
        raise HexplorerError("No runs: the error statistic needs at least one.")
    if level is None:
        se = float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else math.nan
        return float(x.mean()), se
    value = float(np.quantile(x, level))
    if n < 2:
        return value, math.nan
    half = math.sqrt(n * level * (1.0 - level))
    lo = min(max(int(math.floor(n * level - half)), 0), n - 1)
    hi = min(max(int(math.ceil(n * level + half)), 0), n - 1)
    part = np.partition(x, (lo, hi))
    return value, float((part[hi] - part[lo]) / 2.0)


@dataclass(frozen=True, kw_only=True)
class ErrorSummary:
    """How far simulated releases land from the true mean.

    Attributes
    ----------
    median : float
        The typical error: median of ``|M^(i) − f|``.
    q90 : float
        The 90 % bound: 90th percentile of ``|M^(i) − f|`` (90 % of releases land within it).
    share_within : float or None
        Fraction of runs with ``|M^(i) − f| <= within`` (None when no ``within`` was given).
    n_runs : int
    """

    median: float
    q90: float
    share_within: float | None
    n_runs: int


def error_summary(estimates, true_mean: float, *, within: float | None = None) -> ErrorSummary:
    """Typical error, 90 % bound and share within ``±within`` of released values.

    Parameters
    ----------
    estimates : array_like
        Released values of independent runs (e.g. :func:`simulate`, raw or post-processed).
    true_mean : float
        f(D), the value the releases estimate.
    within : float, optional
        Half-width X of the band [f − X, f + X] (>= 0).

    >>> s = error_summary([9.0, 10.0, 10.5, 12.0], 10.0, within=1.0)
    >>> s.median, s.share_within
    (0.75, 0.75)
    """
    values = np.asarray(estimates, dtype=np.float64).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise HexplorerError(
            "The 'estimates' parameter must hold at least one finite value. "
            f"Got {values.size} values instead."
        )
    if within is not None and not (np.isfinite(within) and within >= 0):
        raise HexplorerError(f"The 'within' parameter must be >= 0. Got {within!r} instead.")
    err = np.abs(values - float(true_mean))
    median, q90 = np.quantile(err, [0.5, 0.9])
    share = None if within is None else float(np.mean(err <= within))
    return ErrorSummary(
        median=float(median), q90=float(q90), share_within=share, n_runs=values.size
    )
