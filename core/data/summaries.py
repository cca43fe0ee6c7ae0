"""The summaries file: per (HAT, user) summaries in Parquet, the hand-off between engines.

SPEC section 1, step 5: every mechanism needs only ``m, s, q`` per (HAT, user), so a year of raw
records becomes a summaries file of a few GB that the workbench (CLI, dashboard) reads instead
of the raw file. ``hexplorer prepare`` writes it (with the polars streaming engine or Spark);
every other subcommand and the dashboard accept it wherever they accept raw data.

Layout: the columns of :data:`core.data.prepare.SUMMARY_COLUMNS` (``hat, cell, slot, user_id``
as text, ``m`` int64, ``s, q`` float64), sorted by hat then user_id, and one key in the Parquet
footer, ``hexplorer.summaries``, holding JSON with the format name, the preparation settings
(:class:`~core.data.config.PrepConfig`, :class:`~core.data.config.ColumnMap`), the data report
(:class:`~core.data.prepare.PrepReport`) and the engine that wrote it. The metadata is what
recognises the file: a Parquet file with the summary columns but without (or with broken)
metadata is refused with one line rather than guessed at.

Every reader here also takes a summaries *dataset*, a folder of part files with the same JSON in
a sidecar (:mod:`core.data.dataset`, written by ``hexplorer prepare --layout dataset``): read
whole (:func:`read_summaries`, :func:`read_summary_frame`, rows in the single file's order) or
part by part (:func:`summary_pieces`, what ``release --all`` releases).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.data.config import ColumnMap, PrepConfig
from core.data.schema import SCHEMA, SUMMARY_COLUMNS, WRITTEN, summaries_writer
from core.data.staging import staged
from core.errors import HexplorerError

if TYPE_CHECKING:  # pandas only where a caller asks for it (read_summaries); polars and the
    # preparation (core.data.prepare, dataset) only where a reader needs them: `release --all`
    # reads a summaries file without them (core.data.runs)
    import pandas as pd
    import polars as pl

    from core.data.prepare import Prepared
    from core.data.tally import PrepReport

#: The Parquet footer key that marks a summaries file.
METADATA_KEY = "hexplorer.summaries"
#: The format written in that key (bumped if the layout changes).
FORMAT = "hexplorer-summaries/1"
__all__ = [
    "FORMAT",
    "METADATA_KEY",
    "SCHEMA",
    "WRITTEN",
    "is_dataset",
    "is_summaries",
    "metadata",
    "read_metadata",
    "read_summaries",
    "read_summary_frame",
    "summaries_writer",
    "summary_pieces",
    "write_summaries",
]


def metadata_body(
    config: PrepConfig, columns: ColumnMap, report: PrepReport, engine: str
) -> dict[str, Any]:
    """The JSON body of the metadata: a file's footer entry, a dataset's sidecar (which adds
    ``"layout": "dataset"``, :class:`core.data.dataset.DatasetWriter`)."""
    return {
        "format": FORMAT,
        "engine": engine,
        "config": asdict(config),
        "columns": asdict(columns),
        "report": asdict(report),
    }


def metadata(
    config: PrepConfig, columns: ColumnMap, report: PrepReport, engine: str
) -> dict[str, str]:
    """The footer entry of a summaries file (``{METADATA_KEY: json}``).

    >>> from core.data import prepare, load_demo
    >>> p = prepare(load_demo().head(50))
    >>> json.loads(metadata(p.config, p.columns, p.report, "polars")[METADATA_KEY])["format"]
    'hexplorer-summaries/1'
    """
    body = metadata_body(config, columns, report, engine)
    return {METADATA_KEY: json.dumps(body, sort_keys=True)}


def write_summaries(prepared: Prepared, path: str | os.PathLike, *, engine: str = "polars") -> Path:
    """Write ``prepared`` (summaries, settings, report) as a summaries file.

    Parameters
    ----------
    prepared : Prepared
        From :func:`core.data.prepare` / :func:`core.data.prepare_file`.
    path : str or PathLike
        The Parquet file to write (overwritten).
    engine : str
        The engine named in the metadata.
    """
    frame = prepared.summaries[SUMMARY_COLUMNS]
    table = pa.Table.from_pandas(frame, schema=SCHEMA, preserve_index=False)
    table = table.replace_schema_metadata(
        metadata(prepared.config, prepared.columns, prepared.report, engine)
    )
    target = Path(path)
    with staged(target) as staged_path:
        pq.write_table(table, staged_path, compression="zstd")
    return target


def _head(source: Any) -> bytes:
    """The first four bytes of a path or a seekable binary file object ('' if unreadable)."""
    try:
        if isinstance(source, str | os.PathLike):
            if not Path(source).is_file():
                return b""
            with open(source, "rb") as handle:
                return handle.read(4)
        if hasattr(source, "read") and hasattr(source, "seek"):
            source.seek(0)
            head = source.read(4)
            source.seek(0)
            return head if isinstance(head, bytes) else b""
    except OSError:
        return b""
    return b""


def is_dataset(source: Any) -> bool:
    """Whether ``source`` is a folder that claims to be a summaries dataset (a sidecar or part
    files; :func:`read_metadata` then reads it or refuses it in one line). Never raises."""
    if not isinstance(source, str | os.PathLike) or not os.path.isdir(source):
        return False  # as looks_like_dataset says, without importing the dataset reader
    from core.data import dataset

    return dataset.looks_like_dataset(source)


def is_summaries(source: Any) -> bool:
    """Whether ``source`` (a path or a seekable binary file object, e.g. an upload) is a Parquet
    file that claims to be a summaries file (or looks like one), or a summaries dataset folder.

    True when the footer has :data:`METADATA_KEY` or the columns are exactly the summary
    columns, or for a folder with a sidecar or part files (:func:`is_dataset`);
    :func:`read_summaries` then either reads it or refuses it with one line. Raw record files
    (CSV, or Parquet with other columns) give False. Never raises.
    """
    if is_dataset(source):
        return True
    if _head(source) != b"PAR1":
        return False
    try:
        schema = pq.read_schema(source)
    except (OSError, pa.ArrowException):
        return False
    finally:
        if hasattr(source, "seek"):
            source.seek(0)
    meta = schema.metadata or {}
    return METADATA_KEY.encode() in meta or sorted(schema.names) == sorted(SUMMARY_COLUMNS)


def _name(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return str(source)
    return str(getattr(source, "name", None) or "the uploaded file")


def read_metadata(source: Any) -> dict[str, Any]:
    """The parsed footer entry of a summaries file (a path or a seekable binary file object),
    or the sidecar of a summaries dataset; :class:`HexplorerError` (one line) if it is missing
    or wrong."""
    target = _name(source)
    if is_dataset(source):
        from core.data import dataset

        body = dataset.read_sidecar(source)
        return _parsed(body, f"{target}/{dataset.SIDECAR}", SUMMARY_COLUMNS)
    try:
        if hasattr(source, "seek"):
            source.seek(0)
        schema = pq.read_schema(source)
    except (OSError, pa.ArrowException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HexplorerError(f"Could not read '{target}' as Parquet: {first}") from None
    raw = (schema.metadata or {}).get(METADATA_KEY.encode())
    if raw is None:
        raise HexplorerError(
            f"'{target}' has summary columns but no '{METADATA_KEY}' metadata: it was not "
            "written by `hexplorer prepare`; prepare the raw records again."
        )
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise HexplorerError(
            f"'{target}' has broken '{METADATA_KEY}' metadata ({exc}); prepare the raw records "
            "again with `hexplorer prepare`."
        ) from None
    return _parsed(body, target, schema.names)


def _parsed(body: Any, target: str, names: list[str]) -> dict[str, Any]:
    """The metadata's JSON body with its settings and report as objects; one line if wrong."""
    try:
        if not isinstance(body, dict):
            raise ValueError(f"a JSON {type(body).__name__}, expected an object")
        if body.get("format") != FORMAT:
            raise ValueError(f"format {body.get('format')!r}, expected {FORMAT!r}")
        missing = [c for c in SUMMARY_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"missing columns {', '.join(missing)}")
        from core.data.tally import PrepReport

        body["config"] = PrepConfig(**body["config"])
        body["columns"] = ColumnMap(**body["columns"])
        rep = dict(body["report"])
        rep["rejected_examples"] = tuple(rep["rejected_examples"])
        rep["notes"] = tuple(rep.get("notes", ()))
        body["report"] = PrepReport(**rep)
    except HexplorerError as exc:
        raise HexplorerError(f"'{target}' has broken '{METADATA_KEY}' metadata: {exc}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HexplorerError(
            f"'{target}' has broken '{METADATA_KEY}' metadata ({exc}); prepare the raw records "
            "again with `hexplorer prepare`."
        ) from None
    return body


def read_summaries(path: Any) -> Prepared:
    """Read a summaries file back as :class:`~core.data.prepare.Prepared` (no preparation).

    Raises
    ------
    HexplorerError
        One line if the file is not a summaries file written by ``hexplorer prepare``
        (metadata missing or wrong, columns missing, values no preparation gives:
        :func:`check_values`).
    """
    from core.data.prepare import Prepared

    body = read_metadata(path)
    if is_dataset(path):
        return Prepared(
            summaries=read_summary_frame(path).to_pandas(),
            report=body["report"],
            config=body["config"],
            columns=body["columns"],
        )
    if hasattr(path, "seek"):
        path.seek(0)
    table = pq.read_table(path, columns=SUMMARY_COLUMNS)
    try:
        table = table.cast(pa.schema([SCHEMA.field(c) for c in SUMMARY_COLUMNS]))
    except (pa.ArrowException, ValueError) as exc:
        raise HexplorerError(
            f"'{_name(path)}' has summary columns of the wrong type: {exc}"
        ) from None
    summaries: pd.DataFrame = table.to_pandas()
    check_values(summaries, body["config"].upper, _name(path))
    return Prepared(
        summaries=summaries, report=body["report"], config=body["config"], columns=body["columns"]
    )


def check_values(summaries: pd.DataFrame | pl.DataFrame, upper: float, target: str) -> None:
    """Refuse, in one line, summaries that no preparation gives (SPEC section 1: values are
    clamped into [0, U], so each user has ``m >= 1``, ``0 <= s <= m·U`` and ``q >= 0``).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"hat": ["c/h"] * 2, "user_id": ["a", "b"], "m": [2, -5],
    ...                      "s": [10.0, 1.0], "q": [50.0, 1.0]})
    >>> check_values(rows.head(1), 65.0, "f")
    >>> check_values(rows, 65.0, "f")
    Traceback (most recent call last):
    ...
    core.errors.HexplorerError: 'f' holds summaries no preparation gives: 1 row with m < 1 (e.g. m = -5 for user 'b' in c/h); prepare the raw records again with `hexplorer prepare`.
    """
    m = np.asarray(summaries["m"].to_numpy())
    s = np.asarray(summaries["s"].to_numpy(), dtype=float)
    q = np.asarray(summaries["q"].to_numpy(), dtype=float) if "q" in summaries.columns else None
    if _plainly_valid(m, s, q, upper):
        return
    slack = 1e-9 * upper * np.maximum(m, 1)  # the fixed-point sums' rounding
    checks = [
        ("m < 1", m < 1, "m"),
        (f"s outside [0, m·U] (U = {upper:g})", ~((s >= -slack) & (s <= m * upper + slack)), "s"),
    ]
    if q is not None:  # a reader of m and s only (release --all) checks those
        checks.append(("q < 0 or not a number", ~(q >= 0), "q"))
    for label, bad, column in checks:
        count = int(np.count_nonzero(bad))
        if count:
            i = int(np.flatnonzero(bad)[0])
            row = summaries.iloc[i] if hasattr(summaries, "iloc") else summaries.row(i, named=True)
            who = f"user {str(row['user_id'])!r} in " if "user_id" in summaries.columns else ""
            raise HexplorerError(
                f"'{target}' holds summaries no preparation gives: {count:,} "
                f"row{'s' if count > 1 else ''} with {label} (e.g. {column} = {row[column]:g} "
                f"for {who}{row['hat']}); prepare the raw records again with `hexplorer prepare`."
            )


def _plainly_valid(m: np.ndarray, s: np.ndarray, q: np.ndarray | None, upper: float) -> bool:
    """A screen in a few passes (no row flags) that implies :func:`check_values`' checks:
    ``m >= 1``, ``0 <= s <= m·U`` and ``q >= 0`` everywhere (a NaN fails it). False says
    only "look row by row"."""
    if m.dtype.kind not in "iu":
        return False
    if m.size == 0:
        return True
    if not (m.min() >= 1 and s.min() >= 0.0 and (q is None or q.min() >= 0.0)):
        return False
    step = 1 << 18  # in blocks: a few MB of scratch, not one array as long as the summaries
    for lo in range(0, m.size, step):
        over = np.multiply(m[lo : lo + step], upper)  # as check_values computes m·U
        np.subtract(s[lo : lo + step], over, out=over)
        if not over.max() <= 0.0:
            return False
    return True


def read_summary_frame(path: Any, columns: list[str] | None = None) -> pl.DataFrame:
    """Columns of a summaries file as a polars DataFrame, in the file's order (no pandas, no
    copy of the text columns into Python objects): what ``release --all`` reads. A dataset's
    parts are read one after the other and their rows put in the single file's order (sorted
    by hat, then user_id).

    Raises
    ------
    HexplorerError
        One line, as :func:`read_summaries`.
    """
    import polars as pl

    body = read_metadata(path)
    if is_dataset(path):
        wanted = SUMMARY_COLUMNS if columns is None else columns
        parts = [f for _, f in _dataset_parts(path, ["hat", *wanted], body)]
        whole = pl.concat(parts, how="vertical_relaxed", rechunk=False)
        del parts
        if not whole.get_column("hat").is_sorted():  # HATs of parts interleave: sort them
            # stable: without user_id a HAT's rows keep its part's (hat, user_id) order
            whole = whole.sort(
                ["hat", "user_id"] if "user_id" in whole.columns else ["hat"], maintain_order=True
            )
        return whole.select(wanted)
    if hasattr(path, "seek"):
        path.seek(0)
    wanted = SUMMARY_COLUMNS if columns is None else columns
    return _typed_checked(pl.read_parquet(path, columns=wanted), path, body)


def summary_pieces(
    path: Any, columns: list[str] | None = None, rows: int = 2_000_000
) -> Iterator[pl.DataFrame]:
    """Columns of a summaries file in pieces of about ``rows`` rows, in the file's order (sorted
    by HAT): what ``release --all`` releases piece by piece. Types as
    :func:`read_summary_frame`.

    A dataset gives one piece per part file, whatever ``rows``: each holds whole HATs (no HAT
    is in two parts, checked as they are read), sorted by hat, but the parts' HATs may
    interleave (:func:`is_dataset` tells a caller which it has)."""
    import polars as pl

    body = read_metadata(path)
    wanted = SUMMARY_COLUMNS if columns is None else columns
    if is_dataset(path):
        for _, part in _dataset_parts(path, wanted, body):
            yield part
        return
    if isinstance(path, str | os.PathLike):  # polars reads the text without Arrow copies
        scan = pl.scan_parquet(Path(path)).select(wanted)
        total = pq.read_metadata(path).num_rows
        for start in range(0, total, rows):
            yield _typed_checked(scan.slice(start, rows).collect(), path, body)
        return
    for batch in pq.ParquetFile(path).iter_batches(batch_size=rows, columns=wanted):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        yield _typed_checked(frame, path, body)


def _dataset_parts(
    path: Any, columns: list[str], body: dict[str, Any]
) -> Iterator[tuple[Path, pl.DataFrame]]:
    """A dataset's parts in name order, each typed and checked (:func:`_typed_checked`)."""
    from core.data import dataset

    wanted = list(dict.fromkeys(columns))
    return dataset.dataset_pieces(
        path, wanted, lambda frame, name: _typed_checked(frame, name, body)
    )


def _typed_checked(frame: pl.DataFrame, path: Any, body: dict[str, Any]) -> pl.DataFrame:
    """``frame`` with the summary columns' types (``m`` Int64, ``s``/``q`` Float64, the rest
    text), its values checked (:func:`check_values`); one-line :class:`HexplorerError`."""
    import polars as pl

    types = {"m": pl.Int64, "s": pl.Float64, "q": pl.Float64}
    try:
        frame = frame.cast({c: types.get(c, pl.String) for c in frame.columns}, strict=True)
    except pl.exceptions.PolarsError as exc:
        first = str(exc).strip().splitlines()[0]
        raise HexplorerError(
            f"'{_name(path)}' has summary columns of the wrong type: {first}"
        ) from None
    if {"hat", "m", "s"} <= set(frame.columns):
        check_values(frame, body["config"].upper, _name(path))
    return frame
