"""The demo city's prepared summaries, built once and kept on disk (no st.* calls).

Generating the demo city (about 1.9 M records) and preparing it takes seconds; its per-(HAT,
user) summaries are small (about 54,000 rows at the default settings). The first preparation
with given settings writes them to ``<cache dir>/demo-<key>.parquet`` with the report beside it
(``.json``); later server starts read them back in a fraction of a second, so the first map
appears fast. The key covers the preparation settings and the source code that makes the
demo city and prepares it (and dp-hexplorer's version), so a change of either builds anew.

The cache directory is ``$HEXPLORER_CACHE_DIR`` or ``~/.cache/dp-hexplorer``. Files are written
to a temporary name and renamed into place (two servers never read half a file); an unreadable
or unwritable cache is simply not used. Only the demo city is cached: user data never touches
the disk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

import core.data
from core.data import ColumnMap, Prepared, PrepConfig, PrepReport
from core.version import software_version

ENV_VAR = "HEXPLORER_CACHE_DIR"
MAX_ENTRIES = 16
"""Settings kept at most (about 0.5–1 MB each); the least recently written go first."""
_SOURCES = ("demo.py", "prepare.py", "config.py", "io.py")


def cache_dir() -> Path:
    """Where the demo city's summaries are kept."""
    configured = os.environ.get(ENV_VAR)
    return Path(configured) if configured else Path.home() / ".cache" / "dp-hexplorer"


def _code_digest() -> str:
    digest = hashlib.sha256(software_version().encode())
    folder = Path(core.data.__file__).resolve().parent
    for name in _SOURCES:
        path = folder / name
        digest.update(path.read_bytes() if path.exists() else name.encode())
    return digest.hexdigest()


def cache_key(columns: ColumnMap, config: PrepConfig) -> str:
    """16 hex digits naming the cached files for these settings and this code."""
    parts = [_code_digest(), repr(columns.as_tuple()), repr(dataclasses.asdict(config))]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _read(base: Path, columns: ColumnMap, config: PrepConfig) -> Prepared | None:
    try:
        summaries = pd.read_parquet(base.with_suffix(".parquet"))
        fields = json.loads(base.with_suffix(".json").read_text(encoding="utf-8"))
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
        report = PrepReport(**fields)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return Prepared(summaries=summaries, report=report, config=config, columns=columns)


def _write_atomically(path: Path, write: Callable[[str], object]) -> None:
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(handle)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write(base: Path, prepared: Prepared) -> None:
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        report = json.dumps(dataclasses.asdict(prepared.report), default=str)
        # the report last: a reader finds either both files or no complete pair
        _write_atomically(
            base.with_suffix(".parquet"), lambda p: prepared.summaries.to_parquet(p, index=False)
        )
        _write_atomically(
            base.with_suffix(".json"), lambda p: Path(p).write_text(report, encoding="utf-8")
        )
    except OSError:
        return  # a read-only home: no cache, the demo is built each time
    _trim(base.parent)


def _trim(folder: Path) -> None:
    """Keep the ``MAX_ENTRIES`` most recently written settings."""
    try:
        entries = sorted(folder.glob("demo-*.parquet"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
            old.with_suffix(".json").unlink(missing_ok=True)
    except OSError:
        return


def load_or_build(
    columns: ColumnMap, config: PrepConfig, build: Callable[[], Prepared]
) -> Prepared:
    """The cached preparation of the demo city with these settings, or ``build()`` (kept)."""
    base = cache_dir() / f"demo-{cache_key(columns, config)}"
    cached = _read(base, columns, config)
    if cached is not None:
        return cached
    prepared = build()
    _write(base, prepared)
    return prepared
