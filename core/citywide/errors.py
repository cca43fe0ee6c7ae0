"""Every HAT's error at once, for any ε (SPEC sections 3 and 4, for all HATs of a slot, day or file).

Two views of "how far off is each hexagon's release expected to be":

- the **analytic worst case** of a mechanism at its m_UB rule, for the mechanisms whose registry
  entry carries one (``Mechanism.worst_case``, :func:`core.mechanisms.analytic_names`; each
  entry's ``many`` form is evaluated here): E(m^(ε)) for opt-arrayavg, E(m_UB) at the median
  (arrayavg-best) or m_UB^(O,2) (opt-arrayavg-convex), Baseline's ``c U m* / (N ε)`` and
  opt-bounding's E^OPT(ε) — :func:`error_table` once, then :func:`errors_at` for each ε;
- the **simulated** ``q``-quantile of |error| for any mechanism (seeded):
  :func:`simulated_quantiles` (:mod:`core.citywide.simulated`; GeoJSON files:
  :mod:`core.citywide.geojson`).

Built once, answered per ε without a loop over HATs. :func:`error_table` builds every HAT's
m^(ε) staircase (:func:`core.worstcase.staircase`, exact breakpoints; HATs with the same
multiset of counts share one computation) and packs all of them into one table sorted by HAT and
ε, with offsets (:class:`Staircase`): HAT h's steps are rows ``starts[h]:starts[h + 1]``, each with its
``epsilon_to``, m and S(m). At a new ε, HAT h's step is the number of its steps ending before ε
(``bisect_left`` on the step ends, as :func:`core.worstcase.step_at`): one comparison over the
table and one segmented sum (``np.add.reduceat`` over the offsets), O(steps) in numpy, no Python
loop per HAT. The fixed rules' m_UB and S(m_UB), and for opt-bounding each HAT's counts sorted
descending with their running sums (T_ε = U m_(k) and the bias ``U (Σ_{j≤k} m_(j) − k m_(k))/2``
for k = ⌈2/ε⌉), are precomputed per HAT as well, so every mechanism costs O(HATs + steps) per ε.

The values equal the single-HAT functions of :mod:`core.worstcase` (``m_opt`` and
``worst_case_error``, ``baseline_error``, ``opt_bounding_error``) HAT by HAT, ε exactly on a
staircase breakpoint included (tests/citywide/test_errors.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

# The simulated view and the GeoJSON file live in their own modules; reachable here as before.
from core.citywide.geojson import _json_value as _json_value
from core.citywide.geojson import hexagon_geojson
from core.citywide.gridset import GridSet, _as_gridset
from core.citywide.simulated import hat_seed, simulated_quantiles
from core.errors import HexplorerError
from core.mechanisms import (
    MECHANISMS,
    RULES,
    analytic_form,
    analytic_names,
    get_analytic,
)
from core.params import check_epsilon, check_noise_measure, check_upper

__all__ = [
    "ERROR_COLUMNS",
    "ErrorTable",
    "ErrorsAt",
    "error_table",
    "errors_at",
    "hat_seed",
    "hexagon_geojson",
    "simulated_quantiles",
]

#: Columns of :meth:`ErrorsAt.frame` (one row per HAT), in order.
ERROR_COLUMNS = (
    "hat",
    "cell",
    "slot",
    "users",
    "records",
    "m_ub",
    "worst_case_error",
    "mechanism",
    "epsilon",
)


@dataclass(frozen=True, kw_only=True, eq=False)
class Staircase:
    """Every HAT's steps of an m_UB rule that moves with ε (m^(ε)), packed with offsets.

    HAT h's steps are rows ``starts[h]:starts[h + 1]``; ``to`` is each step's ``epsilon_to``
    (inf for a HAT's last step), ``m`` its m_UB and ``s`` its S(m).
    """

    starts: np.ndarray
    to: np.ndarray
    m: np.ndarray
    s: np.ndarray

    @property
    def start(self) -> np.ndarray:
        """(T,) each step's ``epsilon_from`` (0 for a HAT's first step)."""
        out = np.concatenate(([0.0], self.to[:-1]))
        out[self.starts[:-1]] = 0.0
        return out


@dataclass(frozen=True, kw_only=True, eq=False)
class ErrorTable:
    """Every HAT's counts and the per-HAT numbers the analytic worst cases need.

    Build it with :func:`error_table` (cacheable: plain numpy arrays, picklable); the
    constructor trusts its inputs. H HATs, P (HAT, user) pairs. The registry's worst-case forms
    (:class:`core.mechanisms.forms.WorstCaseForm`) read it by attribute.

    Attributes
    ----------
    upper, noise_measure : U and the noise measure the staircases were built for.
    hats, cells, slots : (H,) labels (``hats`` as ``hexplorer hats`` prints them).
    users, records, m_max : (H,) int64: L, N and m* per HAT.
    count_starts : (H + 1,) int64; HAT h's counts are ``count_starts[h]:count_starts[h + 1]``.
    counts_desc : (P,) int64, each HAT's counts, descending.
    top : (P,) int64, running sums of ``counts_desc`` within each HAT (Σ_{j≤k} m_(j)).
    fixed : dict rule name -> ((H,) m_UB, (H,) S(m_UB)) for the counts-only m_UB rules of the
        analytic mechanisms (median, m^(O,2), ...).
    stairs : dict rule name -> :class:`Staircase` for the rules that move with ε (m^(ε)).
    """

    upper: float
    noise_measure: str
    hats: np.ndarray
    cells: np.ndarray
    slots: np.ndarray
    users: np.ndarray
    records: np.ndarray
    m_max: np.ndarray
    count_starts: np.ndarray
    counts_desc: np.ndarray
    top: np.ndarray
    fixed: dict
    stairs: dict

    @property
    def n_hats(self) -> int:
        """H, the number of HATs."""
        return int(self.hats.size)

    def index_of(self, hat: str) -> int:
        """The row of HAT ``hat`` ("CELL/SLOT")."""
        hit = np.flatnonzero(self.hats == hat)
        if hit.size == 0:
            raise HexplorerError(f"hat={hat!r} is not one of the table's HATs.")
        return int(hit[0])

    def segment_sums(self, values: np.ndarray) -> np.ndarray:
        """One sum per HAT of ``values``, one value per (HAT, user) pair (``counts_desc``'s)."""
        return _segment_sums(values, self.count_starts)

    def rule_m_s(self, rule: str, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each HAT's m_UB under ``rule`` at its own ε ``eps[h]``, and S(m_UB)."""
        if rule in self.fixed:
            return self.fixed[rule]
        st = self._stairs(rule)
        if np.all(eps == eps[0]):
            before = st.to < eps[0]
        else:
            before = st.to < np.repeat(eps, np.diff(st.starts))
        # HAT h's step at ε: the number of its steps ending before ε (as worstcase.step_at)
        row = st.starts[:-1] + _segment_sums(before.astype(np.int64), st.starts)
        return st.m[row], st.s[row]

    def rule_pieces(self, rule: str):
        """(HAT of each piece, lo, hi, m, S(m)): the pieces of ε on which ``rule``'s m_UB is
        fixed, grouped by HAT (one piece (0, inf) per HAT for a counts-only rule)."""
        if rule in self.fixed:
            m, s = self.fixed[rule]
            n = self.n_hats
            return np.arange(n), np.zeros(n), np.full(n, np.inf), m, s
        st = self._stairs(rule)
        hat = np.repeat(np.arange(self.n_hats), np.diff(st.starts))
        return hat, st.start, st.to, st.m, st.s

    def _stairs(self, rule: str) -> Staircase:
        try:
            return self.stairs[rule]
        except KeyError:
            raise HexplorerError(
                f"The table holds no m_UB rule {rule!r}: build it (error_table) after "
                "registering the mechanism that uses it."
            ) from None

    def take(self, idx: np.ndarray) -> ErrorTable:
        """The HATs ``idx`` as a table of their own (offsets rebuilt)."""
        if idx.size == self.n_hats:
            return self

        def rows(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            lengths = np.diff(starts)[idx]
            new_starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
            take = np.repeat(starts[idx] - new_starts[:-1], lengths) + np.arange(new_starts[-1])
            return new_starts, take

        count_starts, pairs = rows(self.count_starts)
        stairs = {}
        for rule, st in self.stairs.items():
            starts, steps = rows(st.starts)
            stairs[rule] = Staircase(starts=starts, to=st.to[steps], m=st.m[steps], s=st.s[steps])
        return replace(
            self,
            hats=self.hats[idx], cells=self.cells[idx], slots=self.slots[idx],
            users=self.users[idx], records=self.records[idx], m_max=self.m_max[idx],
            count_starts=count_starts, counts_desc=self.counts_desc[pairs], top=self.top[pairs],
            fixed={r: (m[idx], s[idx]) for r, (m, s) in self.fixed.items()}, stairs=stairs,
        )  # fmt: skip


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each segment ``starts[h]:starts[h + 1]`` (all non-empty)."""
    return np.add.reduceat(values, starts[:-1])


def _analytic_rules() -> tuple[list, list]:
    """(counts-only rules, staircase rules) the registered analytic mechanisms use."""
    used = {MECHANISMS[name].m_ub_rule for name in analytic_names() if MECHANISMS[name].uses_m_ub}
    rules = [r for name, r in RULES.items() if name in used]
    return [r for r in rules if r.counts_only], [r for r in rules if r.staircase is not None]


def error_table(grids, *, upper: float, noise_measure: str = "mean") -> ErrorTable:
    """Build every HAT's staircase and per-HAT numbers once (see the module docstring).

    Parameters
    ----------
    grids : GridSet or summaries DataFrame
        The HATs (``core.citywide.gridset.grid_set`` chooses a slot, a day or the file).
    upper : float
        U.
    noise_measure : {"mean", "std"}

    Returns
    -------
    ErrorTable

    >>> df = pd.DataFrame({"hat": ["a/s"] * 3 + ["b/s"], "cell": ["a"] * 3 + ["b"],
    ...     "slot": ["s"] * 4, "user_id": ["x", "y", "z", "x"], "m": [3, 2, 1, 4],
    ...     "s": [30.0, 20.0, 10.0, 40.0], "q": [300.0, 200.0, 100.0, 400.0]})
    >>> st = error_table(df, upper=65.0).stairs["opt"]
    >>> st.starts.tolist(), st.m.tolist(), st.to.tolist()
    ([0, 3, 4], [1, 2, 3, 4], [0.2, 0.6, inf, inf])
    """
    g: GridSet = _as_gridset(grids)
    upper = check_upper(upper)
    check_noise_measure(noise_measure)
    starts = g.starts.astype(np.int64)
    counts = g.m.astype(np.int64)  # descending within each grid (GridSet's order)
    n_hats = g.n_grids
    users = np.diff(starts)
    records = _segment_sums(counts, starts)
    # Running sums within each HAT: global cumsum minus the sum before the HAT's first pair.
    csum = np.cumsum(counts)
    before = np.concatenate(([0], csum[starts[1:-1] - 1]))
    top = csum - np.repeat(before, users)
    m_max = counts[starts[:-1]]

    def s_of(m_per_hat: np.ndarray) -> np.ndarray:
        return _segment_sums(np.minimum(counts, np.repeat(m_per_hat, users)), starts)

    fixed_rules, stair_rules = _analytic_rules()
    fixed_m = {r.name: r.many(counts, starts) for r in fixed_rules if r.many is not None}
    slow = [r for r in fixed_rules if r.many is None]
    for r in slow:
        fixed_m[r.name] = np.empty(n_hats, dtype=np.int64)
    # Staircases and the other rules: one computation per distinct multiset of counts.
    memo: dict[bytes, tuple[list, list]] = {}
    step_lists: dict[str, list] = {r.name: [] for r in stair_rules}
    if slow or stair_rules:
        starts_l = starts.tolist()
        for h in range(n_hats):
            seg = counts[starts_l[h] : starts_l[h + 1]]
            key = seg.tobytes()
            hit = memo.get(key)
            if hit is None:
                hit = (
                    [r.staircase(seg, upper, noise_measure) for r in stair_rules],
                    [r(seg, math.nan, math.nan) for r in slow],
                )
                memo[key] = hit
            for r, steps in zip(stair_rules, hit[0], strict=True):
                step_lists[r.name].append(steps)
            for r, m in zip(slow, hit[1], strict=True):
                fixed_m[r.name][h] = m
    fixed = {name: (m, s_of(m)) for name, m in fixed_m.items()}
    stairs = {}
    for name, lists in step_lists.items():
        n_steps = np.fromiter((len(s) for s in lists), dtype=np.int64, count=n_hats)
        step_m = np.fromiter((st.m for steps in lists for st in steps), dtype=np.int64)
        step_starts = np.concatenate(([0], np.cumsum(n_steps))).astype(np.int64)
        step_hat = np.repeat(np.arange(n_hats), n_steps)
        stairs[name] = Staircase(
            starts=step_starts,
            to=np.fromiter((st.epsilon_to for steps in lists for st in steps), dtype=np.float64),
            m=step_m,
            # S(m) of each step: Σ_l min(m_l, m) over the HAT's users, by binary search on the
            # HAT's ascending counts and prefix sums (no loop per HAT).
            s=_s_at(counts, starts, top, step_hat, step_m),
        )
    return ErrorTable(
        upper=upper,
        noise_measure=noise_measure,
        hats=np.asarray(g.hats, dtype=object),
        cells=np.asarray(g.cells, dtype=object),
        slots=np.asarray(g.slots, dtype=object),
        users=users,
        records=records,
        m_max=m_max,
        count_starts=starts,
        counts_desc=counts,
        top=top,
        fixed=fixed,
        stairs=stairs,
    )


def _s_at(
    counts: np.ndarray, starts: np.ndarray, top: np.ndarray, hat: np.ndarray, m: np.ndarray
) -> np.ndarray:
    """S(m) = Σ_l min(m_l, m) of HAT ``hat[i]`` at ``m[i]``, vectorised.

    With the HAT's counts descending, the users with m_l > m are the first j of them (j found by
    a global ``searchsorted`` on the key (HAT, −count), which is sorted), so
    ``S(m) = j m + (N − Σ_{l≤j} m_l)``.
    """
    big = int(counts.max()) + 1
    grid_of_pair = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    key = grid_of_pair * big + (big - 1 - counts)  # ascending within and across HATs
    # users of HAT h with count > m: key < h*big + (big - 1 - m)
    j = np.searchsorted(key, hat * big + (big - 1 - m), side="left") - starts[hat]
    n = top[starts[1:] - 1][hat]
    above = np.where(j > 0, top[starts[hat] + np.maximum(j, 1) - 1], 0)
    return j * m + (n - above)


# --------------------------------------------------------------------------------------------
# At one ε


@dataclass(frozen=True, kw_only=True, eq=False)
class ErrorsAt:
    """Every HAT's analytic worst case at one ε (arrays aligned with the table's HATs).

    Attributes
    ----------
    mechanism, epsilon, noise_measure : the inputs.
    m_ub : (H,) int64, the m_UB used; -1 for mechanisms without arrays (baseline, opt-bounding).
    clipping, noise, total : (H,) float64, the bias part, the noise part and the worst case.
    """

    table: ErrorTable
    mechanism: str
    epsilon: float
    noise_measure: str
    m_ub: np.ndarray
    clipping: np.ndarray
    noise: np.ndarray
    total: np.ndarray

    def frame(self) -> pd.DataFrame:
        """One row per HAT with :data:`ERROR_COLUMNS` (``m_ub`` nullable: <NA> without arrays)."""
        t = self.table
        m_ub = pd.array(np.where(self.m_ub >= 0, self.m_ub, 0), dtype="Int64")
        m_ub[self.m_ub < 0] = pd.NA
        return pd.DataFrame(
            {
                "hat": t.hats.astype(str),
                "cell": t.cells.astype(str),
                "slot": t.slots.astype(str),
                "users": t.users,
                "records": t.records,
                "m_ub": m_ub,
                "worst_case_error": self.total,
                "mechanism": self.mechanism,
                "epsilon": self.epsilon,
            },
            columns=list(ERROR_COLUMNS),
        )


def totals(table: ErrorTable, eps: np.ndarray, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """(m_ub, worst case) of every HAT at its own ε ``eps[h]``: the vectorised evaluator that
    :mod:`core.plan`'s city functions use (``eps`` is trusted: float64 (H,), > 0)."""
    m, _, _, total = analytic_form(mechanism).many(table, eps)
    return m, total


def errors_at(table: ErrorTable, epsilon: float, mechanism: str = "opt-arrayavg") -> ErrorsAt:
    """Every HAT's analytic worst-case error at ``epsilon`` (no Python loop per HAT).

    Parameters
    ----------
    table : ErrorTable
        From :func:`error_table` (its U and noise measure apply).
    epsilon : float
    mechanism : str
        One of :func:`core.mechanisms.analytic_names` (default opt-arrayavg, as ``hexplorer
        worstcase``).

    Returns
    -------
    ErrorsAt

    >>> df = pd.DataFrame({"hat": ["a/s"] * 3, "cell": ["a"] * 3, "slot": ["s"] * 3,
    ...     "user_id": ["x", "y", "z"], "m": [3, 2, 1], "s": [3.0, 2.0, 1.0], "q": [3.0, 2.0, 1.0]})
    >>> e = errors_at(error_table(df, upper=65.0), 1.0)
    >>> e.m_ub.tolist(), e.total.tolist()
    ([3], [32.5])
    """
    if not isinstance(table, ErrorTable):
        raise HexplorerError(
            f"The 'table' parameter must be an ErrorTable. Got {type(table).__name__} instead."
        )
    epsilon = check_epsilon(epsilon)
    name = get_analytic(mechanism).name
    eps = np.full(table.n_hats, epsilon)
    m, clipping, noise, total = analytic_form(name).many(table, eps)
    return ErrorsAt(
        table=table,
        mechanism=name,
        epsilon=epsilon,
        noise_measure=table.noise_measure,
        m_ub=m,
        clipping=clipping,
        noise=noise,
        total=total,
    )
