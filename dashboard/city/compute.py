"""Cached calls into :mod:`core.multigrid` for the Whole-city page
(:func:`dashboard.common.cache.cached`: one key and expiry rule for every feature).

Thin calls into core, nothing mathematical (SPEC section 5 lives in ``core/multigrid.py``).
Arguments are parameters (a :class:`~dashboard.compute.DataSpec`, the chosen slot or day, ε, a
seed), so they form the cache key. The grid set is chosen exactly as ``hexplorer compose``
chooses it (``--slot-filter`` or ``--day``), the release applies CHOP-USER's suppression and
draws its noise from ``np.random.default_rng(seed)`` like ``hexplorer compose --simulate
--accounting chop --seed``, so the page and the CLI show the same numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import multigrid, plan, postprocess
from core.citywide import errors
from core.errors import HexplorerError
from core.multigrid import ChopResult, GridSet
from dashboard.common.cache import cached
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec


def _is_absolute(slot: str) -> bool:
    """An absolute window label 'YYYY-MM-DDTHH:MM' (not 'h08'): the only kind with a day."""
    return len(slot) > 10 and slot[10] == "T"


@cached(max_entries=16)
def slot_table(spec: DataSpec) -> pd.DataFrame:
    """One row per slot, busiest (most records) first: slot, day, hexagons, users, records.

    ``users`` sums the HATs' buses (a bus in two hexagons counts twice); ``day`` is '' for
    hour-of-day slots. Ties keep the slot order.
    """
    hats = compute.hats(spec)
    out = (
        hats.groupby("slot", sort=True)
        .agg(hexagons=("hat", "size"), users=("users", "sum"), records=("records", "sum"))
        .reset_index()
        .sort_values("records", ascending=False, kind="stable")
        .reset_index(drop=True)
    )
    out.insert(1, "day", [s[:10] if _is_absolute(s) else "" for s in out["slot"]])
    return out


@cached(max_entries=16)
def day_table(spec: DataSpec) -> pd.DataFrame:
    """One row per day of absolute slots, busiest first: day, slots, hexagons (HATs), records.

    Empty for hour-of-day slots (they have no day).
    """
    slots = slot_table(spec)
    slots = slots[slots["day"] != ""]
    return (
        slots.groupby("day", sort=True)
        .agg(slots=("slot", "size"), hats=("hexagons", "sum"), records=("records", "sum"))
        .reset_index()
        .sort_values("records", ascending=False, kind="stable")
        .reset_index(drop=True)
    )


@cached(max_entries=32)
def grid_set(spec: DataSpec, slot: str | None, day: str | None) -> GridSet:
    """``core.multigrid.select_grids`` then ``GridSet.from_summaries`` (raises HexplorerError)."""
    if slot is None and day is None:
        raise HexplorerError("Choose a slot or a day: the set of grids is empty.")
    rows = multigrid.select_grids(compute.prepared(spec).summaries, slot=slot, day=day)
    return GridSet.from_summaries(rows)


@cached(max_entries=64)
def chop(spec: DataSpec, slot: str | None, day: str | None, epsilon: float) -> ChopResult:
    """``core.multigrid.chop_user`` on the chosen grids at per-grid budget ε."""
    return multigrid.chop_user(grid_set(spec, slot, day), epsilon, upper=spec.upper)


@cached(max_entries=64)
def release(
    spec: DataSpec, slot: str | None, day: str | None, epsilon: float, seed: int
) -> pd.DataFrame:
    """One simulated run of the per-grid mechanism after CHOP-USER's suppression.

    ``core.multigrid.release_grids(..., rng=np.random.default_rng(seed),
    retained=chop.retained)``, one row per grid (hat, cell, slot, true and noisy mean and
    variance, sensitivities, error bound, ...), plus ``error_before`` (E_g with nothing
    suppressed, from the same ChopResult).
    """
    grids = grid_set(spec, slot, day)
    result = chop(spec, slot, day, epsilon)
    table = multigrid.release_grids(
        grids,
        epsilon,
        upper=spec.upper,
        rng=np.random.default_rng(seed),
        retained=result.retained,
    )
    table["error_before"] = result.errors_before
    return table


def clamped(table: pd.DataFrame, upper: float) -> pd.DataFrame:
    """The release with its noisy values post-processed into range (a new frame).

    ``noisy_mean`` into [0, U] and ``noisy_var`` into [0, U²/4] (``core.postprocess``; free
    under DP: it reads only the released values and U); the papers' raw values stay beside them
    as ``noisy_mean_raw`` and ``noisy_var_raw``.
    """
    out = table.copy()
    out["noisy_mean_raw"] = table["noisy_mean"]
    out["noisy_var_raw"] = table["noisy_var"]
    out["noisy_mean"] = postprocess.clamp_mean(table["noisy_mean"].to_numpy(), upper)
    out["noisy_var"] = postprocess.clamp_variance(table["noisy_var"].to_numpy(), upper)
    return out


@cached(max_entries=64)
def suppressed(spec: DataSpec, slot: str | None, day: str | None, epsilon: float) -> pd.DataFrame:
    """The (user, HAT) pairs CHOP-USER suppressed, in order: user_id, hat, records_dropped, order."""
    pairs = chop(spec, slot, day, epsilon).suppressed_pairs()
    return pairs.rename(columns={"m": "records_dropped"})


@cached(max_entries=32)
def losses(
    spec: DataSpec, slot: str | None, day: str | None, epsilons: tuple[float, ...]
) -> pd.DataFrame:
    """``core.multigrid.compose`` over ``epsilons``: one row per ε with basic_loss, user_loss,
    chop_k, chop_loss, threshold, max_error_after, suppressed_pairs."""
    summary = multigrid.compose(grid_set(spec, slot, day), list(epsilons), spec.upper)
    return pd.DataFrame(summary["results"])


@cached(max_entries=64)
def privacy_loss(
    spec: DataSpec, slot: str | None, day: str | None, epsilon: float
) -> multigrid.PrivacyLoss:
    """``core.multigrid.privacy_loss`` at ε: basic G·ε, by users ε·max G_ℓ, after CHOP-USER K·ε."""
    return multigrid.privacy_loss(
        grid_set(spec, slot, day), epsilon, chop(spec, slot, day, epsilon)
    )


# --- Plan from a target error (core.plan, core.citywide.errors) -----------------------------


@cached(max_entries=16)
def error_table(
    spec: DataSpec, slot: str | None, day: str | None, noise_measure: str
) -> errors.ErrorTable:
    """``core.citywide.errors.error_table`` of the chosen grids: every HAT's staircase, built
    once per (data, grids, noise measure); each ε is then one vectorised lookup."""
    return errors.error_table(
        grid_set(spec, slot, day), upper=spec.upper, noise_measure=noise_measure
    )


@cached(max_entries=64)
def coverage_curve(
    spec: DataSpec,
    slot: str | None,
    day: str | None,
    noise_measure: str,
    mechanism: str,
    target: float,
    epsilons: tuple[float, ...],
) -> pd.DataFrame:
    """``core.plan.coverage_curve``: epsilon, hats_within, hats_total, share."""
    table = error_table(spec, slot, day, noise_measure)
    return plan.coverage_curve(table, target, epsilons, mechanism)


@cached(max_entries=64)
def city_plan(
    spec: DataSpec,
    slot: str | None,
    day: str | None,
    noise_measure: str,
    mechanism: str,
    target: float,
    coverage: float,
) -> plan.CityPlan:
    """``core.plan.city_plan`` with the grids (so its user_loss runs CHOP-USER at the plan's ε),
    as ``hexplorer plan --all`` computes it."""
    table = error_table(spec, slot, day, noise_measure)
    return plan.city_plan(
        table, target, coverage=coverage, mechanism=mechanism, grids=grid_set(spec, slot, day)
    )
