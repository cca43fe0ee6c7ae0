"""Every HAT's error at once, for any ε (SPEC sections 3 and 4, for all HATs of a slot, day or file).

Two views of "how far off is each hexagon's release expected to be":

- the **analytic worst case** of a mechanism at its m_UB rule, for the mechanisms SPEC gives one
  for (:data:`core.plan.ANALYTIC_MECHANISMS`): E(m^(ε)) for opt-arrayavg, E(m_UB) at the median
  (arrayavg-best) or m_UB^(O,2) (opt-arrayavg-convex), Baseline's ``c U m* / (N ε)`` and
  opt-bounding's E^OPT(ε) — :func:`error_table` once, then :func:`errors_at` for each ε;
- the **simulated** ``q``-quantile of |error| for any mechanism (seeded):
  :func:`simulated_quantiles`.

Built once, answered per ε without a loop over HATs. :func:`error_table` builds every HAT's
m^(ε) staircase (:func:`core.worstcase.staircase`, exact breakpoints; HATs with the same
multiset of counts share one computation) and packs all of them into one table sorted by HAT and
ε, with offsets: HAT h's steps are rows ``step_starts[h]:step_starts[h + 1]``, each with its
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
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core import worstcase as wc
from core.citywide.gridset import GridSet, _as_gridset
from core.errors import HexplorerError, NotApplicableError
from core.params import check_epsilon, check_noise_measure, check_positive_int, check_upper

__all__ = [
    "ERROR_COLUMNS",
    "ErrorTable",
    "ErrorsAt",
    "error_table",
    "errors_at",
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
class ErrorTable:
    """Every HAT's staircase and the per-HAT numbers the analytic worst cases need.

    Build it with :func:`error_table` (cacheable: plain numpy arrays, picklable); the
    constructor trusts its inputs. H HATs, T staircase steps in all, P (HAT, user) pairs.

    Attributes
    ----------
    upper, noise_measure : U and the noise measure the staircases were built for.
    hats, cells, slots : (H,) labels (``hats`` as ``hexplorer hats`` prints them).
    users, records, m_max : (H,) int64: L, N and m* per HAT.
    step_starts : (H + 1,) int64; HAT h's steps are ``step_starts[h]:step_starts[h + 1]``.
    step_to : (T,) float64, each step's ``epsilon_to`` (inf for a HAT's last step).
    step_m, step_s : (T,) int64, the step's m = m^(ε) and S(m).
    median_m, median_s, convex_m, convex_s : (H,) int64, the fixed rules' m_UB and S(m_UB).
    count_starts : (H + 1,) int64; HAT h's counts are ``count_starts[h]:count_starts[h + 1]``.
    counts_desc : (P,) int64, each HAT's counts, descending.
    top : (P,) int64, running sums of ``counts_desc`` within each HAT (Σ_{j≤k} m_(j)).
    """

    upper: float
    noise_measure: str
    hats: np.ndarray
    cells: np.ndarray
    slots: np.ndarray
    users: np.ndarray
    records: np.ndarray
    m_max: np.ndarray
    step_starts: np.ndarray
    step_to: np.ndarray
    step_m: np.ndarray
    step_s: np.ndarray
    median_m: np.ndarray
    median_s: np.ndarray
    convex_m: np.ndarray
    convex_s: np.ndarray
    count_starts: np.ndarray
    counts_desc: np.ndarray
    top: np.ndarray

    @property
    def n_hats(self) -> int:
        """H, the number of HATs."""
        return int(self.hats.size)

    @property
    def n_steps(self) -> int:
        """T, the number of staircase steps of all HATs."""
        return int(self.step_to.size)

    @property
    def step_from(self) -> np.ndarray:
        """(T,) each step's ``epsilon_from`` (0 for a HAT's first step)."""
        out = np.concatenate(([0.0], self.step_to[:-1]))
        out[self.step_starts[:-1]] = 0.0
        return out

    def index_of(self, hat: str) -> int:
        """The row of HAT ``hat`` ("CELL/SLOT")."""
        hit = np.flatnonzero(self.hats == hat)
        if hit.size == 0:
            raise HexplorerError(f"hat={hat!r} is not one of the table's HATs.")
        return int(hit[0])


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each segment ``starts[h]:starts[h + 1]`` (all non-empty)."""
    return np.add.reduceat(values, starts[:-1])


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
    >>> t = error_table(df, upper=65.0)
    >>> t.step_starts.tolist(), t.step_m.tolist(), t.step_to.tolist()
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
    # median: the ceil(L/2)-th largest count (SPEC section 1)
    median_m = counts[starts[:-1] + (users + 1) // 2 - 1]

    def s_of(m_per_hat: np.ndarray) -> np.ndarray:
        return _segment_sums(np.minimum(counts, np.repeat(m_per_hat, users)), starts)

    median_s = s_of(median_m)
    # Staircases and m_UB^(O,2): one computation per distinct multiset of counts.
    memo: dict[bytes, tuple[list, int]] = {}
    step_lists = []
    convex_m = np.empty(n_hats, dtype=np.int64)
    starts_l = starts.tolist()
    for h in range(n_hats):
        seg = counts[starts_l[h] : starts_l[h + 1]]
        key = seg.tobytes()
        hit = memo.get(key)
        if hit is None:
            hit = (wc.staircase(seg, upper, noise_measure), wc.m_convex(seg))
            memo[key] = hit
        step_lists.append(hit[0])
        convex_m[h] = hit[1]
    convex_s = s_of(convex_m)
    n_steps = np.fromiter((len(s) for s in step_lists), dtype=np.int64, count=n_hats)
    step_to = np.fromiter((st.epsilon_to for steps in step_lists for st in steps), dtype=np.float64)
    step_m = np.fromiter((st.m for steps in step_lists for st in steps), dtype=np.int64)
    step_starts = np.concatenate(([0], np.cumsum(n_steps))).astype(np.int64)
    step_hat = np.repeat(np.arange(n_hats), n_steps)
    # S(m) of each step: Σ_l min(m_l, m) over the HAT's users, by binary search on the HAT's
    # ascending counts and prefix sums (no loop per HAT).
    step_s = _s_at(counts, starts, top, step_hat, step_m)
    return ErrorTable(
        upper=upper,
        noise_measure=noise_measure,
        hats=np.asarray(g.hats, dtype=object),
        cells=np.asarray(g.cells, dtype=object),
        slots=np.asarray(g.slots, dtype=object),
        users=users,
        records=records,
        m_max=m_max,
        step_starts=step_starts,
        step_to=step_to,
        step_m=step_m,
        step_s=step_s,
        median_m=median_m,
        median_s=median_s,
        convex_m=convex_m,
        convex_s=convex_s,
        count_starts=starts,
        counts_desc=counts,
        top=top,
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


def _parts(
    table: ErrorTable, eps: np.ndarray, mechanism: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(m_ub, clipping, noise, total) of every HAT at its own ε ``eps[h]`` (float64 (H,), > 0).

    Operation order follows :mod:`core.worstcase` so that the values agree to the last bits.
    """
    from core.plan import ceil_two_over_epsilon_array, m_rule

    u = table.upper
    c = check_noise_measure(table.noise_measure)
    n = table.records
    if mechanism == "baseline":
        noise = c * u * table.m_max / (n * eps)
        return np.full(n.size, -1, dtype=np.int64), np.zeros(n.size), noise, noise
    if mechanism == "opt-bounding":
        k = ceil_two_over_epsilon_array(eps)
        inside = k <= table.users
        row = table.count_starts[:-1] + np.minimum(k, table.users) - 1
        m_k = np.where(inside, table.counts_desc[row], 0)
        top_k = np.where(inside, table.top[row], n)
        k_in = np.where(inside, k, 0)
        t = u * m_k
        bias = u * (top_k - k_in * m_k) / 2.0
        noise = c * t / eps
        total = (bias + noise) / n
        return np.full(n.size, -1, dtype=np.int64), bias / n, noise / n, total
    rule = m_rule(mechanism)
    if rule == "opt":
        if np.all(eps == eps[0]):
            before = table.step_to < eps[0]
        else:
            before = table.step_to < np.repeat(eps, np.diff(table.step_starts))
        row = table.step_starts[:-1] + _segment_sums(before.astype(np.int64), table.step_starts)
        m, s = table.step_m[row], table.step_s[row]
    elif rule == "median":
        m, s = table.median_m, table.median_s
    elif rule == "convex":
        m, s = table.convex_m, table.convex_s
    else:  # pragma: no cover - check_analytic admits no other rule
        raise HexplorerError(f"{mechanism!r} has no analytic worst case.")
    clipping = u * (1.0 - s / n)
    noise = c * u * m / (eps * s)
    return m, clipping, noise, clipping + noise


def totals(table: ErrorTable, eps: np.ndarray, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """(m_ub, worst case) of every HAT at its own ε ``eps[h]``: the vectorised evaluator that
    :mod:`core.plan`'s city functions use (``eps`` is trusted: float64 (H,), > 0)."""
    m, _, _, total = _parts(table, eps, mechanism)
    return m, total


def errors_at(table: ErrorTable, epsilon: float, mechanism: str = "opt-arrayavg") -> ErrorsAt:
    """Every HAT's analytic worst-case error at ``epsilon`` (no Python loop per HAT).

    Parameters
    ----------
    table : ErrorTable
        From :func:`error_table` (its U and noise measure apply).
    epsilon : float
    mechanism : str
        One of :data:`core.plan.ANALYTIC_MECHANISMS` (default opt-arrayavg, as ``hexplorer
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
    from core.plan import check_analytic

    if not isinstance(table, ErrorTable):
        raise HexplorerError(
            f"The 'table' parameter must be an ErrorTable. Got {type(table).__name__} instead."
        )
    epsilon = check_epsilon(epsilon)
    name = check_analytic(mechanism)
    eps = np.full(table.n_hats, epsilon)
    m, clipping, noise, total = _parts(table, eps, name)
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


# --------------------------------------------------------------------------------------------
# Simulated quantiles, any mechanism


def hat_seed(seed: int, hat: str) -> list[int]:
    """The seed sequence of one HAT's simulation: (seed, CRC-32 of its label).

    A HAT's simulated runs then do not depend on which other HATs are simulated with it.

    >>> hat_seed(7, "872a1008fffffff/2024-03-05T08:00")[0]
    7
    """
    return [int(seed), zlib.crc32(str(hat).encode("utf-8"))]


def simulated_quantiles(
    grids,
    epsilon: float,
    mechanism: str,
    *,
    upper: float,
    n_runs: int,
    seed: int,
    level: float = 0.9,
) -> pd.DataFrame:
    """Every HAT's simulated ``level``-quantile of |error| for any mechanism (SPEC section 3).

    Each HAT runs ``n_runs`` independent releases (:func:`core.mechanisms.run_mechanism`, all of
    the mechanism's randomness redrawn per run, at its default m_UB) with its own generator
    ``np.random.default_rng(hat_seed(seed, hat))``. The runs of one HAT are vectorised; HATs are
    visited one by one (this is the Monte-Carlo path, not the one that runs when ε moves).

    Returns
    -------
    pandas.DataFrame
        hat, cell, slot, users, records, m_ub (nullable), quantile, standard_error (see
        :func:`core.evaluation.abs_error_statistic`), mechanism, epsilon, n_runs, note
        (non-empty when the mechanism cannot run on the HAT: quantile NaN).
    """
    from core.evaluation import abs_error_statistic
    from core.hat import HatData
    from core.mechanisms import get_mechanism, run_mechanism

    g: GridSet = _as_gridset(grids)
    epsilon = check_epsilon(epsilon)
    name = get_mechanism(mechanism).name
    upper = check_upper(upper)
    n_runs = check_positive_int("n_runs", n_runs)
    level = float(level)
    if not 0.0 < level < 1.0:
        raise HexplorerError(f"The 'level' parameter must lie in (0, 1). Got {level!r} instead.")
    rows = []
    for h in range(g.n_grids):
        sl = slice(int(g.starts[h]), int(g.starts[h + 1]))
        label = str(g.hats[h])
        hat = HatData.from_arrays(
            g.m[sl], g.s[sl], g.q[sl], g.user_ids[g.user[sl]], upper=upper, hat=label
        )
        row = {
            "hat": label,
            "cell": str(g.cells[h]),
            "slot": str(g.slots[h]),
            "users": hat.n_users,
            "records": hat.n_records,
            "m_ub": None,
            "quantile": math.nan,
            "standard_error": math.nan,
            "note": "",
        }
        rng = np.random.default_rng(hat_seed(seed, label))
        try:
            d = run_mechanism(name, hat, epsilon, rng=rng, size=n_runs)
        except NotApplicableError as exc:
            row["note"] = f"not applicable: {exc}"
        else:
            q, se = abs_error_statistic(np.abs(d.estimates - hat.true_mean), level)
            row.update(m_ub=d.m_ub, quantile=q, standard_error=se, note=d.note)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["m_ub"] = out["m_ub"].astype("Int64")
    out["mechanism"] = name
    out["epsilon"] = epsilon
    out["n_runs"] = n_runs
    return out[
        [
            "hat", "cell", "slot", "users", "records", "m_ub", "quantile", "standard_error",
            "mechanism", "epsilon", "n_runs", "note",
        ]
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Files


def _json_value(value):
    """A plain JSON value: numpy scalars to Python, NaN/inf/<NA> to None."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def hexagon_geojson(frame: pd.DataFrame) -> dict:
    """A GeoJSON FeatureCollection: one hexagon polygon per row of ``frame`` (column ``cell``, an
    H3 cell), every column as a property.

    Boundaries come from h3's ``cell_to_boundary`` (latitude, longitude pairs), written in
    GeoJSON's longitude, latitude order as a closed ring (RFC 7946).

    >>> import h3
    >>> cell = h3.latlng_to_cell(21.19, 72.83, 7)
    >>> fc = hexagon_geojson(pd.DataFrame({"cell": [cell], "worst_case_error": [1.5]}))
    >>> ring = fc["features"][0]["geometry"]["coordinates"][0]
    >>> len(ring), ring[0] == ring[-1], round(ring[0][0]), fc["features"][0]["properties"]["cell"]
    (7, True, 73, '8742d9d69ffffff')
    """
    import h3

    if "cell" not in frame.columns:
        raise HexplorerError("The table has no 'cell' column to draw hexagons from.")
    features = []
    columns = list(frame.columns)
    for values in frame.itertuples(index=False, name=None):
        props = {col: _json_value(v) for col, v in zip(columns, values, strict=True)}
        cell = str(props["cell"])
        try:
            boundary = h3.cell_to_boundary(cell)
        except (ValueError, TypeError):  # h3 raises H3CellInvalidError (a ValueError)
            raise HexplorerError(f"cell={cell!r} is not an H3 cell.") from None
        ring = [[float(lng), float(lat)] for lat, lng in boundary]
        ring.append(ring[0])
        features.append(
            {
                "type": "Feature",
                "geometry": {"type": "Polygon", "coordinates": [ring]},
                "properties": props,
            }
        )
    return {"type": "FeatureCollection", "features": features}
