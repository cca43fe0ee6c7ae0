"""Cached calls into core for the error map (nothing mathematical here).

Built once per (data, slot, noise measure): the slot's grids, every hexagon's m^(ε) staircase
(:func:`core.citywide.errors.error_table`) and the release batch are ``st.cache_data`` (core's
classes, unpickled as the code now defines them: a shared object would outlive a reload of
core's modules, and its class with it); the plain per-hexagon columns, the fitted view and the
density layers are shared read-only resources (``st.cache_resource``: never mutated, not copied
on every ε step).
Moving ε then costs one :func:`core.citywide.errors.errors_at` lookup over all hexagons (no
Python loop per hexagon) and, for the noisy release, one vectorised
:func:`core.citywide.batch.release_all`. The derived mean is a Monte Carlo (cached by its
parameters). Arguments are parameters (a :class:`DataSpec`, slot, ε, seed...), so they key the
caches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.citywide import derived, errors
from core.citywide.batch import HatBatch, release_all
from core.citywide.gridset import GridSet, select_grids
from core.postprocess import clamp_mean
from dashboard.common.cache import cached
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import maps


@cached(max_entries=16, resource=True)
def slot_rows(spec: DataSpec, slot: str) -> pd.DataFrame:
    """The per-(HAT, user) summaries of one slot."""
    return select_grids(compute.prepared(spec).summaries, slot=slot)


@cached(max_entries=16)
def grids(spec: DataSpec, slot: str) -> GridSet:
    return GridSet.from_summaries(slot_rows(spec, slot))


@cached(max_entries=16)
def table(spec: DataSpec, slot: str, noise_measure: str) -> errors.ErrorTable:
    """Every hexagon's staircase for the slot (built once; the slow step)."""
    return errors.error_table(grids(spec, slot), upper=spec.upper, noise_measure=noise_measure)


@cached(max_entries=16)
def batch(spec: DataSpec, slot: str) -> HatBatch:
    return HatBatch.from_summaries(slot_rows(spec, slot), upper=spec.upper)


@cached(max_entries=16, resource=True)
def base(spec: DataSpec, slot: str) -> pd.DataFrame:
    """The slot's hexagons in the table's order (HAT label): hat, cell, users, records,
    true_mean, pos ([lon, lat] of the centre) and their tooltip texts. Read-only."""
    g = grids(spec, slot)
    true_mean = np.add.reduceat(g.s, g.starts[:-1]) / g.records
    cells = [str(c) for c in g.cells]
    frame = pd.DataFrame(
        {
            "hat": g.hats.astype(str),
            "cell": cells,
            "users": g.users_per_grid,
            "records": g.records,
            "true_mean": true_mean,
            "pos": [[round(x, 5) for x in maps.centre(c)] for c in cells],  # 1 m
        }
    )
    frame["users_text"] = [f"{v:,}" for v in frame["users"]]
    frame["records_text"] = [f"{v:,}" for v in frame["records"]]
    frame["true_text"] = [f"{v:,.2f}" for v in true_mean]
    return frame


@cached(max_entries=32, resource=True)
def view(spec: DataSpec, slot: str, width_px: int):
    """The view fitted to the slot's hexagons for a map ``width_px`` wide, and its scale."""
    return maps.fit_view(base(spec, slot)["cell"].tolist(), width_px=width_px)


@cached(max_entries=16, resource=True)
def density(spec: DataSpec, slot: str, dots: bool = True) -> list:
    """The record-density context layers (all slots) where the slot has no hexagon of its own,
    built once per data set and slot; with ``dots`` when the map's hexagons are narrow
    (:func:`dashboard.common.view.maps.needs_dots`)."""
    return maps.density_layers(
        compute.cell_density(spec), dots=dots, under=base(spec, slot)["cell"].astype(str)
    )


def errors_at(
    spec: DataSpec, slot: str, noise_measure: str, mechanism: str, epsilon: float
) -> errors.ErrorsAt:
    """Every hexagon's worst-case error at ε: a lookup in the cached table (not cached itself:
    it takes well under a millisecond per thousand hexagons)."""
    return errors.errors_at(table(spec, slot, noise_measure), epsilon, mechanism)


@cached(max_entries=64)
def release(spec: DataSpec, slot: str, mechanism: str, epsilon: float, seed: int) -> np.ndarray:
    """One seeded release of every hexagon (table order), clamped into [0, U] as published
    (:func:`core.citywide.derived.one_release`'s numbers, from the cached batch)."""
    out = release_all(mechanism, batch(spec, slot), epsilon, seed=int(seed))
    return clamp_mean(out["estimate"].to_numpy(dtype=np.float64), spec.upper)


@cached(max_entries=32)
def derived_mean(
    spec: DataSpec,
    slot: str,
    mechanism: str,
    epsilon: float,
    n_runs: int,
    seed: int,
    hats: tuple[str, ...] | None,
) -> derived.DerivedMean:
    """The city-wide (or chosen hexagons') mean from released hexagon means, simulated."""
    return derived.derived_mean(
        grids(spec, slot),
        epsilon,
        mechanism,
        upper=spec.upper,
        n_runs=n_runs,
        seed=seed,
        hats=hats,
    )


@dataclass(frozen=True, kw_only=True)
class Shown:
    """What one error map shows: the values coloured, each hexagon's error and trust class."""

    values: np.ndarray
    error: np.ndarray
    m_ub: np.ndarray
    classes: np.ndarray
    within: derived.WithinTarget


def shown(
    metric: str,
    at: errors.ErrorsAt,
    base_frame: pd.DataFrame,
    *,
    target: float,
    upper: float,
    noisy: np.ndarray | None = None,
) -> Shown:
    """The values of ``metric`` ("error", "relative_error", "within_target", "release") with
    every hexagon's trust class and the share within target (numpy over all hexagons)."""
    error = at.total
    classes = derived.trust_classes(error, target=target, upper=upper)
    within = derived.within_target(error, base_frame["records"].to_numpy(), target)
    true_mean = base_frame["true_mean"].to_numpy(dtype=float)
    if metric == "error":
        values = error
    elif metric == "relative_error":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where(true_mean > 0, error / true_mean, np.inf)
    elif metric == "within_target":
        values = classes.astype(float)
    elif metric == "release":
        if noisy is None:
            raise ValueError("shown: the 'release' metric needs the noisy values")
        values = noisy
    else:
        raise ValueError(f"shown: unknown metric {metric!r}")
    return Shown(values=values, error=error, m_ub=at.m_ub, classes=classes, within=within)
