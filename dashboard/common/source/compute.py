"""Data-level cached calls into :mod:`core`: sources, preparation, HATs.

A feature's own cached results live in its folder (``dashboard/hexagon/compute.py``,
``dashboard/city/compute.py``) and build on :func:`hat` and :func:`prepared` here. Each wrapper
is a thin call into core through :func:`dashboard.common.cache.cached`; nothing here computes a
formula. Arguments are parameters (a :class:`DataSpec`, a HAT label, ε, m_UB, a seed...), so
they form the cache key (:class:`Source` and :class:`DataSpec` count by their ``key()``); the
seed of every stochastic result is part of its key. Cached values are returned as copies by
Streamlit (pickled); callers still never mutate them.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

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
from core.data.summaries import is_summaries, read_metadata, read_summaries
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import get_mechanism, mechanism_rng
from dashboard.common.cache import cached, keyed
from dashboard.common.source import datadir, democache, limits


@keyed
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


@keyed
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


# --- Data ----------------------------------------------------------------------------------


@cached(max_entries=4)
def _demo_raw() -> pd.DataFrame:
    return load_demo()


@cached(max_entries=8)
def table_columns(source: Source) -> list[str]:
    """Column names of the source's table (for auto-detection). Raises HexplorerError."""
    if source.kind == "demo":  # load_demo's columns (tests/data/test_demo.py): no generation
        return list(DEFAULT_COLUMNS)
    if source.kind == "upload":
        return column_names(_named_bytes(source))
    return column_names(_server_path(source))


def _server_path(source: Source):
    """A "path" source's file, resolved again inside the operator's data directory (never a
    path a visitor typed); refused like a missing file otherwise
    (dashboard.common.source.datadir)."""
    root = datadir.configured_dir()
    if root is None:
        raise datadir.not_found(source.name)
    return datadir.resolve(root, source.name)


def _named_bytes(source: Source) -> io.BytesIO:
    """An upload's bytes as a named file object (core reads the name)."""
    handle = io.BytesIO(source.payload or b"")
    handle.name = source.name
    return handle


def _summaries_handle(source: Source):
    return _named_bytes(source) if source.kind == "upload" else _server_path(source)


@cached(max_entries=8)
def summaries_columns(source: Source) -> tuple[str, str, str, str, str] | None:
    """The column mapping a summaries file (``hexplorer prepare``) was prepared with, or None
    when the source holds raw records (or is refused: preparing it reports why)."""
    try:
        if source.kind == "demo" or not is_summaries(_summaries_handle(source)):
            return None
        return read_metadata(_summaries_handle(source))["columns"].as_tuple()
    except HexplorerError:
        return None


@cached(max_entries=6)
def prepared(spec: DataSpec) -> Prepared:
    """``core.data.prepare`` (demo, kept on disk by :mod:`dashboard.common.source.democache`),
    ``prepare_file`` (upload, path) or a summaries file read as it is. Raises HexplorerError."""
    columns, config = spec.column_map(), spec.config()
    if spec.source.kind == "demo":
        return democache.load_or_build(
            columns, config, lambda: prepare(_demo_raw(), columns, config)
        )
    if summaries_columns(spec.source) is not None:  # `hexplorer prepare` did the work
        result = read_summaries(_summaries_handle(spec.source))
        if result.config != config:
            c = result.config
            raise HexplorerError(
                f"this summaries file was prepared with U = {c.upper:g}, resolution "
                f"{c.resolution}, slot {c.slot}, keep zeros {c.keep_zeros}: choose the same "
                "settings (or prepare the raw records again)."
            )
        return result
    budget = limits.memory_budget_mb() * 2**20  # refused before the file is read whole
    if spec.source.kind == "upload":
        return prepare_file(_named_bytes(spec.source), columns, config, max_bytes=budget)
    return prepare_file(_server_path(spec.source), columns, config, max_bytes=budget)


@cached(max_entries=16)
def report(spec: DataSpec) -> PrepReport:
    """The preparation report (rows read, rejected with reasons and examples, clamped, ...)."""
    return prepared(spec).report


@cached(max_entries=16)
def hats(spec: DataSpec) -> pd.DataFrame:
    """``core.data.hat_table``: one row per HAT, busiest first."""
    return hat_table(prepared(spec).summaries)


@cached(max_entries=16)
def means(spec: DataSpec) -> pd.DataFrame:
    """``core.data.hat_means``: the true mean of every HAT."""
    return hat_means(prepared(spec).summaries)


@cached(max_entries=16)
def cell_density(spec: DataSpec) -> pd.DataFrame:
    """Records per hexagon over all slots (cell, records): the maps' geographic context."""
    table = hats(spec)
    return table.groupby("cell", sort=True, as_index=False)["records"].sum()


@cached(max_entries=64)
def slot_cells(spec: DataSpec, slot: str) -> pd.DataFrame:
    """The hexagons of one slot, busiest first: hat, cell, users, records, m_max, m_median,
    true_mean (from ``hat_table`` and ``hat_means``)."""
    table = hats(spec)
    part = table[table["slot"] == slot].reset_index(drop=True)
    out = part[["hat", "cell", "users", "records", "m_max", "m_median"]]
    true_means = means(spec).set_index("hat")["mean"]
    return out.assign(true_mean=out["hat"].map(true_means).to_numpy(dtype=float))


@cached(max_entries=64)
def hat(spec: DataSpec, label: str) -> HatData:
    """``core.data.hat_data`` for one HAT (raises HexplorerError for an unknown label)."""
    return hat_data(prepared(spec).summaries, label, upper=spec.upper)


# --- Seeds shared by the features that simulate (One hexagon, the report's code) -----------


RNG_STREAMS = {"monte_carlo": 1, "spread": 2, "release": 3, "distribution": 4}


def rng_for(seed: int, purpose: str, mechanism: str | None = None) -> np.random.Generator:
    """The generator of one stochastic result: seeded by (seed, purpose) and the mechanism's name.

    Separate streams keep, e.g., a mechanism's releases independent of which others are chosen;
    keyed by the mechanism's *name* (``core.mechanisms.mechanism_rng``), never its position, so
    registering a new mechanism moves no other mechanism's numbers.
    """
    words = [int(seed), RNG_STREAMS[purpose]]
    if mechanism is None:
        return np.random.default_rng(words)
    return mechanism_rng(words, get_mechanism(mechanism).name)
