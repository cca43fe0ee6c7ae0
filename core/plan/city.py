"""A city: every HAT of a slot, a day or a file (:func:`epsilon_needed`, :func:`coverage_curve`,
:func:`city_plan`); see :mod:`core.plan`."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.citywide.accounting import privacy_loss
from core.citywide.chop import chop_user
from core.citywide.errors import errors_at, totals
from core.errors import HexplorerError
from core.mechanisms import analytic_form
from core.params import EPSILON_MAX, EPSILON_MIN, check_epsilon
from core.plan.pieces import Pieces, check_analytic, check_target

# --------------------------------------------------------------------------------------------
# A city: every HAT of a slot, a day or a file


def _city_pieces(table, name: str) -> tuple[np.ndarray, Pieces]:
    """Every HAT's pieces ``a + b/ε`` on ``[lo, hi)``, grouped by HAT: (HAT of each piece, pieces);
    the registry's worst-case form of ``name``."""
    return analytic_form(name).many_pieces(table)


def _good_intervals(pieces: Pieces, target: float) -> tuple[np.ndarray, np.ndarray]:
    """Per piece, the part ``[start, hi)`` where a + b/ε ≤ target (start = inf when none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(pieces.a < target, pieces.b / (target - pieces.a), np.inf)
    root = np.where(pieces.b == 0, np.where(pieces.a <= target, 0.0, np.inf), root)
    start = np.maximum(pieces.lo, root)
    start = np.where(start < pieces.hi, start, np.inf)
    return start, pieces.hi


def _refine(table, name: str, target: float, guess: np.ndarray) -> np.ndarray:
    """Vectorised :func:`smallest_float` for every HAT at once (``guess`` finite, > 0)."""

    def bad_at(e: np.ndarray) -> np.ndarray:
        return totals(table, e, name)[1] > target

    good = guess.copy()
    step = np.full(good.size, 1e-12)
    for _ in range(200):  # move up until good (rounding of the closed form)
        up = bad_at(good)
        if not up.any():
            break
        good = np.where(up, good * (1.0 + step), good)
        step = np.where(up, step * 2.0, step)
    step = np.full(good.size, 1e-12)
    bad = good * (1.0 - step)
    for _ in range(200):  # move down until bad
        down = ~bad_at(bad)
        if not down.any():
            break
        good = np.where(down, bad, good)
        step = np.where(down, np.minimum(step * 2.0, 0.5), step)
        bad = np.where(down, good * (1.0 - step), bad)
    gi, bi = good.view(np.int64).copy(), bad.view(np.int64).copy()
    while True:
        open_ = gi - bi > 1
        if not open_.any():
            break
        mid = bi + (gi - bi) // 2  # (gi + bi) would overflow int64
        ok = ~bad_at(np.where(open_, mid, gi).view(np.float64))
        gi = np.where(open_ & ok, mid, gi)
        bi = np.where(open_ & ~ok, mid, bi)
    return gi.view(np.float64)


def epsilon_needed(table, target: float, mechanism: str = "opt-arrayavg") -> np.ndarray:
    """Every HAT's smallest ε whose analytic worst case is ≤ ``target`` (vectorised).

    The city version of :func:`epsilon_for_error`, equal to it HAT by HAT: (H,) float64 with 0
    where ε = ``EPSILON_MIN`` already meets the target ("any") and inf where no ε up to
    ``EPSILON_MAX`` does ("unreachable").

    >>> from core.citywide.errors import error_table
    >>> df = pd.DataFrame({"hat": ["a/s"] * 3, "cell": ["a"] * 3, "slot": ["s"] * 3,
    ...     "user_id": ["x", "y", "z"], "m": [3, 2, 1], "s": [3.0, 2.0, 1.0], "q": [3.0, 2.0, 1.0]})
    >>> epsilon_needed(error_table(df, upper=65.0), 32.5).tolist()
    [1.0]
    """
    target = check_target(target)
    name = check_analytic(mechanism)
    hat, pieces = _city_pieces(table, name)
    start, _ = _good_intervals(pieces, target)
    first = np.minimum.reduceat(start, np.searchsorted(hat, np.arange(table.n_hats)))
    out = first.copy()
    fine = np.isfinite(first) & (first > 0)
    if fine.any():
        idx = np.flatnonzero(fine)
        sub = table.take(idx)
        out[idx] = _refine(sub, name, target, first[idx])
    # the product's ε range, as the single-HAT plan: "any" at its bottom, never above its top
    out[out <= EPSILON_MIN] = 0.0
    out[out > EPSILON_MAX] = np.inf
    return out


def coverage_curve(
    table, target: float, epsilons: Iterable[float], mechanism: str = "opt-arrayavg"
) -> pd.DataFrame:
    """The share of HATs whose analytic worst case is within ``target``, against ε.

    Returns
    -------
    pandas.DataFrame
        epsilon, hats_within, hats_total, share (one row per ε, in the order given).
    """
    target = check_target(target)
    rows = []
    for eps in epsilons:
        within = int(np.count_nonzero(errors_at(table, eps, mechanism).total <= target))
        rows.append(
            {
                "epsilon": float(eps),  # checked by errors_at
                "hats_within": within,
                "hats_total": table.n_hats,
                "share": within / table.n_hats,
            }
        )
    return pd.DataFrame(rows, columns=["epsilon", "hats_within", "hats_total", "share"])


def check_coverage(coverage) -> float:
    """Return the share of HATs to cover, a number in (0, 1].

    >>> check_coverage(0.9)
    0.9
    """
    try:
        value = float(coverage)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(coverage, bool) or not 0.0 < value <= 1.0:
        raise HexplorerError(
            f"The 'coverage' parameter must be a share in (0, 1]. Got {coverage!r} instead."
        )
    return value


@dataclass(frozen=True, kw_only=True, eq=False)
class CityPlan:
    """The smallest ε at which a share ``coverage`` of the HATs is within the target.

    Attributes
    ----------
    status : {"ok", "unreachable", "any"}
        "unreachable": fewer than the asked share of HATs reach the target at any ε of the
        product's range (``core.params.EPSILON_MIN`` to ``EPSILON_MAX``); "any": enough HATs
        meet it at every small ε.
    epsilon : float or None
        The smallest ε (status "ok"); at it, ``hats_reaching`` ≥ ⌈coverage · hats_total⌉.
    coverage, target, mechanism, noise_measure : the inputs.
    hats_total, hats_reaching : int
        HATs in the set and HATs within target at ``epsilon`` (0 without an ε).
    unreachable : tuple of str
        HATs that cannot reach the target at any ε.
    missing : tuple of str
        HATs not within target at ``epsilon`` (all of them without an ε).
    user_loss : PrivacyLoss or None
        The per-user privacy loss of releasing every HAT at ``epsilon``: basic ``G ε``, by users
        ``ε max_ℓ G_ℓ`` and ``K ε`` after CHOP-USER (SPEC section 5), when the grids are given.
    hats : pandas.DataFrame
        One row per HAT: hat, cell, slot, users, records, epsilon_needed (0: any, inf: never),
        m_ub and worst_case_error at ``epsilon``, within_target.
    """

    status: str
    epsilon: float | None
    coverage: float
    target: float
    mechanism: str
    noise_measure: str
    hats_total: int
    hats_reaching: int
    unreachable: tuple[str, ...]
    missing: tuple[str, ...]
    user_loss: Any
    hats: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready fields (the per-HAT table as the lists of HATs)."""
        loss = self.user_loss
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "coverage": self.coverage,
            "share": self.hats_reaching / self.hats_total,
            "hats_reaching": self.hats_reaching,
            "hats_total": self.hats_total,
            "user_loss": None
            if loss is None
            else {"basic": loss.basic, "by_users": loss.by_users, "after_chop": loss.after_chop},
            "target": self.target,
            "mechanism": self.mechanism,
            "noise_measure": self.noise_measure,
            "unreachable": list(self.unreachable),
            "missing": list(self.missing),
        }


def city_plan(
    table,
    target: float,
    *,
    coverage: float = 0.9,
    mechanism: str = "opt-arrayavg",
    grids=None,
) -> CityPlan:
    """The smallest ε at which at least ``coverage`` of the HATs have worst case ≤ ``target``.

    Every HAT's good set of ε is a union of intervals ``[start, hi)``, one per piece of its worst
    case (:func:`epsilon_needed` gives each HAT's first start exactly); the share of HATs within
    target only rises at a start, so one sweep over the sorted starts and ends finds the
    smallest ε at which ⌈coverage · H⌉ HATs are inside. The count at that ε is then taken from
    the worst cases themselves (:func:`core.citywide.errors.errors_at`).

    Parameters
    ----------
    table : ErrorTable
        :func:`core.citywide.errors.error_table` of the HATs (its U and noise measure apply).
    target : float
    coverage : float in (0, 1]
    mechanism : a mechanism with a worst case (``core.mechanisms.analytic_names()``)
    grids : GridSet, optional
        The same HATs' (HAT, user) pairs: with them, ``user_loss`` gives the per-user privacy
        loss at the chosen ε under the three accountings (CHOP-USER is run at that ε).
    """
    target = check_target(target)
    coverage = check_coverage(coverage)
    name = check_analytic(mechanism)
    n_hats = table.n_hats
    need = max(1, math.ceil(coverage * n_hats - 1e-9))
    needed = epsilon_needed(table, target, name)
    hat, pieces = _city_pieces(table, name)
    start, end = _good_intervals(pieces, target)
    # each HAT's earliest interval starts at its exact smallest ε (intervals are disjoint)
    first_row = np.searchsorted(hat, np.arange(n_hats))
    earliest = np.minimum.reduceat(start, first_row)
    is_first = np.isfinite(start) & (start == earliest[hat])
    start = np.where(is_first, needed[hat], start)
    keep = np.isfinite(start)
    pos = np.concatenate((start[keep], end[keep]))
    delta = np.concatenate((np.ones(keep.sum(), dtype=np.int64), -np.ones(keep.sum(), np.int64)))
    order = np.argsort(pos, kind="stable")
    pos, cum = pos[order], np.cumsum(delta[order])
    last = np.r_[pos[1:] != pos[:-1], True] if pos.size else np.zeros(0, dtype=bool)
    at_pos, count = pos[last], cum[last]
    hit = np.flatnonzero((count >= need) & np.isfinite(at_pos))
    unreachable_idx = np.flatnonzero(~np.isfinite(needed))
    frame = pd.DataFrame(
        {
            "hat": table.hats.astype(str),
            "cell": table.cells.astype(str),
            "slot": table.slots.astype(str),
            "users": table.users,
            "records": table.records,
            "epsilon_needed": needed,
        }
    )
    common = {
        "coverage": coverage,
        "target": target,
        "mechanism": name,
        "noise_measure": table.noise_measure,
        "hats_total": n_hats,
        "unreachable": tuple(frame["hat"].iloc[unreachable_idx]),
    }
    if hit.size == 0 or at_pos[hit[0]] == 0.0:
        status = "unreachable" if hit.size == 0 else "any"
        frame["m_ub"] = pd.array([pd.NA] * n_hats, dtype="Int64")
        frame["worst_case_error"] = np.nan
        frame["within_target"] = status == "any" and np.asarray(needed == 0.0)
        reaching = int(frame["within_target"].sum()) if status == "any" else 0
        return CityPlan(
            status=status, epsilon=None, hats_reaching=reaching,
            missing=tuple(frame["hat"][~frame["within_target"].astype(bool)]),
            user_loss=None, hats=frame, **common,
        )  # fmt: skip
    eps = max(float(at_pos[hit[0]]), EPSILON_MIN)  # the range's smallest ε covers as much
    if eps > EPSILON_MAX:  # enough HATs reach the target only beyond the product's range
        frame["m_ub"] = pd.array([pd.NA] * n_hats, dtype="Int64")
        frame["worst_case_error"] = np.nan
        frame["within_target"] = False
        return CityPlan(
            status="unreachable", epsilon=None, hats_reaching=0, missing=tuple(frame["hat"]),
            user_loss=None, hats=frame, **common,
        )  # fmt: skip
    errs = errors_at(table, eps, name)
    for _ in range(64):  # a later interval's start is the closed form, a few ulps off at most
        if np.count_nonzero(errs.total <= target) >= need or eps >= EPSILON_MAX:
            break
        eps = math.nextafter(eps, math.inf)
        errs = errors_at(table, eps, name)
    within = errs.total <= target
    m_ub = pd.array(np.where(errs.m_ub >= 0, errs.m_ub, 0), dtype="Int64")
    m_ub[errs.m_ub < 0] = pd.NA
    frame["m_ub"] = m_ub
    frame["worst_case_error"] = errs.total
    frame["within_target"] = within
    loss = None
    if grids is not None:
        if list(grids.hats) != list(table.hats):
            raise HexplorerError("The 'grids' parameter must hold the same HATs as the table.")
        loss = privacy_loss(grids, eps, chop_user(grids, eps, upper=table.upper))
    return CityPlan(
        status="ok", epsilon=eps, hats_reaching=int(within.sum()),
        missing=tuple(frame["hat"][~within]), user_loss=loss, hats=frame, **common,
    )  # fmt: skip


def recommended_mechanism(table, epsilon: float) -> str:
    """The mechanism a plan recommends for a set of HATs at ``epsilon``: among
    :func:`core.mechanisms.analytic_names` (the registry's closed-form worst cases), the one whose worst-case error (SPEC sections 3, 4)
    has the smallest median over the HATs; ties by registry order.

    Parameters
    ----------
    table : core.citywide.errors.ErrorTable
        From ``error_table(grids, upper=...)`` (its U and noise measure apply).
    epsilon : float
        ε per HAT.

    >>> from core.citywide.errors import error_table
    >>> from core.citywide.gridset import GridSet
    >>> m = [60] + [2] * 39  # one busy user: bounding its records pays (14.6 against 28.3)
    >>> s = pd.DataFrame({"hat": "c/h08", "cell": "c", "slot": "h08", "m": m,
    ...     "user_id": [f"u{i:02d}" for i in range(40)], "s": 20.0 * np.array(m),
    ...     "q": 400.0 * np.array(m)})
    >>> recommended_mechanism(error_table(GridSet.from_summaries(s), upper=65.0), 1.0)
    'opt-bounding'
    """
    from core.citywide.errors import errors_at
    from core.mechanisms import analytic_names

    eps = check_epsilon(epsilon)
    names = analytic_names()
    medians = [float(np.median(errors_at(table, eps, name).total)) for name in names]
    return names[int(np.argmin(medians))]
