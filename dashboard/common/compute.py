"""``@st.cache_data`` wrappers around :mod:`core`: the only place the pages get numbers from.

Each wrapper is a thin call into core; nothing here computes a formula. Arguments are
parameters (a :class:`DataSpec`, a HAT label, ε, m_UB, a seed...), so they form the cache key;
the seed of every stochastic result is part of its key. Cached values are returned as copies
by Streamlit (pickled); callers still never mutate them.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import streamlit as st

from core import worstcase
from core.data import (
    ColumnMap,
    Prepared,
    PrepConfig,
    PrepReport,
    column_names,
    hat_data,
    hat_means,
    hat_table,
    load_demo,
    prepare,
    prepare_file,
)
from core.errors import NotApplicableError
from core.evaluation import monte_carlo
from core.hat import HatData
from core.mechanisms import (
    MECHANISMS,
    RULES,
    default_m_ub,
    get_mechanism,
    get_rule,
    mechanism_rng,
    release,
    rules_in_use,
)
from dashboard.common import datadir, limits


@dataclass(frozen=True, kw_only=True, eq=False)
class Source:
    """Where the raw records come from: the demo city, an uploaded file or a server path.

    ``digest`` identifies the content (sha256 of an upload; path, size and mtime of a server
    file); ``payload`` holds an upload's bytes and is never hashed.
    """

    kind: str  # "demo" | "upload" | "path"
    name: str
    digest: str
    payload: bytes | None = field(default=None, repr=False)

    def key(self) -> str:
        """The cache key of the source: its content (and an upload's suffix, which can decide
        how the content is read: the same bytes as .csv and .tsv are different tables)."""
        if self.kind == "upload":
            return f"{self.kind}|{self.digest}|{os.path.splitext(self.name)[1].lower()}"
        return f"{self.kind}|{self.digest}"

    @classmethod
    def demo(cls) -> Source:
        return cls(kind="demo", name="demo city", digest="demo")

    @classmethod
    def upload(cls, name: str, payload: bytes) -> Source:
        return cls(
            kind="upload", name=name, digest=hashlib.sha256(payload).hexdigest(), payload=payload
        )


@dataclass(frozen=True, kw_only=True, eq=False)
class DataSpec:
    """A data source plus how to prepare it: everything that determines the HATs."""

    source: Source
    columns: tuple[str, str, str, str, str]  # user, lat, lon, time, value
    upper: float = 65.0
    resolution: int = 7
    slot: str = "1h"
    keep_zeros: bool = False

    def key(self) -> str:
        """The cache key: source identity and every preparation parameter."""
        return "|".join(
            [
                self.source.key(),
                *self.columns,
                repr(float(self.upper)),
                str(self.resolution),
                self.slot,
                str(self.keep_zeros),
            ]
        )

    def column_map(self) -> ColumnMap:
        user, lat, lon, time, value = self.columns
        return ColumnMap(user=user, lat=lat, lon=lon, time=time, value=value)

    def config(self) -> PrepConfig:
        return PrepConfig(
            upper=self.upper, resolution=self.resolution, slot=self.slot, keep_zeros=self.keep_zeros
        )

    def to_state(self) -> dict:
        """Plain parameters for session state."""
        out = asdict(self)
        out["source"] = asdict(self.source)
        return out

    @classmethod
    def from_state(cls, value: dict) -> DataSpec:
        fields = dict(value)
        fields["source"] = Source(**fields["source"])
        fields["columns"] = tuple(fields["columns"])
        return cls(**fields)


DEFAULT_COLUMNS = ColumnMap().as_tuple()
_HASH = {Source: Source.key, DataSpec: DataSpec.key}


def _cache(**kwargs):
    """``st.cache_data`` keyed by content (``Source.key``), bounded by ``max_entries`` and an
    expiry (``limits.CACHE_TTL_S``): visitors share an entry only when their data is identical."""
    kwargs.setdefault("ttl", limits.CACHE_TTL_S)
    return st.cache_data(show_spinner=False, hash_funcs=_HASH, **kwargs)


# --- Data ----------------------------------------------------------------------------------


@_cache(max_entries=4)
def _demo_raw() -> pd.DataFrame:
    return load_demo()


@_cache(max_entries=8)
def table_columns(source: Source) -> list[str]:
    """Column names of the source's table (for auto-detection). Raises HexplorerError."""
    if source.kind == "demo":
        return [str(c) for c in _demo_raw().columns]
    if source.kind == "upload":
        return column_names(_named_bytes(source))
    return column_names(_server_path(source))


def _server_path(source: Source):
    """A "path" source's file, resolved again inside the operator's data directory (never a
    path a visitor typed); refused like a missing file otherwise (dashboard.common.datadir)."""
    root = datadir.configured_dir()
    if root is None:
        raise datadir.not_found(source.name)
    return datadir.resolve(root, source.name)


def _named_bytes(source: Source) -> io.BytesIO:
    """An upload's bytes as a named file object (core reads the name)."""
    handle = io.BytesIO(source.payload or b"")
    handle.name = source.name
    return handle


@_cache(max_entries=6)
def prepared(spec: DataSpec) -> Prepared:
    """``core.data.prepare`` (demo) or ``prepare_file`` (upload, path). Raises HexplorerError."""
    columns, config = spec.column_map(), spec.config()
    if spec.source.kind == "demo":
        return prepare(_demo_raw(), columns, config)
    budget = limits.memory_budget_mb() * 2**20  # refused before the file is read whole
    if spec.source.kind == "upload":
        return prepare_file(_named_bytes(spec.source), columns, config, max_bytes=budget)
    return prepare_file(_server_path(spec.source), columns, config, max_bytes=budget)


@_cache(max_entries=16)
def report(spec: DataSpec) -> PrepReport:
    """The preparation report (rows read, rejected with reasons and examples, clamped, ...)."""
    return prepared(spec).report


@_cache(max_entries=16)
def hats(spec: DataSpec) -> pd.DataFrame:
    """``core.data.hat_table``: one row per HAT, busiest first."""
    return hat_table(prepared(spec).summaries)


@_cache(max_entries=16)
def means(spec: DataSpec) -> pd.DataFrame:
    """``core.data.hat_means``: the true mean of every HAT."""
    return hat_means(prepared(spec).summaries)


@_cache(max_entries=64)
def slot_cells(spec: DataSpec, slot: str) -> pd.DataFrame:
    """The hexagons of one slot, busiest first: hat, cell, users, records, m_max, m_median,
    true_mean (from ``hat_table`` and ``hat_means``)."""
    table = hats(spec)
    part = table[table["slot"] == slot].reset_index(drop=True)
    out = part[["hat", "cell", "users", "records", "m_max", "m_median"]]
    true_means = means(spec).set_index("hat")["mean"]
    return out.assign(true_mean=out["hat"].map(true_means).to_numpy(dtype=float))


@_cache(max_entries=64)
def hat(spec: DataSpec, label: str) -> HatData:
    """``core.data.hat_data`` for one HAT (raises HexplorerError for an unknown label)."""
    return hat_data(prepared(spec).summaries, label, upper=spec.upper)


# --- One HAT: worst-case analysis (counts and U only) ---------------------------------------


@dataclass(frozen=True, kw_only=True)
class Marks:
    """The m_UB of every rule in use (``core.mechanisms.rules_in_use``) at one ε, in rule order.

    ``values`` maps rule name → m_UB; ``marks.opt``, ``marks["median"]`` read one rule (m^(ε) is
    computed with the page's noise measure).
    """

    values: dict[str, int]

    def __getitem__(self, rule: str) -> int:
        return self.values[rule]

    def __getattr__(self, rule: str) -> int:
        try:
            return self.__dict__["values"][rule]
        except KeyError:
            raise AttributeError(rule) from None

    def as_labels(self) -> dict[str, int]:
        """Rule label → m_UB (e.g. ``{"median": 4, "m^(L)": 6, ...}``) for buttons and marks."""
        return {get_rule(name).label: value for name, value in self.values.items()}


def marks(spec: DataSpec, label: str, epsilon: float, noise_measure: str) -> Marks:
    """m_UB of every rule some registered mechanism uses (core.mechanisms.RULES; median and m^(ε)
    always, the page reads them); m^(ε) for the chosen noise measure. The rules are part of the
    cache key, so registering a mechanism with a new rule adds its mark."""
    used = {r.name for r in rules_in_use()} | {"median", "opt"}
    return _marks(spec, label, epsilon, noise_measure, tuple(r for r in RULES if r in used))


@_cache(max_entries=256)
def _marks(
    spec: DataSpec, label: str, epsilon: float, noise_measure: str, rules: tuple[str, ...]
) -> Marks:
    h = hat(spec, label)
    return Marks(values={r: get_rule(r)(h.counts, h.upper, epsilon, noise_measure) for r in rules})


def rule_help(label: str) -> str:
    """One line for an m_UB rule's button: what the rule is and whose default it is."""
    rule = next((r for r in RULES.values() if label in (r.name, r.label)), None)
    if rule is None:
        return f"Set m_UB to {label}."
    users = [m.title for m in MECHANISMS.values() if m.m_ub_rule == rule.name]
    whose = f", the default of {', '.join(users)}" if users else ""
    return f"Set m_UB to {rule.label}: {rule.help}{whose}."


def default_m_ubs(spec: DataSpec, label: str, epsilon: float) -> dict[str, int | None]:
    """``core.mechanisms.default_m_ub`` of every mechanism."""
    return _default_m_ubs(spec, label, epsilon, tuple(MECHANISMS))


@_cache(max_entries=256)
def _default_m_ubs(
    spec: DataSpec, label: str, epsilon: float, names: tuple[str, ...]
) -> dict[str, int | None]:
    h = hat(spec, label)
    return {name: default_m_ub(name, h, epsilon) for name in names}


@_cache(max_entries=256)
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


@_cache(max_entries=512)
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


@_cache(max_entries=64)
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


WORST_CASE_EPSILONS = tuple(float(e) for e in np.geomspace(0.05, 10.0, 61))


@_cache(max_entries=64)
def worst_case_vs_epsilon(spec: DataSpec, label: str, noise_measure: str) -> pd.DataFrame:
    """Worst-case error against ε of Baseline, OPT-Array-Averaging (E at m^(ε)) and opt-bounding.

    One row per ε of ``WORST_CASE_EPSILONS``; each value is one call into core.worstcase.
    """
    h = hat(spec, label)
    c, u = h.counts, h.upper
    rows = []
    for eps in WORST_CASE_EPSILONS:
        m_eps = worstcase.m_opt(c, u, eps, noise_measure=noise_measure)
        rows.append(
            {
                "epsilon": eps,
                "baseline": float(worstcase.baseline_error(c, u, eps, noise_measure=noise_measure)),
                "opt_arrayavg": float(
                    np.asarray(
                        worstcase.worst_case_error(
                            c, u, m_eps, eps, noise_measure=noise_measure
                        ).total
                    )
                ),
                "opt_arrayavg_m": int(m_eps),
                "opt_bounding": float(
                    worstcase.opt_bounding_error(c, u, eps, noise_measure=noise_measure)
                ),
            }
        )
    return pd.DataFrame(rows)


# --- One HAT: simulated releases (stochastic; the seed is part of every key) ----------------


RNG_STREAMS = {"monte_carlo": 1, "spread": 2, "release": 3}


def rng_for(seed: int, purpose: str, mechanism: str | None = None) -> np.random.Generator:
    """The generator of one stochastic result: seeded by (seed, purpose) and the mechanism's name.

    Separate streams keep, e.g., a mechanism's release independent of which others are chosen;
    keyed by the mechanism's *name* (``core.mechanisms.mechanism_rng``), never its position, so
    registering a new mechanism moves no other mechanism's numbers.
    """
    words = [int(seed), RNG_STREAMS[purpose]]
    if mechanism is None:
        return np.random.default_rng(words)
    return mechanism_rng(words, get_mechanism(mechanism).name)


@_cache(max_entries=256)
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


@_cache(max_entries=512)
def releases(
    spec: DataSpec,
    label: str,
    mechanisms: tuple[str, ...],
    epsilon: float,
    m_ub: int | None,
    seed: int,
    n_runs: int,
) -> pd.DataFrame:
    """One simulated release per mechanism (core.mechanisms.release) and the spread of outputs.

    Columns: mechanism, estimate, m_ub, n_arrays, sensitivity, noise_scale, clip_lo, clip_hi,
    mae, std, q05, q95 (the last four from ``monte_carlo`` at this ε with ``n_runs`` runs), note.
    """
    h = hat(spec, label)
    spread = monte_carlo(
        h, [epsilon], list(mechanisms), n_runs=n_runs, rng=rng_for(seed, "spread"), m_ub=m_ub
    )
    rows = []
    for name in mechanisms:
        row: dict = {"mechanism": name}
        try:
            r = release(name, h, epsilon, m_ub=m_ub, rng=rng_for(seed, "release", name))
        except NotApplicableError as exc:
            row.update(estimate=np.nan, note=f"not applicable: {exc}")
        else:
            lo, hi = r.clip_interval if r.clip_interval is not None else (np.nan, np.nan)
            row.update(
                estimate=r.estimate,
                m_ub=r.m_ub,
                n_arrays=r.n_arrays,
                sensitivity=r.sensitivity,
                noise_scale=r.noise_scale,
                clip_lo=lo,
                clip_hi=hi,
                note=r.note,
            )
        rows.append(row)
    out = pd.DataFrame(
        rows,
        columns=[
            "mechanism",
            "estimate",
            "m_ub",
            "n_arrays",
            "sensitivity",
            "noise_scale",
            "clip_lo",
            "clip_hi",
            "note",
        ],
    )
    stats = spread.set_index("mechanism")[["mae", "std", "q05", "q95"]]
    out = out.join(stats, on="mechanism")
    out["note"] = out["note"].fillna("").astype(str)
    return out
