"""Adding up an input's batches: the data report (:class:`PrepReport`), the rejected and
clamped counts of every batch (:class:`Tally`) and the repeated rows over all batches
(:class:`RowHashes`), for every engine (in memory, streaming, Spark).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.config import ColumnMap, PrepConfig
from core.errors import HexplorerError

if TYPE_CHECKING:  # the cleaning (polars, h3ronpy) only where batches are counted, not for
    # PrepReport alone (a summaries file's metadata, read by `release --all`)
    from core.data.clean import Cleaned

__all__ = ["CLAMPED_WARN_SHARE", "PrepReport", "RowHashes", "Tally", "counted", "distinct_count"]

CLAMPED_WARN_SHARE = 0.1
"""The share of the records above U (or below 0) from which the report warns: clamping is
meant for a few outliers (the demo city: 0.4 % above U = 65 km/h), and past a tenth of the
values every mean is pulled to the bound: U is then probably wrong for the data."""


@dataclass(frozen=True, kw_only=True)
class PrepReport:
    """What preparation did (SPEC section 1: nothing is dropped or changed silently).

    Attributes
    ----------
    rows_read : int
        Rows in the input.
    rejected : dict[str, int]
        Rejected rows per reason (each row counted once, under the first failing check in the
        order user, lat, lon, time, value), most frequent first.
    rejected_examples : tuple of dict
        A few rejected rows: ``{"row": 0-based row position, "reason": ..., "values": {...}}``.
    zeros_dropped : int
        Rows with value exactly 0 dropped (0 when ``keep_zeros``).
    clamped : int
        Values moved into [0, U]: ``clamped_low`` (negative, set to 0) + ``clamped_high`` (> U).
    records, users, hats, cells, slots : int
        What remains: records aggregated, distinct users, HATs, cells, slots.
    duplicates : int
        Kept rows that repeat an earlier kept row exactly (user, place, time and value): counted
        as records like any other (the SPEC defines records as given), and reported because
        they raise a user's m and are usually copies.
    notes : tuple of str
        Other things worth knowing, e.g. timestamps carrying different UTC offsets.
    ids_merged, ids_merged_into : int
        Raw user ids that canonicalisation (:mod:`core.data.ids`) merged with another spelling,
        and the users they became (``" a"`` and ``"a"``: 2 into 1).
    """

    rows_read: int
    rejected: dict[str, int]
    rejected_examples: tuple[dict[str, Any], ...]
    zeros_dropped: int
    clamped: int
    clamped_low: int
    clamped_high: int
    records: int
    users: int
    hats: int
    cells: int
    slots: int
    upper: float = 65.0
    duplicates: int = 0
    notes: tuple[str, ...] = ()
    ids_merged: int = 0
    ids_merged_into: int = 0

    @property
    def warnings(self) -> tuple[str, ...]:
        """What makes every number computed from this data doubtful (so far: many values moved
        to a bound of [0, U], :data:`CLAMPED_WARN_SHARE`). Derived from the counts, so a
        summaries file prepared before it gets them too.

        >>> r = PrepReport(rows_read=10, rejected={}, rejected_examples=(), zeros_dropped=0,
        ...     clamped=9, clamped_low=0, clamped_high=9, records=10, users=2, hats=1, cells=1,
        ...     slots=1, upper=65.0)
        >>> r.warnings[0][:51]
        '90 % of the values were above U = 65 and set to U, '
        """
        out = []
        if self.records and self.clamped_high >= CLAMPED_WARN_SHARE * self.records:
            out.append(
                f"{_percent(self.clamped_high, self.records)} of the values were above U = "
                f"{self.upper:g} and set to U, which pulls every mean towards U: U is probably "
                "too low for this data. U should be a bound that every true value respects (for "
                "a vehicle, the fastest it can go), known without looking at the data."
            )
        if self.records and self.clamped_low >= CLAMPED_WARN_SHARE * self.records:
            out.append(
                f"{_percent(self.clamped_low, self.records)} of the values were negative and "
                "set to 0, which pulls every mean towards 0: is the value column a speed?"
            )
        return tuple(out)

    @property
    def n_rejected(self) -> int:
        """Total number of rejected rows."""
        return int(sum(self.rejected.values()))

    def lines(self, *, warnings: bool = True) -> list[str]:
        """Human-readable sentences for the CLI and the dashboard (``warnings``: with the
        :attr:`warnings`, which ``hexplorer prepare`` prints on lines of their own)."""
        out = [f"{counted(self.rows_read, 'row')} read."]
        if self.rejected:
            reasons = "; ".join(f"{reason}: {count:,}" for reason, count in self.rejected.items())
            out.append(f"{counted(self.n_rejected, 'row')} rejected ({reasons}).")
        out.append(f"{counted(self.zeros_dropped, 'zero value')} dropped.")
        if self.clamped:
            parts = []
            if self.clamped_low:
                parts.append(f"{counted(self.clamped_low, 'negative value')} set to 0")
            if self.clamped_high:
                parts.append(
                    f"{counted(self.clamped_high, 'value')} above U = {self.upper:g} set to U"
                )
            out.append(
                f"{counted(self.clamped, 'value')} clamped into [0, {self.upper:g}] "
                f"({', '.join(parts)})."
            )
        else:
            out.append(f"No value needed clamping into [0, {self.upper:g}].")
        if warnings:
            out.extend(self.warnings)
        if self.duplicates == 1:
            out.append(
                "1 row repeats an earlier row exactly (same user, place, time and value) and "
                "counts as a record; remove it first if it is a copy."
            )
        elif self.duplicates:
            out.append(
                f"{self.duplicates:,} rows repeat an earlier row exactly (same user, place, time "
                "and value) and count as records; remove them first if they are copies."
            )
        if self.ids_merged:
            out.append(
                f"{counted(self.ids_merged, 'id')} merged into {self.ids_merged_into:,} by "
                "canonicalisation (spaces, 7.0 as 7, Unicode NFC, case if folded)."
            )
        out.extend(self.notes)
        out.append(
            f"{counted(self.records, 'record')} from {counted(self.users, 'user')} in "
            f"{counted(self.hats, 'HAT')} ({counted(self.cells, 'cell')} x "
            f"{counted(self.slots, 'slot')})."
        )
        return out

    @property
    def worth_noting(self) -> bool:
        """Whether preparation rejected, clamped or noticed anything (the CLI then says so)."""
        return bool(
            self.n_rejected or self.clamped or self.duplicates or self.notes or self.ids_merged
        )


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, which agrees with it (``plural``: where it is not ``noun + "s"``;
    the dashboard's :meth:`~dashboard.common.source.units.Units.count` gives its user noun's).

    >>> counted(1, "value"), counted(2_097, "zero value"), counted(0, "bus", "buses")
    ('1 value', '2,097 zero values', '0 buses')
    """
    if n == 1:
        return f"{n:,} {noun}"
    return f"{n:,} {plural if plural is not None else noun + 's'}"


def _percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a whole percentage, never 100 % for a part or 0 % for some.

    >>> _percent(2999, 3000), _percent(3000, 3000), _percent(1, 3000)
    ('99 %', '100 %', '1 %')
    """
    share = 100 * part / whole
    shown = int(share + 0.5)
    if part < whole:
        shown = min(shown, 99)
    if part:
        shown = max(shown, 1)
    return f"{shown} %"


def distinct_count(hashes: np.ndarray) -> int:
    """Number of distinct values in a uint64 array.

    >>> distinct_count(np.array([3, 1, 3], dtype=np.uint64))
    2
    """
    return int(_sorted_distinct(hashes).size)


def _sorted_distinct(hashes: np.ndarray) -> np.ndarray:
    """The distinct values of a uint64 array, sorted: one sort (:func:`core.data.packing.sorted_u64`)
    and one comparison of neighbours, 2-3x faster than a hash-based unique on 5·10^6 row hashes.

    >>> _sorted_distinct(np.array([3, 1, 3], dtype=np.uint64)).tolist()
    [1, 3]
    """
    if not hashes.size:
        return np.zeros(0, dtype=np.uint64)
    from core.data.packing import sorted_u64  # polars: not imported by what only reads a file

    ordered = sorted_u64(hashes.astype(np.uint64, copy=False))
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered if first.all() else ordered[first]  # no repeat (usual): no copy


class RowHashes:
    """Distinct row hashes over all batches of an input, for :attr:`PrepReport.duplicates`.

    Repeated rows are not batch-separable (a row may repeat one of another batch), so the count
    is global: kept rows minus distinct hashes of the whole input, as in memory. Each batch's
    distinct hashes are kept (8 bytes per distinct row), split into 16 buckets by their top 4
    bits, and the distinct hashes of each bucket are counted at the end: peak memory is the
    kept hashes plus the work of one bucket.

    >>> h = RowHashes()
    >>> h.add(np.array([1, 2, 2], dtype=np.uint64)); h.add(np.array([2, 9], dtype=np.uint64))
    >>> h.rows, h.duplicates()
    (5, 2)
    """

    _SHIFT = np.uint64(60)

    def __init__(self) -> None:
        self.rows = 0
        self.parts: list[list[np.ndarray]] = [[] for _ in range(16)]

    def add(self, hashes: np.ndarray) -> None:
        """Add one batch's row hashes (uint64)."""
        self.rows += int(hashes.size)
        if not hashes.size:
            return
        distinct = _sorted_distinct(hashes)
        bounds = np.searchsorted(distinct, np.arange(1, 16, dtype=np.uint64) << self._SHIFT)
        for bucket, piece in enumerate(np.split(distinct, bounds)):
            if piece.size:
                self.parts[bucket].append(piece)

    def duplicates(self) -> int:
        """Rows added minus distinct hashes."""
        distinct = 0
        for pieces in self.parts:
            if len(pieces) == 1:
                distinct += pieces[0].size
            elif pieces:
                distinct += distinct_count(np.concatenate(pieces))
        return self.rows - distinct


class Tally:
    """Adds up the :class:`Cleaned` batches of one input into its :class:`PrepReport`.

    >>> t = Tally(ColumnMap(), PrepConfig())
    >>> t.rows_read
    0
    """

    def __init__(self, columns: ColumnMap, config: PrepConfig) -> None:
        self.columns = columns
        self.config = config
        self.labels: tuple[str, ...] = ()
        self.rows_read = 0
        self.records = 0
        import polars as pl

        from core.data import ids
        from core.data.clean import _reasons

        self.counts = np.zeros(len(_reasons(columns, pl.String())) + 1, dtype=np.int64)
        self.examples: list[dict[str, Any]] = []
        self.zeros_dropped = 0
        self.clamped_low = 0
        self.clamped_high = 0
        self.any_offset = False
        self.zones: set[str | None] = set()
        self.spellings = ids.Spellings()
        self.merged: tuple[int, int] | None = None  # set when counted elsewhere (Spark)

    def add(self, batch: Cleaned) -> None:
        """Count one batch (in file order, so the examples are the file's first)."""
        self.add_counts(
            {
                "rows_read": batch.rows_read,
                "records": batch.records.height,
                "labels": batch.labels,
                "reason_counts": batch.reason_counts,
                "examples": batch.examples,
                "zeros_dropped": batch.zeros_dropped,
                "clamped_low": batch.clamped_low,
                "clamped_high": batch.clamped_high,
                "any_offset": batch.any_offset,
                "zones": batch.zones,
            }
        )
        self.spellings.add(batch.spellings)

    def add_counts(self, other: dict[str, Any]) -> None:
        """Add plain counts (the fields of :class:`Cleaned` but ``records``, a count here, and
        ``row_hashes``), e.g. collected from Spark executors as JSON."""
        from core.data.clean import _N_EXAMPLES

        self.labels = self.labels or tuple(other["labels"])
        self.rows_read += int(other["rows_read"])
        self.records += int(other["records"])
        self.counts += np.asarray(other["reason_counts"], dtype=np.int64)
        self.examples.extend(list(other["examples"])[: _N_EXAMPLES - len(self.examples)])
        self.zeros_dropped += int(other["zeros_dropped"])
        self.clamped_low += int(other["clamped_low"])
        self.clamped_high += int(other["clamped_high"])
        self.any_offset |= bool(other["any_offset"])
        self.zones.update(other["zones"])

    def rejected(self) -> dict[str, int]:
        """Rejected rows per reason, most frequent first (ties in checking order)."""
        order = np.argsort(-self.counts[1:], kind="stable")
        return {self.labels[i]: int(self.counts[i + 1]) for i in order if self.counts[i + 1] > 0}

    def check(self) -> None:
        """Raise the one-line errors of an input with nothing left (SPEC section 1)."""
        if self.rows_read == 0:
            raise HexplorerError("The data has no rows.")
        n_bad = int(self.counts[1:].sum())
        if n_bad == self.rows_read:
            top, top_count = next(iter(self.rejected().items()))
            example = self.examples[0]
            where = "" if example["row"] is None else f" row {example['row']}:"
            raise HexplorerError(
                f"Every one of the {self.rows_read:,} rows was rejected; most common reason: "
                f"{top} ({top_count:,} rows), e.g.{where} {example['values']}."
            )
        if self.records == 0:
            raise HexplorerError(
                f"All {self.rows_read - n_bad:,} valid rows have {self.columns.value} = 0 and "
                "zeros are dropped; keep them with keep_zeros=True (on the command line "
                "--keep-zeros; in the dashboard, Keep zero values under Data)."
            )

    def report(
        self, *, users: int, hats: int, cells: int, slots: int, duplicates: int
    ) -> PrepReport:
        """The :class:`PrepReport`, given what the aggregation and the row hashes found."""
        from core.data.clean import zone_note

        note = zone_note(self.any_offset, self.zones)
        merged, into = self.merged if self.merged is not None else self.spellings.merged()
        return PrepReport(
            rows_read=self.rows_read,
            rejected=self.rejected(),
            rejected_examples=tuple(self.examples),
            zeros_dropped=self.zeros_dropped,
            clamped=self.clamped_low + self.clamped_high,
            clamped_low=self.clamped_low,
            clamped_high=self.clamped_high,
            records=self.records,
            users=users,
            hats=hats,
            cells=cells,
            slots=slots,
            upper=self.config.upper,
            duplicates=duplicates,
            notes=() if note is None else (note,),
            ids_merged=merged,
            ids_merged_into=into,
        )
