"""The analytic worst case of many cells at one ε, from their per-user record counts only.

The small interface the adaptive cover (:mod:`core.citywide.adaptive`) is written against:
:class:`CellCounts` (C cells, each cell's per-user record counts sorted descending, with offsets)
and :func:`cell_worst_cases` ``(cells, ε, mechanism) -> (C,) worst case``, for every mechanism
SPEC gives a closed form for (:data:`core.plan.ANALYTIC_MECHANISMS`). The values are those of
:func:`core.plan.worst_case` (SPEC section 4) cell by cell, and of the Map's error colouring
(:func:`core.citywide.errors.errors_at`) HAT by HAT (tests/citywide/test_cellcases.py).

Unlike :func:`core.citywide.errors.error_table`, which builds every HAT's whole m^(ε) staircase
once so that ε can move, this answers one ε only, and so needs no staircase: at one ε, m^(ε)
minimises ``E(m) = U (1 − S(m)/N) + c U m / (ε S(m))`` over the cell's counts (SPEC section 4),
and with the counts descending ``m_(1) ≥ … ≥ m_(L)`` the k-th candidate has
``S(m_(k)) = k m_(k) + N − Σ_{j≤k} m_(j)`` — one pass over all (cell, user) pairs and one
segmented minimum (``np.minimum.reduceat``), no Python loop per cell. Where E ties between two
counts the minimum is the same number, so the smallest-minimiser rule of
:func:`core.worstcase.m_opt` (which decides the m, not the error) is not needed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from core import worstcase as wc
from core.params import check_noise_measure

__all__ = ["CellCounts", "cell_worst_cases"]


@dataclass(frozen=True, kw_only=True, eq=False)
class CellCounts:
    """C cells' per-user record counts: cell c's counts are ``counts[starts[c]:starts[c + 1]]``,
    descending, every cell with at least one user. Build with :meth:`from_pairs`.

    >>> cc = CellCounts.from_pairs(np.array([1, 0, 1, 0]), np.array([2, 5, 7, 1]), n_cells=2)
    >>> cc.counts.tolist(), cc.starts.tolist(), cc.records.tolist(), cc.top.tolist()
    ([5, 1, 7, 2], [0, 2, 4], [6, 9], [5, 6, 7, 9])
    """

    counts: np.ndarray
    starts: np.ndarray

    @classmethod
    def from_pairs(cls, cell: np.ndarray, m: np.ndarray, *, n_cells: int) -> CellCounts:
        """Pack (cell index, count) pairs, one per (cell, user); every cell in ``range(n_cells)``
        must have a pair (trusted)."""
        m = np.asarray(m, dtype=np.int64)
        cell = np.asarray(cell, dtype=np.int64)
        big = int(m.max(initial=0)) + 1
        if n_cells * big < 2**62:  # one sort of int64 keys (cell, -m), faster than lexsort
            key = np.sort(cell * big + (big - 1 - m))
            cell_sorted, counts = key // big, big - 1 - key % big
        else:  # pragma: no cover - beyond any city
            order = np.lexsort((-m, cell))
            cell_sorted, counts = cell[order], m[order]
        starts = np.searchsorted(cell_sorted, np.arange(n_cells + 1)).astype(np.int64)
        return cls(counts=counts, starts=starts)

    @cached_property
    def users(self) -> np.ndarray:
        """(C,) L per cell."""
        return np.diff(self.starts)

    @cached_property
    def records(self) -> np.ndarray:
        """(C,) N per cell."""
        return np.add.reduceat(self.counts, self.starts[:-1])

    @cached_property
    def m_max(self) -> np.ndarray:
        """(C,) m* per cell."""
        return self.counts[self.starts[:-1]]

    @cached_property
    def top(self) -> np.ndarray:
        """(P,) running sums Σ_{j≤k} m_(j) within each cell."""
        csum = np.cumsum(self.counts)
        before = np.concatenate(([0], csum[self.starts[1:-1] - 1]))
        return csum - np.repeat(before, self.users)

    def s_of(self, m: np.ndarray) -> np.ndarray:
        """(C,) S(m_c) = Σ_l min(m_l, m_c) of each cell at its own ``m[c]``."""
        return np.add.reduceat(np.minimum(self.counts, np.repeat(m, self.users)), self.starts[:-1])


def _opt_arrayavg(cc: CellCounts, upper: float, eps: float, c: float) -> np.ndarray:
    """min over the cell's counts of E(m) (m^(ε) is one of them; SPEC section 4)."""
    rank = np.arange(cc.counts.size) - np.repeat(cc.starts[:-1], cc.users) + 1
    n = np.repeat(cc.records, cc.users)
    s = rank * cc.counts + (n - cc.top)
    m = cc.counts
    # the operation order of core.worstcase.worst_case_error, so the values agree to the bit
    e = upper * (1.0 - s / n) + c * upper * m / (eps * s)
    return np.minimum.reduceat(e, cc.starts[:-1])


def _convex_m(cc: CellCounts) -> np.ndarray:
    """m_UB^(O,2) per cell (:func:`core.worstcase.m_convex`, one call per distinct multiset)."""
    out = np.empty(cc.users.size, dtype=np.int64)
    memo: dict[bytes, int] = {}
    starts = cc.starts.tolist()
    for h in range(out.size):
        seg = cc.counts[starts[h] : starts[h + 1]]
        key = seg.tobytes()
        if key not in memo:
            memo[key] = wc.m_convex(seg)
        out[h] = memo[key]
    return out


def cell_worst_cases(
    cells: CellCounts, epsilon: float, mechanism: str, *, upper: float, noise_measure: str = "mean"
) -> np.ndarray:
    """(C,) the analytic worst-case error of ``mechanism`` on each cell at ``epsilon``.

    Parameters are trusted (checked by the caller): ε > 0, U > 0, ``mechanism`` one of
    :data:`core.plan.ANALYTIC_MECHANISMS`. opt-arrayavg: E(m^(ε)); arrayavg-best /
    opt-arrayavg-convex: E(m_UB) at the median / m_UB^(O,2); baseline: ``c U m* / (N ε)``;
    opt-bounding: E^OPT(ε) (SPEC sections 3 and 4).

    >>> cc = CellCounts.from_pairs(np.array([0, 0, 0]), np.array([3, 2, 1]), n_cells=1)
    >>> cell_worst_cases(cc, 1.0, "opt-arrayavg", upper=65.0).tolist()
    [32.5]
    >>> cell_worst_cases(cc, 1.0, "opt-bounding", upper=65.0).tolist()
    [27.083333333333332]
    """
    from core.plan import ceil_two_over_epsilon_array, m_rule

    c = check_noise_measure(noise_measure)
    u, eps, n = float(upper), float(epsilon), cells.records
    if mechanism == "baseline":
        return c * u * cells.m_max / (n * eps)
    if mechanism == "opt-bounding":
        k = ceil_two_over_epsilon_array(np.full(cells.users.size, eps))
        inside = k <= cells.users
        row = cells.starts[:-1] + np.minimum(k, cells.users) - 1
        m_k = np.where(inside, cells.counts[row], 0)
        top_k = np.where(inside, cells.top[row], n)
        k_in = np.where(inside, k, 0)
        bias = u * (top_k - k_in * m_k) / 2.0
        noise = c * (u * m_k) / eps
        return (bias + noise) / n
    rule = m_rule(mechanism)
    if rule == "opt":
        return _opt_arrayavg(cells, u, eps, c)
    if rule == "median":
        m = cells.counts[cells.starts[:-1] + (cells.users + 1) // 2 - 1]
    else:  # "convex": check_analytic admits no other rule
        m = _convex_m(cells)
    s = cells.s_of(m)
    return u * (1.0 - s / n) + c * u * m / (eps * s)
