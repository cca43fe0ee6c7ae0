"""Raw records -> per-HAT, per-user summaries (m, s, q): SPEC section 1, in its order.

1. reject and count rows with a missing/unparseable field or coordinates out of range;
2. drop zero values unless ``keep_zeros``;
3. clamp values into [0, U] and count the clamped ones (negative values become 0);
4. H3 cell (v4, 15-hex-digit strings) at the chosen resolution and a timeslot, either absolute
   ``floor(timestamp, slot)`` (label ``"2024-03-05T08:00"``) or hour-of-day pooled over days
   (``"h08"``);
5. aggregate per (cell, slot, user) to the record count m, the sum s and the sum of squares q.

Steps 1-4 run in :func:`core.data.clean.clean_records` (one batch, row by row), the data report
is added up over batches in :mod:`core.data.tally`; this module holds the in-memory entry points.
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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from core.data.aggregation import aggregate, labelled, sorted_counts
from core.data.clean import (  # re-exported: the engines import them from here
    Cleaned,
    _Clock,
    check_types,
    clean_records,
    zone_note,
)
from core.data.config import ColumnMap, PrepConfig
from core.data.io import missing_column_message, read_polars
from core.data.tally import PrepReport, RowHashes, Tally, distinct_count
from core.errors import HexplorerError

if TYPE_CHECKING:  # pandas in and out only: `hexplorer prepare` never imports it
    import pandas as pd

SUMMARY_COLUMNS = ["hat", "cell", "slot", "user_id", "m", "s", "q"]
DEFAULT_COLUMNS = ColumnMap()
DEFAULT_CONFIG = PrepConfig()

__all__ = [
    "DEFAULT_COLUMNS",
    "DEFAULT_CONFIG",
    "SUMMARY_COLUMNS",
    "Cleaned",
    "PrepReport",
    "Prepared",
    "RowHashes",
    "Tally",
    "check_types",
    "clean_records",
    "distinct_count",
    "prepare",
    "prepare_file",
    "zone_note",
]


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

    >>> import pandas as pd
    >>> raw = pd.DataFrame({"user_id": ["a", "a", "b"], "lat": [21.2] * 3, "lon": [72.8] * 3,
    ...                     "timestamp": ["2024-03-05 08:10"] * 3, "speed": [10.0, 70.0, 0.0]})
    >>> p = prepare(raw)
    >>> p.summaries[["user_id", "m", "s", "q"]].values.tolist(), p.report.clamped
    ([['a', 2, 75.0, 4325.0]], 1)
    """
    import pandas as pd  # the caller's pandas, already imported

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


# ----------------------------------------------------------------------------------------------
# steps


def _is_missing(x: Any) -> bool:
    import pandas as pd  # a value of a pandas frame: pandas is imported already

    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


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
    agg = aggregate(cleaned.records)  # sorted by (cell, slot, user)
    clock.tick("aggregate")
    summaries = labelled(agg, config, presorted=True)
    clock.tick("labels, sort, to pandas")
    report = tally.report(
        **sorted_counts(agg),
        duplicates=cleaned.row_hashes.size - distinct_count(cleaned.row_hashes),
    )
    clock.tick("report")
    return Prepared(summaries=summaries, report=report, config=config, columns=columns)
