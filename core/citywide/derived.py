"""What the map reads off every HAT's error, and what a number derived from many HATs costs.

Three small pieces for the error map (issue 16) on top of :mod:`core.citywide.errors`:

- :func:`within_target`: the share of hexagons, and of records, whose error is within a target
  ±X (the planning target of :mod:`core.plan`); :func:`trust_classes` sorts every hexagon into
  *within target*, *over target* and *no useful release* (over target with an error of at least
  U/2, which publishing U/2 achieves without looking at the data: what too few users give).
- :func:`one_release`: one simulated release of every HAT of a set (seeded), post-processed into
  [0, U] as a published release would be (:mod:`core.postprocess`). It is
  :func:`core.citywide.batch.release_all`, nothing new: the same mechanisms and seed rule.
- :func:`derived_mean`: the record-weighted mean over hexagons of their released means — for a
  slot, the city-wide mean — simulated over many releases (SPEC section 3's mechanisms through
  :func:`core.mechanisms.run_mechanism`, runs vectorised), with its ``level`` interval and the
  ``level``-quantile of its error against the true value Σ s / Σ m. As in the papers, each HAT's
  record count N is treated as public, so weighting by it spends no privacy; the released means
  are post-processed into [0, U] first (free under DP). A derived number's error is not the sum of
  the hexagons' errors, nor their mean: noise partly cancels and clipping bias adds up, which is
  why it is simulated ("What are the chances?", 2023: people cannot work this out on their own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.citywide.batch import HatBatch, hat_rng, release_all
from core.citywide.gridset import GridSet, _as_gridset
from core.errors import HexplorerError, NotApplicableError
from core.params import check_epsilon, check_positive_int, check_upper
from core.postprocess import clamp_mean

__all__ = [
    "TRUST_LABELS",
    "DerivedMean",
    "WithinTarget",
    "derived_mean",
    "one_release",
    "trust_classes",
    "within_target",
]

WITHIN, OVER, NO_USE = 0, 1, 2
#: Names of :func:`trust_classes`' values, in order.
TRUST_LABELS = ("within target", "over target", "no useful release")


def _check_target(target) -> float:
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'target' parameter must be a number > 0. Got {target!r} instead."
        ) from None
    if not np.isfinite(value) or value <= 0:
        raise HexplorerError(
            f"The 'target' parameter must be a number > 0. Got {target!r} instead."
        )
    return value


@dataclass(frozen=True, kw_only=True)
class WithinTarget:
    """How many hexagons (and their records) have an error within ±``target``.

    Attributes
    ----------
    target : the target error X.
    hexagons, within : number of hexagons, and of those with error ≤ X.
    records, records_within : their records (N summed).
    """

    target: float
    hexagons: int
    within: int
    records: int
    records_within: int

    def __post_init__(self) -> None:
        if not 0 <= self.within <= self.hexagons or not 0 <= self.records_within <= self.records:
            raise HexplorerError("WithinTarget: the counts within target exceed the totals.")

    @property
    def share_hexagons(self) -> float:
        """Share of hexagons within target (NaN without hexagons)."""
        return self.within / self.hexagons if self.hexagons else float("nan")

    @property
    def share_records(self) -> float:
        """Share of records in hexagons within target (NaN without records)."""
        return self.records_within / self.records if self.records else float("nan")


def within_target(errors, records, target: float) -> WithinTarget:
    """The hexagons whose error is at most ``target`` and the records they hold.

    A NaN error (no worst case: the mechanism cannot run there) is not within target.

    >>> w = within_target(np.array([1.0, 3.0, np.nan]), np.array([10, 30, 5]), 2.0)
    >>> w.within, w.records_within, round(w.share_hexagons, 3), round(w.share_records, 3)
    (1, 10, 0.333, 0.222)
    """
    target = _check_target(target)
    errors = np.asarray(errors, dtype=np.float64)
    records = np.asarray(records, dtype=np.int64)
    if errors.shape != records.shape or errors.ndim != 1:
        raise HexplorerError("errors and records must be 1-d arrays of the same length.")
    ok = errors <= target  # NaN compares False
    return WithinTarget(
        target=target,
        hexagons=int(errors.size),
        within=int(ok.sum()),
        records=int(records.sum()),
        records_within=int(records[ok].sum()),
    )


def trust_classes(errors, *, target: float, upper: float) -> np.ndarray:
    """Each hexagon's class: 0 within target, 1 over target, 2 no useful release.

    *No useful release* is over target with an error of at least U/2 (or no error at all: the
    mechanism cannot run): publishing U/2 without looking at the data is never further than U/2
    from the truth, so such a release tells nothing. It happens where a hexagon has too few
    users for its ε. Class 0 is exactly :func:`within_target`'s set.

    >>> trust_classes(np.array([1.0, 5.0, 40.0, np.nan]), target=2.0, upper=65.0).tolist()
    [0, 1, 2, 2]
    """
    target = _check_target(target)
    upper = check_upper(upper)
    errors = np.asarray(errors, dtype=np.float64)
    out = np.full(errors.shape, OVER, dtype=np.int8)
    out[errors <= target] = WITHIN
    out[(out == OVER) & ~(errors < upper / 2.0)] = NO_USE  # NaN included
    return out


def one_release(
    summaries: pd.DataFrame, epsilon: float, mechanism: str, *, upper: float, seed: int
) -> pd.DataFrame:
    """One simulated release of every HAT of ``summaries``, post-processed into [0, U].

    :func:`core.citywide.batch.release_all` (its per-HAT seed rule) followed by
    :func:`core.postprocess.clamp_mean`.

    Returns
    -------
    pandas.DataFrame
        hat (label order), raw (the mechanism's estimate), estimate (clamped into [0, U]),
        true_mean, records.
    """
    upper = check_upper(upper)
    batch = HatBatch.from_summaries(summaries, upper=upper)
    out = release_all(mechanism, batch, epsilon, seed=seed)
    return pd.DataFrame(
        {
            "hat": out["hat"].astype(str),
            "raw": out["estimate"].to_numpy(dtype=np.float64),
            "estimate": clamp_mean(out["estimate"].to_numpy(dtype=np.float64), upper),
            "true_mean": out["true_mean"].to_numpy(dtype=np.float64),
            "records": out["records"].to_numpy(dtype=np.int64),
        }
    )


@dataclass(frozen=True, kw_only=True)
class DerivedMean:
    """A record-weighted mean of released hexagon means, simulated over ``n_runs`` releases.

    Attributes
    ----------
    true_value : Σ s / Σ m over the HATs used (the records' mean).
    runs : (n_runs,) the derived value of each simulated release.
    level : the interval's level (0.9: the 5 % and 95 % quantiles of ``runs``).
    low, high : the interval.
    error_quantile : the ``level``-quantile of |run − true value|.
    hats : number of HATs used; skipped : labels of HATs the mechanism cannot run on (left out
        of both the derived and the true value).
    mechanism, epsilon, seed : the inputs.
    """

    true_value: float
    runs: np.ndarray
    level: float
    low: float
    high: float
    error_quantile: float
    hats: int
    records: int
    skipped: tuple[str, ...]
    mechanism: str
    epsilon: float
    seed: int

    @property
    def n_runs(self) -> int:
        return int(self.runs.size)

    @property
    def bias(self) -> float:
        """Mean of the runs minus the true value (clipping bias, mostly)."""
        return float(self.runs.mean() - self.true_value)

    @property
    def covers_truth(self) -> bool:
        """Whether the true value lies inside [low, high]."""
        return bool(self.low <= self.true_value <= self.high)

    def sentence(self, unit: str, what: str = "mean") -> str:
        """The result in plain words, e.g. for a slot's mean speed in km/h."""
        pct = f"{self.level:.0%}"
        text = (
            f"Averaging the released means of {self.hats:,} hexagons (weighted by their records) "
            f"gives a {what} that lands between {self.low:,.2f} and {self.high:,.2f} {unit} in "
            f"{pct} of releases at ε = {self.epsilon:g} ({self.mechanism}); the true value is "
            f"{self.true_value:,.2f} {unit}. So {pct} of the time the derived {what} is within "
            f"±{self.error_quantile:,.2f} {unit} of the truth"
        )
        if not self.covers_truth:
            text += (
                f" — and the true value lies outside that range: the clipping bias "
                f"({self.bias:+,.2f} {unit} on average) is larger than the noise"
            )
        text += f" ({self.n_runs:,} simulated releases, seed {self.seed})."
        if self.skipped:
            text += f" {len(self.skipped)} hexagon(s) the mechanism cannot release are left out."
        return text


def derived_mean(
    grids,
    epsilon: float,
    mechanism: str,
    *,
    upper: float,
    n_runs: int,
    seed: int,
    hats=None,
    level: float = 0.9,
    clamp: bool = True,
) -> DerivedMean:
    """Simulate a mean derived from the released means of many HATs (see the module docstring).

    Parameters
    ----------
    grids : GridSet or summaries DataFrame
        The HATs (e.g. all hexagons of a slot).
    epsilon : float
        ε of each HAT's release.
    mechanism : str
        Any mechanism of :data:`core.mechanisms.MECHANISMS`, at its default m_UB.
    upper : float
        U.
    n_runs : int
        Simulated releases (each redraws every HAT's randomness).
    seed : int
        HAT h's runs use ``core.citywide.batch.hat_rng(seed, mechanism, h)`` — the generator of
        :func:`one_release` — so a HAT's runs do not depend on the other HATs chosen.
    hats : iterable of str, optional
        Only these HAT labels (e.g. a corridor); all by default.
    level : float
        Interval level in (0, 1).
    clamp : bool
        Post-process each released mean into [0, U] before averaging (default, as published).

    Returns
    -------
    DerivedMean

    Raises
    ------
    HexplorerError
        Bad parameters, an unknown HAT label, or no HAT the mechanism can run on.
    """
    from core.hat import HatData
    from core.mechanisms import get_mechanism, run_mechanism

    g: GridSet = _as_gridset(grids)
    epsilon = check_epsilon(epsilon)
    name = get_mechanism(mechanism).name
    upper = check_upper(upper)
    n_runs = check_positive_int("n_runs", n_runs)
    level = float(level)
    if not 0.0 < level < 1.0:
        raise HexplorerError(f"The 'level' parameter must lie in (0, 1). Got {level!r} instead.")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise HexplorerError(f"The 'seed' parameter must be an integer. Got {seed!r} instead.")
    labels = [str(h) for h in g.hats]
    if hats is None:
        chosen = list(range(g.n_grids))
    else:
        index = {label: i for i, label in enumerate(labels)}
        wanted = [str(h) for h in hats]
        unknown = [h for h in wanted if h not in index]
        if unknown:
            raise HexplorerError(f"hat={unknown[0]!r} is not one of the chosen HATs.")
        if not wanted:
            raise HexplorerError("Choose at least one hexagon for the derived mean.")
        chosen = sorted({index[h] for h in wanted})
    weighted = np.zeros(n_runs)
    sums = 0.0
    records = 0
    skipped = []
    for h in chosen:
        sl = slice(int(g.starts[h]), int(g.starts[h + 1]))
        hat = HatData.from_arrays(
            g.m[sl], g.s[sl], None, g.user_ids[g.user[sl]], upper=upper, hat=labels[h]
        )
        try:
            d = run_mechanism(
                name, hat, epsilon, rng=hat_rng(int(seed), name, labels[h]), size=n_runs
            )
        except NotApplicableError:
            skipped.append(labels[h])
            continue
        estimates = clamp_mean(d.estimates, upper) if clamp else d.estimates
        weighted += hat.n_records * estimates
        sums += float(g.s[sl].sum())
        records += hat.n_records
    if records == 0:
        raise HexplorerError(f"{name} cannot release any of the chosen hexagons at ε={epsilon:g}.")
    runs = weighted / records
    true_value = sums / records
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(runs, [tail, 1.0 - tail])
    return DerivedMean(
        true_value=true_value,
        runs=runs,
        level=level,
        low=float(low),
        high=float(high),
        error_quantile=float(np.quantile(np.abs(runs - true_value), level)),
        hats=len(chosen) - len(skipped),
        records=records,
        skipped=tuple(skipped),
        mechanism=name,
        epsilon=epsilon,
        seed=int(seed),
    )
