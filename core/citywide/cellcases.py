"""The analytic worst case of many cells at one ε, from their per-user record counts only.

The small interface the adaptive cover (:mod:`core.citywide.adaptive`) is written against:
:class:`CellCounts` (C cells, each cell's per-user record counts sorted descending, with offsets,
at one U and noise measure) and :func:`cell_worst_cases` ``(cells, ε, mechanism) -> (C,) worst
case``. The worst case is the registry entry's own vectorised form (``Mechanism.worst_case.many``,
:mod:`core.mechanisms.forms`), the one the Map's error colouring
(:func:`core.citywide.errors.errors_at`) calls, so every mechanism with a closed-form worst case
drives the cover; :class:`CellCounts` is the table that form reads.

Unlike :func:`core.citywide.errors.error_table`, which builds every HAT's whole m^(ε) staircase
once so that ε can move, this answers one ε only, and so needs no staircase: at one ε, m^(ε)
minimises ``E(m) = U (1 − S(m)/N) + c U m / (ε S(m))`` over the cell's counts (SPEC section 4),
and with the counts descending ``m_(1) ≥ … ≥ m_(L)`` the k-th candidate has
``S(m_(k)) = k m_(k) + N − Σ_{j≤k} m_(j)`` — one pass over all (cell, user) pairs and one
segmented minimum (``np.minimum.reduceat``), no Python loop per cell; of equal minima the
smallest m is kept, as :func:`core.worstcase.m_opt` does (its exact tie rule on ε as written
decides only the m, never the error). A rule with another staircase, or a counts-only rule
without a vectorised form, is evaluated once per distinct multiset of counts, as
:func:`~core.citywide.errors.error_table` does. The values equal the single-HAT worst case cell by
cell and ``errors_at`` HAT by HAT (tests/citywide/test_cellcases.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from core.errors import HexplorerError
from core.params import check_noise_measure

__all__ = ["CellCounts", "cell_worst_cases"]


@dataclass(frozen=True, kw_only=True, eq=False)
class CellCounts:
    """C cells' per-user record counts: cell c's counts are
    ``counts_desc[count_starts[c]:count_starts[c + 1]]``, descending, every cell with at least
    one user; with the U and noise measure of the worst case. Build with :meth:`from_pairs`. It
    has what the registry's ``worst_case.many`` forms read of a table
    (:mod:`core.mechanisms.forms`).

    >>> cc = CellCounts.from_pairs(np.array([1, 0, 1, 0]), np.array([2, 5, 7, 1]), n_cells=2)
    >>> cc.counts_desc.tolist(), cc.count_starts.tolist(), cc.records.tolist(), cc.top.tolist()
    ([5, 1, 7, 2], [0, 2, 4], [6, 9], [5, 6, 7, 9])
    """

    counts_desc: np.ndarray
    count_starts: np.ndarray
    upper: float = 65.0
    noise_measure: str = "mean"

    @classmethod
    def from_pairs(
        cls,
        cell: np.ndarray,
        m: np.ndarray,
        *,
        n_cells: int,
        upper: float = 65.0,
        noise_measure: str = "mean",
    ) -> CellCounts:
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
        return cls(
            counts_desc=counts, count_starts=starts, upper=float(upper),
            noise_measure=noise_measure,
        )  # fmt: skip

    @property
    def n_hats(self) -> int:
        """C (the forms' name for the number of rows)."""
        return int(self.count_starts.size - 1)

    @cached_property
    def users(self) -> np.ndarray:
        """(C,) L per cell."""
        return np.diff(self.count_starts)

    @cached_property
    def records(self) -> np.ndarray:
        """(C,) N per cell."""
        return self.segment_sums(self.counts_desc)

    @cached_property
    def m_max(self) -> np.ndarray:
        """(C,) m* per cell."""
        return self.counts_desc[self.count_starts[:-1]]

    @cached_property
    def top(self) -> np.ndarray:
        """(P,) running sums Σ_{j≤k} m_(j) within each cell."""
        csum = np.cumsum(self.counts_desc)
        before = np.concatenate(([0], csum[self.count_starts[1:-1] - 1]))
        return csum - np.repeat(before, self.users)

    def segment_sums(self, values: np.ndarray) -> np.ndarray:
        """One sum per cell of ``values`` (one value per (cell, user) pair)."""
        return np.add.reduceat(values, self.count_starts[:-1])

    def s_of(self, m: np.ndarray) -> np.ndarray:
        """(C,) S(m_c) = Σ_l min(m_l, m_c) of each cell at its own ``m[c]``."""
        return self.segment_sums(np.minimum(self.counts_desc, np.repeat(m, self.users)))

    def rule_m_s(self, rule: str, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's m_UB under the registry's m_UB rule ``rule`` at ε (one ε for all cells:
        this table answers one ε), and S(m_UB)."""
        from core import worstcase as wc
        from core.mechanisms import get_rule

        r = get_rule(rule)
        epsilon = float(eps[0])
        if r.staircase is wc.staircase:  # m^(ε): the minimiser of E at this ε
            return self._m_opt(epsilon)
        if r.counts_only and r.many is not None:
            m = np.asarray(r.many(self.counts_desc, self.count_starts), dtype=np.int64)
        elif r.counts_only:
            m = self._per_multiset(lambda seg: r(seg, math.nan, math.nan))
        else:
            m = self._per_multiset(lambda seg: r(seg, self.upper, epsilon, self.noise_measure))
        return m, self.s_of(m)

    def _m_opt(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """m^(ε) and S(m^(ε)) of every cell: the smallest count minimising E (see above)."""
        c = check_noise_measure(self.noise_measure)
        starts, users = self.count_starts, self.users
        rank = np.arange(self.counts_desc.size) - np.repeat(starts[:-1], users) + 1
        n = np.repeat(self.records, users)
        m = self.counts_desc
        s = rank * m + (n - self.top)
        e = (1.0 - s / n) + c * m / (epsilon * s)  # core.worstcase.m_opt's E / U
        best = np.minimum.reduceat(e, starts[:-1])
        at = np.where(e == np.repeat(best, users), np.arange(e.size), -1)
        row = np.maximum.reduceat(at, starts[:-1])  # the last = the smallest m among ties
        return m[row], s[row]

    def _per_multiset(self, fn) -> np.ndarray:
        """``fn(counts)`` of every cell, once per distinct multiset of counts."""
        out = np.empty(self.n_hats, dtype=np.int64)
        memo: dict[bytes, int] = {}
        starts = self.count_starts.tolist()
        for h in range(out.size):
            seg = self.counts_desc[starts[h] : starts[h + 1]]
            key = seg.tobytes()
            if key not in memo:
                memo[key] = int(fn(seg))
            out[h] = memo[key]
        return out


def cell_worst_cases(cells: CellCounts, epsilon: float, mechanism: str) -> np.ndarray:
    """(C,) the analytic worst-case error of ``mechanism`` on each cell at ``epsilon``: the
    registry entry's ``worst_case.many`` form on ``cells`` (at its U and noise measure).

    Parameters are trusted (checked by the caller): ε > 0, ``mechanism`` one of
    :func:`core.mechanisms.analytic_names`.

    >>> cc = CellCounts.from_pairs(np.array([0, 0, 0]), np.array([3, 2, 1]), n_cells=1)
    >>> cell_worst_cases(cc, 1.0, "opt-arrayavg").tolist()
    [32.5]
    >>> cell_worst_cases(cc, 1.0, "opt-bounding").tolist()
    [27.083333333333332]
    """
    from core.mechanisms import get_mechanism

    form = get_mechanism(mechanism).worst_case
    if form is None:  # pragma: no cover - checked at the boundary
        raise HexplorerError(f"{mechanism!r} has no closed-form worst case.")
    eps = np.full(cells.n_hats, float(epsilon))
    return np.asarray(form.many(cells, eps)[3], dtype=np.float64)
