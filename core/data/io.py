"""Reading raw records: CSV or Parquet, from a path, bytes or a file object.

Every failure a user can cause (missing file, empty file, unreadable content) becomes a one-line
:class:`core.errors.HexplorerError`.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from core.errors import HexplorerError

if TYPE_CHECKING:
    import pandas as pd

_PARQUET_MAGIC = b"PAR1"
_SNIFF_BYTES = 65_536
_SUFFIX_FORMAT = {
    ".csv": "csv",
    ".txt": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".parq": "parquet",
}


_COMPRESSED = (".gz", ".gzip", ".zip", ".bz2", ".xz", ".zst", ".7z", ".tgz")


def _check_not_compressed(name: str | None) -> None:
    """A compressed file (``.csv.gz``) is refused by its name, in one line."""
    if name and str(name).strip().lower().endswith(_COMPRESSED):
        suffix = Path(str(name).strip().lower()).suffix
        raise HexplorerError(
            f"'{Path(str(name)).name}' is compressed ({suffix}): decompress it first and give "
            "the CSV or Parquet file."
        )


def check_headers(names: list[str], label: str) -> None:
    """Refuse column names that repeat, ignoring case (``speed,Speed``): which one is meant
    would be a guess. Polars renames exact repeats ``speed_duplicated_0``; those count too.

    >>> check_headers(["user_id", "speed", "Speed"], "'f.csv'")
    Traceback (most recent call last):
    ...
    core.errors.HexplorerError: The file 'f.csv' repeats column names (ignoring case): 'speed', 'Speed'. Rename them so each column has its own name.
    """
    seen: dict[str, str] = {}
    repeated: list[str] = []
    for name in names:
        base = name.rsplit("_duplicated_", 1)[0] if "_duplicated_" in name else name
        key = base.casefold()
        if key in seen:
            if seen[key] not in repeated:
                repeated.append(seen[key])
            repeated.append(base)
        else:
            seen[key] = base
    if repeated:
        shown = ", ".join(repr(n) for n in repeated[:10])
        raise HexplorerError(
            f"The file {label} repeats column names (ignoring case): {shown}. Rename them so "
            "each column has its own name."
        )


def _format_from(name: str | None) -> str | None:
    if not name:
        return None
    lowered = str(name).strip().lower()
    if lowered in ("csv", "tsv", "parquet"):
        return lowered
    return _SUFFIX_FORMAT.get(Path(lowered).suffix)


def _resolve(source: Any, fmt: str | None) -> tuple[str | bytes, str, str]:
    """Return (path or bytes, format, display name)."""
    name: str | None = None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise HexplorerError(f"File not found: '{path}'.")
        name = str(path)
        if path.stat().st_size == 0:
            raise HexplorerError(f"The file '{name}' is empty.")
        data: str | bytes = name
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    elif isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        head = data[:_SNIFF_BYTES]
    elif hasattr(source, "read"):
        name = getattr(source, "name", None)
        raw = source.read()
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        data = bytes(raw)
        head = data[:_SNIFF_BYTES]
    else:
        raise HexplorerError(
            f"Cannot read data from a {type(source).__name__}; give a path, bytes or a file object."
        )
    label = f"'{name}'" if name else "the uploaded file"
    _check_not_compressed(name)
    if isinstance(data, bytes) and len(data) == 0:
        raise HexplorerError(f"The file {label} is empty.")
    explicit = _format_from(fmt) if fmt is not None else None
    if fmt is not None and explicit is None:
        raise HexplorerError(
            "The 'fmt' parameter must be 'csv', 'parquet' or a file name ending in "
            ".csv or .parquet. "
            f"Got {fmt!r} instead."
        )
    chosen = explicit or _format_from(name) or ("parquet" if head[:4] == _PARQUET_MAGIC else "csv")
    if chosen != "parquet":
        _check_text(head, label)
    return data, chosen, label


def _check_text(head: bytes, label: str) -> None:
    """A CSV must be UTF-8 text: refuse binary content before polars reads it lossily."""
    if head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):  # zip (.xlsx) or OLE2 (.xls)
        raise HexplorerError(
            f"Could not read {label} as CSV: it is a spreadsheet or archive (an Excel file "
            "renamed?), not text. Save it as CSV."
        )
    if b"\x00" in head:
        raise HexplorerError(f"Could not read {label} as CSV: it contains binary data, not text.")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
            raise HexplorerError(
                f"Could not read {label} as CSV: it is not UTF-8 text (byte {exc.start})."
            ) from None


BYTES_PER_ROW = 120
"""Memory a prepared row needs beyond its text (measured: 2·10^6 rows of the bench's records
peaked at 233 B/row over the CSV bytes and 183 B/row over the Parquet bytes)."""


def estimate_memory(data: str | bytes, chosen: str, columns: list[str] | None = None) -> int:
    """Bytes of memory that reading and preparing a file would peak at, estimated without
    reading it whole: ``rows · BYTES_PER_ROW + 2 · text bytes``.

    For Parquet, rows and the uncompressed size of the wanted columns come from the footer
    (a file of a few MB can hold 10^9 rows of one repeated value). For CSV, the text bytes are
    the file size and rows are estimated from the mean line length of three 64 kB samples,
    at the head, the middle and the tail (a file whose first lines are long is not
    under-estimated).
    """
    if chosen == "parquet":
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(io.BytesIO(data) if isinstance(data, bytes) else data).metadata
        wanted = set(columns) if columns is not None else None
        text = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if wanted is None or chunk.path_in_schema.split(".")[0] in wanted:
                    text += int(chunk.total_uncompressed_size)
        return int(meta.num_rows) * BYTES_PER_ROW + 2 * text
    size = len(data) if isinstance(data, bytes) else os.path.getsize(data)
    starts = sorted({0, max(size // 2 - _SNIFF_BYTES // 2, 0), max(size - _SNIFF_BYTES, 0)})
    if isinstance(data, bytes):
        samples = [data[a : a + _SNIFF_BYTES] for a in starts]
    else:
        with open(data, "rb") as file:
            samples = []
            for a in starts:
                file.seek(a)
                samples.append(file.read(_SNIFF_BYTES))
    read = sum(len(x) for x in samples)
    lines = max(sum(x.count(b"\n") for x in samples), 1)
    rows = size * lines // max(read, 1)
    return rows * BYTES_PER_ROW + 2 * size


def _check_budget(
    data: str | bytes, chosen: str, columns: list[str] | None, max_bytes: int, label: str
) -> None:
    try:
        need = estimate_memory(data, chosen, columns)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # unreadable footer: the reader below reports it
        return
    if need > max_bytes:
        raise HexplorerError(
            f"The file {label} would need about {_megabytes(need)} of memory once read; this app "
            f"reads files up to {_megabytes(max_bytes)}. Use fewer rows (or ask the operator to "
            "raise the memory budget)."
        )


def _megabytes(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{max(n / 2**20, 0.1):.0f} MB"


def read_polars(
    source: Any,
    fmt: str | None = None,
    columns: list[str] | None = None,
    *,
    max_bytes: int | None = None,
) -> pl.DataFrame:
    """Read CSV or Parquet into a polars DataFrame (the fast path used by ``prepare_file``).

    Parameters
    ----------
    source : path, bytes or file object
    fmt : {"csv", "tsv", "parquet"} or a file name, optional
        Taken from the suffix, or sniffed (Parquet files start with ``PAR1``) when omitted.
    columns : list of str, optional
        Read only these columns; a missing one raises a :class:`HexplorerError` listing the
        file's columns.
    max_bytes : int, optional
        Memory budget: a file whose :func:`estimate_memory` exceeds it is refused before it is
        parsed.

    Raises
    ------
    HexplorerError
        Missing or empty file, unreadable content, a missing column, no data rows, a file over
        the memory budget.
    """
    data, chosen, label = _resolve(source, fmt)
    if max_bytes is not None:
        _check_budget(data, chosen, columns, max_bytes, label)
    handle = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        if chosen == "parquet":
            available = list(pl.read_parquet_schema(handle).keys())
            if isinstance(handle, io.BytesIO):
                handle.seek(0)
            check_headers(available, label)
            _check_columns(columns, available)
            frame = pl.read_parquet(handle, columns=columns)
        else:
            separator = "\t" if chosen == "tsv" else ","
            frame = _read_csv(handle, separator, columns, label)
    except (HexplorerError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # polars/pyarrow raise many types (even Rust panics) on bad files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HexplorerError(f"Could not read {label} as {chosen.upper()}: {first}") from None
    if frame.width == 0:
        raise HexplorerError(f"The file {label} has no columns.")
    if frame.height == 0:
        raise HexplorerError(f"The file {label} has no data rows.")
    return frame


def _read_csv(handle: Any, separator: str, columns: list[str] | None, label: str) -> pl.DataFrame:
    def read(**kwargs: Any) -> pl.DataFrame:
        if isinstance(handle, io.BytesIO):
            handle.seek(0)
        return pl.read_csv(handle, separator=separator, **kwargs)

    header = read(n_rows=0)
    _check_delimiter(header.columns, separator, label)
    check_headers(header.columns, label)
    _check_columns(columns, header.columns)
    try:
        return read(columns=columns, infer_schema_length=10_000)
    except pl.exceptions.ComputeError:
        # A column whose type changes late (e.g. text in a number column): read it whole as text.
        return read(columns=columns, infer_schema_length=None)


def _check_delimiter(names: list[str], separator: str, label: str) -> None:
    """A header read as one column that holds another delimiter: say so (not 'column missing')."""
    if len(names) != 1:
        return
    for other in (";", "\t", "|"):
        if other != separator and other in names[0]:
            shown = {"\t": "tabs"}.get(other, f"'{other}'")
            raise HexplorerError(
                f"The header of {label} is one column {names[0][:80]!r}: it seems to be separated by "
                f"{shown}, not {'tabs' if separator == chr(9) else 'commas'}. Save it as CSV "
                "with commas (or name it .tsv for tabs)."
            )


def _check_columns(wanted: list[str] | None, available: list[str]) -> None:
    if wanted is None:
        return
    for name in wanted:
        if name not in available:
            raise HexplorerError(missing_column_message(name, available))


def missing_column_message(name: str, available: list[str]) -> str:
    """'Column 'speed' not found; the file has columns: a, b, c'."""
    shown = ", ".join(str(c) for c in available[:30]) + (", ..." if len(available) > 30 else "")
    return f"Column '{name}' not found; the file has columns: {shown or '(none)'}"


def column_names(source: Any, fmt: str | None = None) -> list[str]:
    r"""A file's column names without reading its rows (Parquet schema or CSV header).

    Same ``source`` and ``fmt`` as :func:`read_table`; raises :class:`HexplorerError` likewise.

    >>> column_names(b"user_id,lat,lon,timestamp,speed\n")
    ['user_id', 'lat', 'lon', 'timestamp', 'speed']
    """
    data, chosen, label = _resolve(source, fmt)
    handle = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        if chosen == "parquet":
            names = [str(c) for c in pl.read_parquet_schema(handle)]
        else:
            separator = "\t" if chosen == "tsv" else ","
            names = [str(c) for c in pl.read_csv(handle, separator=separator, n_rows=0).columns]
            _check_delimiter(names, separator, label)
        check_headers(names, label)
        return names
    except (HexplorerError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # polars/pyarrow raise many types on a corrupt file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HexplorerError(f"Could not read {label} as {chosen.upper()}: {first}") from None


def read_table(source: Any, fmt: str | None = None) -> pd.DataFrame:
    """Read raw records from CSV or Parquet into a pandas DataFrame.

    Parameters
    ----------
    source : str, os.PathLike, bytes or file object
        A path, the bytes of an uploaded file, or an open binary file.
    fmt : str, optional
        ``"csv"``, ``"tsv"``, ``"parquet"``, or a file name whose suffix decides (useful for
        uploaded bytes: ``read_table(data, fmt=upload.name)``). Otherwise taken from the path's
        suffix, or sniffed from the content.

    Returns
    -------
    pandas.DataFrame
        All columns of the file (a column mixing text and numbers is read as text).

    Raises
    ------
    HexplorerError
        If the file is missing, empty, has no data rows, or cannot be parsed.

    >>> read_table(b"user_id,lat,lon,timestamp,speed\\nu1,21.2,72.8,2024-03-05 08:10,30\\n").shape
    (1, 5)
    """
    frame = read_polars(source, fmt)
    try:
        return frame.to_pandas()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # e.g. a Rust panic on odd column names
        raise HexplorerError(
            f"Could not convert the file's table: {str(exc).splitlines()[0]}"
        ) from None
