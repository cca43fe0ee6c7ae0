"""Raw records -> per-HAT, per-user summaries (m, s, q): SPEC section 1, in its order.

1. reject and count rows with a missing/unparseable field or coordinates out of range;
2. drop zero values unless ``keep_zeros``;
3. clamp values into [0, U] and count the clamped ones (negative values become 0);
4. H3 cell (v4, 15-hex-digit strings) at the chosen resolution and a timeslot, either absolute
   ``floor(timestamp, slot)`` (label ``"2024-03-05T08:00"``) or hour-of-day pooled over days
   (``"h08"``);
5. aggregate per (cell, slot, user) to the record count m, the sum s and the sum of squares q.

Polars does the work and h3ronpy's vectorised ``coordinates_to_cells`` assigns cells; pandas is
the interface. Steps 1-4 produce a polars frame of clean records with integer keys, and
:func:`core.data.aggregation.aggregate` (the only engine-specific step of the mathematics' input;
with the cells, the exact fixed-point sums and the labels in :mod:`core.data.aggregation`) turns it
into summaries: a DuckDB or Spark engine can replace that one function.

Timestamps may be datetimes (a timezone-aware column is read as the wall-clock time of its own
zone), ISO-like strings (a trailing UTC offset is ignored: the wall-clock time shown is used),
or numbers, read as epoch seconds (UTC wall-clock). Naive times are taken as local wall-clock
time; nothing is converted between zones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import polars as pl

from core.data import ids
from core.data.aggregation import aggregate, cell_ids_of, labelled
from core.data.config import ColumnMap, PrepConfig
from core.data.io import missing_column_message, read_polars
from core.errors import HexplorerError

SUMMARY_COLUMNS = ["hat", "cell", "slot", "user_id", "m", "s", "q"]
_US_PER_S = 1_000_000
_US_PER_H = 3_600 * _US_PER_S
_MAX_EPOCH_S = 1e11  # about year 5138: larger "epoch seconds" are not times
_N_EXAMPLES = 5
DEFAULT_COLUMNS = ColumnMap()
DEFAULT_CONFIG = PrepConfig()
_OFFSET_RE = r"(?:[Zz]|\s*(?:UTC|GMT)?[+-]\d{2}:?\d{2})$"


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
    def n_rejected(self) -> int:
        """Total number of rejected rows."""
        return int(sum(self.rejected.values()))

    def lines(self) -> list[str]:
        """Human-readable sentences for the CLI and the dashboard."""
        out = [f"{self.rows_read:,} rows read."]
        if self.rejected:
            reasons = "; ".join(f"{reason}: {count:,}" for reason, count in self.rejected.items())
            out.append(f"{self.n_rejected:,} rows rejected ({reasons}).")
        out.append(f"{self.zeros_dropped:,} zero values dropped.")
        if self.clamped:
            parts = []
            if self.clamped_low:
                parts.append(f"{self.clamped_low:,} negative values set to 0")
            if self.clamped_high:
                parts.append(f"{self.clamped_high:,} values above U = {self.upper:g} set to U")
            out.append(
                f"{self.clamped:,} values clamped into [0, {self.upper:g}] ({', '.join(parts)})."
            )
        else:
            out.append(f"No value needed clamping into [0, {self.upper:g}].")
        if self.duplicates:
            out.append(
                f"{self.duplicates:,} rows repeat an earlier row exactly (same user, place, time "
                "and value) and count as records; remove them first if they are copies."
            )
        if self.ids_merged:
            out.append(
                f"{self.ids_merged:,} ids merged into {self.ids_merged_into:,} by "
                "canonicalisation (spaces, 7.0 as 7, Unicode NFC, case if folded)."
            )
        out.extend(self.notes)
        out.append(
            f"{self.records:,} records from {self.users:,} users in {self.hats:,} HATs "
            f"({self.cells:,} cells x {self.slots:,} slots)."
        )
        return out

    @property
    def worth_noting(self) -> bool:
        """Whether preparation rejected, clamped or noticed anything (the CLI then says so)."""
        return bool(
            self.n_rejected or self.clamped or self.duplicates or self.notes or self.ids_merged
        )


@dataclass(frozen=True, kw_only=True, eq=False)
class Prepared:
    """Per-HAT user summaries and the report of how they were made.

    Attributes
    ----------
    summaries : pandas.DataFrame
        One row per (HAT, user): ``hat`` ("CELL/SLOT"), ``cell`` (H3 string), ``slot``,
        ``user_id`` (str), ``m`` (int64), ``s`` (float64), ``q`` (float64); sorted by hat, then
        user_id. Treat it as read-only.
    report : PrepReport
    config : PrepConfig
    columns : ColumnMap
    """

    summaries: pd.DataFrame
    report: PrepReport
    config: PrepConfig = field(default_factory=PrepConfig)
    columns: ColumnMap = field(default_factory=ColumnMap)


# ----------------------------------------------------------------------------------------------
# public entry points


def prepare(
    raw: pd.DataFrame, columns: ColumnMap = DEFAULT_COLUMNS, config: PrepConfig = DEFAULT_CONFIG
) -> Prepared:
    """Prepare raw records held in a pandas DataFrame (SPEC section 1).

    Parameters
    ----------
    raw : pandas.DataFrame
        Raw records; only the five mapped columns are used.
    columns : ColumnMap
        Which columns hold user, lat, lon, time and value.
    config : PrepConfig
        U, H3 resolution, slot, keep_zeros.

    Returns
    -------
    Prepared

    Raises
    ------
    HexplorerError
        A mapped column is missing, there are no rows, or every row is rejected.

    >>> raw = pd.DataFrame({"user_id": ["a", "a", "b"], "lat": [21.2] * 3, "lon": [72.8] * 3,
    ...                     "timestamp": ["2024-03-05 08:10"] * 3, "speed": [10.0, 70.0, 0.0]})
    >>> p = prepare(raw)
    >>> p.summaries[["user_id", "m", "s", "q"]].values.tolist(), p.report.clamped
    ([['a', 2, 75.0, 4325.0]], 1)
    """
    if not isinstance(raw, pd.DataFrame):
        raise HexplorerError(
            f"prepare() needs a pandas DataFrame of raw records, not a {type(raw).__name__}."
        )
    wanted = list(columns.as_tuple())
    for name in wanted:
        if name not in raw.columns:
            raise HexplorerError(missing_column_message(name, [str(c) for c in raw.columns]))
    if len(raw) == 0:
        raise HexplorerError("The data has no rows.")
    return _prepare_polars(_from_pandas(raw, wanted), columns, config)


def prepare_file(
    path: Any,
    columns: ColumnMap = DEFAULT_COLUMNS,
    config: PrepConfig = DEFAULT_CONFIG,
    fmt: str | None = None,
    *,
    timings: dict[str, float] | None = None,
    max_bytes: int | None = None,
) -> Prepared:
    """Prepare a CSV or Parquet file directly with polars (the fast path for big files).

    Same result as ``prepare(read_table(path), columns, config)``, reading only the five mapped
    columns. ``path`` may also be bytes or a file object, as for :func:`read_table`. If a dict
    is given as ``timings``, the seconds spent in each phase are stored in it (for the bench).
    With ``max_bytes``, a file whose estimated memory (``core.data.io.estimate_memory``) is
    larger is refused with a :class:`HexplorerError` before it is parsed.
    """
    clock = _Clock(timings)
    frame = read_polars(path, fmt, columns=list(columns.as_tuple()), max_bytes=max_bytes)
    clock.tick("read")
    return _prepare_polars(frame, columns, config, clock)


class _Clock:
    """Seconds per phase into a dict, when one is given (``bench/bench_prepare.py``)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.last = time.perf_counter()

    def tick(self, phase: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            self.timings[phase] = self.timings.get(phase, 0.0) + now - self.last
            self.last = now


# ----------------------------------------------------------------------------------------------
# steps


def _from_pandas(raw: pd.DataFrame, wanted: list[str]) -> pl.DataFrame:
    series = []
    for name in wanted:
        col = raw[name]
        try:
            s = cast(pl.Series, pl.from_pandas(col.reset_index(drop=True), nan_to_null=True))
        except Exception:  # mixed python objects (numbers and text): go through text
            texts = [None if _is_missing(x) else str(x) for x in col.tolist()]
            s = pl.Series(name, texts, dtype=pl.String)
        if s.dtype == pl.Object:
            texts = [None if _is_missing(x) else str(x) for x in col.tolist()]
            s = pl.Series(name, texts, dtype=pl.String)
        series.append(s.alias(name))
    return pl.DataFrame(series)


def _is_missing(x: Any) -> bool:
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _number(col: str, dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """(value as Float64 or null, missing flag) for a column that should hold numbers."""
    c = pl.col(col)
    if dtype.is_numeric():
        v = c.cast(pl.Float64)
        missing = v.is_null() | v.is_nan()
        return v, missing
    if dtype == pl.String:
        text = c.str.strip_chars()
        missing = (
            c.is_null()
            | (text == "")
            | text.str.to_lowercase().is_in(["nan", "na", "null", "none"])
        )
        return text.cast(pl.Float64, strict=False), missing
    if dtype == pl.Boolean or dtype == pl.Null:
        return pl.lit(None, dtype=pl.Float64), c.is_null()
    return c.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False), c.is_null()


def _time_us(frame: pl.DataFrame, col: str) -> tuple[pl.Expr, pl.Expr]:
    """(wall-clock microseconds since 1970-01-01 or null, missing flag)."""
    c = pl.col(col)
    dtype = frame.schema[col]
    if isinstance(dtype, pl.Datetime):
        expr = c.dt.replace_time_zone(None) if dtype.time_zone else c
        return expr.cast(pl.Datetime("us")).dt.epoch("us"), c.is_null()
    if dtype == pl.Date:
        return c.cast(pl.Datetime("us")).dt.epoch("us"), c.is_null()
    if dtype.is_numeric():
        v = c.cast(pl.Float64)
        ok = v.is_finite() & (v.abs() <= _MAX_EPOCH_S)
        us = pl.when(ok).then((v * _US_PER_S).floor()).otherwise(None).cast(pl.Int64)
        return us, v.is_null() | v.is_nan()
    text = frame.get_column(col).cast(pl.String)
    parsed = _parse_time_text(text)
    missing = c.is_null() | c.cast(pl.String).str.contains(r"^\s*$")
    return pl.lit(parsed), missing


def _time_kind(dtype: pl.DataType) -> str:
    """What a time column's values must be, for the rejection reason."""
    if dtype.is_numeric():
        return f"epoch seconds in [-{_MAX_EPOCH_S:.0e}, {_MAX_EPOCH_S:.0e}] (numbers are read as seconds)"
    return "a valid time"


_TIME_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%d",
)


def _parse_time_text(text: pl.Series) -> pl.Series:
    """Text timestamps -> wall-clock microseconds since 1970 (null where unparseable).

    A format that parses a sample of the first values is tried on the whole column (fast);
    the rows it misses get polars' own format inference after stripping blanks and any trailing
    UTC offset (the wall-clock time shown is kept, no zone conversion).
    """
    sample = text.drop_nulls().head(1000)
    if sample.str.contains(_OFFSET_RE).any():
        text = text.str.replace(_OFFSET_RE, "")
        sample = sample.str.replace(_OFFSET_RE, "")
    parsed = pl.Series(text.name, [None] * len(text), dtype=pl.Datetime("us"))
    for fmt in _TIME_FORMATS:
        if sample.len() and sample.str.to_datetime(fmt, strict=False).null_count() == 0:
            parsed = text.str.to_datetime(fmt, strict=False, time_unit="us")
            break
    misses = (parsed.is_null() & text.is_not_null()).arg_true()
    if misses.len():
        rest = text.gather(misses).str.strip_chars().str.replace(_OFFSET_RE, "")
        tries = [rest.str.to_datetime(f, strict=False, time_unit="us") for f in _TIME_FORMATS]
        try:
            tries.append(rest.str.to_datetime(strict=False, time_unit="us"))
        except pl.exceptions.ComputeError:  # no format could be inferred from these values
            pass
        parsed = parsed.scatter(misses, pl.select(pl.coalesce(tries)).to_series())
    return parsed.dt.epoch("us").alias("t_us")


_ZONE_RE = r"([Zz]|[+-]\d{2}:?\d{2})$"


def _zones(frame: pl.DataFrame, col: str) -> tuple[bool, frozenset[str | None]]:
    """(whether any text timestamp carries a UTC offset, the offsets seen, None for "no offset")
    of one batch: what :func:`zone_note` needs, added up over batches with ``|`` and set union.
    Non-text time columns give ``(False, {})``."""
    if frame.schema[col] != pl.String:
        return False, frozenset()
    text = frame.get_column(col).str.strip_chars().drop_nulls()
    if not text.str.contains(_OFFSET_RE).any():
        return False, frozenset([None]) if text.len() else frozenset()
    return True, frozenset(text.str.extract(_ZONE_RE).unique().to_list())


def zone_note(any_offset: bool, zones: frozenset[str | None] | set[str | None]) -> str | None:
    """A note when text timestamps mix UTC offsets (or offsets and none): each is read as the
    wall-clock time it shows, so records of different zones share slots by local time.

    >>> zone_note(True, {"+05:30", None})
    'Timestamps carry 2 different UTC offsets (+05:30, none); each was read as the wall-clock time it shows, not converted to one zone.'
    >>> zone_note(False, {None}) is None
    True
    """
    if not any_offset or len(zones) < 2:
        return None
    shown = sorted(z if z is not None else "none" for z in zones)
    listed = ", ".join(shown[:5]) + (", ..." if len(shown) > 5 else "")
    return (
        f"Timestamps carry {len(shown)} different UTC offsets ({listed}); each was read as the "
        "wall-clock time it shows, not converted to one zone."
    )


def check_types(schema: Any, names: tuple[str, ...]) -> None:
    """Refuse columns no record field can come from (lists, structs, binary) in one line.

    ``schema`` maps column names to polars types (a DataFrame's or a LazyFrame's schema).
    """
    for name in names:
        dtype = schema[name]
        if dtype.is_nested() or dtype in (pl.Binary, pl.Object):
            raise HexplorerError(
                f"Column '{name}' holds {dtype} values; a record field must be text, a number "
                "or a time."
            )


def _reasons(columns: ColumnMap, time_dtype: pl.DataType) -> list[str]:
    """Rejection reasons in the order they are checked (SPEC section 1, step 1); the time
    column's depends on its type (:func:`_time_kind`)."""
    ucol, latcol, loncol, tcol, vcol = columns.as_tuple()
    return [
        f"missing {ucol}",
        f"missing {latcol}",
        f"{latcol} not a number",
        f"{latcol} outside [-90, 90]",
        f"missing {loncol}",
        f"{loncol} not a number",
        f"{loncol} outside [-180, 180]",
        f"missing {tcol}",
        f"{tcol} not {_time_kind(time_dtype)}",
        f"missing {vcol}",
        f"{vcol} not a number",
    ]


@dataclass(frozen=True, kw_only=True, eq=False)
class Cleaned:
    """One batch of raw records after SPEC section 1 steps 1-4 (before aggregation).

    Attributes
    ----------
    records : polars.DataFrame
        The kept records: ``cell`` (uint64 H3 id), ``slot`` (int64 slot key), ``user`` (str),
        ``value`` (float64, clamped into [0, U]).
    rows_read : int
    labels : tuple of str
        The rejection reasons, in checking order (:func:`_reasons`).
    reason_counts : int64 array
        Rows per rejection code (index i + 1 for ``labels[i]``; index 0 kept).
    examples : list of dict
        The batch's first rejected rows (row positions counted from the file's start).
    zeros_dropped, clamped_low, clamped_high : int
    row_hashes : uint64 array
        One 64-bit hash per kept record of (user, lat, lon, time, value) before clamping: rows
        with equal hashes repeat each other (:attr:`PrepReport.duplicates`). The hash is
        polars' ``struct.hash()`` with its fixed default seed, so the same row gives the same
        hash in any batch and any process of one polars version.
    any_offset, zones :
        What :func:`zone_note` needs from this batch (:func:`_zones`).
    spellings : polars.DataFrame
        The kept records' distinct (canonical id, raw spelling) hashes (:func:`ids.spellings`).
    """

    records: pl.DataFrame
    rows_read: int
    labels: tuple[str, ...]
    reason_counts: np.ndarray
    examples: list[dict[str, Any]]
    zeros_dropped: int
    clamped_low: int
    clamped_high: int
    row_hashes: np.ndarray
    any_offset: bool = False
    zones: frozenset[str | None] = frozenset()
    spellings: pl.DataFrame = field(default_factory=pl.DataFrame)


def clean_records(
    frame: pl.DataFrame,
    columns: ColumnMap,
    config: PrepConfig,
    clock: _Clock | None = None,
    *,
    row_offset: int = 0,
) -> Cleaned:
    """SPEC section 1 steps 1-4 on one batch of raw records: reject, drop zeros, clamp, H3, slot.

    Every step reads one row at a time (no statistic of the batch changes a row's fate), so a
    file cut into batches gives the same records as the whole file: this is what lets the
    streaming engine (:mod:`core.data.stream`) and Spark (:mod:`core.data.spark`) run it on
    pieces. (One exception: text timestamps in none of the listed formats are parsed by
    polars' format inference, which looks at the batch.) What is not row by row, the count of
    repeated rows and the time-zone note, is returned as per-row hashes and per-batch zones
    for the engine to add up over the whole input.

    Parameters
    ----------
    frame : polars.DataFrame
        The five mapped columns of the raw records.
    row_offset : int
        Position of the batch's first row in the file (for the rejected examples).
    """
    clock = clock or _Clock(None)
    ucol, latcol, loncol, tcol, vcol = columns.as_tuple()
    check_types(frame.schema, columns.as_tuple())
    labels = _reasons(columns, frame.schema[tcol])
    schema = frame.schema
    canon = ids.canonical(frame.get_column(ucol), casefold=config.ids == "casefold")
    user = pl.lit(canon)  # " a" and "a " are one user, 7.0 and 7 too (core.data.ids)
    user_missing = user.is_null() | user.str.contains(r"^\s*$")
    lat, lat_missing = _number(latcol, schema[latcol])
    lon, lon_missing = _number(loncol, schema[loncol])
    t_us, t_missing = _time_us(frame, tcol)
    val, val_missing = _number(vcol, schema[vcol])

    checks = [
        user_missing,
        lat_missing,
        lat.is_null() | ~lat.is_finite(),
        (lat < -90) | (lat > 90),
        lon_missing,
        lon.is_null() | ~lon.is_finite(),
        (lon < -180) | (lon > 180),
        t_missing,
        t_us.is_null(),
        val_missing,
        val.is_null() | ~val.is_finite(),
    ]
    code: pl.Expr = pl.lit(0, dtype=pl.Int8)
    for i in range(len(checks) - 1, -1, -1):
        code = pl.when(checks[i]).then(pl.lit(i + 1, dtype=pl.Int8)).otherwise(code)

    work = frame.select(
        user.alias("user"),
        lat.alias("lat"),
        lon.alias("lon"),
        t_us.alias("t_us"),
        val.alias("value"),
        code.alias("_reason"),
        pl.col(ucol).alias("_raw_user"),
    )
    clock.tick("parse and check")
    codes = work.get_column("_reason").to_numpy()
    bad = codes != 0
    counts = np.bincount(codes, minlength=len(labels) + 1).astype(np.int64)
    examples: list[dict[str, Any]] = []
    if bad.any():
        rows = np.flatnonzero(bad)[:_N_EXAMPLES]
        raw_rows = frame.select(pl.all().gather(rows.tolist())).rows(named=True)
        for r, values in zip(rows, raw_rows, strict=True):
            examples.append(
                {
                    "row": int(r) + row_offset,
                    "reason": labels[codes[r] - 1],
                    "values": {k: (None if v is None else str(v)) for k, v in values.items()},
                }
            )

    values_all = work.get_column("value").to_numpy()
    keep = ~bad
    zeros_dropped = 0
    if not config.keep_zeros:
        zero = keep & (values_all == 0)
        zeros_dropped = int(np.count_nonzero(zero))
        keep &= ~zero
    # one filter for rejected rows and zeros, slot keys computed on the way
    t = pl.col("t_us")
    if config.hour_of_day:
        slot_key = ((t // _US_PER_H) % 24 + 24) % 24
    else:
        slot_key = t // (cast(int, config.slot_seconds) * _US_PER_S)
    work = work.filter(pl.Series(keep)).select(
        "user",
        "lat",
        "lon",
        slot_key.alias("slot"),
        "value",
        pl.struct("user", "lat", "lon", "t_us", "value").hash().alias("_hash"),
        "_raw_user",
    )

    clock.tick("reject and drop zeros")
    upper = config.upper
    value = work.get_column("value").to_numpy()
    clamped_low = int(np.count_nonzero(value < 0))
    clamped_high = int(np.count_nonzero(value > upper))
    if clamped_low or clamped_high:
        value = np.clip(value, 0.0, upper)

    lat_np = work.get_column("lat").to_numpy()
    lon_np = work.get_column("lon").to_numpy()
    clock.tick("clamp")
    cells = (
        cell_ids_of(lat_np, lon_np, config.resolution) if lat_np.size else np.zeros(0, np.uint64)
    )
    clock.tick("h3 cells")
    records = pl.DataFrame(
        {
            "cell": pl.Series("cell", cells, dtype=pl.UInt64),
            "slot": work.get_column("slot").cast(pl.Int64),
            "user": work.get_column("user"),
            "value": pl.Series("value", value, dtype=pl.Float64),
        }
    )
    any_offset, zones = _zones(frame, tcol)
    return Cleaned(
        records=records,
        rows_read=frame.height,
        labels=tuple(labels),
        reason_counts=counts,
        examples=examples,
        zeros_dropped=zeros_dropped,
        clamped_low=clamped_low,
        clamped_high=clamped_high,
        row_hashes=work.get_column("_hash").to_numpy(),
        any_offset=any_offset,
        zones=zones,
        spellings=ids.spellings(work.get_column("_raw_user"), casefold=config.ids == "casefold"),
    )


def distinct_count(hashes: np.ndarray) -> int:
    """Number of distinct values in a uint64 array.

    >>> distinct_count(np.array([3, 1, 3], dtype=np.uint64))
    2
    """
    return int(pl.Series(hashes).n_unique()) if hashes.size else 0


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
        # polars' hash-based unique, then a sort of the distinct values only (numpy's
        # np.unique was 10x slower on 5·10^6 hashes)
        distinct = np.sort(pl.Series(hashes.astype(np.uint64, copy=False)).unique().to_numpy())
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
                "zeros are dropped; keep them with keep_zeros (--keep-zeros)."
            )

    def report(
        self, *, users: int, hats: int, cells: int, slots: int, duplicates: int
    ) -> PrepReport:
        """The :class:`PrepReport`, given what the aggregation and the row hashes found."""
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


def _prepare_polars(
    frame: pl.DataFrame, columns: ColumnMap, config: PrepConfig, clock: _Clock | None = None
) -> Prepared:
    clock = clock or _Clock(None)
    if frame.height == 0:
        raise HexplorerError("The data has no rows.")
    cleaned = clean_records(frame, columns, config, clock)
    tally = Tally(columns, config)
    tally.add(cleaned)
    tally.check()
    agg = aggregate(cleaned.records)
    clock.tick("aggregate")
    summaries = labelled(agg, config)
    clock.tick("labels, sort, to pandas")
    report = tally.report(
        users=int(agg.get_column("user").n_unique()),
        hats=int(agg.select(pl.struct("cell", "slot").n_unique()).item()),
        cells=int(agg.get_column("cell").n_unique()),
        slots=int(agg.get_column("slot").n_unique()),
        duplicates=cleaned.row_hashes.size - distinct_count(cleaned.row_hashes),
    )
    clock.tick("report")
    return Prepared(summaries=summaries, report=report, config=config, columns=columns)
