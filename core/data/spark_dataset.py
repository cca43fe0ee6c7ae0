"""The Spark engine's summaries dataset: written by the executors, its sidecar by the driver.

A summaries dataset is a folder (a local path, a mounted path, or a URL Spark writes such as
``s3a://bucket/summaries/``) holding Parquet parts ``part-*.parquet`` with the summary columns
(:data:`core.data.summaries.SCHEMA`) and, written last, ``_hexplorer_summaries.json``: the JSON
body of the single file's footer key (:func:`core.data.summaries.metadata`) plus
``"layout": "dataset"``. Every HAT lies in exactly one part (the rows are hash-partitioned by
``hat``), and the rows of a part are sorted by hat then user_id, so concatenating the parts and
sorting by (hat, user_id) gives the rows of the single file of the same input.

Nothing here brings the summaries to the driver: the executors label the integer sums
(:func:`core.data.aggregation.from_fixed`, :func:`~core.data.aggregation.label_frame`: the
default engine's code, so every value is bit-equal), Spark shuffles them into parts and writes
them, and the data report's counts (users, HATs, cells, slots) are Spark aggregations over the
written parts. The sidecar is written with Python on a local path (atomically: a temporary name
renamed), and through Hadoop's ``FileSystem`` (the one Spark writes the parts with, so the same
credentials and committers) on a URL.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from core.data.aggregation import from_fixed, label_frame, labels_for
from core.data.config import ColumnMap, PrepConfig
from core.data.dataset import SIDECAR  # the one name both writers use
from core.data.prepare import PrepReport
from core.data.staging import is_url
from core.data.summaries import FORMAT, METADATA_KEY, SCHEMA, metadata
from core.errors import HexplorerError

#: Raw records per part when the number of parts is not given (a part holds at most as many
#: summary rows; 10⁷ fleet records give 5 parts of about 1.2M rows).
PART_RECORDS = 2_000_000

__all__ = [
    "PART_RECORDS",
    "SIDECAR",
    "check_target",
    "left_as_it_was",
    "read_sidecar",
    "sidecar_body",
    "write_dataset",
    "write_sidecar",
]


def _hadoop(spark: Any, url: str) -> tuple[Any, Any]:
    """Hadoop's FileSystem and Path of ``url`` (the ones Spark writes with)."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _join(folder: str, name: str) -> str:
    return folder.rstrip("/") + "/" + name


def check_target(spark: Any, target: str, *, overwrite: bool, marker: str, what: str) -> str:
    """Check a folder Spark is about to write (before any work) and return the write mode.

    A ``.parquet`` name is refused (that is the single file's name: the Spark engine writes a
    folder). An existing file is refused; an existing folder needs ``overwrite`` and is then
    overwritten only when it is empty or holds ``marker`` (a summaries dataset's sidecar, a
    Spark output's ``_SUCCESS``), so ``--force`` never deletes a folder of other files.
    One-line :class:`HexplorerError`.
    """
    if is_url(target):
        fs, path = _hadoop(spark, target)
        if not fs.exists(path):
            return "errorifexists"
        if not fs.getFileStatus(path).isDirectory():
            raise HexplorerError(f"{target!r} is a file; {what} is written as a folder.")
        empty = len(fs.listStatus(path)) == 0
        marked = fs.exists(_hadoop(spark, _join(target, marker))[1])
    else:
        local = Path(target)
        if not local.exists():
            if not local.absolute().parent.is_dir():
                raise HexplorerError(f"Folder {str(local.absolute().parent)!r} does not exist.")
            return "errorifexists"
        if not local.is_dir():
            raise HexplorerError(f"{target!r} is a file; {what} is written as a folder.")
        empty = not any(local.iterdir())
        marked = (local / marker).exists()
    if empty:
        return "overwrite"
    if not overwrite:
        raise HexplorerError(f"{target!r} exists; pass --force to overwrite it.")
    if not marked:
        raise HexplorerError(
            f"{target!r} is a folder that does not hold {what} ({marker} missing); not "
            "overwriting it."
        )
    return "overwrite"


def left_as_it_was(target: str, mode: str) -> str:
    """What a failed write left at ``target``, for the end of its message: ``mode`` is what
    :func:`check_target` returned (``"errorifexists"``: nothing was there). The writers write
    beside the target and move the result into place only when whole
    (:func:`core.data.staging.staged_folder`).

    >>> left_as_it_was("out.parquet", "errorifexists")
    "Nothing was written to 'out.parquet'."
    >>> left_as_it_was("out.parquet", "overwrite")
    "'out.parquet' was left as it was."
    """
    if mode == "errorifexists":
        return f"Nothing was written to {target!r}."
    return f"{target!r} was left as it was."


def sidecar_body(
    config: PrepConfig, columns: ColumnMap, report: PrepReport, engine: str
) -> dict[str, Any]:
    """The sidecar's JSON: the single file's footer body plus ``"layout": "dataset"``."""
    body = json.loads(metadata(config, columns, report, engine)[METADATA_KEY])
    body["layout"] = "dataset"
    return body


def write_sidecar(spark: Any, target: str, body: dict[str, Any]) -> None:
    """Write ``_hexplorer_summaries.json`` into ``target`` (after every part is written)."""
    data = json.dumps(body, sort_keys=True).encode()
    if is_url(target):
        fs, path = _hadoop(spark, _join(target, SIDECAR))
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()
        return
    final = Path(target) / SIDECAR
    staged = Path(target) / f".{SIDECAR}.tmp"
    staged.write_bytes(data)
    os.replace(staged, final)


def read_sidecar(spark: Any, source: str) -> dict[str, Any]:
    """The parsed sidecar of a summaries dataset (a local folder or a URL), checked: one-line
    :class:`HexplorerError` when it is missing (an interrupted write), or not ours."""
    try:
        if is_url(source):
            fs, path = _hadoop(spark, _join(source, SIDECAR))
            if not fs.exists(path):
                raise FileNotFoundError
            stream = fs.open(path)
            try:
                data = spark._jvm.org.apache.hadoop.io.IOUtils.readFullyToByteArray(stream)
            finally:
                stream.close()
            text = bytes(data).decode()
        else:
            text = (Path(source) / SIDECAR).read_text()
    except FileNotFoundError:
        raise HexplorerError(
            f"{source!r} is not a summaries dataset: it has no {SIDECAR} (written last, so a "
            "write that did not finish); prepare the raw records again."
        ) from None
    try:
        body = json.loads(text)
        if body.get("format") != FORMAT or body.get("layout") != "dataset":
            raise ValueError(f"format {body.get('format')!r}, layout {body.get('layout')!r}")
        body["config"] = PrepConfig(**body["config"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HexplorerError(
            f"{source!r} has a broken {SIDECAR} ({exc}); prepare the raw records again."
        ) from None
    return body


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType of an Arrow schema (int8/64, float64, text columns)."""
    from pyspark.sql.types import (
        ByteType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    types = {
        pa.int8(): ByteType(),
        pa.int64(): LongType(),
        pa.float64(): DoubleType(),
        pa.string(): StringType(),
    }
    return StructType([StructField(f.name, types[f.type], True) for f in schema])


def write_dataset(
    agg: Any,
    target: str,
    *,
    shifts: tuple[int, int],
    config: PrepConfig,
    parts: int,
    mode: str,
) -> dict[str, int]:
    """Write the integer sums ``agg`` (a Spark DataFrame: cell, slot, user, m, s, q) as the
    parts of a summaries dataset at ``target``, from the executors; return the report's
    counts (users, hats, cells, slots), computed by Spark over the written parts.

    Each Arrow batch is turned into the summary columns by the default engine's code
    (:func:`from_fixed`, which also refuses a user with too many records in one HAT, and
    :func:`label_frame`); ``repartition(parts, "hat")`` puts every HAT in one partition, hence
    one file (``maxRecordsPerFile`` 0: never split), ``sortWithinPartitions`` orders its rows.
    """
    from pyspark.sql import functions as F

    def summaries(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            frame = pl.from_arrow(pa.Table.from_batches([batch]))
            assert isinstance(frame, pl.DataFrame)
            if frame.height == 0:
                continue
            frame = frame.with_columns(
                pl.col("cell").cast(pl.UInt64),
                pl.col("m").cast(pl.Int64),
                pl.col("user").cast(pl.String),
            )
            frame = from_fixed(frame, *shifts)
            labelled = label_frame(frame, *labels_for(frame, config))
            yield from labelled.to_arrow().cast(SCHEMA).to_batches()

    rows = agg.mapInArrow(summaries, spark_schema(SCHEMA))
    (
        rows.repartition(parts, "hat")
        .sortWithinPartitions("hat", "user_id")
        .write.mode(mode)
        .option("compression", "zstd")
        .option("maxRecordsPerFile", 0)
        .parquet(target)
    )
    written = agg.sparkSession.read.parquet(target)
    users, hats, cells, slots = written.agg(
        F.count_distinct("user_id"),
        F.count_distinct("hat"),
        F.count_distinct("cell"),
        F.count_distinct("slot"),
    ).first()
    return {"users": int(users), "hats": int(hats), "cells": int(cells), "slots": int(slots)}
