"""Calls into core for the Publish page: the chosen grids, the preview (a simulation), publishing
(``core.publish``) and reading the ledger back.

Thin and nothing mathematical. Cached functions take parameters (a
:class:`~dashboard.common.source.compute.DataSpec`, the selection, ε, a seed) as their key;
publishing and the ledger are never cached (the ledger changes, and a publication is an action).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.citywide.batch import HatBatch
from core.citywide.chop import chop_user
from core.citywide.errors import error_table, errors_at
from core.citywide.grids import release_grids
from core.citywide.gridset import GridSet, select_grids
from core.data import hat_data, slot_table
from core.errors import HexplorerError
from core.mechanisms import analytic_names
from core.mechanisms import release as simulate_release
from core.plan import recommended_mechanism
from core.postprocess import clamp_mean, clamp_variance
from core.publish import Ledger, batch, city, files
from core.publish.records import LedgerEntry
from dashboard.common.cache import cached
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import downloads

_LOG = logging.getLogger(__name__)
GRID = "grid-laplace"


@cached(max_entries=16)
def slots(spec: DataSpec) -> pd.DataFrame:
    """slot, hexagons, users, records; most records (city-wide) first (``core.data.slot_table``)."""
    return slot_table(compute.hats(spec))


def days(slot_table: pd.DataFrame) -> list[str]:
    """Days of the absolute slots ('YYYY-MM-DD'), busiest first; none for hour-of-day slots."""
    out: list[str] = []
    for s in slot_table["slot"].astype(str):
        if len(s) > 10 and s[10] == "T" and s[:10] not in out:
            out.append(s[:10])
    return out


@cached(max_entries=32)
def grid_set(
    spec: DataSpec, mode: str, hats: tuple[str, ...], slot: str | None, day: str | None
) -> GridSet:
    """The chosen grids (``core.citywide.gridset.select_grids``; raises HexplorerError)."""
    summaries = compute.prepared(spec).summaries
    if mode == "hats":
        if not hats:
            raise HexplorerError("Choose at least one HAT to publish.")
        rows = select_grids(summaries, hats=list(hats))
    elif mode == "day":
        rows = select_grids(summaries, day=day)
    else:
        rows = select_grids(summaries, slot=slot)
    return GridSet.from_summaries(rows)


@cached(max_entries=32)
def recommended(
    spec: DataSpec,
    mode: str,
    hats: tuple[str, ...],
    slot: str | None,
    day: str | None,
    epsilon: float,
) -> str:
    """The mechanism the plan recommends for these HATs at ε (``core.plan.recommended_mechanism``:
    the smallest median worst-case error): the page's default, so that its preview is useful."""
    table = error_table(grid_set(spec, mode, hats, slot, day), upper=spec.upper)
    return recommended_mechanism(table, epsilon)


def useless(table: pd.DataFrame, upper: float) -> int:
    """How many rows' releases are useless: a worst-case error of at least U/2, no better than
    the middle of [0, U] (too few users for this ε)."""
    if "error_bound" not in table:
        return 0
    return int((table["error_bound"].to_numpy(dtype=float) >= upper / 2).sum())


@dataclass(frozen=True, kw_only=True)
class Preview:
    """A simulated release (numpy noise, seeded) and what publishing it would charge.

    ``table``: hat, cell, slot, noisy_mean[, noisy_var] (simulated, clamped as the files are),
    error_bound (the mean's worst-case error, from counts, in the data's unit)[, E_g (SPEC §5:
    mean and variance errors added)]; ``charges``: ε per user (GridSet order).
    """

    table: pd.DataFrame
    charges: np.ndarray
    user_ids: tuple[str, ...]


@cached(max_entries=32)
def preview(
    spec: DataSpec,
    mode: str,
    hats: tuple[str, ...],
    slot: str | None,
    day: str | None,
    mechanism: str,
    epsilon: float,
    accounting: str,
    seed: int,
) -> Preview:
    """Simulate the release the page would publish; never a true value in the table."""
    gs = grid_set(spec, mode, hats, slot, day)
    rng = np.random.default_rng(seed)
    if mechanism == GRID:
        keep, k = None, gs.max_grids_per_user
        if accounting == "chop":
            result = chop_user(gs, epsilon, upper=spec.upper)
            keep, k = result.retained, result.k_final
        sim = release_grids(gs, epsilon, upper=spec.upper, rng=rng, retained=keep)
        table = pd.DataFrame(
            {
                "hat": sim["hat"],
                "cell": sim["cell"],
                "slot": sim["slot"],
                "noisy_mean": clamp_mean(sim["noisy_mean"].to_numpy(), spec.upper),
                "noisy_var": clamp_variance(sim["noisy_var"].to_numpy(), spec.upper),
                # the mean's worst case (data's unit), E_μ + 2Δ_μ/ε; E_g adds the variance's
                "error_bound": sim["bias_mean"] + 2.0 * sim["delta_mean"] / epsilon,
                "E_g": sim["error_bound"],
            }
        )
        charges = city.user_charges(gs, epsilon, accounting, k)
    else:
        summaries = compute.prepared(spec).summaries
        rows = []
        for label in gs.hats.astype(str):
            rel = simulate_release(
                mechanism, hat_data(summaries, label, upper=spec.upper), epsilon, rng=rng
            )
            cell, _, slot_ = label.partition("/")
            rows.append(
                {
                    "hat": label,
                    "cell": cell,
                    "slot": slot_,
                    "noisy_mean": float(clamp_mean(rel.estimate, spec.upper)),
                    "m_ub": rel.m_ub,
                }
            )
        table = pd.DataFrame(rows)
        if mechanism in analytic_names():  # the worst case from counts, as grid-laplace's
            errors = error_table(gs, upper=spec.upper)
            bound = pd.Series(errors_at(errors, epsilon, mechanism).total, index=errors.hats)
            table["error_bound"] = table["hat"].map(bound).to_numpy(dtype=float)
        charges = gs.grids_per_user.astype(np.float64) * epsilon  # ε per HAT a user is in
    return Preview(table=table, charges=charges, user_ids=tuple(gs.user_ids.astype(str)))


@dataclass(frozen=True)
class Published:
    """What a click on Publish recorded: the release's id, and whether it is an earlier record
    of the same request given back (no new charge)."""

    ids: list[str]
    reused: bool


def publish(
    spec: DataSpec,
    mode: str,
    hats: tuple[str, ...],
    slot: str | None,
    day: str | None,
    mechanism: str,
    epsilon: float,
    accounting: str,
    namespace: str,
) -> Published:
    """Publish (OpenDP noise, ledger, budget, reuse) as ONE ledger record; returns its id.

    All or nothing: a grid-wide release is :func:`core.publish.city.publish_grids`, a single-HAT
    mechanism over the chosen HATs is :func:`core.publish.batch.publish_all` (each HAT's release
    at its default m_UB, each user charged ε per chosen HAT it is in). A budget refusal records
    none of the HATs; it names the ε and the HATs that would fit.
    """
    gs = grid_set(spec, mode, hats, slot, day)
    dataset = spec.source.name
    if mechanism == GRID:
        out = city.publish_grids(
            gs, epsilon, upper=spec.upper, accounting=accounting, dataset=dataset,
            namespace=namespace,
        )  # fmt: skip
        return Published([out.record.release_id], out.reused)
    rows = select_grids(compute.prepared(spec).summaries, hats=gs.hats.astype(str).tolist())
    hb = HatBatch.from_summaries(rows, upper=spec.upper)
    published = batch.publish_all(
        mechanism, hb, epsilon, accounting="per-user", dataset=dataset, namespace=namespace
    )
    return Published([published.record.release_id], published.reused)


@contextlib.contextmanager
def server_paths_hidden(book: Ledger) -> Iterator[None]:
    """A ledger error shown without the server's paths (the ledger's and its key file's): the
    operator finds the full line in the server's log."""
    try:
        yield
    except HexplorerError as exc:
        text = str(exc)
        if str(book.path) not in text and str(book.key_file) not in text:
            raise
        _LOG.warning("%s", text)
        for path, name in ((book.key_file, "its key file"), (book.path, "the server's ledger")):
            text = text.replace(str(path), name)
        raise HexplorerError(text) from None


def ledger() -> Ledger:
    """The ledger of this server ($HEXPLORER_LEDGER or ~/.hexplorer/ledger.sqlite)."""
    return Ledger()


def releases_table(book: Ledger) -> pd.DataFrame:
    """One row per recorded release, newest first."""
    rows = [
        {
            "release_id": r.release_id,
            "created": r.created,
            "kind": r.kind,
            "mechanism": r.body.get("mechanism"),
            "epsilon": r.epsilon,
            "accounting": r.accounting,
            "hats": _n_hats(r),
            "users_charged": r.n_users,
            "largest_charge": r.max_charge,
            "namespace": r.namespace,
        }
        for r in book.records()
    ]
    columns = ["release_id", "created", "kind", "mechanism", "epsilon", "accounting", "hats",
               "users_charged", "largest_charge", "namespace"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns).iloc[::-1].reset_index(drop=True)


def _n_hats(record) -> int:
    """HATs a recorded release covers (city: its grids; every-HAT release: its HATs)."""
    if record.kind == "city":
        return len(record.body["grids"]["hat"])
    if record.kind == batch.KIND:
        return len(record.body["hats"]["hat"])
    return 1


def recorded_table(book: Ledger, release_ids: list[str]) -> pd.DataFrame:
    """The publishable table (``core.publish.files``) of the given recorded releases."""
    wanted = set(release_ids)
    parts = []
    for r in book.records():
        if r.release_id not in wanted:
            continue
        if r.kind == "city":
            parts.append(files.city_table(city.CityRelease.from_record(r, book.path)))
        elif r.kind == batch.KIND:
            parts.append(files.hats_table(batch.HatsRelease.from_record(r, book.path)))
        else:
            parts.append(files.hat_table(LedgerEntry.from_record(r, book.path)))
    if not parts:
        raise HexplorerError("The published release is not in the ledger any more.")
    return pd.concat(parts, ignore_index=True)


def file_bytes(table: pd.DataFrame, suffix: str) -> bytes:
    """The table as a file to publish (``.csv``, ``.geojson`` or ``.parquet``)."""
    return files.to_bytes(downloads.csv_safe(table) if suffix == ".csv" else table, suffix)
