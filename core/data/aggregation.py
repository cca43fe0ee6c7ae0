"""SPEC section 1, steps 4-5 after cleaning: H3 cells, the aggregation per (cell, slot, user)
to m, s, q in exact fixed-point sums, and the text labels of the summaries.

:func:`aggregate` is the one engine-specific step: the Spark and streaming engines
(:mod:`core.data.spark`, :mod:`core.data.stream`) reuse its fixed-point pieces
(:func:`fixed_shifts`, :func:`fixed_value`, :func:`aggregate_fixed`, :func:`from_fixed`) and the
labelling (:func:`labels_for`, :func:`label_frame`), so every engine gives the same numbers bit
for bit. Cleaning (steps 1-3) lives in :mod:`core.data.prepare`.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, cast

import h3ronpy
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from h3ronpy.vector import coordinates_to_cells

from core.data.config import PrepConfig
from core.data.packing import _packed, _sums_by_sort, _unpacked
from core.errors import HexplorerError

if TYPE_CHECKING:  # pandas only for the return type: `hexplorer prepare` never imports it
    import pandas as pd

__all__ = [
    "aggregate",
    "aggregate_fixed",
    "cell_ids_of",
    "cell_ids_one_thread",
    "check_most_records",
    "combine_fixed",
    "fixed_shifts",
    "fixed_value",
    "from_fixed",
    "label_frame",
    "label_table",
    "labelled",
    "labels_for",
    "sorted_counts",
]

_US_PER_S = 1_000_000


def cell_ids_of(lat: np.ndarray, lon: np.ndarray, resolution: int) -> np.ndarray:
    """H3 cell ids (uint64) with h3ronpy's vectorised call, split across the machine's cores."""
    n = lat.size
    workers = max(1, min(os.cpu_count() or 1, 8))
    if n < 200_000 or workers == 1:
        return cell_ids_one_thread(lat, lon, resolution)
    bounds = np.linspace(0, n, workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        parts = list(
            pool.map(
                lambda i: cell_ids_one_thread(
                    lat[bounds[i] : bounds[i + 1]], lon[bounds[i] : bounds[i + 1]], resolution
                ),
                range(workers),
            )
        )
    return np.concatenate(parts)


def cell_ids_one_thread(lat: np.ndarray, lon: np.ndarray, resolution: int) -> np.ndarray:
    """H3 cell ids (uint64) with h3ronpy's vectorised call, on the calling thread."""
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
        Columns cell, slot, user, m (int64), s (float64), q (float64), one row per group,
        sorted by (cell, slot, user) (the summaries' order). SPEC section 1, step 5: this is all the mathematics downstream needs, so any
        engine (DuckDB, Spark) producing the same frame can replace this function.
    """
    # Floating-point sums depend on the order of addition, and a parallel group-by adds in a
    # different order on every run. Summing fixed-point integers instead makes s and q exact and
    # identical run to run: values are scaled by a power of two so the largest is < 2**40 (a
    # step of vmax / 2**40, about 6e-11 km/h at U = 65), which leaves room for 2**23 records per
    # (HAT, user) before an int64 could overflow. The same integers summed in any order, by any
    # engine, in any number of pieces, give the same result bit for bit.
    vmax = float(cast(float, records.get_column("value").max()) or 0.0)
    shift_s, shift_q = fixed_shifts(vmax)
    value = pl.col("value")
    sums = [
        pl.len().cast(pl.Int64).alias("m"),
        fixed_value(value, shift_s).sum().alias("s"),
        fixed_value(value * value, shift_q).sum().alias("q"),
    ]
    agg = _grouped(records, sums, sort=True).collect()
    return from_fixed(agg, shift_s, shift_q)


def fixed_shifts(vmax: float) -> tuple[int, int]:
    """Binary exponents of the fixed-point sums of values and squares, given the largest value.

    >>> fixed_shifts(65.0), fixed_shifts(0.0)
    ((33, 27), (40, 40))
    """
    return _FIXED_BITS - _exponent(vmax), _FIXED_BITS - _exponent(vmax * vmax)


def fixed_value(value: pl.Expr, shift: int) -> pl.Expr:
    """``round(value * 2**shift)`` as Int64: one record's fixed-point contribution."""
    return (value * 2.0**shift).round().cast(pl.Int64)


def aggregate_fixed(
    records: pl.LazyFrame | pl.DataFrame, shift_s: int, shift_q: int, *, text_ids: bool = True
) -> pl.LazyFrame:
    """Per (cell, slot, user): m, and the fixed-point integer sums s, q (see :func:`aggregate`).

    Columns cell, slot, user, m, s, q, one row per group. The three keys are packed into one
    64-bit integer first (:func:`_packed`); when the row numbers fit beside it, the rows are
    summed by one sort of the key and a sum over each run of equal keys
    (:func:`_sums_by_sort`: no hash table, and the groups come out sorted by (cell, slot,
    user), the summaries' order); otherwise polars groups the packed key (or the three
    columns), in any order. ``text_ids=False`` leaves the users as a polars Enum of their
    sorted ids (what :func:`combine_fixed` merges without touching the text).
    """
    return _aggregated(records, shift_s, shift_q, text_ids=text_ids).lazy()


def _aggregated(
    records: pl.LazyFrame | pl.DataFrame, shift_s: int, shift_q: int, *, text_ids: bool
) -> pl.DataFrame:
    """:func:`aggregate_fixed`, collected."""
    frame = records.collect() if isinstance(records, pl.LazyFrame) else records
    if frame.get_column("value").null_count() == 0:
        by_sort = _sums_by_sort(frame, text_ids=text_ids, shifts=(shift_s, shift_q))
        if by_sort is not None:
            return by_sort
    value = pl.col("value")
    sums = [
        pl.len().cast(pl.Int64).alias("m"),
        fixed_value(value, shift_s).sum().alias("s"),
        fixed_value(value * value, shift_q).sum().alias("q"),
    ]
    return _grouped(frame, sums, text_ids=text_ids).collect()


def combine_fixed(
    parts: list[pl.DataFrame], *, sort: bool = False, text_ids: bool = True
) -> pl.DataFrame:
    """Partial :func:`aggregate_fixed` results summed per (cell, slot, user): the same integers
    as aggregating their records at once (integer sums in any grouping); with ``sort``, sorted
    by (cell, slot, user) on the packed key (the order of the summaries file). Parts whose
    users are Enums (``text_ids=False``) are merged on their codes, through the union of
    their ids. One part already in that order (as :func:`aggregate_fixed` gives it) is
    returned as it is."""
    if len(parts) == 1 and not sort:
        return parts[0]
    if len(parts) == 1 and _in_key_order(parts[0], text_ids=text_ids):
        return parts[0]
    whole = _one_enum(parts)
    if sort:
        merged = _sums_by_sort(whole, text_ids=text_ids)
        if merged is not None:
            return merged
    sums = [pl.col("m").sum(), pl.col("s").sum(), pl.col("q").sum()]
    return _grouped(whole, sums, sort, text_ids=text_ids).collect()


def _in_key_order(frame: pl.DataFrame, *, text_ids: bool) -> bool:
    """Whether the rows are strictly ascending in (cell, slot, user) and the users are text
    (``text_ids``) or else an Enum of sorted ids (compared by code): a few vector comparisons,
    no sort.

    >>> f = pl.DataFrame({"cell": [1, 1, 2], "slot": [5, 5, 0], "user": ["a", "b", "a"]})
    >>> _in_key_order(f, text_ids=True), _in_key_order(f.reverse(), text_ids=True)
    (True, False)
    """
    user = frame.get_column("user")
    if isinstance(user.dtype, pl.Enum) and not text_ids:
        if not pl.Series(user.dtype.categories).is_sorted():
            return False
        user = user.to_physical()
    elif user.dtype != pl.String or not text_ids:
        return False
    if frame.height < 2:
        return True
    cell, slot = frame.get_column("cell"), frame.get_column("slot")
    later, same = [], []
    for col in (cell, slot, user):
        a, b = col.slice(1), col.slice(0, frame.height - 1)
        later.append((a > b).to_numpy())
        same.append((a == b).to_numpy())
    ascending = later[0] | (same[0] & (later[1] | (same[1] & later[2])))
    return bool(ascending.all())


def _one_enum(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """``parts`` concatenated; users that are Enums of different ids recoded to one Enum of
    the union of their ids (sorted), by small lookup tables (no text per row)."""
    dtypes = [part.schema["user"] for part in parts]
    if not all(isinstance(d, pl.Enum) for d in dtypes) or len({str(d) for d in dtypes}) == 1:
        if any(isinstance(d, pl.Enum) for d in dtypes) and len({str(d) for d in dtypes}) > 1:
            parts = [p.with_columns(pl.col("user").cast(pl.String)) for p in parts]
        return pl.concat(parts, rechunk=False)
    ids = [pl.Series(cast(pl.Enum, d).categories) for d in dtypes]
    union = pl.concat(ids).unique().sort()
    codes = [
        union.search_sorted(i).to_numpy().astype(np.uint32)[p.get_column("user").to_physical()]
        for i, p in zip(ids, parts, strict=True)
    ]
    user = pl.Series("user", np.concatenate(codes), dtype=pl.UInt32).cat.to(pl.Enum(union))
    whole = pl.concat([p.drop("user") for p in parts], rechunk=True)
    return whole.insert_column(2, user)


_KEYS = ["cell", "slot", "user"]


def _grouped(
    records: pl.LazyFrame | pl.DataFrame,
    sums: list[pl.Expr],
    sort: bool = False,
    *,
    text_ids: bool = True,
) -> pl.LazyFrame:
    """``group_by(cell, slot, user).agg(sums)``, on one packed integer key when they fit;
    ``sort``: rows sorted by (cell, slot, user) (the packed key's order: the user codes are
    ranks in the ids' text order)."""
    frame = records.collect() if isinstance(records, pl.LazyFrame) else records
    packed = _packed(frame)
    if packed is None:  # the lazy engine's group-by is 2-3x faster than the eager one
        text = frame.with_columns(pl.col("user").cast(pl.String))
        out = text.lazy().group_by(_KEYS).agg(sums)
        return out.sort(_KEYS) if sort else out
    key, decode, bits = packed
    query = frame.lazy().with_columns(pl.Series("_key", key)).group_by("_key").agg(sums)
    agg = (query.sort("_key") if sort else query).collect()
    keys = _unpacked(agg.get_column("_key").to_numpy(), decode, bits, text_ids)
    return pl.concat([keys, agg.drop("_key")], how="horizontal").lazy()


def from_fixed(agg: pl.DataFrame, shift_s: int, shift_q: int) -> pl.DataFrame:
    """Fixed-point sums back to float64 (exact: a power-of-two scale); checks the m limit."""
    if agg.height:
        check_most_records(int(agg.get_column("m").max()))  # type: ignore[arg-type]
    return agg.with_columns(
        (pl.col("s").cast(pl.Float64) * 2.0**-shift_s).alias("s"),
        (pl.col("q").cast(pl.Float64) * 2.0**-shift_q).alias("q"),
    )


_FIXED_BITS = 40
_SPARE_BITS = 63 - _FIXED_BITS - 1


def check_most_records(m: int) -> None:
    """Refuse (one line) a user with more records in one HAT than the fixed-point sums hold."""
    if m >= 2**_SPARE_BITS:
        raise HexplorerError(
            f"A user has more than {2**_SPARE_BITS:,} records in one HAT; that is beyond this "
            "tool's exact aggregation (use shorter timeslots)."
        )


def _exponent(x: float) -> int:
    """The smallest e with x < 2**e (0 for x <= 0)."""
    return math.frexp(x)[1] if x > 0 else 0


def sorted_counts(agg: pl.DataFrame) -> dict[str, int]:
    """Users, HATs, cells and slots of aggregated rows sorted by (cell, slot, user) (HATs and
    cells by runs of the sorted keys).

    >>> agg = pl.DataFrame({"cell": [1, 1, 2], "slot": [0, 5, 0], "user": ["a", "a", "b"]})
    >>> sorted_counts(agg)
    {'users': 2, 'hats': 3, 'cells': 2, 'slots': 2}
    """
    cells = agg.get_column("cell").to_numpy()
    slots = agg.get_column("slot").to_numpy()
    new_cell = cells[1:] != cells[:-1]
    return {
        "users": _distinct_small(agg.get_column("user")),
        "hats": int(agg.height > 0) + int(np.count_nonzero(new_cell | (slots[1:] != slots[:-1]))),
        "cells": int(agg.height > 0) + int(np.count_nonzero(new_cell)),
        "slots": _distinct_small(agg.get_column("slot")),
    }


def _distinct_small(column: pl.Series) -> int:
    """Distinct values of a column, by counting when they are codes of an Enum or integers in
    a range no wider than the column is long (one pass, no hash table, no sort); else polars'
    ``n_unique``.

    >>> _distinct_small(pl.Series([5, 3, 5, 9])), _distinct_small(pl.Series(["a", "b", "a"]))
    (3, 2)
    """
    if column.len() == 0 or column.null_count():
        return int(column.n_unique())
    if isinstance(column.dtype, pl.Enum):
        return int(np.count_nonzero(np.bincount(column.to_physical().to_numpy())))
    if column.dtype.is_integer():
        low, high = int(cast(int, column.min())), int(cast(int, column.max()))
        if high - low <= column.len() and -(2**62) < low and high < 2**62:
            offsets = column.to_numpy().astype(np.int64, copy=False) - low
            return int(np.count_nonzero(np.bincount(offsets, minlength=high - low + 1)))
    return int(column.n_unique())


def labelled(agg: pl.DataFrame, config: PrepConfig, *, presorted: bool = False) -> pd.DataFrame:
    """Integer keys -> H3 strings, slot labels, "CELL/SLOT"; sorted by hat then user_id
    (``presorted``: ``agg`` is sorted by (cell, slot, user) already, as :func:`aggregate`
    gives it).

    Sorting happens on the integer keys: H3 strings of one resolution all have 15 lowercase hex
    digits, so their text order is the numeric order of the ids, and slot labels are fixed-width
    (chronological) or "hNN"; the order is therefore the text order of "CELL/SLOT", then user_id.
    """
    if not presorted:
        agg = agg.sort(["cell", "slot", "user"])
    return label_frame(agg, *labels_for(agg, config)).to_pandas()


def labels_for(
    agg: pl.DataFrame, config: PrepConfig
) -> tuple[np.ndarray, pl.Series, np.ndarray, pl.Series]:
    """The text of every cell id and slot key in ``agg``: (cell ids, names, slot keys, names)."""
    cell_ids = agg.get_column("cell").unique().sort()
    cell_names = pl.Series(h3ronpy.cells_to_string(cell_ids.to_arrow())).cast(pl.String)
    slot_keys = agg.get_column("slot").unique().sort()
    if config.hour_of_day:
        slot_names = pl.Series([f"h{int(k):02d}" for k in slot_keys.to_list()], dtype=pl.String)
    else:
        seconds = cast(int, config.slot_seconds)  # an absolute slot has a length
        fmt = "%Y-%m-%dT%H:%M" if seconds % 60 == 0 else "%Y-%m-%dT%H:%M:%S"
        slot_names = (slot_keys * (seconds * _US_PER_S)).cast(pl.Datetime("us")).dt.strftime(fmt)
    return cell_ids.to_numpy(), cell_names, slot_keys.to_numpy(), slot_names


def label_frame(
    agg: pl.DataFrame,
    cell_ids: np.ndarray,
    cell_names: pl.Series,
    slot_keys: np.ndarray,
    slot_names: pl.Series,
) -> pl.DataFrame:
    """Rows of ``agg`` (in their order) with text labels: the summary columns."""
    # labels once per run of equal (cell, slot) (rows come sorted by HAT), then gathered
    cells = agg.get_column("cell").to_numpy()
    slots = agg.get_column("slot").to_numpy()
    new = np.ones(cells.size, dtype=bool)
    new[1:] = (cells[1:] != cells[:-1]) | (slots[1:] != slots[:-1])
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    cell_runs = cell_names.gather(np.searchsorted(cell_ids, cells[starts]))
    slot_runs = slot_names.gather(np.searchsorted(slot_keys, slots[starts]))
    hat = (cell_runs + "/" + slot_runs).gather(run)
    cell, slot = cell_runs.gather(run), slot_runs.gather(run)
    return pl.DataFrame(
        {
            "hat": hat,
            "cell": cell,
            "slot": slot,
            "user_id": agg.get_column("user").cast(pl.String),
            "m": agg.get_column("m").cast(pl.Int64),
            "s": agg.get_column("s").cast(pl.Float64),
            "q": agg.get_column("q").cast(pl.Float64),
        }
    )


def label_table(
    agg: pl.DataFrame,
    cell_ids: np.ndarray,
    cell_names: pl.Series,
    slot_keys: np.ndarray,
    slot_names: pl.Series,
) -> pa.Table:
    """:func:`label_frame` as the Arrow table a summaries file's writer takes
    (:data:`core.data.schema.WRITTEN`): the text columns as dictionaries of this table's
    distinct labels (each made once, for a run of one HAT, a cell, a slot or a user) with an
    index per row, ``m`` int64 and ``s, q`` float64 over the same memory. Rows come sorted by
    (cell, slot), so a run is one HAT and a cell's runs are adjacent; rows in another order
    get their dictionaries by hashing (a Parquet dictionary holds distinct values).

    >>> agg = pl.DataFrame({"cell": [7, 7, 9], "slot": [1, 1, 2], "user": ["a", "b", "a"],
    ...     "m": [1, 2, 3], "s": [1.0, 2.0, 3.0], "q": [1.0, 4.0, 9.0]},
    ...     schema_overrides={"cell": pl.UInt64})
    >>> labels = (np.array([7, 9], np.uint64), pl.Series(["c7", "c9"]), np.array([1, 2]),
    ...     pl.Series(["s1", "s2"]))
    >>> label_table(agg, *labels).to_pylist()[1]
    {'hat': 'c7/s1', 'cell': 'c7', 'slot': 's1', 'user_id': 'b', 'm': 2, 's': 2.0, 'q': 4.0}
    """
    cells = agg.get_column("cell").to_numpy()
    slots = agg.get_column("slot").to_numpy()
    new = np.ones(cells.size, dtype=bool)
    new[1:] = (cells[1:] != cells[:-1]) | (slots[1:] != slots[:-1])
    starts = np.flatnonzero(new)
    run = np.cumsum(new, dtype=np.int32) - 1
    run_cells, run_slots = cells[starts], slots[starts]
    new_cell = np.ones(starts.size, dtype=bool)
    new_cell[1:] = run_cells[1:] != run_cells[:-1]
    cell_of_run = np.cumsum(new_cell, dtype=np.int32) - 1
    distinct_cells = run_cells[new_cell]
    slot_used, slot_of_run = np.unique(np.searchsorted(slot_keys, run_slots), return_inverse=True)
    cell_text = cell_names.gather(np.searchsorted(cell_ids, distinct_cells))
    slot_text = slot_names.gather(slot_used)
    hat_text = cell_text.gather(cell_of_run) + "/" + slot_text.gather(slot_of_run)
    in_order = bool(np.all(distinct_cells[1:] > distinct_cells[:-1])) and bool(
        np.all((run_slots[1:] > run_slots[:-1]) | new_cell[1:])
    )
    columns = {
        "hat": _dictionary(run, hat_text, in_order),
        "cell": _dictionary(cell_of_run[run], cell_text, in_order),
        "slot": _dictionary(slot_of_run.astype(np.int32)[run], slot_text, True),
        "user_id": _users(agg.get_column("user")),
        "m": _arrow_numbers(agg.get_column("m").cast(pl.Int64).to_numpy()),
        "s": _arrow_numbers(agg.get_column("s").cast(pl.Float64).to_numpy()),
        "q": _arrow_numbers(agg.get_column("q").cast(pl.Float64).to_numpy()),
    }
    return pa.table(columns)


def _dictionary(indices: np.ndarray, labels: pl.Series, distinct: bool) -> pa.DictionaryArray:
    """``labels[indices]`` as an Arrow dictionary; ``distinct``: no label repeats (else the
    rows' text is hashed into a dictionary that does not)."""
    if distinct:
        return pa.DictionaryArray.from_arrays(_arrow_numbers(indices), _arrow_text(labels))
    dense = _arrow_text(labels).take(_arrow_numbers(indices))
    return pc.dictionary_encode(dense)


def _users(user: pl.Series) -> pa.DictionaryArray:
    """User ids as a dictionary of the ids present: an Enum's sorted ids by code (its
    categories are distinct; only those these rows hold are kept), other text by hashing."""
    if not isinstance(user.dtype, pl.Enum):
        return pc.dictionary_encode(_arrow_text(user.cast(pl.String)))
    codes = user.to_physical().to_numpy()
    present = np.zeros(len(user.dtype.categories), dtype=bool)
    present[codes] = True
    compact = np.cumsum(present, dtype=np.int32) - 1
    ids = _arrow_text(pl.Series(user.dtype.categories))
    return pa.DictionaryArray.from_arrays(
        _arrow_numbers(compact[codes]), ids.take(_arrow_numbers(np.flatnonzero(present)))
    )


def _arrow_numbers(values: np.ndarray) -> pa.Array:
    """A numpy array of numbers as an Arrow array over the same memory. (``pa.array`` of a
    numpy array imports pandas to ask whether it is a pandas object: half a second of
    ``hexplorer prepare``, which otherwise never needs pandas.)

    >>> _arrow_numbers(np.array([3, 1], dtype=np.int64)).to_pylist()
    [3, 1]
    """
    values = np.ascontiguousarray(values)
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, values.size, [None, pa.py_buffer(values)])


def _arrow_text(series: pl.Series) -> pa.Array:
    """A polars text column as one Arrow ``string`` array."""
    out = series.to_arrow().cast(pa.string())
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out
