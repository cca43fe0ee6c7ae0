"""A summaries file read as runs of one HAT: what ``release --all`` reads from a single file.

A summaries file is sorted by hat, then user_id (:mod:`core.data.summaries`), so its HAT column
is a sequence of runs. Read with pyarrow as dictionary codes (Parquet stores it
dictionary-encoded), the runs are where the codes change: no text per row is made or compared,
and the labels are taken once per run from each row group's dictionary. At 5.8M rows this is
about 0.2 CPU s against 0.45 for the rows' text in polars and a comparison of every row's label
with the previous one.

The rows come in windows of ``rows`` rows, the same windows as
:func:`core.data.summaries.summary_pieces` at the same ``rows`` (``release --all`` releases
piece by piece, and the pieces decide how the table's text columns are chunked, hence its
Parquet bytes). By default a window is one of the file's row groups (:func:`summary_runs`). Values are
checked as :func:`~core.data.summaries.check_values` checks them, with its refusal in one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.data.ahead import made_ahead
from core.errors import HexplorerError

__all__ = ["GROUP_WINDOW_ROWS", "WINDOW_ROWS", "SummaryRuns", "summary_runs"]


@dataclass(frozen=True, eq=False)
class SummaryRuns:
    """Consecutive rows of a summaries file as runs of one HAT each.

    Attributes
    ----------
    labels : list of str
        The HAT of each run, in file order (two adjacent runs have different HATs).
    starts : int64 (R,)
        The first row of each run (``starts[0] == 0``).
    counts, sums : (n,)
        ``m`` (int64) and ``s`` (float64) of every row.
    """

    labels: list[str]
    starts: np.ndarray
    counts: np.ndarray
    sums: np.ndarray

    @property
    def rows(self) -> int:
        return int(self.counts.size)

    def split(self, at: int) -> tuple[SummaryRuns, SummaryRuns]:
        """The rows before ``at`` and from ``at`` on (``0 < at``; a run that straddles ``at``
        is in both)."""
        k = int(np.searchsorted(self.starts, at, side="left"))  # runs that start before `at`
        left = SummaryRuns(self.labels[:k], self.starts[:k], self.counts[:at], self.sums[:at])
        if at >= self.rows:
            return left, _EMPTY
        first = k if k < self.starts.size and self.starts[k] == at else k - 1
        right = SummaryRuns(
            self.labels[first:],
            np.maximum(self.starts[first:] - at, 0),
            self.counts[at:],
            self.sums[at:],
        )
        return left, right


_EMPTY = SummaryRuns([], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def joined(parts: list[SummaryRuns]) -> SummaryRuns:
    """The rows of ``parts`` one after the other (a run that continues across a join is one)."""
    parts = [p for p in parts if p.rows]
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    labels: list[str] = []
    starts = []
    offset = 0
    for part in parts:
        if labels and part.labels[0] == labels[-1]:  # the run goes on
            labels.extend(part.labels[1:])
            starts.append(part.starts[1:] + offset)
        else:
            labels.extend(part.labels)
            starts.append(part.starts + offset)
        offset += part.rows
    return SummaryRuns(
        labels,
        np.concatenate(starts).astype(np.int64, copy=False),
        np.concatenate([p.counts for p in parts]),
        np.concatenate([p.sums for p in parts]),
    )


#: The most rows of a window of :func:`summary_runs` (its default: one row group, up to this).
WINDOW_ROWS = 2_000_000
#: The fewest rows of a row group taken as a window by default: smaller row groups (a file
#: written by another tool) are joined into windows of :data:`WINDOW_ROWS`, as many windows of
#: a few rows each would cost more than their copy.
GROUP_WINDOW_ROWS = 1 << 17


def summary_runs(path: Any, rows: int | None = None) -> Iterator[SummaryRuns] | None:
    """A summaries *file*'s rows as :class:`SummaryRuns`, in windows of ``rows`` rows, values
    checked; None where this reader does not apply (a dataset folder, a file object, columns
    typed other than text, int64 and double): read those with
    :func:`core.data.summaries.summary_pieces`.

    ``rows`` None: as many as the file's largest row group holds, at most :data:`WINDOW_ROWS`
    (the preparation writes row groups of a million rows): a window is then one row group's
    columns as they were read, where a window across two row groups is a copy of both (fresh
    memory, which the kernel zeroes: 0.1 s of a ``release --all`` at 10⁷ records). Row groups
    under :data:`GROUP_WINDOW_ROWS` rows are joined into windows of :data:`WINDOW_ROWS`.

    Raises
    ------
    HexplorerError
        One line, as :func:`core.data.summaries.summary_pieces`: metadata missing or wrong,
        values no preparation gives, empty values.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.data.summaries import read_metadata

    if not isinstance(path, str | os.PathLike) or not Path(path).is_file():
        return None
    body = read_metadata(path)
    handle = pq.ParquetFile(path, read_dictionary=["hat"])
    schema = handle.schema_arrow
    types = {name: schema.field(name).type for name in ("hat", "m", "s")}
    hat = types["hat"]
    if not (
        pa.types.is_dictionary(hat)
        and (pa.types.is_string(hat.value_type) or pa.types.is_large_string(hat.value_type))
        and types["m"] == pa.int64()
        and types["s"] == pa.float64()
    ):
        return None
    if rows is None:
        meta = handle.metadata
        largest = max((meta.row_group(i).num_rows for i in range(meta.num_row_groups)), default=1)
        rows = min(largest, WINDOW_ROWS) if largest >= GROUP_WINDOW_ROWS else WINDOW_ROWS
    return _windows(handle, rows, body["config"].upper, str(path))


def _windows(handle: Any, rows: int, upper: float, target: str) -> Iterator[SummaryRuns]:
    """The file's rows in windows of ``rows`` rows, each checked."""
    held: list[SummaryRuns] = []
    have = 0

    def read(group: int) -> Any:
        return handle.read_row_group(group, columns=["hat", "m", "s"], use_threads=False)

    for table in made_ahead(read, handle.metadata.num_row_groups):  # the next read meanwhile
        for chunk in _chunks(table, target):
            held.append(chunk)
            have += chunk.rows
            while have >= rows:
                window, rest = joined(held).split(rows)
                yield _checked(window, upper, target)
                held, have = [rest], rest.rows
    if have:
        yield _checked(joined(held), upper, target)


def _chunks(table: Any, target: str) -> Iterator[SummaryRuns]:
    """A row group's columns as runs, chunk by chunk (their numbers as numpy views)."""
    hats, counts, sums = (table.column(c) for c in ("hat", "m", "s"))
    for name, column in (("hat", hats), ("m", counts), ("s", sums)):
        if column.null_count:
            raise HexplorerError(
                f"'{target}' has empty values in its '{name}' column, which no preparation "
                "gives; prepare the raw records again with `hexplorer prepare`."
            )
    m = _numbers(counts, np.int64)
    s = _numbers(sums, np.float64)
    start = 0
    for chunk in hats.chunks:
        codes = _numbers_of(chunk.indices)
        n = codes.size
        if n == 0:
            continue
        change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        starts = np.concatenate(([0], change)).astype(np.int64)
        names = chunk.dictionary.to_pylist()
        labels = list(map(names.__getitem__, codes[starts].tolist()))
        yield SummaryRuns(labels, starts, m[start : start + n], s[start : start + n])
        start += n


def _numbers(column: Any, dtype: Any) -> np.ndarray:
    """A numeric chunked column as one numpy array (a view when it has one chunk)."""
    parts = [_numbers_of(chunk, dtype) for chunk in column.chunks]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _numbers_of(array: Any, dtype: Any = None) -> np.ndarray:
    """The values of a null-free primitive Arrow array (of ``dtype``, else signed integers of
    its width: dictionary codes) as a numpy view, without ``to_numpy`` (no pandas)."""
    kind = np.dtype(dtype if dtype is not None else f"int{array.type.bit_width}")
    return np.frombuffer(
        array.buffers()[1], dtype=kind, count=len(array), offset=array.offset * kind.itemsize
    )


def _checked(window: SummaryRuns, upper: float, target: str) -> SummaryRuns:
    """``window`` if its values are ones a preparation gives (:func:`check_values`)."""
    from core.data.summaries import _plainly_valid, check_values

    if not _plainly_valid(window.counts, window.sums, None, upper):
        import polars as pl

        lengths = np.diff(np.append(window.starts, window.rows))
        rows = pl.DataFrame(
            {"hat": np.repeat(np.array(window.labels, dtype=object), lengths)},
            schema={"hat": pl.String},
        ).with_columns(m=window.counts, s=window.sums)
        check_values(rows, upper, target)
    return window
