"""SPEC section 1 steps 1-4 on one batch of raw records: reject, drop zeros, clamp, H3 cell and
timeslot (:func:`clean_records`), row by row, so any engine can run it on pieces of a file.

What is not row by row (the count of repeated rows, the time-zone note) leaves as per-row
hashes and per-batch zones for :mod:`core.data.tally` to add up over the whole input.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import polars as pl

from core.data import ids
from core.data.cells import cells_of_pieces, kept_cells, workers
from core.data.config import ColumnMap, PrepConfig
from core.errors import HexplorerError

_US_PER_S = 1_000_000
_US_PER_H = 3_600 * _US_PER_S
_MAX_EPOCH_S = 1e11  # about year 5138: larger "epoch seconds" are not times
_N_EXAMPLES = 5
_EARLY_ROWS = 200_000  # batches from which the H3 cells are found from the start
_OFFSET_RE = r"(?:[Zz]|\s*(?:UTC|GMT)?[+-]\d{2}:?\d{2})$"

__all__ = ["Cleaned", "check_types", "clean_records", "zone_note"]

#: Seeds of the canonical ids' hashes and of the rows' hashes (:func:`_row_hashes`).
_USER_SEED, _ROW_SEED = 0, 1


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
        The kept records: ``cell`` (uint64 H3 id), ``slot`` (int64 slot key), ``user`` (the
        canonical id, a polars Enum of the batch's ids in text order: its integer codes are what
        :func:`core.data.aggregation.aggregate_fixed` groups; cast it to text when a text
        column is needed), ``value`` (float64, clamped into [0, U]).
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
        with equal hashes repeat each other (:attr:`PrepReport.duplicates`). The hash is polars'
        row hash of the five fields with a fixed seed (:func:`_row_hashes`), so the same row
        gives the same hash in any batch and any process of one polars version.
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
    check_types(frame.schema, columns.as_tuple())
    # the H3 cells (both cores, most of a batch's time) of float coordinates are found from the
    # start, piece by piece in worker threads, while this thread checks and rejects rows and
    # does the rest of the batch's bookkeeping; the rejected rows' cells are then dropped
    with workers() as pool:
        return _cleaned(frame, columns, config, clock, row_offset, pool)


def _cleaned(
    frame: pl.DataFrame,
    columns: ColumnMap,
    config: PrepConfig,
    clock: _Clock,
    row_offset: int,
    pool: ThreadPoolExecutor,
) -> Cleaned:
    """:func:`clean_records`' work, the H3 cells found by ``pool``'s threads."""
    ucol, latcol, loncol, tcol, vcol = columns.as_tuple()
    early = None
    if frame.height >= _EARLY_ROWS and all(frame.schema[c].is_float() for c in (latcol, loncol)):
        early = cells_of_pieces(
            frame.get_column(latcol), frame.get_column(loncol), config.resolution, pool
        )
    labels = _reasons(columns, frame.schema[tcol])
    schema = frame.schema
    # the ids are canonicalised once per distinct raw id (core.data.ids: a function of the raw
    # value, so the rows get what the whole column would), then reach the rows by code
    distinct, user_codes = _distinct_codes(frame.get_column(ucol))
    canon = ids.canonical(distinct, casefold=config.ids == "casefold")  # " a" and "a" are one
    user_missing = pl.lit(
        (canon.is_null() | canon.str.contains(r"^\s*$")).gather(user_codes), dtype=pl.Boolean
    )
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
    # the first failed check's number; else, for a zero value that is dropped, one past the
    # checks (one Int8 column says what happens to every row); else 0
    zero_code = len(checks) + 1
    code: pl.Expr = pl.lit(0, dtype=pl.Int8)
    if not config.keep_zeros:
        code = pl.when(val == 0).then(pl.lit(zero_code, dtype=pl.Int8)).otherwise(code)
    for i in range(len(checks) - 1, -1, -1):
        code = pl.when(checks[i]).then(pl.lit(i + 1, dtype=pl.Int8)).otherwise(code)

    work = frame.select(
        lat.alias("lat"),
        lon.alias("lon"),
        t_us.alias("t_us"),
        val.alias("value"),
        code.alias("_reason"),
    )
    clock.tick("parse and check")
    codes = work.get_column("_reason").to_numpy()
    counts = np.array([np.count_nonzero(codes == c) for c in range(zero_code + 1)], np.int64)
    zeros_dropped = int(counts[zero_code])
    counts[0] += counts[zero_code]  # index 0: the rows no check rejected
    counts = counts[:zero_code]
    examples: list[dict[str, Any]] = []
    if counts[1:].any():
        bad = (codes != 0) & (codes != zero_code)
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

    keep = codes == 0
    # one filter for rejected rows and zeros, slot keys computed on the way
    t = pl.col("t_us")
    if config.hour_of_day:
        slot_key = ((t // _US_PER_H) % 24 + 24) % 24
    else:
        slot_key = t // (cast(int, config.slot_seconds) * _US_PER_S)
    kept_codes = user_codes.filter(pl.Series(keep))
    arrays = _kept([work.get_column(c) for c in ("lat", "lon", "t_us", "value")], keep)
    del work
    clock.tick("reject and drop zeros")
    # whose cells are found, and which of their rows are kept
    if early is not None:
        pieces, of_rows = early, keep
    else:  # not found from the start: the kept rows' cells, found now, in pieces
        kept_lat, kept_lon = pl.Series(arrays["lat"]), pl.Series(arrays["lon"])
        pieces = cells_of_pieces(kept_lat, kept_lon, config.resolution, pool)
        of_rows = np.ones(kept_lat.len(), dtype=bool)
    kept = pl.DataFrame(arrays)  # over the same memory
    row_hashes = _row_hashes(kept, canon.hash(seed=_USER_SEED).gather(kept_codes))
    slot = kept.select(slot_key.cast(pl.Int64).alias("slot")).to_series()
    del kept  # nothing reads it again: the values are clamped in their own array below
    upper = config.upper
    value = arrays["value"]
    clamped_low = int(np.count_nonzero(value < 0))
    clamped_high = int(np.count_nonzero(value > upper))
    if clamped_low or clamped_high:
        np.clip(value, 0.0, upper, out=value)
    user = _as_enum(canon, kept_codes)
    any_offset, zones = _zones(frame, tcol)
    spellings = ids.spellings(
        distinct.filter(_present(kept_codes, distinct.len())),
        casefold=config.ids == "casefold",
    )
    clock.tick("clamp, ids, hashes")
    cells = kept_cells(pieces, of_rows, pool)
    del pieces, early  # every row's cells: not held while the records are made
    clock.tick("h3 cells")
    records = pl.DataFrame(
        {
            "cell": pl.Series("cell", cells, dtype=pl.UInt64),
            "slot": slot,
            "user": user,
            "value": pl.Series("value", value, dtype=pl.Float64),
        }
    )
    return Cleaned(
        records=records,
        rows_read=frame.height,
        labels=tuple(labels),
        reason_counts=counts,
        examples=examples,
        zeros_dropped=zeros_dropped,
        clamped_low=clamped_low,
        clamped_high=clamped_high,
        row_hashes=row_hashes,
        any_offset=any_offset,
        zones=zones,
        spellings=spellings,
    )


def _kept(columns: list[pl.Series], keep: np.ndarray) -> dict[str, np.ndarray]:
    """The values of each column where ``keep``, by name (numpy arrays of one type each, nulls
    read as 0: the rows they are in are not kept), compacted chunk by chunk straight into one
    new array per column: a polars filter, then ``to_numpy`` of its chunks, would copy them
    twice. When the columns' chunks share their bounds (a batch's usually do), the kept
    positions of each chunk are found once for all of them (``np.take`` by them;
    ``np.compress`` would find them again for every column, in a fresh buffer each time).

    >>> a = pl.concat([pl.Series("a", [1.0, None]), pl.Series("a", [3.0, 4.0])], rechunk=False)
    >>> b = pl.Series("b", [5, 6, 7, 8])
    >>> keep = np.array([True, False, False, True])
    >>> {k: v.tolist() for k, v in _kept([a, b], keep).items()}
    {'a': [1.0, 4.0], 'b': [5, 8]}
    >>> {k: v.tolist() for k, v in _kept([a, b.rechunk()], keep).items()}
    {'a': [1.0, 4.0], 'b': [5, 8]}
    """
    total = int(np.count_nonzero(keep))
    chunks = [column.get_chunks() for column in columns]
    sizes = [[chunk.len() for chunk in part] for part in chunks]
    groups = [chunks] if all(s == sizes[0] for s in sizes) else [[part] for part in chunks]
    out: dict[str, np.ndarray] = {}
    for group in groups:  # columns whose chunks share their bounds
        start = done = 0
        for pieces in zip(*group, strict=True):
            stop = start + pieces[0].len()
            rows = np.flatnonzero(keep[start:stop])
            for piece in pieces:
                values = (piece.fill_null(0) if piece.null_count() else piece).to_numpy()
                if piece.name not in out:
                    out[piece.name] = np.empty(total, dtype=values.dtype)
                np.take(values, rows, out=out[piece.name][done : done + rows.size], mode="clip")
            start, done = stop, done + rows.size
    for column in columns:
        if column.name not in out:  # no chunks
            out[column.name] = column.to_numpy()[keep]
    return out


def _distinct_codes(raw: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(the distinct values of ``raw``, nulls included, and each row's index among them as
    UInt32), so what depends only on the value is computed once per distinct value.

    Found through 64-bit hashes (a fraction of a text group-by), then checked: if two distinct
    values ever shared a hash, an exact join gives the codes instead.

    >>> d, c = _distinct_codes(pl.Series(["b", None, "a", "b"]))
    >>> d.gather(c).to_list()
    ['b', None, 'a', 'b']
    """
    if isinstance(raw.dtype, pl.Categorical):
        return _category_codes(raw)
    hashes = raw.hash()
    first = hashes.arg_unique()
    distinct = raw.gather(first)
    codes = hashes.replace_strict(
        hashes.gather(first), pl.int_range(first.len(), eager=True, dtype=pl.UInt32)
    )
    if bool(distinct.gather(codes).eq_missing(raw).all()):
        return distinct, codes
    return _exact_codes(raw)  # pragma: no cover - a 64-bit hash collision between two ids


def _category_codes(raw: pl.Series) -> tuple[pl.Series, pl.Series]:
    """:func:`_distinct_codes` of a Categorical column (the streaming reader's user ids, read
    from Parquet's dictionary pages at almost no cost): the distinct values as text and each
    row's index among them, from the categories' own integer codes (no hash of the text).

    >>> raw = pl.Series(["b", None, "a", "b"], dtype=pl.Categorical)
    >>> d, c = _category_codes(raw)
    >>> d.dtype, d.gather(c).to_list()
    (String, ['b', None, 'a', 'b'])
    """
    distinct = raw.unique().drop_nulls()
    categories = distinct.to_physical().to_numpy()
    lookup = np.zeros(int(categories.max()) + 2 if categories.size else 1, dtype=np.uint32)
    lookup[categories] = np.arange(categories.size, dtype=np.uint32)
    text = distinct.cast(pl.String)
    physical = raw.to_physical()
    if physical.null_count():  # the nulls' code: one past the values, null appended to them
        lookup[-1] = categories.size
        text = text.append(pl.Series([None], dtype=pl.String))
        physical = physical.fill_null(lookup.size - 1)
    return text, pl.Series(raw.name, lookup[physical.to_numpy()], dtype=pl.UInt32)


def _exact_codes(raw: pl.Series) -> tuple[pl.Series, pl.Series]:
    """:func:`_distinct_codes` by an exact join (the way out of a hash collision).

    >>> d, c = _exact_codes(pl.Series(["b", None, "a", "b"]))
    >>> d.gather(c).to_list(), d.len()
    (['b', None, 'a', 'b'], 3)
    """
    distinct = raw.unique()
    codes = (
        raw.to_frame("v")
        .join(
            distinct.to_frame("v").with_row_index("c"),
            on="v",
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .get_column("c")
    )
    return distinct, codes


def _row_hashes(kept: pl.DataFrame, user_hash: pl.Series) -> np.ndarray:
    """One 64-bit hash per row of (user, lat, lon, t_us, value) of the kept records (``kept``
    holds lat, lon, t_us and value; ``user_hash`` is the hash of each row's canonical id): rows
    that repeat each other hash alike in any batch and any process of one polars version (a
    fixed seed; polars hashes -0.0 as 0.0, so they compare as numbers do). Polars'
    ``hash_rows`` combines the columns' hashes in one buffer: no temporary per column.

    >>> kept = pl.DataFrame({"lat": [1.0, 1.0, -0.0, 0.0], "lon": [2.0, 2.0, 0.0, 0.0],
    ...     "t_us": [5, 5, 5, 5], "value": [3.0, 3.0, 3.0, 3.0]})
    >>> h = _row_hashes(kept, pl.Series([7, 7, 7, 7], dtype=pl.UInt64))
    >>> bool(h[0] == h[1]), bool(h[0] == h[2]), bool(h[2] == h[3])
    (True, False, True)
    """
    frame = pl.DataFrame(
        [user_hash.alias("user"), *(kept.get_column(c) for c in ("lat", "lon", "t_us", "value"))]
    )
    return frame.hash_rows(seed=_ROW_SEED).to_numpy()


def _as_enum(canon: pl.Series, codes: pl.Series) -> pl.Series:
    """The canonical ids ``canon[codes]`` as a polars Enum over their distinct values (sorted):
    integer codes in text order, the text made only once per id.

    >>> _as_enum(pl.Series(["b", "a", "b"]), pl.Series([0, 2, 1], dtype=pl.UInt32)).to_list()
    ['b', 'b', 'a']
    """
    ids_sorted = canon.drop_nulls().unique().sort()
    rank = ids_sorted.search_sorted(canon.fill_null(""), side="left").to_numpy()
    ranks = rank.astype(np.uint32)[codes.to_numpy()]
    return pl.Series("user", ranks, dtype=pl.UInt32).cat.to(pl.Enum(ids_sorted))


def _present(codes: pl.Series, n: int) -> pl.Series:
    """Whether each of ``n`` distinct values has a row among ``codes``."""
    return pl.Series(np.bincount(codes.to_numpy(), minlength=n) > 0)
