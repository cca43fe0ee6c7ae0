"""The chosen grids: selecting HATs and packing their per-(HAT, user) summaries (SPEC section 5).

A *grid* is one HAT; the caller chooses the set of grids (all cells of one slot, all HATs of a day,
any list of HATs) with :func:`select_grids`, and :class:`GridSet` holds them in columnar form, one
entry per (grid, user) pair. Everything reads only the per-(HAT, user) summaries ``m, s, q`` of
``core.data`` (SPEC section 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.errors import HexplorerError

SUMMARY_COLUMNS = ("hat", "cell", "slot", "user_id", "m", "s", "q")

# --------------------------------------------------------------------------------------------
# Choosing the grids
# --------------------------------------------------------------------------------------------


def _as_label_list(name: str, value) -> list[str]:
    if isinstance(value, str):
        return [value]
    try:
        labels = [str(v) for v in value]
    except TypeError:
        raise HexplorerError(
            f"The '{name}' parameter must be a string or a list of strings. Got {value!r} instead."
        ) from None
    if not labels:
        raise HexplorerError(f"The '{name}' parameter is an empty list; give at least one value.")
    return labels


def _check_summaries(summaries: pd.DataFrame) -> None:
    if not isinstance(summaries, pd.DataFrame):
        raise HexplorerError(
            "summaries must be a pandas DataFrame of per-(HAT, user) rows. "
            f"Got {type(summaries).__name__}."
        )
    missing = [c for c in SUMMARY_COLUMNS if c not in summaries.columns]
    if missing:
        raise HexplorerError(
            f"summaries lacks column(s) {missing}; expected {list(SUMMARY_COLUMNS)} (core.data)."
        )


def select_grids(
    summaries: pd.DataFrame,
    *,
    slot: str | Iterable[str] | None = None,
    day: str | None = None,
    hats: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Rows of ``summaries`` whose HAT belongs to the chosen set of grids (all filters combined).

    Parameters
    ----------
    summaries : per-(HAT, user) DataFrame of ``core.data`` (hat, cell, slot, user_id, m, s, q).
    slot : one slot label (``"2024-03-05T08:00"`` or ``"h08"``) or a list of them: all cells of it.
    day : ``"YYYY-MM-DD"``: all HATs whose absolute slot starts on that day.
    hats : explicit ``"CELL/SLOT"`` labels.

    Returns
    -------
    pandas.DataFrame
        The selected rows (a copy); every filter left at ``None`` selects everything.

    Raises
    ------
    HexplorerError
        If a column is missing, a filter value matches nothing, or the selection is empty.

    >>> df = pd.DataFrame({"hat": ["a/h08", "b/h09"], "cell": ["a", "b"], "slot": ["h08", "h09"],
    ...                    "user_id": ["u", "u"], "m": [1, 2], "s": [1.0, 2.0], "q": [1.0, 2.0]})
    >>> select_grids(df, slot="h09")["hat"].tolist()
    ['b/h09']
    """
    _check_summaries(summaries)
    keep = np.ones(len(summaries), dtype=bool)
    slots = summaries["slot"].astype(str)
    if slot is not None:
        wanted = _as_label_list("slot", slot)
        unknown = sorted(set(wanted) - set(slots.unique()))
        if unknown:
            examples = ", ".join(sorted(slots.unique())[:3])
            raise HexplorerError(
                f"slot={unknown[0]!r} matches no HAT in the data (slots look like: {examples})."
            )
        keep &= slots.isin(wanted).to_numpy()
    if day is not None:
        day_s = str(day)
        on_day = slots.str.startswith(day_s + "T").to_numpy()
        if not on_day.any():
            examples = ", ".join(sorted(slots.unique())[:3])
            raise HexplorerError(
                f"day={day_s!r} matches no absolute slot 'YYYY-MM-DDTHH:MM' in the data "
                f"(slots look like: {examples})."
            )
        keep &= on_day
    if hats is not None:
        wanted = _as_label_list("hats", hats)
        hat_col = summaries["hat"].astype(str)
        unknown = sorted(set(wanted) - set(hat_col.unique()))
        if unknown:
            raise HexplorerError(f"hats contains {unknown[0]!r}, which is not a HAT of the data.")
        keep &= hat_col.isin(wanted).to_numpy()
    if not keep.any():
        raise HexplorerError(
            f"The selection slot={slot!r}, day={day!r}, hats={hats!r} contains no grid; "
            "the filters exclude each other."
        )
    return summaries.loc[keep].copy()


# --------------------------------------------------------------------------------------------
# The columnar structure
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class GridSet:
    """The chosen grids, one entry per (grid, user) pair, sorted by grid (SPEC section 5).

    Within a grid, pairs are sorted by count descending, ties by user id (SPEC section 1).
    Grids are indexed in the order of their HAT label, users in the order of their id; both
    orders are the deterministic tie-breakers of :func:`chop_user`.

    Build it with :meth:`from_summaries` (or :func:`grid_set`); the constructor trusts its inputs.

    Attributes
    ----------
    hats, cells, slots : (G,) str arrays, labels of the grids.
    user_ids : (L,) str array, sorted.
    grid, user : (P,) int64, grid index and user index of each pair.
    m : (P,) int64 record counts; s, q : (P,) float64 sums and sums of squares.
    starts : (G + 1,) int64, pairs of grid g are ``starts[g]:starts[g + 1]``.
    grids_per_user : (L,) int64, G_ℓ.
    """

    hats: np.ndarray
    cells: np.ndarray
    slots: np.ndarray
    user_ids: np.ndarray
    grid: np.ndarray
    user: np.ndarray
    m: np.ndarray
    s: np.ndarray
    q: np.ndarray
    starts: np.ndarray
    grids_per_user: np.ndarray

    @classmethod
    def from_summaries(cls, summaries: pd.DataFrame) -> GridSet:
        """Validate and pack a per-(HAT, user) summaries DataFrame (every row is one pair).

        Raises
        ------
        HexplorerError
            Missing columns, no rows, a count that is not an integer >= 1, a negative or
            non-finite sum, or a (HAT, user) pair listed twice.

        >>> df = pd.DataFrame({"hat": ["b/s", "a/s", "a/s"], "cell": ["b", "a", "a"],
        ...     "slot": ["s"] * 3, "user_id": ["x", "x", "y"], "m": [1, 2, 3],
        ...     "s": [1.0, 2.0, 3.0], "q": [1.0, 2.0, 3.0]})
        >>> gs = GridSet.from_summaries(df)
        >>> gs.hats.tolist(), gs.m.tolist(), gs.grids_per_user.tolist()
        (['a/s', 'b/s'], [3, 2, 1], [2, 1])
        """
        _check_summaries(summaries)
        if len(summaries) == 0:
            raise HexplorerError("summaries has no rows: there is no grid to analyse.")
        m_raw = pd.to_numeric(summaries["m"], errors="coerce").to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(m_raw)) or np.any(m_raw != np.round(m_raw)) or np.any(m_raw < 1):
            bad = summaries["m"].to_numpy()[
                ~(np.isfinite(m_raw) & (m_raw == np.round(m_raw)) & (m_raw >= 1))
            ]
            raise HexplorerError(f"Column 'm' must hold integers >= 1. Got {bad[0]!r}.")
        for col in ("s", "q"):
            v = pd.to_numeric(summaries[col], errors="coerce").to_numpy(dtype=np.float64)
            if not np.all(np.isfinite(v)) or np.any(v < 0):
                raise HexplorerError(
                    f"Column '{col}' must hold finite numbers >= 0 (clamped values)."
                )
        # Hash-based factorisation (sorted labels): np.unique on strings sorts every row.
        grid, hat_labels = pd.factorize(summaries["hat"].astype(str), sort=True)
        user, user_ids = pd.factorize(summaries["user_id"].astype(str), sort=True)
        grid = np.asarray(grid, dtype=np.int64)
        user = np.asarray(user, dtype=np.int64)
        hat_labels = np.asarray(hat_labels, dtype=object)
        user_ids = np.asarray(user_ids, dtype=object)
        first = np.unique(grid, return_index=True)[1]  # a row of each grid, for cell and slot
        if np.unique(grid * user_ids.size + user).size != grid.size:
            raise HexplorerError(
                "summaries lists some (hat, user_id) pair twice; aggregate per HAT and user first."
            )
        m = m_raw.astype(np.int64)
        order = np.lexsort((user, -m, grid))
        grid, user, m = grid[order], user[order], m[order]
        s = summaries["s"].to_numpy(dtype=np.float64)[order]
        q = summaries["q"].to_numpy(dtype=np.float64)[order]
        cells = summaries["cell"].astype(str).to_numpy()[first]
        slots = summaries["slot"].astype(str).to_numpy()[first]
        starts = np.searchsorted(grid, np.arange(hat_labels.size + 1)).astype(np.int64)
        return cls(
            hats=hat_labels.astype(object),
            cells=cells.astype(object),
            slots=slots.astype(object),
            user_ids=user_ids.astype(object),
            grid=grid,
            user=user,
            m=m,
            s=s,
            q=q,
            starts=starts,
            grids_per_user=np.bincount(user, minlength=user_ids.size).astype(np.int64),
        )

    @property
    def n_grids(self) -> int:
        """G, the number of grids."""
        return int(self.hats.size)

    @property
    def n_users(self) -> int:
        """L, the number of distinct users over all grids."""
        return int(self.user_ids.size)

    @property
    def n_pairs(self) -> int:
        """The number of (grid, user) pairs."""
        return int(self.m.size)

    @property
    def max_grids_per_user(self) -> int:
        """max_ℓ G_ℓ."""
        return int(self.grids_per_user.max())

    @property
    def records(self) -> np.ndarray:
        """(G,) N per grid."""
        return np.add.reduceat(self.m, self.starts[:-1])

    @property
    def users_per_grid(self) -> np.ndarray:
        """(G,) number of users per grid."""
        return np.diff(self.starts)


def grid_set(
    summaries: pd.DataFrame,
    *,
    slot: str | Iterable[str] | None = None,
    day: str | None = None,
    hats: Iterable[str] | None = None,
) -> GridSet:
    """:func:`select_grids` then :meth:`GridSet.from_summaries`."""
    return GridSet.from_summaries(select_grids(summaries, slot=slot, day=day, hats=hats))


def _as_gridset(data) -> GridSet:
    if isinstance(data, GridSet):
        return data
    if isinstance(data, pd.DataFrame):
        return GridSet.from_summaries(data)
    raise HexplorerError(
        f"Expected a GridSet or a summaries DataFrame. Got {type(data).__name__} instead."
    )


def _check_values(grids: GridSet, upper: float) -> None:
    """Values must have been clamped into [0, U] (SPEC section 1, step 3)."""
    tol = 1e-9
    if np.any(grids.s > upper * grids.m * (1 + tol)) or np.any(
        grids.q > upper * upper * grids.m * (1 + tol)
    ):
        bad = np.flatnonzero(
            (grids.s > upper * grids.m * (1 + tol))
            | (grids.q > upper * upper * grids.m * (1 + tol))
        )[0]
        raise HexplorerError(
            f"User {grids.user_ids[grids.user[bad]]!r} in HAT {grids.hats[grids.grid[bad]]!r} has "
            f"values above U = {upper:g}; clamp values into [0, U] first."
        )
