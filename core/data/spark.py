"""The Apache Spark engine: the same preparation as a Spark job, writing a summaries dataset.

For data beyond one machine (a year of a city's fleet, read from object storage). The job runs
SPEC section 1 exactly as :mod:`core.data.stream` does, so the summaries dataset holds, bit for
bit, the rows and the report of the default engine's summaries file on the same input:

1. Spark reads the file (``spark.read.parquet`` / ``spark.read.csv``, CSV as text, so that
   numbers are parsed by the same polars code as on one machine).
2. ``mapInArrow`` runs :func:`core.data.prepare.clean_records` on every Arrow batch of every
   partition (rejection, zero-dropping, clamping, H3 with h3ronpy, slots): the per-record code
   of the default engine, row by row. Each batch also emits one report row (its counts and first
   rejected rows).
3. The largest kept value (a Spark ``max``) fixes the fixed-point scale
   (:func:`core.data.aggregation.fixed_shifts`); a second ``mapInArrow`` turns each value into the
   same integers (:func:`core.data.aggregation.fixed_value`), and a Spark ``groupBy`` sums them per
   (cell, slot, user): integer sums are exact in any order, hence equal to the default engine's.
4. The executors label the sums with the default engine's code and write them as the parts of
   a summaries dataset, one HAT per part, and the driver writes the sidecar last
   (:mod:`core.data.spark_dataset`). Neither the records nor the summaries come to the driver:
   only each batch's report row, the id-spelling counts and a few aggregates do.

The data report is the default engine's too. Each batch's report row carries its counts, its
first rejected rows, its time-zone offsets and, per kept record, a 64-bit row hash goes along
with the record: repeated rows are counted over the whole input by a Spark ``distinct`` on the
hashes (a repeat may sit in another partition); the ids canonicalisation merged
(:mod:`core.data.ids`, run by the per-record code) are counted by a Spark ``groupBy`` over each
batch's distinct (id, spelling) hashes. The rejected examples get their row positions
when the input is one file (its splits are read in file order, so the position is the rows of
the batches before plus the row within the batch); for a folder of files or a URL, ``row`` is
None. Time-zone-aware Parquet timestamps, which Spark reads as instants, are turned back into
the wall-clock time of the file's own zone before the per-record code sees them, as the default
engine reads them.

Needs PySpark (``pip install -e ".[spark]"``) and Java; without either the engine says so in one
line. On a cluster, the executors need this package installed (or shipped with ``--py-files``)
and h3ronpy; see docs/city-scale.md for a ``spark-submit`` example.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from core.data.aggregation import fixed_shifts, fixed_value
from core.data.config import ColumnMap, PrepConfig
from core.data.prepare import (
    DEFAULT_COLUMNS,
    DEFAULT_CONFIG,
    PrepReport,
    Tally,
    check_types,
    clean_records,
)
from core.data.spark_dataset import (
    PART_RECORDS,
    SIDECAR,
    check_target,
    is_url,
    left_as_it_was,
    sidecar_body,
    spark_schema,
    write_dataset,
    write_sidecar,
)
from core.data.staging import staged_folder
from core.errors import HexplorerError
from core.params import check_positive_int

__all__ = ["check_spark", "job_error", "prepare_spark", "session"]

_RECORD = pa.schema(
    [
        ("kind", pa.int8()),  # 0 a record, 1 a batch's report, 2 its id spellings (as hashes)
        ("cell", pa.int64()),  # kind 2: the canonical id's hash
        ("slot", pa.int64()),
        ("user", pa.string()),
        ("value", pa.float64()),
        ("hash", pa.int64()),  # the row hash (uint64 bits) for the count of repeated rows;
        # kind 2: the raw spelling's hash (core.data.ids.spellings)
        ("report", pa.string()),
    ]
)
_FIXED = pa.schema(
    [
        ("cell", pa.int64()),
        ("slot", pa.int64()),
        ("user", pa.string()),
        ("s", pa.int64()),
        ("q", pa.int64()),
    ]
)


def check_spark() -> None:
    """Raise a one-line :class:`HexplorerError` unless PySpark and Java are there."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise HexplorerError(
            'The Spark engine needs PySpark: pip install -e ".[spark]" (and Java).'
        ) from None
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (
        java_home and (Path(java_home) / "bin" / "java").exists()
    ):
        raise HexplorerError(
            "The Spark engine needs Java (e.g. Debian's default-jre-headless): no 'java' on PATH "
            "and no JAVA_HOME."
        )


def session(master: str = "local[*]") -> Any:
    """A SparkSession for the job (an existing one is reused, as ``getOrCreate`` does)."""
    check_spark()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        return (
            SparkSession.builder.master(master)
            .appName("hexplorer-prepare")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.legacy.parquet.nanosAsLong", "true")  # pandas' ns timestamps
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
    except Exception as exc:  # the JVM failed to start, a bad master URL, ...
        raise HexplorerError(
            f"Could not start Spark (master {master!r}): {job_error(exc)}"
        ) from None


def job_error(exc: BaseException) -> str:
    """The line of a Spark failure to show: a :class:`HexplorerError` raised by our code on an
    executor (Spark wraps it in a Python worker's traceback), else the Java exception's message
    under py4j's "An error occurred while calling ..." line, else the first line.

    >>> job_error(RuntimeError("An error occurred while calling o1.parquet.\\n: "
    ...     "org.apache.spark.sql.AnalysisException: [PATH_NOT_FOUND] Path does not exist: x."))
    '[PATH_NOT_FOUND] Path does not exist: x.'
    """
    text = str(exc).strip()
    lines = text.splitlines()
    marker = "HexplorerError: "
    for line in lines:
        if marker in line:
            return line.split(marker, 1)[1].strip()
    if lines and lines[0].startswith("An error occurred while calling"):
        for line in lines[1:]:
            if line.startswith(": "):
                head, _, message = line[2:].partition(": ")
                return (message or head).strip()
    return lines[0] if lines else type(exc).__name__


def _driver_schema(source: str, chosen: str, columns: ColumnMap) -> dict[str, pl.DataType]:
    """The column types the default engine's reader gives the file (by name)."""
    wanted = list(columns.as_tuple())
    if chosen == "parquet":
        schema = pl.scan_parquet(source).select(wanted).collect_schema()
    else:
        separator = "\t" if chosen == "tsv" else ","
        schema = (
            pl.scan_csv(source, separator=separator, infer_schema_length=10_000)
            .select(wanted)
            .collect_schema()
        )
    return dict(schema.items())


def _as_default_engine(
    frame: pl.DataFrame, columns: ColumnMap, kinds: dict[str, pl.DataType]
) -> pl.DataFrame:
    """Give a Spark batch the column types the default engine's reader gives the file.

    CSV is read by Spark as text: a column the default reader parses as numbers is cast the same
    way (a numeric user column: "017" is user 17). Parquet nanosecond timestamps arrive as
    longs (``nanosAsLong``), zone-aware ones as UTC instants: both go back to the file's type.
    """
    out = []
    for name in columns.as_tuple():
        col = frame.get_column(name)
        kind = kinds[name]
        if kind.is_numeric() and col.dtype == pl.String:
            col = col.str.strip_chars().cast(kind, strict=False)
        elif isinstance(kind, pl.Datetime) and col.dtype == pl.Int64:
            col = col.cast(pl.Datetime(kind.time_unit or "ns"))
            if kind.time_zone:
                col = col.dt.replace_time_zone("UTC").dt.convert_time_zone(kind.time_zone)
        elif isinstance(kind, pl.Datetime) and isinstance(col.dtype, pl.Datetime):
            if kind.time_zone:
                if col.dtype.time_zone is None:  # Spark's TIMESTAMP_NTZ of an instant
                    col = col.dt.replace_time_zone("UTC")
                col = col.dt.convert_time_zone(kind.time_zone)
        out.append(col.alias(name))
    return pl.DataFrame(out)


def prepare_spark(
    source: str | os.PathLike,
    target: str | os.PathLike,
    columns: ColumnMap = DEFAULT_COLUMNS,
    config: PrepConfig = DEFAULT_CONFIG,
    *,
    master: str = "local[*]",
    spark: Any = None,
    parts: int | None = None,
    overwrite: bool = False,
) -> PrepReport:
    """Prepare raw records into a summaries dataset with Apache Spark (see the module doc).

    Parameters
    ----------
    source : path or URL
        Raw records, CSV/TSV or Parquet: a local file or folder, or on a cluster any URL Spark
        reads, e.g. ``s3a://bucket/records/`` (the format taken from the suffix, else Parquet).
    target : path or URL
        The summaries dataset, a folder (not a ``.parquet`` name): a local path (on a cluster,
        one every executor and the driver see, e.g. a mount) or a URL Spark writes, e.g.
        ``s3a://bucket/summaries/`` (:mod:`core.data.spark_dataset`).
    master : str
        Spark master URL when no ``spark`` session is given.
    spark : SparkSession, optional
        A running session to use (tests share one).
    parts : int, optional
        Number of Parquet parts (default: one per 2·10⁶ kept records,
        :data:`~core.data.spark_dataset.PART_RECORDS`).
    overwrite : bool
        Replace an existing summaries dataset at ``target`` (a folder that is not one is
        never overwritten).

    Returns
    -------
    PrepReport
        The default engine's report on the same input (row positions of the rejected examples
        only for a single file).
    """
    from core.data.io import _format_from

    check_spark()
    src = str(source)
    dest = str(target)
    if dest.rstrip("/").lower().endswith(".parquet"):
        raise HexplorerError(
            f"{dest!r}: the Spark engine writes a summaries dataset, a folder of Parquet parts "
            "written by the executors (a single file would bring every summary to the driver); "
            "name a folder without .parquet, e.g. summaries/."
        )
    local = "://" not in src
    one_file = local and Path(src).is_file()
    kinds: dict[str, pl.DataType] = {}
    if one_file:
        from core.data.io import _resolve, column_names, missing_column_message

        _, chosen, _ = _resolve(source, None)
        available = column_names(source)
        for name in columns.as_tuple():
            if name not in available:
                raise HexplorerError(missing_column_message(name, available))
        kinds = _driver_schema(src, chosen, columns)
        check_types(kinds, columns.as_tuple())
    else:
        chosen = _format_from(src.rstrip("/")) or "parquet"
    if parts is not None:
        parts = check_positive_int("parts", parts)
    checks: dict[str, Any] = {
        "overwrite": overwrite,
        "marker": SIDECAR,
        "what": "a summaries dataset",
    }
    mode = "" if is_url(dest) else check_target(None, dest, **checks)  # before Spark starts
    spark = spark if spark is not None else session(master)
    mode = mode or check_target(spark, dest, **checks)
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    wanted = list(columns.as_tuple())
    try:
        if chosen == "parquet":
            raw = spark.read.parquet(src)
        else:
            raw = spark.read.csv(
                src, header=True, inferSchema=False, sep="\t" if chosen == "tsv" else ","
            )
    except Exception as exc:  # a missing path, an unreadable file
        raise HexplorerError(f"Spark could not read {src!r}: {job_error(exc)}") from None
    missing = [c for c in wanted if c not in raw.columns]
    if missing:
        raise HexplorerError(f"Column '{missing[0]}' not found; the data has {raw.columns}.")

    def clean(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        for number, batch in enumerate(batches):
            frame = pl.from_arrow(pa.Table.from_batches([batch]))
            assert isinstance(frame, pl.DataFrame)
            if kinds:
                frame = _as_default_engine(frame, columns, kinds)
            if frame.height == 0:
                continue
            cleaned = clean_records(frame, columns, config)
            rec = cleaned.records
            yield pa.RecordBatch.from_pydict(
                {
                    "kind": pa.array([0] * rec.height, pa.int8()),
                    "cell": rec.get_column("cell").cast(pl.Int64).to_arrow(),
                    "slot": rec.get_column("slot").to_arrow(),
                    "user": rec.get_column("user").cast(pl.String).to_arrow().cast(pa.string()),
                    "value": rec.get_column("value").to_arrow(),
                    "hash": pa.array(cleaned.row_hashes.view("int64")),
                    "report": pa.nulls(rec.height, pa.string()),
                },
                schema=_RECORD,
            )
            counts = {
                "order": [part, number],
                "rows_read": cleaned.rows_read,
                "records": rec.height,
                "labels": list(cleaned.labels),
                "reason_counts": cleaned.reason_counts.tolist(),
                "examples": cleaned.examples,  # rows counted from the batch's first
                "zeros_dropped": cleaned.zeros_dropped,
                "clamped_low": cleaned.clamped_low,
                "clamped_high": cleaned.clamped_high,
                "any_offset": cleaned.any_offset,
                "zones": sorted(cleaned.zones, key=lambda z: (z is not None, z or "")),
            }
            yield pa.RecordBatch.from_pydict(
                {
                    "kind": pa.array([1], pa.int8()),
                    "cell": pa.nulls(1, pa.int64()),
                    "slot": pa.nulls(1, pa.int64()),
                    "user": pa.nulls(1, pa.string()),
                    "value": pa.nulls(1, pa.float64()),
                    "hash": pa.nulls(1, pa.int64()),
                    "report": pa.array([json.dumps(counts)], pa.string()),
                },
                schema=_RECORD,
            )
            yield _spelling_rows(cleaned.spellings)

    try:
        out = raw.select(*wanted).mapInArrow(clean, spark_schema(_RECORD))
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        reports = [json.loads(r[0]) for r in out.filter("kind = 1").select("report").collect()]
        reports.sort(key=lambda r: r["order"])
        tally = Tally(columns, config)
        before = 0  # rows of the batches before this one (file order: one file's splits)
        for r in reports:
            for e in r["examples"]:
                e["row"] = before + e["row"] if one_file else None
            before += r["rows_read"]
            tally.add_counts(r)
        tally.check()
        tally.merged = _merged(out.filter("kind = 2"))
        records = out.filter("kind = 0")
        vmax, distinct = records.agg(F.max("value"), F.count_distinct("hash")).first()  # type: ignore[misc]
        shifts = fixed_shifts(float(vmax or 0.0))

        def fixed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                frame = pl.from_arrow(pa.Table.from_batches([batch]))
                assert isinstance(frame, pl.DataFrame)
                value = pl.col("value")
                ints = frame.select(
                    "cell",
                    "slot",
                    "user",
                    fixed_value(value, shifts[0]).alias("s"),
                    fixed_value(value * value, shifts[1]).alias("q"),
                )
                yield from ints.to_arrow().cast(_FIXED).to_batches()

        agg = (
            records.select("cell", "slot", "user", "value")
            .mapInArrow(fixed, spark_schema(_FIXED))
            .groupBy("cell", "slot", "user")
            .agg(F.count(F.lit(1)).alias("m"), F.sum("s").alias("s"), F.sum("q").alias("q"))
        )
        n_parts = parts if parts is not None else max(1, -(-tally.records // PART_RECORDS))
        with staged_folder(spark, dest) as staging:  # dest replaced only by a whole dataset
            counts = write_dataset(
                agg, staging, shifts=shifts, config=config, parts=n_parts, mode="errorifexists"
            )
            report = tally.report(duplicates=tally.records - int(distinct), **counts)
            write_sidecar(spark, staging, sidecar_body(config, columns, report, "spark"))
    except HexplorerError as exc:
        raise HexplorerError(f"{exc} {left_as_it_was(dest, mode)}") from None
    except Exception as exc:  # Spark wraps reader and worker errors in its own exceptions
        raise HexplorerError(
            f"The Spark job failed: {job_error(exc)} {left_as_it_was(dest, mode)}"
        ) from None
    finally:
        if "out" in locals():
            out.unpersist()
    return report


def _spelling_rows(pairs: pl.DataFrame) -> pa.RecordBatch:
    """A batch's distinct (canonical id, raw spelling) hashes as ``kind = 2`` rows."""
    n = pairs.height
    return pa.RecordBatch.from_pydict(
        {
            "kind": pa.array([2] * n, pa.int8()),
            "cell": pa.array(pairs.get_column("id").to_numpy().view("int64")),
            "slot": pa.nulls(n, pa.int64()),
            "user": pa.nulls(n, pa.string()),
            "value": pa.nulls(n, pa.float64()),
            "hash": pa.array(pairs.get_column("spelling").to_numpy().view("int64")),
            "report": pa.nulls(n, pa.string()),
        },
        schema=_RECORD,
    )


def _merged(rows: Any) -> tuple[int, int]:
    """(raw ids merged, users they became) from the ``kind = 2`` rows, as
    :meth:`core.data.ids.Spellings.merged` counts them, by a Spark ``groupBy``."""
    from pyspark.sql import functions as F

    per_id = rows.groupBy("cell").agg(F.count_distinct("hash").alias("n"))
    merged, into = per_id.filter("n > 1").agg(F.sum("n"), F.count(F.lit(1))).first()
    return int(merged or 0), int(into or 0)
