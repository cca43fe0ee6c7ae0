"""An adaptive H3 cover: each area released at the finest resolution whose error meets a target.

One slot's records, ε per released cell, a mechanism with an analytic worst case (SPEC section 4),
a target error X and a resolution range [r_min, r_max]. A fixed resolution trades the centre
against the outskirts: fine hexagons in the centre are accurate, the same hexagons in the outskirts
hold a few users and their release is mostly noise. The cover chooses per area.

**Cells.** H3 children do not tile their parent exactly (a point can lie in a child of a cell
whose boundary does not contain it). The cover is therefore defined on the *logical* hierarchy:
every record lies in its r_max cell (``h3.latlng_to_cell`` at r_max, as prepared), and a cell at
resolution r < r_max holds exactly the records whose r_max cell has it as ancestor
(``h3.cell_to_parent``). Every record is then in exactly one cell of each resolution, and a cover
(a set of cells, none an ancestor of another, whose descendants at r_max hold every record) puts
every record in exactly one released cell. The released cells are disjoint, so a user's loss in
the slot is ε · (released cells it enters), accounted as today (CHOP-USER, ε · max G_ℓ:
:meth:`Cover.summaries` are ordinary per-(HAT, user) summaries).

**Objective.** Among all covers by cells of resolutions r_min … r_max, maximise lexicographically
(1) the records in released cells whose worst-case error at ε is ≤ X, then (2) the fineness
Σ_cells N_c · res(c) (the record-weighted resolution: finer is better). Both are sums over the
released cells, so one bottom-up pass over the hierarchy is exact: each node's best cover is the
better of {the node whole} and {the best covers of its children together}. Splitting always adds
N_v to the fineness, so the two never tie. Per resolution this is one grouping of sorted integer
keys (H3 indices sort children under their parent), no Python loop per cell or record.

**What holds** (tests/citywide/test_adaptive.py, against brute force over all covers):

- every released cell coarser than r_max meets the target (a missing cell would be split: no
  fewer records within, and finer);
- a released cell misses the target only if it is an r_max cell none of whose ancestors down to
  r_min meets it (else releasing that ancestor whole would put strictly more records within):
  every released cell meets the target when any cell containing it does;
- a released cell coarser than r_max is released whole because no cover of its children puts all
  of its records within target ("coarsen to the parent where no finer cover meets it").

It is not true that a chosen cell is the finest cell meeting the target for its records: a cell
whose children all meet the target except one sparse child is released whole when that puts more
records within target, as the objective says.

The choice reads the record counts per user, which the papers treat as public (as they do to set
m_UB); a stricter reading would have to choose from noisy counts, at a share of the budget.

>>> import pandas as pd, h3
>>> a, b = sorted(h3.cell_to_children(h3.latlng_to_cell(21.19, 72.83, 7), 8))[:2]
>>> df = pd.DataFrame({"hat": [a + "/h08", b + "/h08"], "cell": [a, b], "slot": ["h08"] * 2,
...     "user_id": ["u", "v"], "m": [40, 40], "s": [800.0, 800.0], "q": [16e3, 16e3]})
>>> cover = adaptive_cover(df, slot="h08", epsilon=1.0, target=40.0, resolutions=(7, 8))
>>> cover.fixed_cells[8][2].tolist(), cover.fixed_cells[7][2].tolist()  # 65 alone, 32.5 together
([False, False], [True])
>>> cover.resolution.tolist(), cover.records.tolist(), cover.worst_case_error.tolist()
([7], [80], [32.5])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from core.citywide.cellcases import CellCounts, cell_worst_cases
from core.citywide.gridset import _check_summaries, select_grids
from core.errors import HexplorerError
from core.params import check_epsilon, check_noise_measure, check_upper

__all__ = ["AdaptiveParams", "Cover", "adaptive_cover", "cell_parents", "parse_resolutions"]

_RES_SHIFT = np.uint64(52)
_RES_MASK = np.uint64(0xF << 52)


def cell_parents(cells: np.ndarray, res: int) -> np.ndarray:
    """``h3.cell_to_parent`` of each (uint64) H3 cell at ``res`` (≤ each cell's resolution),
    vectorised on the index bits: resolution field set to ``res``, digits ``res+1 …15`` set to 7.

    >>> import h3
    >>> c = h3.str_to_int(h3.latlng_to_cell(21.19, 72.83, 9))
    >>> int(cell_parents(np.array([c], dtype=np.uint64), 6)[0]) == h3.str_to_int(
    ...     h3.cell_to_parent(h3.int_to_str(c), 6))
    True
    """
    low = np.uint64((1 << (3 * (15 - res))) - 1)
    return (cells & ~_RES_MASK) | (np.uint64(res) << _RES_SHIFT) | low


def parse_resolutions(text) -> tuple[int, int]:
    """``"5-8"`` (or a pair) → (5, 8): H3 resolutions 0 … 15, r_min ≤ r_max.

    >>> parse_resolutions("8-5"), parse_resolutions((6, 7))
    ((5, 8), (6, 7))
    """
    try:
        parts = [int(p) for p in str(text).split("-")] if isinstance(text, str) else list(text)
        lo, hi = sorted(int(p) for p in parts)
        if len(parts) != 2 or not 0 <= lo <= hi <= 15:
            raise ValueError
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'resolutions' parameter must be two H3 resolutions 0-15 like '5-8'. "
            f"Got {text!r} instead."
        ) from None
    return lo, hi


@dataclass(frozen=True, kw_only=True)
class AdaptiveParams:
    """The inputs of :func:`adaptive_cover`, checked (frozen, keyword-only)."""

    epsilon: float
    target: float
    mechanism: str = "opt-arrayavg"
    r_min: int = 5
    r_max: int = 7
    upper: float = 65.0
    noise_measure: str = "mean"

    def __post_init__(self) -> None:
        from core.mechanisms import get_analytic
        from core.params import check_target

        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "target", check_target(self.target))
        object.__setattr__(self, "mechanism", get_analytic(self.mechanism).name)
        lo, hi = parse_resolutions((self.r_min, self.r_max))
        if (lo, hi) != (self.r_min, self.r_max):
            raise HexplorerError(
                f"The 'r_min' parameter must be <= 'r_max'. Got {self.r_min!r} > {self.r_max!r}."
            )
        object.__setattr__(self, "upper", check_upper(self.upper))
        check_noise_measure(self.noise_measure)


@dataclass(frozen=True, kw_only=True, eq=False)
class Cover:
    """The chosen cells (K of them) and what they cost, with the fixed-resolution figures.

    Attributes
    ----------
    params : AdaptiveParams
    slot : str
    cells : (K,) str H3 cells, sorted by index; resolution : (K,) int.
    records, users : (K,) int64; worst_case_error : (K,) float64; within : (K,) bool.
    base_cells : (B,) str, the slot's r_max cells; assignment : (B,) int64, each one's cell.
    fixed_records_within : dict resolution → records within target if every record were
        released at that resolution (logical cells, as above).
    fixed_cells : dict resolution → (cells, records, within) at that resolution.
    """

    params: AdaptiveParams
    slot: str
    cells: np.ndarray
    resolution: np.ndarray
    records: np.ndarray
    users: np.ndarray
    worst_case_error: np.ndarray
    within: np.ndarray
    base_cells: np.ndarray
    assignment: np.ndarray
    fixed_cells: dict
    _pairs: tuple

    @property
    def n_records(self) -> int:
        """All of the slot's records."""
        return int(self.records.sum())

    @property
    def records_within(self) -> int:
        """Records in released cells within target (the objective's first term)."""
        return int(self.records[self.within].sum())

    @property
    def fineness(self) -> int:
        """Σ N_c · res(c) (the objective's second term)."""
        return int((self.records * self.resolution).sum())

    @property
    def share_records(self) -> float:
        """Share of the slot's records in cells within target."""
        return self.records_within / self.n_records

    @cached_property
    def areas(self) -> np.ndarray:
        """(K,) each cell's area in km² (``h3.cell_area``)."""
        import h3

        return np.array([h3.cell_area(c, unit="km^2") for c in self.cells.tolist()])

    @property
    def share_area(self) -> float:
        """Share of the released area in cells within target."""
        return float(self.areas[self.within].sum() / self.areas.sum())

    def fixed_share_records(self, res: int) -> float:
        """Share of records within target if all were released at resolution ``res``."""
        _, records, within = self.fixed_cells[res]
        return float(records[within].sum() / records.sum())

    def fixed_share_area(self, res: int) -> float:
        """Share of area within target at the fixed resolution ``res``."""
        import h3

        cells, _, within = self.fixed_cells[res]
        areas = np.array([h3.cell_area(c, unit="km^2") for c in cells.tolist()])
        return float(areas[within].sum() / areas.sum())

    def frame(self) -> pd.DataFrame:
        """One row per released cell: cell, resolution, users, records, worst_case_error, within."""
        return pd.DataFrame(
            {
                "cell": self.cells.astype(str),
                "resolution": self.resolution,
                "users": self.users,
                "records": self.records,
                "worst_case_error": self.worst_case_error,
                "within": self.within,
            }
        )

    def summaries(self) -> pd.DataFrame:
        """Per-(released cell, user) summaries (hat, cell, slot, user_id, m, s, q): what CHOP-USER,
        the accounting, the error table and publishing read, unchanged."""
        cell_idx, user_ids, m, s, q = self._pairs
        cells = self.cells.astype(str)[cell_idx]
        return pd.DataFrame(
            {
                "hat": pd.Series(cells, dtype=object) + "/" + self.slot,
                "cell": cells,
                "slot": self.slot,
                "user_id": user_ids,
                "m": m,
                "s": s,
                "q": q,
            }
        )

    def to_dict(self) -> dict:
        """Plain values for the CLI's JSON."""
        p = self.params
        fixed = {
            f"res {r}": {"share_records": self.fixed_share_records(r), "cells": len(c[0])}
            for r, c in sorted(self.fixed_cells.items())
        }
        return {
            "slot": self.slot,
            "epsilon": p.epsilon,
            "target_error": p.target,
            "mechanism": p.mechanism,
            "resolutions": [p.r_min, p.r_max],
            "records": self.n_records,
            "records_within": self.records_within,
            "share_records": self.share_records,
            "share_area": self.share_area,
            "cells_per_resolution": {
                str(r): int((self.resolution == r).sum()) for r in range(p.r_min, p.r_max + 1)
            },
            "fixed": fixed,
            "cells": self.frame().to_dict(orient="records"),
        }


def _cells_as_ints(labels: np.ndarray, r_max: int) -> np.ndarray:
    """H3 strings → uint64, checking each is an H3 cell of resolution r_max."""
    try:
        ints = np.array([int(c, 16) for c in labels.tolist()], dtype=np.uint64)
    except (TypeError, ValueError):
        raise HexplorerError("The 'cell' column holds a value that is not an H3 cell.") from None
    res = (ints >> _RES_SHIFT) & np.uint64(0xF)
    bad = np.flatnonzero(res != r_max)
    if bad.size:
        raise HexplorerError(
            f"cell={labels[bad[0]]!r} has resolution {int(res[bad[0]])}, not r_max = {r_max}: "
            f"prepare the data at resolution {r_max} for this cover."
        )
    return ints


def adaptive_cover(
    summaries: pd.DataFrame,
    *,
    slot: str,
    epsilon: float,
    target: float,
    mechanism: str = "opt-arrayavg",
    resolutions=(5, 7),
    upper: float = 65.0,
    noise_measure: str = "mean",
) -> Cover:
    """The adaptive cover of one slot's records (see the module docstring for the objective).

    Parameters
    ----------
    summaries : per-(HAT, user) summaries of ``core.data``, prepared at resolution r_max.
    slot : the slot (an absolute window or ``"hNN"``).
    epsilon : ε per released cell.
    target : X, the worst-case error one can live with (the data's unit).
    mechanism : a mechanism with a closed-form worst case (:func:`core.mechanisms.analytic_names`:
        its registry entry's ``worst_case``).
    resolutions : (r_min, r_max) or ``"5-7"``.
    upper, noise_measure : U and the noise measure of the worst case.

    Returns
    -------
    Cover

    Raises
    ------
    HexplorerError
        A bad parameter, an unknown slot, or cells not at resolution r_max.
    """
    r_min, r_max = parse_resolutions(resolutions)
    params = AdaptiveParams(
        epsilon=epsilon, target=target, mechanism=mechanism, r_min=r_min, r_max=r_max,
        upper=upper, noise_measure=noise_measure,
    )  # fmt: skip
    _check_summaries(summaries)
    rows = select_grids(summaries, slot=str(slot))
    return _cover(rows, str(slot), params)


def _cover(rows: pd.DataFrame, slot: str, p: AdaptiveParams) -> Cover:
    base_idx, base_labels = pd.factorize(rows["cell"].astype(str), sort=True)
    user_idx, user_ids = pd.factorize(rows["user_id"].astype(str))
    base_labels = np.asarray(base_labels, dtype=object)
    base = _cells_as_ints(base_labels, p.r_max)  # sorted as strings = sorted as integers
    m = rows["m"].to_numpy(dtype=np.int64)
    # one sort of the pairs by (user, cell): any ancestor's pairs of a user are then contiguous
    order = np.argsort(user_idx.astype(np.int64) * base.size + base_idx)
    pair_cell, pair_user, pair_m = base_idx[order], user_idx[order], m[order]
    user_change = np.concatenate(([True], pair_user[1:] != pair_user[:-1]))
    levels = list(range(p.r_max, p.r_min - 1, -1))
    nodes: dict[int, np.ndarray] = {}  # resolution -> sorted uint64 nodes
    node_of_base: dict[int, np.ndarray] = {}
    records: dict[int, np.ndarray] = {}
    users: dict[int, np.ndarray] = {}
    error: dict[int, np.ndarray] = {}
    for r in levels:
        anc = cell_parents(base, r)
        nodes[r], node_of_base[r] = np.unique(anc, return_inverse=True)
        pair_node = node_of_base[r][pair_cell]
        first = np.flatnonzero(
            user_change | np.concatenate(([True], pair_node[1:] != pair_node[:-1]))
        )
        cc = CellCounts.from_pairs(
            pair_node[first], np.add.reduceat(pair_m, first), n_cells=nodes[r].size,
            upper=p.upper, noise_measure=p.noise_measure,
        )  # fmt: skip
        records[r], users[r] = cc.records, cc.users
        error[r] = cell_worst_cases(cc, p.epsilon, p.mechanism)
    # bottom-up: best (records within, fineness) of each node's subtree and whether it is whole
    ok = {r: error[r] <= p.target for r in levels}
    whole: dict[int, np.ndarray] = {}
    parent_of: dict[int, np.ndarray] = {}
    within = fine = None
    for r in levels:
        w_whole = np.where(ok[r], records[r], 0)
        f_whole = records[r] * r
        if r == p.r_max:
            whole[r] = np.ones(nodes[r].size, dtype=bool)
            within, fine = w_whole, f_whole
            continue
        parent_of[r + 1] = np.searchsorted(nodes[r], cell_parents(nodes[r + 1], r))
        w_split = np.bincount(parent_of[r + 1], weights=within, minlength=nodes[r].size)
        f_split = np.bincount(parent_of[r + 1], weights=fine, minlength=nodes[r].size)
        w_split, f_split = w_split.astype(np.int64), f_split.astype(np.int64)  # exact < 2^53
        whole[r] = (w_whole > w_split) | ((w_whole == w_split) & (f_whole > f_split))
        within = np.where(whole[r], w_whole, w_split)
        fine = np.where(whole[r], f_whole, f_split)
    # top-down: a node is released if its parent's subtree is split and it is whole
    active = np.ones(nodes[p.r_min].size, dtype=bool)
    chosen: dict[int, np.ndarray] = {}
    for r in reversed(levels):
        if r > p.r_min:
            active = (active & ~whole[r - 1])[parent_of[r]]
        chosen[r] = active & whole[r]
    out: dict[str, list[np.ndarray]] = {
        k: [] for k in ("cells", "res", "records", "users", "error")
    }
    assignment = np.full(base.size, -1, dtype=np.int64)
    offset = 0
    for r in reversed(levels):
        idx = np.flatnonzero(chosen[r])
        out["cells"].append(nodes[r][idx])
        out["res"].append(np.full(idx.size, r))
        out["records"].append(records[r][idx])
        out["users"].append(users[r][idx])
        out["error"].append(error[r][idx])
        rank = np.full(nodes[r].size, -1, dtype=np.int64)
        rank[idx] = offset + np.arange(idx.size)
        hit = rank[node_of_base[r]]
        assignment = np.where(hit >= 0, hit, assignment)
        offset += idx.size
    cat = {k: np.concatenate(v) for k, v in out.items()}
    order_k = np.argsort(cat["cells"], kind="stable")
    new_pos = np.empty_like(order_k)
    new_pos[order_k] = np.arange(order_k.size)
    assignment = new_pos[assignment]
    import h3

    labels = np.array([h3.int_to_str(int(c)) for c in cat["cells"][order_k].tolist()], dtype=object)
    fixed = {
        r: (
            np.array([h3.int_to_str(int(c)) for c in nodes[r].tolist()], dtype=object),
            records[r],
            ok[r],
        )
        for r in levels
    }
    # mixed-cell pairs: the (user, released cell) groups, contiguous in the (user, cell) order
    pair_rel = assignment[pair_cell]
    first = np.flatnonzero(user_change | np.concatenate(([True], pair_rel[1:] != pair_rel[:-1])))
    s = rows["s"].to_numpy(dtype=np.float64)[order]
    q = rows["q"].to_numpy(dtype=np.float64)[order]
    pairs = (
        pair_rel[first],
        np.asarray(user_ids, dtype=object)[pair_user[first]],
        np.add.reduceat(pair_m, first),
        np.add.reduceat(s, first),
        np.add.reduceat(q, first),
    )
    return Cover(
        params=p,
        slot=slot,
        cells=labels,
        resolution=cat["res"][order_k].astype(np.int64),
        records=cat["records"][order_k],
        users=cat["users"][order_k],
        worst_case_error=cat["error"][order_k],
        within=cat["error"][order_k] <= p.target,
        base_cells=base_labels,
        assignment=assignment,
        fixed_cells=fixed,
        _pairs=pairs,
    )
