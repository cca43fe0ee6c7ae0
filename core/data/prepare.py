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
:func:`aggregate` (the only engine-specific step of the mathematics' input) turns it into
summaries: a DuckDB or Spark engine can replace that one function.

Timestamps may be datetimes (a timezone-aware column is read as the wall-clock time of its own
zone), ISO-like strings (a trailing UTC offset is ignored: the wall-clock time shown is used),
or numbers, read as epoch seconds (UTC wall-clock). Naive times are taken as local wall-clock
time; nothing is converted between zones.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import h3ronpy
import numpy as np
import pandas as pd
import polars as pl
from h3ronpy.vector import coordinates_to_cells

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
        out.extend(self.notes)
        out.append(
            f"{self.records:,} records from {self.users:,} users in {self.hats:,} HATs "
            f"({self.cells:,} cells x {self.slots:,} slots)."
        )
        return out

    @property
    def worth_noting(self) -> bool:
        """Whether preparation rejected, clamped or noticed anything (the CLI then says so)."""
        return bool(self.n_rejected or self.clamped or self.duplicates or self.notes)


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


def _zone_note(frame: pl.DataFrame, col: str) -> str | None:
    """A note when text timestamps mix UTC offsets (or offsets and none): each is read as the
    wall-clock time it shows, so records of different zones share slots by local time."""
    if frame.schema[col] != pl.String:
        return None
    text = frame.get_column(col).str.strip_chars()
    if not text.str.contains(_OFFSET_RE).any():
        return None
    zones = text.drop_nulls().str.extract(_ZONE_RE).unique().to_list()
    if len(zones) < 2:
        return None
    shown = sorted(z if z is not None else "none" for z in zones)
    listed = ", ".join(shown[:5]) + (", ..." if len(shown) > 5 else "")
    return (
        f"Timestamps carry {len(shown)} different UTC offsets ({listed}); each was read as the "
        "wall-clock time it shows, not converted to one zone."
    )


def _check_types(frame: pl.DataFrame, names: tuple[str, ...]) -> None:
    """Refuse columns no record field can come from (lists, structs, binary) in one line."""
    for name in names:
        dtype = frame.schema[name]
        if dtype.is_nested() or dtype in (pl.Binary, pl.Object):
            raise HexplorerError(
                f"Column '{name}' holds {dtype} values; a record field must be text, a number "
                "or a time."
            )


def _prepare_polars(
    frame: pl.DataFrame, columns: ColumnMap, config: PrepConfig, clock: _Clock | None = None
) -> Prepared:
    clock = clock or _Clock(None)
    if frame.height == 0:
        raise HexplorerError("The data has no rows.")
    ucol, latcol, loncol, tcol, vcol = columns.as_tuple()
    _check_types(frame, columns.as_tuple())
    schema = frame.schema
    user = pl.col(ucol).cast(pl.String).str.strip_chars()  # " a" and "a " are one user
    user_missing = user.is_null() | user.str.contains(r"^\s*$")
    lat, lat_missing = _number(latcol, schema[latcol])
    lon, lon_missing = _number(loncol, schema[loncol])
    t_us, t_missing = _time_us(frame, tcol)
    val, val_missing = _number(vcol, schema[vcol])

    reasons = [
        (user_missing, f"missing {ucol}"),
        (lat_missing, f"missing {latcol}"),
        (lat.is_null() | ~lat.is_finite(), f"{latcol} not a number"),
        ((lat < -90) | (lat > 90), f"{latcol} outside [-90, 90]"),
        (lon_missing, f"missing {loncol}"),
        (lon.is_null() | ~lon.is_finite(), f"{loncol} not a number"),
        ((lon < -180) | (lon > 180), f"{loncol} outside [-180, 180]"),
        (t_missing, f"missing {tcol}"),
        (t_us.is_null(), f"{tcol} not {_time_kind(schema[tcol])}"),
        (val_missing, f"missing {vcol}"),
        (val.is_null() | ~val.is_finite(), f"{vcol} not a number"),
    ]
    code: pl.Expr = pl.lit(0, dtype=pl.Int8)
    for i in range(len(reasons) - 1, -1, -1):
        code = pl.when(reasons[i][0]).then(pl.lit(i + 1, dtype=pl.Int8)).otherwise(code)

    work = frame.select(
        user.alias("user"),
        lat.alias("lat"),
        lon.alias("lon"),
        t_us.alias("t_us"),
        val.alias("value"),
        code.alias("_reason"),
    )
    rows_read = frame.height
    clock.tick("parse and check")
    codes = work.get_column("_reason").to_numpy()
    bad = codes != 0
    rejected: dict[str, int] = {}
    examples: list[dict[str, Any]] = []
    if bad.any():
        counts = np.bincount(codes, minlength=len(reasons) + 1)
        order = np.argsort(-counts[1:], kind="stable")
        rejected = {reasons[i][1]: int(counts[i + 1]) for i in order if counts[i + 1] > 0}
        rows = np.flatnonzero(bad)[:_N_EXAMPLES]
        raw_rows = frame.select(pl.all().gather(rows.tolist())).rows(named=True)
        for r, values in zip(rows, raw_rows, strict=True):
            examples.append(
                {
                    "row": int(r),
                    "reason": reasons[codes[r] - 1][1],
                    "values": {k: (None if v is None else str(v)) for k, v in values.items()},
                }
            )
        if bad.all():
            top, top_count = next(iter(rejected.items()))
            example = examples[0]["values"]
            raise HexplorerError(
                f"Every one of the {rows_read:,} rows was rejected; most common reason: {top} "
                f"({top_count:,} rows), e.g. row {examples[0]['row']}: {example}."
            )

    values_all = work.get_column("value").to_numpy()
    keep = ~bad
    zeros_dropped = 0
    if not config.keep_zeros:
        zero = keep & (values_all == 0)
        zeros_dropped = int(np.count_nonzero(zero))
        keep &= ~zero
        if not keep.any():
            raise HexplorerError(
                f"All {rows_read - int(bad.sum()):,} valid rows have {vcol} = 0 and zeros are "
                f"dropped; keep them with keep_zeros (--keep-zeros)."
            )
    # one filter for rejected rows and zeros, slot keys computed on the way
    t = pl.col("t_us")
    if config.hour_of_day:
        slot_key = ((t // _US_PER_H) % 24 + 24) % 24
    else:
        slot_key = t // (cast(int, config.slot_seconds) * _US_PER_S)
    work = work.filter(pl.Series(keep))
    fields = pl.struct("user", "lat", "lon", "t_us", "value").hash()
    duplicates = work.height - int(work.select(fields.n_unique()).item())
    work = work.select("user", "lat", "lon", slot_key.alias("slot"), "value")

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
    cells = _cells(lat_np, lon_np, config.resolution)
    clock.tick("h3 cells")
    records = pl.DataFrame(
        {
            "cell": cells,
            "slot": work.get_column("slot"),
            "user": work.get_column("user"),
            "value": value,
        }
    )
    agg = aggregate(records)
    clock.tick("aggregate")
    summaries = _label(agg, config)
    clock.tick("labels, sort, to pandas")
    report = PrepReport(
        rows_read=rows_read,
        rejected=rejected,
        rejected_examples=tuple(examples),
        zeros_dropped=int(zeros_dropped),
        clamped=clamped_low + clamped_high,
        clamped_low=clamped_low,
        clamped_high=clamped_high,
        records=int(records.height),
        users=int(agg.get_column("user").n_unique()),
        hats=int(agg.select(pl.struct("cell", "slot").n_unique()).item()),
        cells=int(agg.get_column("cell").n_unique()),
        slots=int(agg.get_column("slot").n_unique()),
        upper=upper,
        duplicates=duplicates,
        notes=tuple(n for n in (_zone_note(frame, tcol),) if n is not None),
    )
    clock.tick("report")
    return Prepared(summaries=summaries, report=report, config=config, columns=columns)


def _cells(lat: np.ndarray, lon: np.ndarray, resolution: int) -> np.ndarray:
    """H3 cell ids (uint64) with h3ronpy's vectorised call, split across the machine's cores."""
    n = lat.size
    workers = max(1, min(os.cpu_count() or 1, 8))
    if n < 200_000 or workers == 1:
        return _cells_chunk(lat, lon, resolution)
    bounds = np.linspace(0, n, workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        parts = list(
            pool.map(
                lambda i: _cells_chunk(
                    lat[bounds[i] : bounds[i + 1]], lon[bounds[i] : bounds[i + 1]], resolution
                ),
                range(workers),
            )
        )
    return np.concatenate(parts)


def _cells_chunk(lat: np.ndarray, lon: np.ndarray, resolution: int) -> np.ndarray:
    arr = coordinates_to_cells(
        np.ascontiguousarray(lat, dtype=np.float64),
        np.ascontiguousarray(lon, dtype=np.float64),
        resolution,
    )
    return pl.Series(arr).to_numpy()


def aggregate(records: pl.DataFrame) -> pl.DataFrame:
    """The aggregation engine: clean records -> per (cell, slot, user) count, sum, sum of squares.

    Parameters
    ----------
    records : polars.DataFrame
        Columns ``cell`` (uint64 H3 id), ``slot`` (int64 slot key), ``user`` (str) and
        ``value`` (float64, already clamped into [0, U]).

    Returns
    -------
    polars.DataFrame
        Columns cell, slot, user, m (int64), s (float64), q (float64), one row per group, in
        any order. SPEC section 1, step 5: this is all the mathematics downstream needs, so any
        engine (DuckDB, Spark) producing the same frame can replace this function.
    """
    # Floating-point sums depend on the order of addition, and a parallel group-by adds in a
    # different order on every run. Summing fixed-point integers instead makes s and q exact and
    # identical run to run: values are scaled by a power of two so the largest is < 2**40 (a
    # step of vmax / 2**40, about 6e-11 km/h at U = 65), which leaves room for 2**23 records per
    # (HAT, user) before an int64 could overflow.
    vmax = float(cast(float, records.get_column("value").max()) or 0.0)
    shift_s = _FIXED_BITS - _exponent(vmax)
    shift_q = _FIXED_BITS - _exponent(vmax * vmax)
    value = pl.col("value")
    # the lazy engine's group-by is 2-3x faster than the eager one here (bench_prepare.py)
    agg = (
        records.lazy()
        .group_by(["cell", "slot", "user"])
        .agg(
            pl.len().cast(pl.Int64).alias("m"),
            (value * 2.0**shift_s).round().cast(pl.Int64).sum().alias("s"),
            (value * value * 2.0**shift_q).round().cast(pl.Int64).sum().alias("q"),
        )
        .collect()
    )
    if agg.height and int(agg.get_column("m").max()) >= 2**_SPARE_BITS:  # type: ignore[arg-type]
        raise HexplorerError(
            f"A user has more than {2**_SPARE_BITS:,} records in one HAT; that is beyond this "
            "tool's exact aggregation (use shorter timeslots)."
        )
    return agg.with_columns(
        (pl.col("s").cast(pl.Float64) * 2.0**-shift_s).alias("s"),
        (pl.col("q").cast(pl.Float64) * 2.0**-shift_q).alias("q"),
    )


_FIXED_BITS = 40
_SPARE_BITS = 63 - _FIXED_BITS - 1


def _exponent(x: float) -> int:
    """The smallest e with x < 2**e (0 for x <= 0)."""
    return math.frexp(x)[1] if x > 0 else 0


def _label(agg: pl.DataFrame, config: PrepConfig) -> pd.DataFrame:
    """Integer keys -> H3 strings, slot labels, "CELL/SLOT"; sorted by hat then user_id.

    Sorting happens on the integer keys: H3 strings of one resolution all have 15 lowercase hex
    digits, so their text order is the numeric order of the ids, and slot labels are fixed-width
    (chronological) or "hNN"; the order is therefore the text order of "CELL/SLOT", then user_id.
    """
    agg = agg.sort(["cell", "slot", "user"])
    cell_col = agg.get_column("cell")
    slot_col = agg.get_column("slot")
    cell_ids = cell_col.unique().sort()
    cell_names = pl.Series(h3ronpy.cells_to_string(cell_ids.to_arrow())).cast(pl.String)
    slot_keys = slot_col.unique().sort()
    if config.hour_of_day:
        slot_names = pl.Series([f"h{int(k):02d}" for k in slot_keys.to_list()], dtype=pl.String)
    else:
        seconds = cast(int, config.slot_seconds)  # an absolute slot has a length
        fmt = "%Y-%m-%dT%H:%M" if seconds % 60 == 0 else "%Y-%m-%dT%H:%M:%S"
        slot_names = (slot_keys * (seconds * _US_PER_S)).cast(pl.Datetime("us")).dt.strftime(fmt)
    cell = cell_names.gather(np.searchsorted(cell_ids.to_numpy(), cell_col.to_numpy()))
    slot = slot_names.gather(np.searchsorted(slot_keys.to_numpy(), slot_col.to_numpy()))
    out = pl.DataFrame(
        {
            "hat": cell + "/" + slot,
            "cell": cell,
            "slot": slot,
            "user_id": agg.get_column("user"),
            "m": agg.get_column("m").cast(pl.Int64),
            "s": agg.get_column("s").cast(pl.Float64),
            "q": agg.get_column("q").cast(pl.Float64),
        }
    )
    return out.to_pandas()
