"""Out-of-core preparation in bounded memory: raw records -> summaries, through buckets on disk.

:mod:`core.data.stream` keeps every (HAT, user) sum in memory until the end: at 10⁸ records of
a city fleet that is 21M rows and several GB. Here the summaries are never whole in memory:

1. **Spill.** The input is read in batches (:func:`core.data.stream.batches`), each cleaned
   row by row (:func:`core.data.prepare.clean_records`) and its kept records (cell, slot, user,
   value) appended to one of ``B`` bucket files by a hash of the HAT (cell, slot), so every HAT
   lands in one bucket. The report's counts are added up as in memory (:class:`Tally`); the row
   hashes of the repeated-row count go to 16 files by their top bits (:class:`SpilledHashes`);
   the largest kept value (the fixed-point scale) is tracked.
2. **Aggregate.** Bucket by bucket: the exact fixed-point sums per (cell, slot, user) at the
   scale of the whole input (:mod:`core.data.aggregation`), sorted as the summaries are
   (:func:`core.data.stream.sorted_aggregate`) and written back to disk; what the report needs
   (users, HATs, cells, slots) is collected on the way.
3. **Write.** The HATs are cut, in their order, into ranges of about ``part_rows`` summary rows;
   each range is gathered from the sorted buckets (a slice of each), sorted, labelled and
   written: as row groups of one summaries file, or as one part of a summaries dataset
   (:mod:`core.data.dataset`). Either way the rows, their order and the report are those of the
   in-memory engine, bit for bit.

Peak memory: one batch of raw records (pass 1), one bucket (pass 2), one range (pass 3). The
temporary files (about the input's size) live in a hidden folder next to the output and are
removed at the end, also on error.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from core.data.aggregation import aggregate_fixed, fixed_shifts, from_fixed, label_table, labels_for
from core.data.config import ColumnMap, PrepConfig
from core.data.dataset import DatasetWriter, check_replaceable
from core.data.prepare import DEFAULT_COLUMNS, DEFAULT_CONFIG, PrepReport, Tally, clean_records
from core.data.schema import summaries_writer
from core.data.staging import staged, staged_folder
from core.data.stream import (
    DEFAULT_BATCH_ROWS,
    WRITE_ROWS,
    _Clock,
    _Restart,
    batches,
    prepare_to_file,
    sorted_aggregate,
)
from core.data.summaries import metadata, metadata_body
from core.data.tally import distinct_count

#: Raw records per bucket aimed at (pass 2 holds one bucket: about 0.5 GB at this size).
BUCKET_RECORDS = 4_000_000
#: Summary rows per range (one part of a dataset) aimed at.
PART_ROWS = 2_000_000
#: The most raw rows a summaries file is prepared from with its sums in memory
#: (:func:`core.data.stream.prepare_to_file`, batches of
#: :data:`core.data.stream.DEFAULT_BATCH_ROWS`); more go through the buckets.
IN_MEMORY_ROWS = 15_000_000
#: Raw rows per batch of the spill pass (pass 1): at 3·10⁷ fleet records 10⁷-row batches
#: cost the same CPU and peak 3.05 GB against 2.23 GB for these.
SPILL_BATCH_ROWS = 5_000_000

__all__ = [
    "BUCKET_RECORDS",
    "PART_ROWS",
    "SpilledHashes",
    "bucket_of",
    "prepare_out_of_core",
    "prepare_summaries",
]

_SPILL = pa.schema(
    [
        ("cell", pa.uint64()),
        ("slot", pa.int64()),
        ("user", pa.large_string()),  # as polars gives it: no copy
        ("value", pa.float64()),
    ]
)
_M1, _M2, _M3 = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xBF58476D1CE4E5B9),
    np.uint64(0x94D049BB133111EB),
)


def bucket_of(cell: np.ndarray, slot: np.ndarray, n: int) -> np.ndarray:
    """The bucket (0..n-1) of each HAT (cell, slot): splitmix64 of ``cell ^ slot·φ``, modulo n.

    >>> bucket_of(np.array([5, 5, 6], np.uint64), np.array([1, 1, 1]), 7).tolist()
    [1, 1, 5]
    """
    with np.errstate(over="ignore"):
        z = cell.astype(np.uint64) ^ (slot.astype(np.int64).view(np.uint64) * _M1)
        z = z + _M1
        z = (z ^ (z >> np.uint64(30))) * _M2
        z = (z ^ (z >> np.uint64(27))) * _M3
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(n)).astype(np.int64)


class SpilledHashes:
    """The repeated-row count of :class:`core.data.prepare.RowHashes` with the hashes on disk:
    each batch's distinct hashes go to 16 files by their top 4 bits, and each file's distinct
    hashes are counted at the end (one sixteenth of them in memory at a time)."""

    _SHIFT = np.uint64(60)

    def __init__(self, folder: Path) -> None:
        self.rows = 0
        self.paths = [folder / f"hashes-{i:02d}.u64" for i in range(16)]
        for path in self.paths:
            path.write_bytes(b"")

    def add(self, hashes: np.ndarray) -> None:
        """Add one batch's row hashes (uint64)."""
        self.rows += int(hashes.size)
        if not hashes.size:
            return
        distinct = np.sort(pl.Series(hashes.astype(np.uint64, copy=False)).unique().to_numpy())
        bounds = np.searchsorted(distinct, np.arange(1, 16, dtype=np.uint64) << self._SHIFT)
        for path, piece in zip(self.paths, np.split(distinct, bounds), strict=True):
            if piece.size:
                with open(path, "ab") as handle:
                    piece.tofile(handle)

    def duplicates(self) -> int:
        """Rows added minus distinct hashes."""
        distinct = 0
        for path in self.paths:
            distinct += distinct_count(np.fromfile(path, dtype=np.uint64))
        return self.rows - distinct


def _estimated_rows(source: str | os.PathLike) -> int:
    """Rows of a Parquet file (its footer), or of a CSV from its size (about 50 bytes a row)."""
    try:
        return int(pq.ParquetFile(source).metadata.num_rows)
    except (OSError, pa.ArrowException):
        try:
            return max(1, Path(source).stat().st_size // 50)
        except OSError:
            return 0  # the reader says what is wrong, in one line


def _spill(
    make_batches: Callable[[], Iterator[pl.DataFrame]],
    columns: ColumnMap,
    config: PrepConfig,
    folder: Path,
    n_buckets: int,
    clock: _Clock,
) -> tuple[Tally, SpilledHashes, float, list[Path]]:
    """Pass 1: clean every batch and append its records to the bucket files."""
    tally = Tally(columns, config)
    hashes = SpilledHashes(folder)
    paths = [folder / f"bucket-{b:04d}.parquet" for b in range(n_buckets)]
    writers: list[pq.ParquetWriter | None] = [None] * n_buckets
    vmax = 0.0
    offset = 0
    try:
        for frame in make_batches():
            clock.tick("read")
            cleaned = clean_records(frame, columns, config, clock, row_offset=offset)
            offset += frame.height
            tally.add(cleaned)
            hashes.add(cleaned.row_hashes)
            records = cleaned.records
            if records.height == 0:
                continue
            vmax = max(vmax, float(records.get_column("value").max()))  # type: ignore[arg-type]
            bucket = bucket_of(
                records.get_column("cell").to_numpy(),
                records.get_column("slot").to_numpy(),
                n_buckets,
            )
            keyed = records.with_columns(pl.Series("_b", bucket)).sort("_b", maintain_order=True)
            bounds = np.searchsorted(keyed.get_column("_b").to_numpy(), np.arange(n_buckets + 1))
            table = keyed.drop("_b").to_arrow()
            del keyed
            if table.schema != _SPILL:
                table = table.cast(_SPILL)
            for b in range(n_buckets):
                lo, hi = int(bounds[b]), int(bounds[b + 1])
                if hi > lo:
                    if writers[b] is None:
                        writers[b] = pq.ParquetWriter(
                            paths[b], _SPILL, compression="zstd", compression_level=1
                        )
                    writers[b].write_table(table.slice(lo, hi - lo))  # type: ignore[union-attr]
            clock.tick("spill")
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
    tally.check()
    return tally, hashes, vmax, [p for p, w in zip(paths, writers, strict=True) if w is not None]


def _aggregate_buckets(
    paths: list[Path], shifts: tuple[int, int], clock: _Clock
) -> tuple[list[Path], list[pl.DataFrame], dict[str, int]]:
    """Pass 2: each bucket's exact sums, sorted by HAT, to disk; per bucket its HATs (cell,
    slot, rows, in order); the report's users, HATs, cells and slots."""
    out: list[Path] = []
    hats: list[pl.DataFrame] = []
    users: pl.Series | None = None
    for path in paths:
        records = pl.scan_parquet(path)
        agg = from_fixed(aggregate_fixed(records, *shifts).collect(), *shifts)
        agg = agg.sort("cell", "slot")  # by HAT: pass 3 slices it (and sorts users there)
        target = path.with_name(path.stem + "-sums.arrow")
        agg.write_ipc(target, compression="uncompressed")  # memory-mapped by pass 3
        out.append(target)
        cell = agg.get_column("cell").to_numpy()
        slot = agg.get_column("slot").to_numpy()
        first = np.flatnonzero(
            np.concatenate(([True], (cell[1:] != cell[:-1]) | (slot[1:] != slot[:-1])))
        )
        hats.append(
            pl.DataFrame(
                {
                    "cell": cell[first],
                    "slot": slot[first],
                    "rows": np.diff(np.append(first, cell.size)).astype(np.int64),
                },
                schema={"cell": pl.UInt64, "slot": pl.Int64, "rows": pl.Int64},
            )
        )
        distinct = agg.get_column("user").unique()
        users = distinct if users is None else pl.concat([users, distinct]).unique()
        path.unlink()
        del agg, records, cell, slot
        clock.tick("aggregate buckets")
    every = pl.concat(hats)
    counts = {
        "users": 0 if users is None else users.len(),
        "hats": every.height,
        "cells": every.get_column("cell").n_unique(),
        "slots": every.get_column("slot").n_unique(),
    }
    return out, hats, counts


def _ranges(sums: list[Path], hats: list[pl.DataFrame], part_rows: int) -> Iterator[pl.DataFrame]:
    """Pass 3: the summaries in order, one range of HATs (about ``part_rows`` rows) at a time."""
    every = pl.concat(
        [h.with_columns(pl.lit(i, dtype=pl.Int64).alias("bucket")) for i, h in enumerate(hats)]
    ).sort("cell", "slot")
    # the rows of each HAT in its bucket's file start where the bucket's earlier HATs end
    starts = [np.concatenate(([0], np.cumsum(h.get_column("rows").to_numpy()))) for h in hats]
    index = [0] * len(hats)  # the next HAT of each bucket
    rows = every.get_column("rows").to_numpy()
    bucket = every.get_column("bucket").to_numpy()
    cum = np.cumsum(rows)
    begin = 0
    while begin < rows.size:
        done = int(cum[begin - 1]) if begin else 0
        end = max(begin + 1, int(np.searchsorted(cum, done + part_rows, side="right")))
        taken = np.bincount(bucket[begin:end], minlength=len(hats))
        pieces = []
        for b in np.flatnonzero(taken).tolist():
            lo = int(starts[b][index[b]])
            hi = int(starts[b][index[b] + int(taken[b])])
            index[b] += int(taken[b])
            pieces.append(pl.scan_ipc(sums[b]).slice(lo, hi - lo).collect())
        part, _ = sorted_aggregate(pl.concat(pieces, rechunk=False))
        del pieces
        yield part
        begin = end


def _labelled(part: pl.DataFrame, config: PrepConfig) -> pa.Table:
    labels = labels_for(part, config)
    return label_table(part, *labels)


def prepare_out_of_core(
    source: str | os.PathLike,
    target: str | os.PathLike,
    columns: ColumnMap = DEFAULT_COLUMNS,
    config: PrepConfig = DEFAULT_CONFIG,
    *,
    layout: str = "file",
    batch_rows: int = SPILL_BATCH_ROWS,
    buckets: int | None = None,
    part_rows: int = PART_ROWS,
    force: bool = False,
    timings: dict[str, float] | None = None,
    engine: str = "polars-streaming",
) -> PrepReport:
    """Prepare a raw CSV/Parquet file into summaries in bounded memory (see the module doc).

    Parameters
    ----------
    source : path
        Raw records (CSV, TSV or Parquet).
    target : path
        The summaries file (``layout="file"``) or the dataset folder (``layout="dataset"``; it
        must not exist, or be empty, or hold a dataset and ``force``).
    batch_rows : int
        Raw rows per batch of pass 1.
    buckets : int, optional
        Bucket files of pass 1 (default: one per :data:`BUCKET_RECORDS` input rows).
    part_rows : int
        Summary rows per range of pass 3 (a dataset's part).

    Returns
    -------
    PrepReport
        Equal to the in-memory engine's; also stored in the metadata.
    """
    from core.errors import HexplorerError

    if layout not in ("file", "dataset"):
        raise HexplorerError(f"The 'layout' parameter must be file or dataset. Got {layout!r}.")
    for name, value in (("buckets", buckets), ("part_rows", part_rows)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise HexplorerError(
                f"The '{name}' parameter must be an integer >= 1. Got {value!r} instead."
            )
    make = batches(source, columns, batch_rows)
    n_buckets = buckets or min(512, max(1, math.ceil(_estimated_rows(source) / BUCKET_RECORDS)))
    target = Path(target)
    if layout == "dataset":
        check_replaceable(target, force=force)  # before any work; replaced only when whole
    folder = Path(tempfile.mkdtemp(prefix=".hexplorer-prepare-", dir=target.parent))
    clock = _Clock(timings)
    try:
        try:
            tally, hashes, vmax, paths = _spill(make, columns, config, folder, n_buckets, clock)
        except _Restart:  # a late CSV type change: read again with whole-file types
            tally, hashes, vmax, paths = _spill(make, columns, config, folder, n_buckets, clock)
        shifts = fixed_shifts(vmax)
        sums, hats, counts = _aggregate_buckets(paths, shifts, clock)
        report = tally.report(duplicates=hashes.duplicates(), **counts)
        clock.tick("repeated rows")
        parts = _ranges(sums, hats, part_rows)
        if layout == "dataset":
            with staged_folder(None, str(target)) as staging:
                writer = DatasetWriter(staging)
                for part in parts:
                    writer.write_part(_row_groups(part, config))
                writer.finish(metadata_body(config, columns, report, engine))
        else:
            _write_file(parts, target, config, metadata(config, columns, report, engine))
        clock.tick("write")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return report


def _row_groups(part: pl.DataFrame, config: PrepConfig) -> Iterator[pa.Table]:
    for start in range(0, part.height, WRITE_ROWS):
        yield _labelled(part.slice(start, WRITE_ROWS), config)


def _write_file(
    parts: Iterator[pl.DataFrame], target: Path, config: PrepConfig, meta: dict[str, Any]
) -> None:
    """The ranges as one summaries file in row groups of :data:`WRITE_ROWS` rows (as
    :func:`core.data.stream.write_aggregate` writes them)."""
    held: pl.DataFrame | None = None
    with (
        staged(target) as path,
        summaries_writer(path, meta) as out,
    ):
        for part in parts:
            held = part if held is None else pl.concat([held, part])
            while held.height >= WRITE_ROWS:
                out.write_table(_labelled(held.slice(0, WRITE_ROWS), config))
                held = held.slice(WRITE_ROWS)
        if held is not None and held.height:
            out.write_table(_labelled(held, config))


def prepare_summaries(
    source: str | os.PathLike,
    target: str | os.PathLike,
    columns: ColumnMap = DEFAULT_COLUMNS,
    config: PrepConfig = DEFAULT_CONFIG,
    *,
    layout: str = "file",
    batch_rows: int | None = None,
    force: bool = False,
    timings: dict[str, float] | None = None,
) -> PrepReport:
    """``hexplorer prepare``'s polars engine: a summaries file or dataset, in bounded memory.

    A dataset is always written through the buckets (:func:`prepare_out_of_core`). A file from
    an input of at most ``3 × batch_rows`` rows (and :data:`IN_MEMORY_ROWS`) is written by
    :func:`core.data.stream.prepare_to_file` (its sums stay in memory: a few batches' worth,
    and no temporary files); a larger input goes through the buckets too, so memory does not
    grow with the number of summaries. Both give the same file, row for row. ``batch_rows``
    None: :data:`core.data.stream.DEFAULT_BATCH_ROWS` in memory (10⁷ records in one pass),
    :data:`SPILL_BATCH_ROWS` through the buckets.
    """
    in_memory = DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows
    if layout == "file" and _estimated_rows(source) <= min(3 * in_memory, IN_MEMORY_ROWS):
        return prepare_to_file(
            source, target, columns, config, batch_rows=in_memory, timings=timings
        )
    return prepare_out_of_core(
        source,
        target,
        columns,
        config,
        layout=layout,
        batch_rows=SPILL_BATCH_ROWS if batch_rows is None else batch_rows,
        force=force,
        timings=timings,
    )
