"""Many grids at once: per-grid means and variances, composition and CHOP-USER (SPEC section 5).

A *grid* is one HAT; the caller chooses the set of grids (all cells of one slot, all HATs of a day,
any list of HATs) with :func:`select_grids`. Everything here reads only the per-(HAT, user)
summaries ``m, s, q`` of ``core.data`` (SPEC section 1).

- :class:`GridSet`: the chosen grids in columnar form, one entry per (grid, user) pair.
- Exact sensitivities and worst-case biases of the clipped mean and variance for any retention
  (slides of seed 002, "Exact error characterizations" I and II, as corrected by SPEC section 5):
  :func:`delta_mean`, :func:`delta_var`, :func:`bias_mean`, :func:`bias_var`, :func:`grid_error`,
  :func:`grid_errors`.
- The per-grid mechanism (mean and variance, budget ε/2 each): :func:`noisy_statistics`,
  :func:`release_grids`.
- Privacy accounting: basic composition ``G ε``, by users ``ε max_ℓ G_ℓ`` (seed 001, Theorem
  II.3), after CHOP-USER ``K ε``: :func:`privacy_loss`.
- CHOP-USER (slides of seed 002): :func:`chop_user`; :func:`compose` bundles it for the CLI.

Counts are public here (SPEC sections 1 and 5): the sensitivities, the error bounds and the
suppression decisions read only counts; only :func:`noisy_statistics` reads values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import pandas as pd

from core.errors import HexplorerError
from core.params import check_epsilon, check_upper

SUMMARY_COLUMNS = ("hat", "cell", "slot", "user_id", "m", "s", "q")
RELEASE_COLUMNS = (
    "hat",
    "cell",
    "slot",
    "users",
    "records",
    "retained",
    "true_mean",
    "true_var",
    "noisy_mean",
    "noisy_var",
    "delta_mean",
    "delta_var",
    "error_bound",
)


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


def busiest_slot(summaries: pd.DataFrame) -> str:
    """The slot with the most records (ties: the first slot in text order): the default grids.

    >>> df = pd.DataFrame({"hat": ["a/h08", "b/h09", "c/h09"], "cell": ["a", "b", "c"],
    ...     "slot": ["h08", "h09", "h09"], "user_id": ["u", "u", "v"], "m": [3, 2, 1],
    ...     "s": [1.0, 1.0, 1.0], "q": [1.0, 1.0, 1.0]})
    >>> busiest_slot(df), busiest_slot(df.iloc[:2])
    ('h08', 'h08')
    """
    _check_summaries(summaries)
    if len(summaries) == 0:
        raise HexplorerError("summaries has no rows: there is no slot to choose.")
    per_slot = summaries.groupby(summaries["slot"].astype(str), sort=True)["m"].sum()
    return str(per_slot.sort_values(ascending=False, kind="stable").index[0])


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


# --------------------------------------------------------------------------------------------
# Exact sensitivities and worst-case biases (SPEC section 5)
# --------------------------------------------------------------------------------------------


def _int_array(name: str, x, minimum: int) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        f = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise HexplorerError(f"The '{name}' parameter must hold integers. Got {x!r}.")
        a = f
    a = a.astype(np.int64)
    if np.any(a < minimum):
        raise HexplorerError(f"The '{name}' parameter must be >= {minimum}. Got {x!r}.")
    return a


def _out(value: np.ndarray, *inputs):
    return float(value) if all(np.ndim(v) == 0 for v in inputs) else value


def _pair_term(a: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``a (total - a) / total²`` in float64, from exact integer products (same op order as
    :func:`_chop_kernel`'s scalar code, so both give bit-identical errors)."""
    return (a * (total - a)).astype(np.float64) / (total * total).astype(np.float64)


def delta_mean(total, gamma_star, upper):
    """Sensitivity of the retained mean: ``Δ_μ = U Γ* / S`` (SPEC section 5).

    Parameters
    ----------
    total : S = Σ Γ_ℓ, retained records (integer >= 1; arrays broadcast).
    gamma_star : Γ* = max Γ_ℓ (integer in [1, S]).
    upper : U.

    >>> delta_mean(4, 1, 2.0)
    0.5
    """
    s_, g_ = _check_retention(total, gamma_star)
    u = check_upper(upper)
    return _out(u * (g_.astype(np.float64) / s_.astype(np.float64)), total, gamma_star)


def delta_var(total, gamma_star, upper):
    """Sensitivity of the retained variance (1/S normalisation), SPEC section 5.

    ``U² Γ*(S − Γ*)/S²`` if ``S > 2Γ*``; ``U²/4`` if ``S ≤ 2Γ*`` and S even;
    ``(U²/4)(1 − 1/S²)`` if ``S ≤ 2Γ*`` and S odd. All three are ``U² j (S − j) / S²`` with
    ``j = min(Γ*, ⌊S/2⌋)``, which is how it is computed: the case split is decided on integers.

    >>> delta_var(3, 1, 1.0) == 2 / 9, delta_var(4, 2, 1.0), delta_var(3, 2, 1.0) == 2 / 9
    (True, 0.25, True)
    """
    s_, g_ = _check_retention(total, gamma_star)
    u = check_upper(upper)
    j = np.minimum(g_, s_ // 2)
    return _out((u * u) * _pair_term(j, s_), total, gamma_star)


def bias_mean(total, records, upper):
    """Worst-case bias of the retained mean against the full mean: ``E_μ = U (1 − S/N)``.

    Computed as ``U · (N − S)/N``. Seed 002 slides, "Exact error characterizations II".

    >>> bias_mean(1, 4, 1.0)
    0.75
    """
    s_, n_ = _check_records(total, records)
    u = check_upper(upper)
    return _out(u * ((n_ - s_).astype(np.float64) / n_.astype(np.float64)), total, records)


def bias_var(total, records, upper):
    """Worst-case bias of the retained variance: ``E_Var = U² k(N − k)/N²``, ``k = min(R, ⌊N/2⌋)``.

    ``R = N − S`` dropped records (SPEC section 5, which corrects the slides' case conditions).
    Counterexample to the slides: U = 1, keep {0}, drop {1, 1, 0}: the bias is 1/4.

    >>> bias_var(1, 4, 1.0), bias_var(4, 4, 1.0), bias_var(3, 4, 1.0) == 3 / 16
    (0.25, 0.0, True)
    """
    s_, n_ = _check_records(total, records)
    u = check_upper(upper)
    k = np.minimum(n_ - s_, n_ // 2)
    return _out((u * u) * _pair_term(k, n_), total, records)


def _check_retention(total, gamma_star) -> tuple[np.ndarray, np.ndarray]:
    s_ = _int_array("total", total, 1)
    g_ = _int_array("gamma_star", gamma_star, 1)
    s_, g_ = np.broadcast_arrays(s_, g_)
    if np.any(g_ > s_):
        raise HexplorerError(
            f"gamma_star (Γ*) must be <= total (S). Got Γ*={gamma_star!r}, S={total!r}."
        )
    return s_, g_


def _check_records(total, records) -> tuple[np.ndarray, np.ndarray]:
    s_ = _int_array("total", total, 1)
    n_ = _int_array("records", records, 1)
    s_, n_ = np.broadcast_arrays(s_, n_)
    if np.any(s_ > n_):
        raise HexplorerError(f"total (S) must be <= records (N). Got S={total!r}, N={records!r}.")
    return s_, n_


def _error_vec(s_, g_, n_, u: float, eps: float) -> np.ndarray:
    """E_g from validated int64 arrays; op order mirrored in :func:`_chop_kernel`."""
    u2 = u * u
    r = n_ - s_
    k = np.minimum(r, n_ // 2)
    j = np.minimum(g_, s_ // 2)
    e_mu = u * (r.astype(np.float64) / n_.astype(np.float64))
    e_var = u2 * _pair_term(k, n_)
    d_mu = u * (g_.astype(np.float64) / s_.astype(np.float64))
    d_var = u2 * _pair_term(j, s_)
    return ((e_mu + e_var) + (2.0 * d_mu) / eps) + (2.0 * d_var) / eps


def grid_error(total, gamma_star, records, upper, epsilon):
    """Worst-case error of one grid: ``E_g = E_μ + E_Var + 2Δ_μ/ε + 2Δ_Var/ε`` (SPEC section 5).

    The last two terms are E|Lap(2Δ/ε)|: each statistic gets budget ε/2.

    >>> grid_error(2, 1, 2, 1.0, 1.0)  # two users with one record each, nothing suppressed
    1.5
    """
    s_, g_ = _check_retention(total, gamma_star)
    _, n_ = _check_records(total, records)
    s_, g_, n_ = np.broadcast_arrays(s_, g_, n_)
    out = _error_vec(s_, g_, n_, check_upper(upper), check_epsilon(epsilon))
    return _out(out, total, gamma_star, records)


@dataclass(frozen=True, kw_only=True, eq=False)
class GridErrors:
    """Per-grid error parts for one retention (all (G,) arrays; SPEC section 5).

    Attributes
    ----------
    retained_records : S; gamma_star : Γ*; records : N; retained_users : users with Γ_ℓ > 0.
    delta_mean, delta_var : sensitivities; bias_mean, bias_var : worst-case biases E_μ, E_Var.
    total : E_g = E_μ + E_Var + 2Δ_μ/ε + 2Δ_Var/ε.
    """

    epsilon: float
    upper: float
    retained_records: np.ndarray
    gamma_star: np.ndarray
    records: np.ndarray
    retained_users: np.ndarray
    delta_mean: np.ndarray
    delta_var: np.ndarray
    bias_mean: np.ndarray
    bias_var: np.ndarray
    total: np.ndarray


def _retention(grids: GridSet, retained) -> np.ndarray:
    if retained is None:
        return np.ones(grids.n_pairs, dtype=bool)
    r = np.asarray(retained)
    if r.dtype != bool or r.shape != (grids.n_pairs,):
        raise HexplorerError(
            f"retained must be a boolean mask of length {grids.n_pairs} (one per (grid, user) pair)"
        )
    return r


def grid_errors(grids: GridSet, epsilon: float, *, upper: float, retained=None) -> GridErrors:
    """Exact sensitivities, biases and worst-case error of every grid for a suppression mask.

    Parameters
    ----------
    grids : the grids.
    epsilon : per-grid budget ε.
    upper : U.
    retained : (P,) bool, False where the pair is suppressed (Γ_ℓ = 0); default keeps all.

    Raises
    ------
    HexplorerError
        If a grid retains no record.
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    keep = _retention(grids, retained)
    heads = grids.starts[:-1]
    kept_m = np.where(keep, grids.m, 0)
    s_ = np.add.reduceat(kept_m, heads)
    if np.any(s_ < 1):
        g = int(np.flatnonzero(s_ < 1)[0])
        raise HexplorerError(f"Grid {grids.hats[g]!r} retains no record; a grid needs one.")
    g_ = np.maximum.reduceat(kept_m, heads)
    n_ = grids.records
    k = np.minimum(n_ - s_, n_ // 2)
    j = np.minimum(g_, s_ // 2)
    return GridErrors(
        epsilon=eps,
        upper=u,
        retained_records=s_,
        gamma_star=g_,
        records=n_,
        retained_users=np.add.reduceat(keep.astype(np.int64), heads),
        delta_mean=u * (g_.astype(np.float64) / s_.astype(np.float64)),
        delta_var=(u * u) * _pair_term(j, s_),
        bias_mean=u * ((n_ - s_).astype(np.float64) / n_.astype(np.float64)),
        bias_var=(u * u) * _pair_term(k, n_),
        total=_error_vec(s_, g_, n_, u, eps),
    )


# --------------------------------------------------------------------------------------------
# The per-grid mechanism (SPEC section 5)
# --------------------------------------------------------------------------------------------


def laplace_noise(rng: np.random.Generator, scale: np.ndarray, size) -> np.ndarray:
    """Zero-mean Laplace noise of the given scale(s): the only noise source of this module.

    Simulation noise from numpy; a *published* release goes through ``core.publish`` (SPEC
    section 7). Tests monkeypatch this function to check that a wrong scale is caught.
    """
    return rng.laplace(0.0, scale, size)


def _grid_stats(grids: GridSet, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (1/count normalisation) of the records of the kept pairs, per grid."""
    heads = grids.starts[:-1]
    cnt = np.add.reduceat(np.where(keep, grids.m, 0), heads).astype(np.float64)
    tot = np.add.reduceat(np.where(keep, grids.s, 0.0), heads)
    sq = np.add.reduceat(np.where(keep, grids.q, 0.0), heads)
    mean = tot / cnt
    var = np.maximum(sq / cnt - mean * mean, 0.0)
    return mean, var


def noisy_statistics(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    rng: np.random.Generator,
    retained=None,
    size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-grid mechanism with budget ε: retained mean + Lap(2Δ_μ/ε), variance + Lap(2Δ_Var/ε).

    Mean and variance (1/S normalisation) are those of the retained users' records, computed
    from their s and q (no mean replacement here). Each grid reads only its own records, so the
    release over all grids is ``ε max_ℓ G_ℓ``-DP (seed 001, Theorem II.3).

    Returns
    -------
    (noisy_mean, noisy_var) : arrays of shape (G,), or (size, G) when ``size`` is given
        (independent runs, vectorised).
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    _check_values(grids, u)
    keep = _retention(grids, retained)
    errs = grid_errors(grids, eps, upper=u, retained=keep)
    mean, var = _grid_stats(grids, keep)
    shape = (grids.n_grids,) if size is None else (int(size), grids.n_grids)
    noisy_mean = mean + laplace_noise(rng, 2.0 * errs.delta_mean / eps, shape)
    noisy_var = var + laplace_noise(rng, 2.0 * errs.delta_var / eps, shape)
    return noisy_mean, noisy_var


def release_grids(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    rng: np.random.Generator,
    retained=None,
) -> pd.DataFrame:
    """One run of the per-grid mechanism on every grid, as a table (SPEC section 5).

    Columns: hat, cell, slot, users, records, retained (records kept), true_mean, true_var (all
    records), noisy_mean, noisy_var, delta_mean, delta_var, error_bound (E_g), plus
    retained_users, retained_mean, retained_var (the noiseless estimates) and bias_mean, bias_var.
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    keep = _retention(grids, retained)
    noisy_mean, noisy_var = noisy_statistics(grids, eps, upper=u, rng=rng, retained=keep)
    errs = grid_errors(grids, eps, upper=u, retained=keep)
    true_mean, true_var = _grid_stats(grids, np.ones(grids.n_pairs, dtype=bool))
    kept_mean, kept_var = _grid_stats(grids, keep)
    return pd.DataFrame(
        {
            "hat": grids.hats.astype(str),
            "cell": grids.cells.astype(str),
            "slot": grids.slots.astype(str),
            "users": grids.users_per_grid,
            "records": errs.records,
            "retained": errs.retained_records,
            "true_mean": true_mean,
            "true_var": true_var,
            "noisy_mean": noisy_mean,
            "noisy_var": noisy_var,
            "delta_mean": errs.delta_mean,
            "delta_var": errs.delta_var,
            "error_bound": errs.total,
            "retained_users": errs.retained_users,
            "retained_mean": kept_mean,
            "retained_var": kept_var,
            "bias_mean": errs.bias_mean,
            "bias_var": errs.bias_var,
        }
    )


# --------------------------------------------------------------------------------------------
# Privacy accounting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PrivacyLoss:
    """Privacy loss of releasing every grid with budget ε each (SPEC section 5).

    basic : ``G ε`` (basic composition); by_users : ``ε max_ℓ G_ℓ`` (seed 001, Theorem II.3);
    after_chop : ``K ε`` after CHOP-USER, or None when not run.
    """

    epsilon: float
    basic: float
    by_users: float
    after_chop: float | None = None


def privacy_loss(grids: GridSet, epsilon: float, chop: ChopResult | None = None) -> PrivacyLoss:
    """The three accountings of SPEC section 5.

    >>> df = pd.DataFrame({"hat": ["a/s", "b/s", "b/s"], "cell": ["a", "b", "b"], "slot": ["s"] * 3,
    ...     "user_id": ["x", "x", "y"], "m": [1, 1, 1], "s": [0.0] * 3, "q": [0.0] * 3})
    >>> privacy_loss(GridSet.from_summaries(df), 0.5)
    PrivacyLoss(epsilon=0.5, basic=1.0, by_users=1.0, after_chop=None)
    """
    eps = check_epsilon(epsilon)
    return PrivacyLoss(
        epsilon=eps,
        basic=grids.n_grids * eps,
        by_users=grids.max_grids_per_user * eps,
        after_chop=None if chop is None else chop.k_final * eps,
    )


# --------------------------------------------------------------------------------------------
# CHOP-USER (slides of seed 002; SPEC section 5)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class ChopResult:
    """Outcome of :func:`chop_user`.

    Attributes
    ----------
    epsilon, upper : the parameters.
    threshold : E_thresh = max_g E_g with nothing suppressed.
    k_initial : max_ℓ G_ℓ before; k_final : K after (privacy loss ``k_final · ε``).
    k_history : K at the start of every round, then the final K (non-increasing).
    suppressed : (n,) pair indices into the GridSet, in the order they were suppressed.
    retained : (P,) bool mask, False on suppressed pairs (pass it to :func:`release_grids`).
    errors_before, errors_after : (G,) E_g with nothing suppressed and after suppression.
    grids_per_user_after : (L,) G_ℓ after suppression.
    stopped_by : id of the user at which the loop stopped (it could not be suppressed in any of
        its grids within the threshold, or was the last contributor of all of them).
    wasted : suppressions made in the final round, which did not lower K (SPEC's loop keeps them).
    """

    epsilon: float
    upper: float
    threshold: float
    k_initial: int
    k_final: int
    k_history: tuple[int, ...]
    suppressed: np.ndarray
    retained: np.ndarray
    errors_before: np.ndarray
    errors_after: np.ndarray
    grids_per_user_after: np.ndarray
    stopped_by: str | None
    wasted: int
    _grids: GridSet = field(repr=False)

    @property
    def privacy_loss(self) -> float:
        """K ε."""
        return self.k_final * self.epsilon

    @property
    def n_suppressed(self) -> int:
        """Number of suppressed (user, grid) pairs."""
        return int(self.suppressed.size)

    def suppressed_pairs(self) -> pd.DataFrame:
        """The suppressed pairs in order: user_id, hat, m (records dropped), order."""
        g = self._grids
        p = self.suppressed
        return pd.DataFrame(
            {
                "user_id": g.user_ids[g.user[p]].astype(str),
                "hat": g.hats[g.grid[p]].astype(str),
                "m": g.m[p],
                "order": np.arange(p.size, dtype=np.int64),
            }
        )


def chop_user(grids: GridSet, epsilon: float, *, upper: float) -> ChopResult:
    """CHOP-USER: suppress (user, grid) pairs to lower K = max_ℓ G_ℓ without raising max_g E_g.

    SPEC section 5, exactly: ``E_thresh = max_g E_g`` with nothing suppressed. Repeat: let
    ``K = max_ℓ G_ℓ``; for each user with ``G_ℓ = K`` in order of user id, find among its grids
    the grid ``g(ℓ)`` whose error after also suppressing ℓ there is smallest (ties: first HAT
    label); a grid where ℓ is the last retained contributor is not a candidate. Suppress ℓ there
    if that error is ``≤ E_thresh``; otherwise stop: this user keeps K grids, so K cannot fall.
    When every user of the level was suppressed once, K has fallen by one and the loop repeats.
    Suppressions already made in the stopping round are kept (counted in ``wasted``).

    The result equals this loop run literally (tested against a naive implementation); the
    work is organised for a city (10⁴ grids, 10⁵ users: ``bench/bench_chop.py``). Per grid: S,
    the number of retained users and the two largest retained counts (Γ* after removing any
    user), read from the pairs sorted by count through a "next retained pair" union-find; per
    user: its retained pairs. At the start of each round the post-suppression errors of all pairs
    of the level's users are computed at once (numpy) and each user's few smallest are sorted.
    Within the round a grid changes only when someone is suppressed there; its stale errors stay
    lower bounds of the current ones unless its two largest counts changed or S ≤ 3 m*
    (Δ_Var is not monotone there), so a user's scan stops at the first stale error that cannot
    win and recomputes only changed grids (always those whose errors may have fallen).

    Parameters
    ----------
    grids : the grids; epsilon : per-grid budget ε; upper : U.

    Returns
    -------
    ChopResult
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    before = grid_errors(grids, eps, upper=u)
    threshold = float(before.total.max())
    suppressed, history, stopped_by, wasted = _chop_kernel(grids, eps, u, threshold)
    keep = np.ones(grids.n_pairs, dtype=bool)
    keep[suppressed] = False
    after = grid_errors(grids, eps, upper=u, retained=keep)
    g_after = np.bincount(grids.user[keep], minlength=grids.n_users).astype(np.int64)
    return ChopResult(
        epsilon=eps,
        upper=u,
        threshold=threshold,
        k_initial=grids.max_grids_per_user,
        k_final=int(g_after.max()),
        k_history=tuple(history),
        suppressed=suppressed,
        retained=keep,
        errors_before=before.total,
        errors_after=after.total,
        grids_per_user_after=g_after,
        stopped_by=stopped_by,
        wasted=wasted,
        _grids=grids,
    )


def _chop_kernel(
    grids: GridSet, eps: float, u: float, threshold: float, prefix: int = 4
) -> tuple[np.ndarray, list[int], str | None, int]:
    """The loop of :func:`chop_user`; returns (suppressed pairs, K history, stopper, wasted)."""
    u2 = u * u
    inf = math.inf
    n_pairs = grids.n_pairs
    pm = grids.m.tolist()
    pg = grids.grid.tolist()
    starts = grids.starts.tolist()
    ends = starts[1:]
    # Grid state (Python lists: fast scalar access in the loop).
    n_np = grids.records
    n_list = n_np.tolist()
    s_list = list(n_list)
    alive_users = grids.users_per_grid.tolist()
    top1 = [pm[a] for a in starts[:-1]]
    top2 = [pm[a + 1] if a + 1 < e else 0 for a, e in zip(starts[:-1], ends, strict=True)]
    # Union-find over the pairs (sorted by count within a grid): parent[i] == i for retained
    # pairs, find(i) = first retained pair index >= i; gives the two largest retained counts.
    parent = list(range(n_pairs + 1))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def post_error(g: int, m: int) -> float:
        """E_g after also suppressing a retained user with m records (mirrors _error_vec)."""
        if alive_users[g] <= 1:
            return inf  # never remove a grid's last contributor
        a1 = top1[g]
        a2 = top2[g]
        gsv = a2 if (m == a1 and a2 < a1) else a1
        s2v = s_list[g] - m
        nv = n_list[g]
        r = nv - s2v
        h = nv // 2
        kk = r if r < h else h
        h = s2v // 2
        jj = gsv if gsv < h else h
        return (
            (u * (r / nv) + u2 * (float(kk * (nv - kk)) / float(nv * nv)))
            + (2.0 * (u * (gsv / s2v))) / eps
        ) + (2.0 * (u2 * (float(jj * (s2v - jj)) / float(s2v * s2v)))) / eps

    # Per user: list of retained pair indices (ascending = grid order).
    order = np.argsort(grids.user, kind="stable")
    bounds = np.searchsorted(grids.user[order], np.arange(grids.n_users + 1))
    order_l = order.tolist()
    uses = [order_l[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]
    g_init = grids.grids_per_user
    # Grids changed in round `rnd` have stamp[g] == rnd. Their stale (round-start) errors are
    # lower bounds of the current ones unless g is in `wobbled`: removing other users from a grid
    # only raises E_mu, E_Var and Delta_mu, and raises Delta_Var while S' > 2 Gamma*' (it is not
    # monotone for S' <= 2 Gamma*'); so the stale value bounds the current one from below as long
    # as the two largest counts are unchanged and S > 3 m*, which keeps S - m_l > 2 Gamma*' for
    # every user. Float rounding is monotone too, so the bound holds bit for bit.
    stamp = [-1] * grids.n_grids
    suppressed: list[int] = []
    k = int(g_init.max())
    history = [k]
    stopped_by: str | None = None
    wasted = 0
    pm_arr, pg_arr = grids.m, grids.grid
    grid_key = np.uint16 if grids.n_grids <= 65536 else np.int64
    level = np.flatnonzero(g_init == k)
    rnd = 0
    while True:
        # Every user of the level has exactly k retained pairs: one (n, k) block.
        n_lvl = level.size
        flat = np.fromiter(
            chain.from_iterable(uses[x] for x in level.tolist()), dtype=np.int64, count=n_lvl * k
        )
        gg = pg_arr[flat]
        mm = pm_arr[flat]
        t1 = np.asarray(top1, dtype=np.int64)[gg]
        t2 = np.asarray(top2, dtype=np.int64)[gg]
        gs = np.where((mm == t1) & (t2 < t1), t2, t1)
        s2 = np.asarray(s_list, dtype=np.int64)[gg] - mm
        last = np.asarray(alive_users, dtype=np.int64)[gg] <= 1
        n_arr = n_np[gg]
        vals = _error_vec(np.where(last, 1, s2), np.where(last, 1, gs), n_arr, u, eps)
        vals = np.where(last, inf, vals).reshape(n_lvl, k)
        pairs2 = flat.reshape(n_lvl, k)
        # Per user, the `prefix` smallest stale errors in (error, grid) order; the rest is only
        # read when the prefix cannot decide (rare).
        width = min(k, prefix)
        if width < k:
            part = np.sort(np.argpartition(vals, width - 1, axis=-1)[:, :width], axis=-1)
        else:
            part = np.broadcast_to(np.arange(k), (n_lvl, k))
        pv = np.take_along_axis(vals, part, axis=-1)
        srt = np.take_along_axis(part, np.argsort(pv, axis=-1, kind="stable"), axis=-1)
        vals_l = np.take_along_axis(vals, srt, axis=-1).ravel().tolist()
        pairs_l = np.take_along_axis(pairs2, srt, axis=-1).ravel().tolist()
        top1_0 = list(top1)
        top2_0 = list(top2)
        wobbled: set[int] = set()
        # need[i] = 1 once the grid of block entry i changed non-monotonically (see above):
        # positions of each grid's entries in the block, row by row, to mark later users.
        by_grid = np.argsort(gg.astype(grid_key), kind="stable")  # radix sort when uint16
        grid_first = np.concatenate(([0], np.cumsum(np.bincount(gg, minlength=grids.n_grids))))
        need = bytearray(n_lvl * k)
        need_np = np.frombuffer(need, dtype=np.uint8)
        stop = False
        base = -width
        for row, usr in enumerate(level.tolist()):
            base += width
            v_edge = vals_l[base + width - 1]  # entries outside the prefix: stale errors >= this
            best_v = inf
            best_g = n_pairs
            best_p = -1
            decided = False
            for c in range(width):
                p = pairs_l[base + c]
                g = pg[p]
                sv = vals_l[base + c]
                if sv > best_v or (sv == best_v and g > best_g):
                    # Stale errors are lower bounds except on wobbled grids: no later entry of
                    # the prefix can win, nor one outside it if sv > best_v or sv < v_edge.
                    decided = sv > best_v or sv < v_edge or width == k
                    break
                if stamp[g] == rnd:
                    sv = post_error(g, pm[p])
                if sv < best_v or (sv == best_v and g < best_g):
                    best_v, best_g, best_p = sv, g, p
            else:
                decided = width == k
            if not decided:
                # Exact scan of every retained grid of the user.
                best_v, best_g, best_p = inf, n_pairs, -1
                for p, sv in zip(pairs2[row].tolist(), vals[row].tolist(), strict=True):
                    g = pg[p]
                    if stamp[g] == rnd:
                        sv = post_error(g, pm[p])
                    if sv < best_v or (sv == best_v and g < best_g):
                        best_v, best_g, best_p = sv, g, p
            elif wobbled:
                j = need.find(1, row * k, row * k + k)
                while j >= 0:
                    p = int(flat[j])
                    g = pg[p]
                    v = post_error(g, pm[p])
                    if v < best_v or (v == best_v and g < best_g):
                        best_v, best_g, best_p = v, g, p
                    j = need.find(1, j + 1, row * k + k)
            if best_p < 0 or best_v > threshold:
                stop = True
                stopped_by = str(grids.user_ids[usr])
                wasted = row
                break
            # Suppress user usr in grid best_g.
            p, g = best_p, best_g
            m = pm[p]
            parent[p] = p + 1
            s_list[g] -= m
            alive_users[g] -= 1
            f1 = starts[g]
            if parent[f1] != f1:
                f1 = find(f1)
            e = ends[g]
            top1[g] = pm[f1]  # a grid keeps one contributor, so f1 < e
            f2 = f1 + 1
            if parent[f2] != f2:
                f2 = find(f2)
            top2[g] = pm[f2] if f2 < e else 0
            stamp[g] = rnd
            if g not in wobbled and (
                top1[g] != top1_0[g] or top2[g] != top2_0[g] or s_list[g] <= 3 * top1[g]
            ):
                wobbled.add(g)
                seg = by_grid[grid_first[g] : grid_first[g + 1]]
                need_np[seg[np.searchsorted(seg, row * k + k) :]] = 1
            uses[usr].remove(p)
            suppressed.append(p)
        if stop:
            break
        # Every user of level k now has k - 1 grids and none has more: K fell by one.
        k -= 1
        rnd += 1
        history.append(k)
        if k == 0:  # unreachable: a grid never loses its last contributor
            break
        level = np.union1d(level, np.flatnonzero(g_init == k))
    return np.asarray(suppressed, dtype=np.int64), history, stopped_by, wasted


# --------------------------------------------------------------------------------------------
# The CLI's summary
# --------------------------------------------------------------------------------------------


def compose(summaries_or_gridset, epsilons, upper: float = 65.0) -> dict:
    """Privacy loss under composition for each ε: basic, by users and after CHOP-USER.

    Returns
    -------
    dict
        ``{grids, users, max_grids_per_user, results: [{epsilon, basic_loss, user_loss, chop_k,
        chop_loss, threshold, max_error_after, suppressed_pairs}]}`` (JSON-ready).
    """
    grids = _as_gridset(summaries_or_gridset)
    u = check_upper(upper)
    eps_list = [epsilons] if np.ndim(epsilons) == 0 else list(epsilons)
    if not eps_list:
        raise HexplorerError("The 'epsilon' parameter needs at least one value.")
    results = []
    for e in eps_list:
        eps = check_epsilon(e)
        chop = chop_user(grids, eps, upper=u)
        loss = privacy_loss(grids, eps, chop)
        results.append(
            {
                "epsilon": eps,
                "basic_loss": loss.basic,
                "user_loss": loss.by_users,
                "chop_k": chop.k_final,
                "chop_loss": loss.after_chop,
                "threshold": chop.threshold,
                "max_error_after": float(chop.errors_after.max()),
                "suppressed_pairs": chop.n_suppressed,
            }
        )
    return {
        "grids": grids.n_grids,
        "users": grids.n_users,
        "max_grids_per_user": grids.max_grids_per_user,
        "results": results,
    }
