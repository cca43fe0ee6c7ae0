"""The summaries dataset: a folder of Parquet parts, every HAT in exactly one part.

A summaries file (:mod:`core.data.summaries`) is one Parquet file; at 10⁸ records it holds tens
of millions of (HAT, user) rows, more than a release needs at once. The dataset layout cuts it
into parts that can be written and released one at a time:

- ``_hexplorer_summaries.json`` (:data:`SIDECAR`): the JSON body a summaries file keeps in its
  footer (format, settings, column map, report, engine) plus ``"layout": "dataset"``. It is
  written last, after every part is complete, so a folder without it (an interrupted write) is
  refused in one line, never half read;
- Parquet parts ``**/part-*.parquet`` (files and folders whose names start with ``_`` or ``.``
  are ignored, e.g. Spark's ``_SUCCESS`` and ``.crc`` files), each with exactly the summary
  columns, rows sorted by hat then user_id;
- every HAT lies in exactly one part: concatenating the parts and sorting by (hat, user_id)
  gives the rows of the single file of the same input. The writer chooses which HATs go where
  (``hexplorer prepare`` writes ranges of HATs in order, so its parts concatenated in name order
  are already the single file's rows).

This module holds the layout (listing, the sidecar, checking each part as it is read); the
summaries' meaning (types, values, the metadata's fields) stays in :mod:`core.data.summaries`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from core.data.prepare import SUMMARY_COLUMNS
from core.data.schema import summaries_writer
from core.errors import HexplorerError

#: The sidecar that marks a folder as a summaries dataset (written last).
SIDECAR = "_hexplorer_summaries.json"
#: The ``layout`` the sidecar names.
LAYOUT = "dataset"

__all__ = [
    "LAYOUT",
    "SIDECAR",
    "DatasetWriter",
    "check_replaceable",
    "dataset_pieces",
    "looks_like_dataset",
    "part_files",
    "part_name",
    "parts_ascending",
    "read_sidecar",
]


def _hidden(relative: Path) -> bool:
    return any(p.startswith(("_", ".")) for p in relative.parts)


def part_files(folder: str | os.PathLike) -> list[Path]:
    """The part files of a dataset folder, in name order (hidden files and folders skipped).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("part-00001.parquet", "part-00000.parquet", "_tmp/part-9.parquet"):
    ...         (Path(d) / name).parent.mkdir(exist_ok=True)
    ...         _ = (Path(d) / name).write_bytes(b"")
    ...     [p.name for p in part_files(d)]
    ['part-00000.parquet', 'part-00001.parquet']
    """
    root = Path(folder)
    found = [
        p for p in root.rglob("part-*.parquet") if p.is_file() and not _hidden(p.relative_to(root))
    ]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def part_name(index: int) -> str:
    """The file name of part ``index`` as ``hexplorer prepare`` writes it.

    >>> part_name(3)
    'part-00003.parquet'
    """
    return f"part-{index:05d}.parquet"


def looks_like_dataset(folder: Any) -> bool:
    """Whether ``folder`` is a directory holding a sidecar or part files (a dataset, or an
    incomplete one that :func:`read_sidecar` refuses in one line). Never raises."""
    try:
        if not isinstance(folder, str | os.PathLike) or not Path(folder).is_dir():
            return False
        root = Path(folder)
        return (root / SIDECAR).is_file() or bool(part_files(root))
    except OSError:
        return False


def read_sidecar(folder: str | os.PathLike) -> dict[str, Any]:
    """The sidecar's JSON body (not yet checked field by field: :mod:`core.data.summaries`).

    Raises
    ------
    HexplorerError
        One line: no sidecar (an interrupted or foreign write), unreadable or broken JSON, or
        another layout.
    """
    root = Path(folder)
    path = root / SIDECAR
    if not path.is_file():
        raise HexplorerError(
            f"'{root}' is a folder without '{SIDECAR}': not a complete summaries dataset (its "
            "writer did not finish, or it is not one); prepare the raw records again."
        )
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HexplorerError(
            f"'{path}' is not valid JSON ({first}); prepare the raw records again."
        ) from None
    if not isinstance(body, dict) or body.get("layout") != LAYOUT:
        got = body.get("layout") if isinstance(body, dict) else type(body).__name__
        raise HexplorerError(
            f"'{path}' names layout {got!r}, expected {LAYOUT!r}; prepare the raw records again."
        )
    if not part_files(root):
        raise HexplorerError(f"'{root}' holds no part-*.parquet files.")
    return body


def dataset_pieces(
    folder: str | os.PathLike,
    columns: list[str],
    check: Callable[[pl.DataFrame, str], pl.DataFrame],
) -> Iterator[tuple[Path, pl.DataFrame]]:
    """Every part of a dataset in name order, ``columns`` only, each through ``check`` (types
    and values) as it is read.

    Raises :class:`HexplorerError` (one line) for a part without exactly the summary columns,
    a part not sorted by hat, or a HAT found in two parts.
    """
    seen: pl.Series | None = None
    for path in part_files(folder):
        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowException) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HexplorerError(f"Could not read part '{path}' as Parquet: {first}") from None
        if sorted(names) != sorted(SUMMARY_COLUMNS):
            raise HexplorerError(
                f"Part '{path}' has columns {', '.join(names)}; a summaries part has exactly "
                f"{', '.join(SUMMARY_COLUMNS)}."
            )
        wanted = columns if "hat" in columns else ["hat", *columns]
        frame = check(pl.read_parquet(path, columns=wanted), str(path))
        hats = frame.get_column("hat").unique(maintain_order=True)
        if not frame.get_column("hat").is_sorted():
            raise HexplorerError(f"Part '{path}' is not sorted by hat.")
        if seen is not None:
            both = hats.filter(hats.is_in(seen.implode()))
            if both.len():
                raise HexplorerError(
                    f"HAT {both[0]} is in two parts of '{folder}' (again in '{path.name}'): each "
                    "HAT must lie in exactly one part."
                )
            seen = pl.concat([seen, hats])
        else:
            seen = hats
        yield path, frame if "hat" in columns else frame.drop("hat")


def parts_ascending(folder: str | os.PathLike) -> bool:
    """Whether the parts, in name order, hold HATs in ascending order (every HAT of a part
    before every HAT of the next: ``hexplorer prepare`` writes them so), read from each part's
    hat column (its first and last value; a part is sorted by hat)."""
    last: str | None = None
    for path in part_files(folder):
        ends = pl.scan_parquet(path).select(
            pl.col("hat").first().alias("first"), pl.col("hat").last().alias("last")
        )
        first, final = ends.collect().row(0)
        if first is None:
            continue
        if last is not None and not str(first) > last:
            return False
        last = str(final)
    return True


def check_replaceable(folder: str | os.PathLike, *, force: bool) -> None:
    """Refuse, before any work, a dataset target that may not be written: a file, a folder that
    is not empty without ``force``, or one that holds other files than a dataset's (one-line
    :class:`HexplorerError`). Deletes nothing: the new dataset replaces the folder only once it
    is whole (:func:`core.data.staging.staged_folder`)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise HexplorerError(f"'{folder}' exists and is not a folder.")
    if not folder.absolute().parent.is_dir():
        raise HexplorerError(f"Folder '{folder.absolute().parent}' does not exist.")
    old = [p for p in folder.iterdir() if not p.name.startswith(".")] if folder.exists() else []
    if not old:
        return
    if not force:
        raise HexplorerError(f"'{folder}' is not empty; pass --force to replace a dataset in it.")
    stale = [p for p in old if p.name != SIDECAR and not _is_part(p)]
    if stale:
        raise HexplorerError(
            f"'{folder}' holds other files ({stale[0].name}); name an empty folder."
        )


class DatasetWriter:
    """Writes a dataset folder: parts first, the sidecar last (:meth:`finish`).

    The folder must not exist or be empty (to replace a dataset, write a fresh folder with
    :func:`core.data.staging.staged_folder`). Parts are numbered in the order they are written.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        check_replaceable(self.folder, force=False)
        self.folder.mkdir(parents=False, exist_ok=True)
        self.parts = 0

    def write_part(self, tables: Iterator[pa.Table] | list[pa.Table]) -> Path:
        """One part file from ``tables`` (each one row group, :data:`core.data.schema.WRITTEN`),
        in order."""
        path = self.folder / part_name(self.parts)
        with summaries_writer(path) as writer:
            for table in tables:
                writer.write_table(table)
        self.parts += 1
        return path

    def finish(self, body: dict[str, Any]) -> Path:
        """Write the sidecar (``body`` plus ``layout``) atomically: the dataset is complete."""
        if self.parts == 0:
            raise HexplorerError("A summaries dataset needs at least one part.")
        path = self.folder / SIDECAR
        staged = self.folder / f".{SIDECAR}.tmp"
        staged.write_text(json.dumps({**body, "layout": LAYOUT}, sort_keys=True), "utf-8")
        os.replace(staged, path)
        return path


def _is_part(p: Path) -> bool:
    return p.is_file() and p.name.startswith("part-") and p.name.endswith(".parquet")
