"""Publishing a city-wide release: every chosen grid's mean and variance (SPEC sections 5 and 7).

The per-grid mechanism of SPEC section 5 with OpenDP's Laplace sampler instead of numpy's: per
grid g, the retained mean plus ``Lap(2Δ_μ/ε)`` and the retained variance plus ``Lap(2Δ_Var/ε)``
(budget ε/2 each, OpenDP's privacy map checked for every grid). Optionally CHOP-USER first
(suppression decided on counts only, which are public here).

Each user is charged in the ledger what the release costs them under the chosen accounting:

- ``"per-user"``: ``G_ℓ ε``, user ℓ's records enter G_ℓ grids and each grid's mechanism is
  ε-DP and reads only its own records (per-user form of [2], Theorem II.3);
- ``"max"``: ``ε max_ℓ G_ℓ`` to every user (the release's guarantee, Theorem II.3);
- ``"chop"``: CHOP-USER first, then ``K ε`` to every user, K = max_ℓ G_ℓ after suppression.

The ledger records the noisy values only; :func:`publish_grids` returns them and never a true
value.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core.citywide.chop import chop_user
from core.citywide.grids import grid_errors, grid_statistics
from core.citywide.gridset import GridSet, _check_values
from core.errors import HexplorerError
from core.params import check_epsilon, check_upper
from core.publish.ledger import ID_FORM, Ledger
from core.publish.noise import opendp_laplace, sampler_name
from core.publish.records import (
    BudgetExceeded,
    Record,
    RecordedRelease,
    Summary,
    check_namespace,
    now,
)
from core.version import software_version

#: The accountings a city-wide release can be charged under (see the module docstring).
ACCOUNTINGS = ("per-user", "max", "chop")
#: The mechanism name recorded for a city-wide release.
GRID_MECHANISM = "grid-laplace"


def check_accounting(accounting: str) -> str:
    if accounting not in ACCOUNTINGS:
        raise HexplorerError(
            f"The 'accounting' parameter must be one of {', '.join(ACCOUNTINGS)}. "
            f"Got {accounting!r} instead."
        )
    return accounting


def grid_fingerprint(grids: GridSet, upper: float) -> str:
    """SHA-256 (hex) of everything the per-grid mechanism reads: U, labels, pairs, m, s, q.

    >>> df = pd.DataFrame({"hat": ["a/s"], "cell": ["a"], "slot": ["s"], "user_id": ["x"],
    ...     "m": [1], "s": [2.0], "q": [4.0]})
    >>> len(grid_fingerprint(GridSet.from_summaries(df), 65.0))
    64
    """
    h = hashlib.sha256()
    h.update(f"hexplorer-grids-v1|U={float(upper)!r}|".encode())
    for labels in (grids.hats, grids.cells, grids.slots, grids.user_ids):
        h.update("\x1f".join(str(v) for v in labels).encode() + b"|")
    for arr in (grids.grid, grids.user, grids.m):
        h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes() + b"|")
    for arr in (grids.s, grids.q):
        h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes() + b"|")
    return h.hexdigest()


@dataclass(frozen=True, kw_only=True)
class GridNoise:
    """Noisy per-grid statistics from OpenDP and their Laplace scales (all (G,) or (size, G))."""

    noisy_mean: np.ndarray
    noisy_var: np.ndarray
    scale_mean: np.ndarray
    scale_var: np.ndarray


def _opendp_per_scale(values: np.ndarray, scales: np.ndarray, sens: np.ndarray, budget: float):
    """``values[..., g] + Lap(scales[g])`` from OpenDP, one measurement per distinct scale; checks
    OpenDP's privacy map at each grid's sensitivity against ``budget``."""
    out = np.empty_like(values)
    uniq, inverse = np.unique(scales, return_inverse=True)
    for i, scale in enumerate(uniq.tolist()):
        cols = np.flatnonzero(inverse == i)
        noisy, eps = opendp_laplace(values[..., cols].ravel(), scale, float(sens[cols].max()))
        if eps > budget * (1.0 + 1e-9):
            raise HexplorerError(
                f"Refusing to publish: OpenDP charges eps={eps!r} for a grid's statistic, more "
                f"than its share of the per-grid epsilon ({budget!r})."
            )
        out[..., cols] = noisy.reshape(values[..., cols].shape)
    return out


def draw_noise(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    retained: np.ndarray | None = None,
    size: int | None = None,
) -> GridNoise:
    """The published per-grid mechanism: retained mean + Lap(2Δ_μ/ε), variance + Lap(2Δ_Var/ε).

    As :func:`core.citywide.grids.noisy_statistics`, but every Laplace draw comes from OpenDP
    (one measurement per distinct scale) and OpenDP's privacy map must grant each statistic at
    most ε/2 at its sensitivity. ``size`` draws independent runs (for the privacy tests; a
    publication uses one).

    Raises
    ------
    HexplorerError
        Unclamped values, a grid without records, or a scale OpenDP prices above ε/2.
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    _check_values(grids, u)
    keep = np.ones(grids.n_pairs, dtype=bool) if retained is None else retained
    errs = grid_errors(grids, eps, upper=u, retained=keep)
    mean, var = grid_statistics(grids, keep)
    scale_mean = 2.0 * errs.delta_mean / eps
    scale_var = 2.0 * errs.delta_var / eps
    shape = (grids.n_grids,) if size is None else (int(size), grids.n_grids)
    return GridNoise(
        noisy_mean=_opendp_per_scale(
            np.broadcast_to(mean, shape).copy(), scale_mean, errs.delta_mean, eps / 2
        ),
        noisy_var=_opendp_per_scale(
            np.broadcast_to(var, shape).copy(), scale_var, errs.delta_var, eps / 2
        ),
        scale_mean=scale_mean,
        scale_var=scale_var,
    )


def user_charges(
    grids: GridSet, epsilon: float, accounting: str, k_after: int | None = None
) -> np.ndarray:
    """ε charged to each user (GridSet order) by a release under ``accounting``.

    >>> df = pd.DataFrame({"hat": ["a/s", "b/s", "b/s"], "cell": ["a", "b", "b"],
    ...     "slot": ["s"] * 3, "user_id": ["x", "x", "y"], "m": [1, 1, 1], "s": [0.0] * 3,
    ...     "q": [0.0] * 3})
    >>> gs = GridSet.from_summaries(df)
    >>> user_charges(gs, 0.5, "per-user").tolist(), user_charges(gs, 0.5, "max").tolist()
    ([1.0, 0.5], [1.0, 1.0])
    """
    eps = check_epsilon(epsilon)
    check_accounting(accounting)
    if accounting == "per-user":
        return grids.grids_per_user.astype(np.float64) * eps
    k = grids.max_grids_per_user if accounting == "max" else k_after
    if k is None:
        raise HexplorerError("The 'chop' accounting needs K after CHOP-USER.")
    return np.full(grids.n_users, float(k) * eps)


@dataclass(frozen=True, kw_only=True)
class CityRelease(RecordedRelease):
    """A recorded city-wide release: noisy values per grid and how they were made.

    ``table`` has columns hat, cell, slot, noisy_mean, noisy_var (the raw noisy values as drawn;
    the published files clamp them into range, ``core.publish.files``); ``k`` is the largest
    number of grids of one user (after CHOP-USER), ``suppressed_pairs`` what CHOP-USER dropped.
    """

    k: int
    suppressed_pairs: int

    @classmethod
    def body_fields(cls, body: dict) -> dict:
        g = body["grids"]
        table = pd.DataFrame(
            {
                "hat": [str(v) for v in g["hat"]],
                "cell": [str(v) for v in g["cell"]],
                "slot": [str(v) for v in g["slot"]],
                "noisy_mean": np.asarray(g["noisy_mean"], dtype=np.float64),
                "noisy_var": np.asarray(g["noisy_var"], dtype=np.float64),
            }
        )
        return {
            "k": int(body["k"]),
            "suppressed_pairs": int(body["suppressed_pairs"]),
            "table": table,
        }


@dataclass(frozen=True, kw_only=True)
class PublishedCity:
    """What :func:`publish_grids` returns: the release, whether it was reused, the ledger after."""

    release: CityRelease
    record: Record
    reused: bool
    ledger: Path
    summary: Summary
    warnings: tuple[str, ...] = ()


def request_key(fp: str, epsilon: float, accounting: str) -> str:
    """The ledger's request key of a city-wide release (JSON text)."""
    return json.dumps(["city", fp, GRID_MECHANISM, epsilon, accounting])


def publish_grids(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    accounting: str = "per-user",
    dataset: str | None = None,
    ledger: str | os.PathLike | Ledger | None = None,
    namespace: str | None = None,
    budget: float | None = None,
    before_commit: Callable[[CityRelease], None] | None = None,
    id_form: str = ID_FORM,
) -> PublishedCity:
    """Publish every grid's noisy mean and variance at per-grid budget ε (SPEC sections 5, 7).

    Parameters
    ----------
    grids : the chosen grids (``core.citywide.gridset``).
    epsilon : per-grid budget ε (ε/2 for the mean, ε/2 for the variance).
    upper : U; values must be clamped into [0, U].
    accounting : ``"per-user"`` (G_ℓ ε each), ``"max"`` (ε max G_ℓ each) or ``"chop"``
        (CHOP-USER, then K ε each).
    dataset : a label of the data's origin (recorded, not part of the request key).
    ledger, namespace, budget, before_commit, id_form : as :func:`core.publish.single.publish`
        (``before_commit`` gets the :class:`CityRelease`).

    Returns
    -------
    PublishedCity
        The recorded release (a reused one when the same request was recorded: same data
        fingerprint, ε and accounting), never a true value.

    Raises
    ------
    BudgetExceeded
        The release would take some user past the budget; nothing recorded. It names the
        largest ε that fits and how many grids hold none of the users past the budget.
    HexplorerError
        Bad input, a damaged or unwritable ledger.
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    check_accounting(accounting)
    ns = check_namespace(namespace)
    _check_values(grids, u)
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    fp = book.seal(grid_fingerprint(grids, u))  # keyed: no unkeyed digest of true values
    request = request_key(fp, eps, accounting)
    keep = np.ones(grids.n_pairs, dtype=bool)
    k = grids.max_grids_per_user
    if accounting == "chop" and book.find(request) is None:  # CHOP-USER only when needed
        chop = chop_user(grids, eps, upper=u)
        keep, k = chop.retained, chop.k_final
    charges = user_charges(grids, eps, accounting, k)

    def draw() -> dict:
        noise = draw_noise(grids, eps, upper=u, retained=keep)
        return {
            "created": now(),
            "version": software_version(),
            "mechanism": GRID_MECHANISM,
            "epsilon": eps,
            "accounting": accounting,
            "upper": u,
            "privacy_loss": float(charges.max()),
            "k": int(k),
            "suppressed_pairs": int(grids.n_pairs - keep.sum()),
            "fingerprint": fp,
            "dataset": dataset,
            "sampler": sampler_name(),
            "grids": {
                "hat": grids.hats.astype(str).tolist(),
                "cell": grids.cells.astype(str).tolist(),
                "slot": grids.slots.astype(str).tolist(),
                "noisy_mean": noise.noisy_mean.tolist(),
                "noisy_var": noise.noisy_var.tolist(),
                "scale_mean": noise.scale_mean.tolist(),
                "scale_var": noise.scale_var.tolist(),
            },
        }

    try:
        outcome = book.record_once(
            request=request,
            kind="city",
            namespace=ns,
            epsilon=eps,
            accounting=accounting,
            user_ids=grids.user_ids.astype(str).tolist(),
            charges=charges,
            draw=draw,
            budget=budget,
            id_form=id_form,
            before_commit=None
            if before_commit is None
            else lambda record: before_commit(CityRelease.from_record(record, book.path)),
        )
    except BudgetExceeded as exc:
        blocked = np.unique(grids.grid[np.isin(grids.user, exc.over)])
        raise exc.with_hats(grids.n_grids - blocked.size, grids.n_grids) from None
    return PublishedCity(
        release=CityRelease.from_record(outcome.record, book.path),
        record=outcome.record,
        reused=outcome.reused,
        ledger=book.path,
        summary=outcome.summary,
        warnings=outcome.warnings,
    )
