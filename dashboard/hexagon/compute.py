"""Cached calls into :mod:`core` for the One-hexagon page (:func:`dashboard.common.cache.cached`).

Exact worst-case quantities (counts and U only) and seeded simulations of one HAT. Each wrapper
is a thin call into core; arguments are parameters, so they form the cache key, and the seed of
every stochastic result is part of its key. Data-level caches (the prepared data, the HAT table,
one HAT's :class:`~core.hat.HatData`) are :mod:`dashboard.common.source.compute`.

The results an ε step reads (the headline, the simulations, the error curve, the staircase, the
worst case against ε, the marks) are shared read-only (``resource=True``): a copy per call cost
an unpickling of each, pandas string columns included, on every step. No caller changes them
(the page and its panels read, rename or copy); a simulation's releases are read-only arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core import plan, worstcase
from core.errors import NotApplicableError
from core.evaluation import error_summary, monte_carlo
from core.hat import HatData
from core.mechanisms import (
    MECHANISMS,
    analytic_names,
    default_m_ub,
    default_names,
    rules_in_use,
    run_mechanism,
)
from core.params import log_grid
from core.postprocess import clamp_mean
from dashboard.common.cache import cached
from dashboard.common.source.compute import DataSpec, hat, hats, rng_for

# --- The HATs offered ----------------------------------------------------------------------


@cached(max_entries=64, resource=True)
def hat_options(spec: DataSpec, label: str, limit: int) -> dict[str, dict]:
    """The HAT select box's rows: the ``limit`` busiest HATs and ``label``, each a row of the
    HAT table with its ``rank`` (1 = busiest). Shared and read-only: an ε step reads it without
    copying the HAT table."""
    table = hats(spec)
    offered = table.head(limit)
    if label not in set(offered["hat"]):
        row = table[table["hat"] == label]
        if len(row) == 0:  # a coarse cell of the Map's adaptive cover: its own row, last
            h = hat(spec, label)
            cell, slot = label.split("/", 1)
            row = pd.DataFrame(
                [{"hat": label, "cell": cell, "slot": slot, "users": h.n_users,
                  "records": h.n_records, "m_max": h.m_max, "m_min": h.m_min,
                  "m_median": int(np.sort(h.counts)[::-1][(h.n_users + 1) // 2 - 1])}],
                index=[len(table)],
            )  # fmt: skip
        offered = pd.concat([offered, row])
    return {  # position in the busiest-first table is the rank (to_dict: no Series per row)
        r["hat"]: {**r, "rank": int(i) + 1}
        for i, r in zip(offered.index, offered.to_dict("records"), strict=True)
    }


# --- Worst-case analysis (counts and U only) ------------------------------------------------


@cached(max_entries=256, resource=True)
def marks(spec: DataSpec, label: str, epsilon: float, noise_measure: str) -> dict[str, int]:
    """Each m_UB rule in use (``core.mechanisms.rules_in_use``, registry order) -> its m_UB here;
    m^(ε) for the chosen noise measure."""
    h = hat(spec, label)
    return {r.name: r(h.counts, h.upper, epsilon, noise_measure) for r in rules_in_use()}


@cached(max_entries=256)
def m_opt(spec: DataSpec, label: str, epsilon: float, noise_measure: str) -> int:
    """m^(ε), the smallest minimiser of E(m) (core.worstcase.m_opt)."""
    h = hat(spec, label)
    return int(worstcase.m_opt(h.counts, h.upper, epsilon, noise_measure=noise_measure))


@cached(max_entries=256)
def default_m_ubs(spec: DataSpec, label: str, epsilon: float) -> dict[str, int | None]:
    """``core.mechanisms.default_m_ub`` of every mechanism."""
    h = hat(spec, label)
    return {name: default_m_ub(name, h, epsilon) for name in MECHANISMS}


@cached(max_entries=256, resource=True)
def error_curve(spec: DataSpec, label: str, epsilon: float, noise_measure: str) -> pd.DataFrame:
    """E1, E2 and E for every integer m in [m_*, m*] (core.worstcase.worst_case_error)."""
    h = hat(spec, label)
    m = np.arange(h.m_min, h.m_max + 1)
    parts = worstcase.worst_case_error(h.counts, h.upper, m, epsilon, noise_measure=noise_measure)
    return pd.DataFrame(
        {
            "m": m,
            "clipping": np.asarray(parts.clipping, dtype=float),
            "noise": np.asarray(parts.noise, dtype=float),
            "total": np.asarray(parts.total, dtype=float),
        }
    )


@cached(max_entries=512, resource=True)
def error_at(
    spec: DataSpec, label: str, m_ub: int, epsilon: float, noise_measure: str
) -> dict[str, float]:
    """E1, E2, E at one m_UB and the exact worst-case bias of BestFit's arrays there."""
    h = hat(spec, label)
    parts = worstcase.worst_case_error(
        h.counts, h.upper, m_ub, epsilon, noise_measure=noise_measure
    )
    return {
        "clipping": float(np.asarray(parts.clipping)),
        "noise": float(np.asarray(parts.noise)),
        "total": float(np.asarray(parts.total)),
        "bestfit_bias": float(worstcase.bestfit_bias(h.counts, h.upper, m_ub)),
    }


@cached(max_entries=64, resource=True)
def staircase(spec: DataSpec, label: str, noise_measure: str) -> pd.DataFrame:
    """The whole m^(ε) staircase with exact breakpoints (core.worstcase.staircase)."""
    h = hat(spec, label)
    steps = worstcase.staircase(h.counts, h.upper, noise_measure=noise_measure)
    return pd.DataFrame(
        {
            "epsilon_from": [float(s.epsilon_from) for s in steps],
            "epsilon_to": [float(s.epsilon_to) for s in steps],
            "m": [int(s.m) for s in steps],
        }
    )


WORST_CASE_EPSILONS = log_grid(0.01, 10.0, 61)
WORST_CASE_EPSILONS_WIDE = log_grid(0.01, 100.0, 81)
"""The same 20 points per decade on to ε = 100, when ε or a target's ε is past 10."""


def worst_case_range(*epsilons: float | None) -> float:
    """The end of the worst-case curve's ε range: 10, or 100 when one of ``epsilons`` is past 10
    (a target that needs ε = 23 is then on the curve instead of off the chart)."""
    return 100.0 if any(e is not None and e > 10.0 for e in epsilons) else 10.0


def worst_case_mechanisms() -> tuple[str, ...]:
    """The mechanisms of the worst-case chart: the default ones with a closed-form worst case."""
    return tuple(n for n in default_names() if n in analytic_names())


@cached(max_entries=64, resource=True)
def worst_case_vs_epsilon(
    spec: DataSpec, label: str, noise_measure: str, upto: float = 10.0
) -> pd.DataFrame:
    """Worst-case error against ε of :func:`worst_case_mechanisms` (registry worst cases).

    One row per ε of ``WORST_CASE_EPSILONS`` (``WORST_CASE_EPSILONS_WIDE`` when ``upto`` is
    100): column ``epsilon`` and one column per mechanism (its name), each value
    :func:`core.plan.worst_case`'s total.
    """
    h = hat(spec, label)
    c, u = h.counts, h.upper
    rows = []
    for eps in WORST_CASE_EPSILONS if upto <= 10.0 else WORST_CASE_EPSILONS_WIDE:
        row: dict = {"epsilon": eps}
        for name in worst_case_mechanisms():
            row[name] = plan.worst_case(c, u, eps, name, noise_measure).total
        rows.append(row)
    return pd.DataFrame(rows)


def worst_case_of(h: HatData, mechanism: str, epsilon: float, noise_measure: str) -> float:
    """The worst-case error SPEC gives for ``mechanism`` at its own m_UB rule
    (:func:`core.plan.worst_case`); NaN where SPEC gives none (WrapAround, Levy, the quantile
    mechanisms, AKMV)."""
    if mechanism not in analytic_names():
        return float("nan")
    return plan.worst_case(h.counts, h.upper, epsilon, mechanism, noise_measure).total


def worst_case_at(
    h: HatData, mechanism: str, epsilon: float, m_ub: int, noise_measure: str
) -> float:
    """E(m_UB) = E1 + E2 at a chosen m_UB for the BestFit Array-Averaging mechanisms that have
    a worst case (SPEC section 4); NaN for the others."""
    if mechanism not in analytic_names() or not MECHANISMS[mechanism].uses_m_ub:
        return float("nan")
    total = worstcase.worst_case_error(h.counts, h.upper, m_ub, epsilon, noise_measure).total
    return float(np.asarray(total))


@cached(max_entries=256)
def target_plan(
    spec: DataSpec, label: str, target: float, mechanism: str, noise_measure: str
) -> plan.Plan:
    """:func:`core.plan.epsilon_for_error`: the smallest ε whose worst case is within target."""
    h = hat(spec, label)
    return plan.epsilon_for_error(h.counts, h.upper, target, mechanism, noise_measure)


# --- Simulations (stochastic; the seed is part of every key) -------------------------------


@cached(max_entries=256)
def mc_curve(
    spec: DataSpec,
    label: str,
    mechanism: str,
    m_ub: int | None,
    n_runs: int,
    seed: int,
    epsilons: tuple[float, ...],
) -> pd.DataFrame:
    """Monte-Carlo MAE of one mechanism over ``epsilons`` (core.evaluation.monte_carlo).

    One mechanism per call so that the page can show progress and toggling a mechanism
    reuses the others' cached curves.
    """
    h = hat(spec, label)
    rng = rng_for(seed, "monte_carlo", mechanism)
    return monte_carlo(h, list(epsilons), [mechanism], n_runs=n_runs, rng=rng, m_ub=m_ub)


@dataclass(frozen=True, kw_only=True)
class Simulated:
    """``n_runs`` simulated releases of one mechanism at one ε (raw, as the papers analyse)."""

    mechanism: str
    estimates: np.ndarray | None  # None when the mechanism cannot run here
    m_ub: int | None
    n_arrays: int | None
    noise_scale: float
    note: str


@cached(max_entries=512, resource=True)
def simulated(
    spec: DataSpec,
    label: str,
    mechanism: str,
    epsilon: float,
    m_ub: int | None,
    seed: int,
    n_runs: int,
) -> Simulated:
    """:func:`simulate` on the HAT ``label`` of ``spec`` (cached)."""
    return simulate(hat(spec, label), mechanism, epsilon, m_ub, seed, n_runs)


def simulate(
    h: HatData,
    mechanism: str,
    epsilon: float,
    m_ub: int | None,
    seed: int,
    n_runs: int,
    arrays: dict | None = None,
) -> Simulated:
    """``core.mechanisms.run_mechanism`` with ``rng_for(seed, "distribution", mechanism)``.

    ``m_ub`` None: the mechanism's own m_UB rule. The draws are the raw releases; clamping into
    [0, U] (:func:`core.postprocess.clamp_mean`) is applied by :func:`releases_of`. Uncached:
    the frames document (:mod:`dashboard.hexagon.frames`) runs every stop of the ε slider
    through it without filling :func:`simulated`'s cache, with one ``arrays`` dict for all of
    them (each grouping built once per m_UB, as ``core.evaluation.monte_carlo`` does).
    """
    rng = rng_for(seed, "distribution", mechanism)
    try:
        d = run_mechanism(
            mechanism, h, epsilon, m_ub=m_ub, rng=rng, size=n_runs, _arrays_cache=arrays
        )
    except NotApplicableError as exc:
        return Simulated(
            mechanism=mechanism,
            estimates=None,
            m_ub=None,
            n_arrays=None,
            noise_scale=float("nan"),
            note=f"not applicable: {exc}",
        )
    estimates = d.estimates
    estimates.flags.writeable = False  # shared between sessions: never changed in place
    return Simulated(
        mechanism=mechanism,
        estimates=estimates,
        m_ub=d.m_ub,
        n_arrays=d.n_arrays,
        noise_scale=median_of(d.noise_scale),
        note=d.note,
    )


def median_of(values: np.ndarray) -> float:
    """``float(np.median(values))``, without its partition when every value has the same bits
    (a mechanism's noise scale, one per run and usually one value: the frames document takes
    271 × 5 of them). The median of n copies of x is then (x + x) / 2 = x, exactly, for a
    finite x that does not overflow when doubled; not for ±0 (numpy's median of -0.0s is +0.0).

    >>> median_of(np.full(4, 0.3)), median_of(np.array([3.0, 1.0, 2.0]))
    (0.3, 2.0)
    """
    v = np.asarray(values)
    if v.dtype == np.float64 and v.ndim == 1 and v.size:
        x = float(v[0])
        bits = v.view(np.int64)
        if np.isfinite(x) and 0.0 < abs(x) < 1e300 and bool((bits == bits[0]).all()):
            return x
    return float(np.median(v))


def releases_of(sim: Simulated, upper: float, *, raw: bool) -> np.ndarray | None:
    """The simulated releases as published (clamped into [0, U]) or ``raw``."""
    if sim.estimates is None:
        return None
    return sim.estimates.copy() if raw else clamp_mean(sim.estimates, upper)


HEADLINE_COLUMNS = (
    "mechanism",
    "title",
    "m_ub",
    "typical",
    "bound90",
    "worst_case",
    "share_within",
    "m_ub_yours",
    "typical_yours",
    "worst_case_yours",
    "n_arrays",
    "noise_scale",
    "n_runs",
    "note",
)


@cached(max_entries=256, resource=True)
def headline(
    spec: DataSpec,
    label: str,
    mechanisms: tuple[str, ...],
    epsilon: float,
    m_ub_yours: int,
    noise_measure: str,
    seed: int,
    n_runs: int,
    within: float,
    raw: bool,
) -> pd.DataFrame:
    """Each mechanism's errors at its own m_UB rule, then at the slider's m_UB.

    One row per mechanism with :data:`HEADLINE_COLUMNS`: ``typical`` (median |error|),
    ``bound90`` (90 % of releases within) and ``share_within`` (share within ±``within``) from
    :func:`core.evaluation.error_summary` of :func:`simulated` at the mechanism's own m_UB;
    ``worst_case`` from :func:`worst_case_of` (core.plan.worst_case). The ``*_yours`` columns repeat typical and
    worst case at ``m_ub_yours`` for the mechanisms that keep m_UB records per user (NaN for the
    others, which have no m_UB).
    """
    h = hat(spec, label)
    rows = []
    for name in mechanisms:
        own = simulated(spec, label, name, epsilon, None, seed, n_runs)
        row: dict = {"mechanism": name, "title": MECHANISMS[name].title, "note": own.note}
        values = releases_of(own, h.upper, raw=raw)
        if values is not None:
            s = error_summary(values, h.true_mean, within=within)
            row.update(
                m_ub=own.m_ub,
                typical=s.median,
                bound90=s.q90,
                share_within=s.share_within,
                worst_case=worst_case_of(h, name, epsilon, noise_measure),
                n_arrays=own.n_arrays,
                noise_scale=own.noise_scale,
                n_runs=s.n_runs,
            )
        if MECHANISMS[name].uses_m_ub:
            row.update(
                m_ub_yours=m_ub_yours,
                worst_case_yours=worst_case_at(h, name, epsilon, m_ub_yours, noise_measure),
            )
            yours = simulated(spec, label, name, epsilon, m_ub_yours, seed, n_runs)
            values = releases_of(yours, h.upper, raw=raw)
            if values is not None:
                row["typical_yours"] = error_summary(values, h.true_mean).median
        rows.append(row)
    out = pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))
    for col in ("m_ub", "m_ub_yours", "n_arrays", "n_runs"):
        out[col] = out[col].astype("Int64")
    for col in ("typical", "bound90", "worst_case", "share_within", "typical_yours"):
        out[col] = out[col].astype(np.float64)
    out["worst_case_yours"] = out["worst_case_yours"].astype(np.float64)
    out["noise_scale"] = out["noise_scale"].astype(np.float64)
    out["note"] = out["note"].fillna("").astype(str)
    return out


def releases_table(sims: list[Simulated], upper: float) -> pd.DataFrame:
    """Every simulated release, one row per (mechanism, run): ``mechanism``, ``m_ub``, ``run``,
    ``release`` (clamped into [0, U], as published) and ``raw_release`` (as the papers analyse).

    Mechanisms that cannot run on the HAT are left out.
    """
    parts = []
    for sim in sims:
        if sim.estimates is None:
            continue
        n = sim.estimates.size
        parts.append(
            pd.DataFrame(
                {
                    "mechanism": sim.mechanism,
                    "m_ub": pd.array([sim.m_ub] * n, dtype="Int64"),
                    "run": np.arange(n),
                    "release": clamp_mean(sim.estimates, upper),
                    "raw_release": sim.estimates,
                }
            )
        )
    columns = ["mechanism", "m_ub", "run", "release", "raw_release"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
