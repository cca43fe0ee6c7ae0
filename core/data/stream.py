"""Out-of-core preparation on one machine: raw CSV/Parquet -> a summaries file, in batches.

The same mathematics as :func:`core.data.prepare_file` (SPEC section 1), bit for bit, with
memory bounded by one batch of raw records plus the summaries (not the records):

1. The file is read in batches of ``batch_rows`` rows by polars' streaming engine
   (``scan_parquet`` / ``scan_csv`` + ``collect_batches``), only the five mapped columns.
2. Each batch goes through :func:`core.data.prepare.clean_records` (reject, drop zeros, clamp,
   H3, slot: row by row, so batches do not change any row's fate) and is aggregated at once
   into fixed-point integer sums per (cell, slot, user).
3. The fixed-point scale depends on the largest kept value of the whole file
   (:func:`core.data.aggregation.fixed_shifts`). A batch is aggregated at its own scale; the
   running sums are kept at the scale of the largest value seen so far. A batch with a smaller
   maximum in another binary exponent (rare: each batch usually holds values near U) is
   re-read and re-aggregated at the final scale in a second pass, and so are the batches
   summed before a larger maximum appeared. Integer sums added in any grouping give the same
   integer, so the result equals the in-memory engine's exactly.
4. The summaries are sorted by (cell, slot, user) and written in row groups with their text
   labels, and the settings and report go into the footer (:mod:`core.data.summaries`). An
   input read in one batch (up to 10⁷ records) is sorted once and summed row group by row
   group while the one before is compressed (:class:`core.data.packing.SortedRuns`): the
   writer, which uses one core, no longer waits for the sums of the whole file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from core.data.aggregation import (
    _aggregated,
    aggregate_fixed,
    check_most_records,
    combine_fixed,
    fixed_shifts,
    from_fixed,
    label_table,
    labels_for,
    sorted_counts,
)
from core.data.ahead import made_ahead
from core.data.config import ColumnMap, PrepConfig
from core.data.io import _resolve, column_names, missing_column_message
from core.data.packing import SortedRuns
from core.data.prepare import (
    DEFAULT_COLUMNS,
    DEFAULT_CONFIG,
    PrepReport,
    RowHashes,
    Tally,
    _Clock,
    check_types,
    clean_records,
)
from core.data.schema import summaries_writer
from core.data.staging import staged
from core.data.summaries import metadata
from core.errors import HexplorerError

#: Raw rows per batch: about 1.5 GB of working memory for the five columns and their H3 cells
#: (10⁷ records, a city fleet's three days, in one pass: no merge of two batches' sums).
DEFAULT_BATCH_ROWS = 10_000_000
#: Summary rows per Parquet row group of the output.
WRITE_ROWS = 1_000_000

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "batches",
    "prepare_to_file",
    "sorted_aggregate",
    "summarise_stream",
]


def batches(
    source: str | os.PathLike, columns: ColumnMap, batch_rows: int
) -> Callable[[], Iterator[pl.DataFrame]]:
    """A function giving a fresh iterator over ``batch_rows``-row batches of the five columns.

    Raises :class:`HexplorerError` (one line) for a missing, empty or unreadable file or a
    missing column, before any batch is read.
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise HexplorerError(
            f"The 'batch_rows' parameter must be an integer >= 1. Got {batch_rows!r} instead."
        )
    _, chosen, label = _resolve(source, None)
    wanted = list(columns.as_tuple())
    available = column_names(source)
    for name in wanted:
        if name not in available:
            raise HexplorerError(missing_column_message(name, available))
    path = str(source)
    if chosen == "parquet":
        try:
            check_types(pl.scan_parquet(path).select(wanted).collect_schema(), columns.as_tuple())
        except HexplorerError:
            raise
        except Exception:  # an unreadable file: the first batch reports it in one line
            pass

    def scan(infer: int | None) -> pl.LazyFrame:
        if chosen == "parquet":
            return _user_categories(pl.scan_parquet(path).select(wanted), columns.user)
        separator = "\t" if chosen == "tsv" else ","
        return pl.scan_csv(path, separator=separator, infer_schema_length=infer).select(wanted)

    return _Batches(scan, label, chosen, batch_rows)


def _user_categories(scan: pl.LazyFrame, user: str) -> pl.LazyFrame:
    """Text user ids read as a polars Categorical: Parquet usually stores them in dictionary
    pages, which polars turns into categories for a fraction of what finding the distinct ids
    of 10⁷ strings costs (:func:`core.data.clean._distinct_codes` takes their codes). The ids
    themselves, and everything made from them, are unchanged."""
    try:
        text = scan.collect_schema()[user] == pl.String
    except Exception:  # an unreadable file: the first batch reports it in one line
        return scan
    return scan.with_columns(pl.col(user).cast(pl.Categorical)) if text else scan


class _Restart(Exception):
    """A CSV column changed type after batches went out: start again with whole-file types."""


class _Batches:
    """Re-iterable batches; on a late CSV type change, raises :class:`_Restart` once."""

    def __init__(
        self,
        scan: Callable[[int | None], pl.LazyFrame],
        label: str,
        chosen: str,
        batch_rows: int,
    ) -> None:
        self.scan, self.label, self.chosen, self.batch_rows = scan, label, chosen, batch_rows
        self.infer: int | None = 10_000

    def __call__(self) -> Iterator[pl.DataFrame]:
        try:
            yield from self.scan(self.infer).collect_batches(chunk_size=self.batch_rows)
        except pl.exceptions.ComputeError:
            # A CSV column whose type changes late (text in a number column): infer the types
            # from the whole file, as the in-memory reader does, and start again.
            if self.chosen == "parquet" or self.infer is None:
                raise
            self.infer = None
            raise _Restart from None
        except (KeyboardInterrupt, SystemExit, GeneratorExit, HexplorerError, _Restart):
            raise
        except BaseException as exc:  # polars raises many types (even Rust panics)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HexplorerError(
                f"Could not read {self.label} as {self.chosen.upper()}: {first}"
            ) from None


def summarise_stream(
    make_batches: Callable[[], Iterator[pl.DataFrame]],
    columns: ColumnMap,
    config: PrepConfig,
    *,
    timings: dict[str, float] | None = None,
) -> tuple[pl.DataFrame | SortedRuns, Tally, RowHashes]:
    """Aggregate batches into per (cell, slot, user) m, s, q (float64), exactly as in memory.

    Returns the aggregated frame (integer keys, the users a polars Enum of their ids, sorted
    by cell, slot and user), the tally of the report and the row hashes of the kept records
    (for the count of repeated rows, global over batches). An input read in one batch gives
    its records sorted and not yet summed instead (:class:`SortedRuns`, fixed-point:
    :func:`write_aggregate` sums and writes them one row group at a time).
    """
    try:
        return _summarise(make_batches, columns, config, timings)
    except _Restart:
        return _summarise(make_batches, columns, config, timings)


def _summarise(
    make_batches: Callable[[], Iterator[pl.DataFrame]],
    columns: ColumnMap,
    config: PrepConfig,
    timings: dict[str, float] | None,
) -> tuple[pl.DataFrame | SortedRuns, Tally, RowHashes]:
    clock = _Clock(timings)
    tally = Tally(columns, config)
    hashes = RowHashes()
    parts: list[pl.DataFrame] = []  # integer sums at ``shifts``
    part_rows = 0
    compacted_rows = 0
    shifts: tuple[int, int] | None = None
    vmax = 0.0
    redo: set[int] = set()  # batches to aggregate again at the final scale
    summed: list[int] = []  # batches in ``parts``
    held: SortedRuns | None = None  # the first batch, sorted, summed only if another comes
    offset = 0
    # each batch's row hashes are sorted (RowHashes.add) in a worker thread, in batch order,
    # while the batch is aggregated: both are numpy sorts, which release the GIL
    with ThreadPoolExecutor(1) as sorter:
        added: list[Future[None]] = []
        for index, frame in enumerate(make_batches()):
            clock.tick("read")
            cleaned = clean_records(frame, columns, config, clock, row_offset=offset)
            offset += frame.height
            tally.add(cleaned)
            added.append(sorter.submit(hashes.add, cleaned.row_hashes))
            records = cleaned.records
            if records.height == 0:
                continue
            if held is not None:  # a second batch after all: the first one's sums, as a frame
                parts, held = [held.rows(0, held.height)], None
                part_rows = compacted_rows = parts[0].height
            batch_max = float(records.get_column("value").max())  # type: ignore[arg-type]
            batch_shifts = fixed_shifts(batch_max)
            if shifts is not None and batch_shifts != shifts and batch_max < vmax:
                redo.add(index)  # a smaller scale than the running one: redo at the end
                continue
            if shifts is not None and batch_shifts != shifts:  # a larger maximum: start again
                redo.update(summed)
                parts, summed, part_rows, compacted_rows = [], [], 0, 0
            shifts = batch_shifts
            vmax = max(vmax, batch_max)
            if not parts and not redo:  # the first batch: sorted, summed when it is written
                held = SortedRuns.of(records, shifts, text_ids=False)
                if held is not None:
                    summed.append(index)
                    clock.tick("aggregate")
                    continue
            parts.append(_aggregated(records, *shifts, text_ids=False))
            summed.append(index)
            part_rows += parts[-1].height
            if part_rows > 2 * compacted_rows + 4 * len(records):
                parts = [combine_fixed(parts, text_ids=False)]
                part_rows = compacted_rows = parts[0].height
            clock.tick("aggregate")
        for done in added:
            done.result()
    tally.check()
    assert shifts is not None  # tally.check() refused an input without records
    del frame, cleaned, records  # the last batch: not held through the combine
    if held is not None:  # the only batch: summed as it is written
        check_most_records(held.most_records())
        clock.tick("combine")
        return held, tally, hashes
    if redo:
        offset = 0
        for index, frame in enumerate(make_batches()):
            if index in redo:
                cleaned = clean_records(frame, columns, config, row_offset=offset)
                parts.append(
                    aggregate_fixed(cleaned.records.lazy(), *shifts, text_ids=False).collect()
                )
            offset += frame.height
        clock.tick("second pass")
    # sorted by (cell, slot, user) (one part in that order is taken as it is: the first batch's
    # sums, when a second batch came); the users stay an Enum (label_table writes their text)
    agg = from_fixed(combine_fixed(parts, sort=True, text_ids=False), *shifts)
    clock.tick("combine")
    return agg, tally, hashes


def sorted_aggregate(agg: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """``agg`` sorted by (cell, slot, user), and its numbers of users, HATs, cells and slots.

    The sort runs on one integer key, ``(rank of cell × slots + rank of slot) × users + rank of
    user`` (ranks in the sorted distinct values; the user ids in their text order), which
    orders the rows as the three columns do and costs a fraction of a sort on a text column;
    the counts come from the same distinct values. Keys that would not fit 63 bits fall back to
    sorting the columns.

    >>> agg = pl.DataFrame({"cell": [2, 1, 1], "slot": [0, 5, 5], "user": ["b", "b", "a"]},
    ...     schema_overrides={"cell": pl.UInt64})
    >>> out, counts = sorted_aggregate(agg)
    >>> out.rows(), counts
    ([(1, 5, 'a'), (1, 5, 'b'), (2, 0, 'b')], {'users': 2, 'hats': 2, 'cells': 2, 'slots': 2})
    """
    users = agg.get_column("user").unique().sort()
    cells = agg.get_column("cell").unique().sort().to_numpy()
    slots = agg.get_column("slot").unique().sort().to_numpy()
    n_users, n_cells, n_slots = users.len(), cells.size, slots.size
    counts = {"users": n_users, "hats": 0, "cells": n_cells, "slots": n_slots}
    if n_users * n_cells * n_slots >= 2**63:
        agg = agg.sort(["cell", "slot", "user"])
        counts["hats"] = int(agg.select(pl.struct("cell", "slot").n_unique()).item())
        return agg, counts
    ranks = pl.int_range(n_users, eager=True, dtype=pl.Int64)
    user_rank = agg.get_column("user").replace_strict(users, ranks).to_numpy()
    cell_rank = np.searchsorted(cells, agg.get_column("cell").to_numpy())
    slot_rank = np.searchsorted(slots, agg.get_column("slot").to_numpy())
    hat = cell_rank * n_slots + slot_rank
    key = hat * n_users + user_rank
    counts["hats"] = int(np.unique(hat).size) if hat.size < 1024 else _distinct(hat)
    agg = agg.with_columns(pl.Series("_key", key)).sort("_key").drop("_key")
    return agg, counts


def _distinct(values: np.ndarray) -> int:
    return int(pl.Series(values).n_unique())


def write_aggregate(
    agg: pl.DataFrame | SortedRuns,
    target: str | os.PathLike,
    columns: ColumnMap,
    config: PrepConfig,
    report: PrepReport,
    engine: str,
    *,
    presorted: bool = False,
) -> Path:
    """Sort (unless ``presorted`` by :func:`sorted_aggregate`), label and write aggregated
    summaries (integer keys) as a summaries file. :class:`SortedRuns` are summed one row
    group at a time, each while the one before is compressed and written."""
    meta = metadata(config, columns, report, engine)
    target = Path(target)
    starts = range(0, agg.height, WRITE_ROWS)
    if isinstance(agg, SortedRuns):
        runs = agg

        def row_group(i: int) -> pa.Table:
            part = from_fixed(runs.rows(starts[i], starts[i] + WRITE_ROWS), *runs.shifts)
            return label_table(part, *labels_for(part, config))

    else:
        frame = agg if presorted else agg.sort(["cell", "slot", "user"])
        labels = labels_for(frame, config)

        def row_group(i: int) -> pa.Table:
            return label_table(frame.slice(starts[i], WRITE_ROWS), *labels)

    with (
        staged(target) as path,
        summaries_writer(path, meta) as writer,
    ):
        for table in made_ahead(row_group, len(starts)):
            writer.write_table(table)
    return target


def prepare_to_file(
    source: str | os.PathLike,
    target: str | os.PathLike,
    columns: ColumnMap = DEFAULT_COLUMNS,
    config: PrepConfig = DEFAULT_CONFIG,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    timings: dict[str, float] | None = None,
) -> PrepReport:
    """Prepare a raw CSV/Parquet file into a summaries file, out of core (see module doc).

    Parameters
    ----------
    source : path
        Raw records (CSV, TSV or Parquet).
    target : path
        The summaries file to write.
    batch_rows : int
        Raw rows per batch (memory grows with it).
    timings : dict, optional
        Seconds per phase (for ``bench/``).

    Returns
    -------
    PrepReport
        Also stored in the file's metadata.
    """
    make = batches(source, columns, batch_rows)
    agg, tally, hashes = summarise_stream(make, columns, config, timings=timings)
    clock = _Clock(timings)
    # summarise_stream sorted it (combine_fixed)
    counts = agg.counts() if isinstance(agg, SortedRuns) else sorted_counts(agg)
    clock.tick("sort")
    report = tally.report(duplicates=hashes.duplicates(), **counts)
    clock.tick("repeated rows")
    write_aggregate(agg, target, columns, config, report, "polars-streaming", presorted=True)
    clock.tick("write")
    return report
