"""``release --all`` on Apache Spark: every HAT of a summaries dataset released on the executors.

The summaries (a dataset folder written by ``prepare``, local or a URL Spark reads, or a single
local summaries file) are read by Spark, every row gets a batch key ``pmod(xxhash64(hat), K)``
(so a HAT's rows share one batch, and K is chosen so that a batch holds about ``batch_rows``
summary rows), and a grouped Arrow map (``groupBy("_batch").applyInArrow``) builds each batch
with :meth:`core.citywide.batch.HatBatch.from_summaries` and releases it with
:func:`core.citywide.batch.release_all`: the default engine's code, whose per-HAT seed rule
(:mod:`core.citywide.seeds`) makes a HAT's release depend on its own rows and the seed only. So
the table equals the default engine's bit for bit (compared after sorting by hat). The executors
write the releases as a Parquet or CSV dataset (a folder of parts, each sorted by hat); only
their number comes back to the driver. They write into a hidden folder beside the target that
replaces it only once the table is whole (:mod:`core.data.staging`): a job that fails
leaves the target as it was.

Simulated releases only (``seed``): publishing records one ledger entry in a local SQLite file
and charges every user in the same transaction that commits the release, a promise a job on
many machines cannot keep through that file, so it is refused (use the default engine).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

from core.citywide.batch import HatBatch, release_all
from core.data.spark import check_spark, job_error, session
from core.data.spark_dataset import (
    check_target,
    is_url,
    left_as_it_was,
    read_sidecar,
    spark_schema,
)
from core.data.staging import staged_folder
from core.data.summaries import check_values
from core.errors import HexplorerError
from core.mechanisms import MECHANISMS, get_mechanism, vectorised_names
from core.params import check_epsilon, check_positive_int, check_upper

#: Summary rows per batch (one batch is one call of release_all in one Python worker).
BATCH_ROWS = 1_000_000

#: The releases' columns and types (as :func:`core.citywide.batch.release_all` gives them).
RELEASE_SCHEMA = pa.schema(
    [
        ("hat", pa.string()),
        ("mechanism", pa.string()),
        ("epsilon", pa.float64()),
        ("m_ub", pa.int64()),
        ("n_arrays", pa.int64()),
        ("sensitivity", pa.float64()),
        ("noise_scale", pa.float64()),
        ("noiseless", pa.float64()),
        ("estimate", pa.float64()),
        ("true_mean", pa.float64()),
        ("users", pa.int64()),
        ("records", pa.int64()),
    ]
)

__all__ = ["BATCH_ROWS", "RELEASE_SCHEMA", "release_all_spark"]


def _stored_upper(spark: Any, source: str) -> float:
    """U of the summaries at ``source`` (a dataset's sidecar, or a summaries file's footer)."""
    if not is_url(source) and Path(source).is_file():
        from core.data.summaries import is_summaries, read_metadata

        if not is_summaries(source):
            raise HexplorerError(
                f"{source!r} is not a summaries file; prepare the raw records first "
                "(hexplorer prepare)."
            )
        return float(read_metadata(source)["config"].upper)
    if not is_url(source) and not Path(source).is_dir():
        raise HexplorerError(f"Summaries {source!r} do not exist.")
    return float(read_sidecar(spark, source)["config"].upper)


def release_all_spark(
    source: str | os.PathLike,
    target: str | os.PathLike,
    name: str,
    epsilon: float,
    *,
    seed: int,
    upper: float | None = None,
    master: str = "local[*]",
    spark: Any = None,
    overwrite: bool = False,
    batch_rows: int = BATCH_ROWS,
) -> dict[str, Any]:
    """Release every HAT of the summaries at ``source`` on Spark and write the table to
    ``target`` from the executors (see the module doc).

    Parameters
    ----------
    source : path or URL
        A summaries dataset (folder) or a local summaries file.
    target : path or URL
        The folder to write; ``….parquet`` writes Parquet parts, ``….csv`` CSV parts with a
        header (values as Spark prints doubles: they parse back to the same numbers).
    name : str
        A mechanism with an all-HATs release form (:func:`core.mechanisms.vectorised_names`).
    epsilon : float
        Privacy loss of each HAT's release.
    seed : int
        The seed of the per-HAT seed rule (:mod:`core.citywide.seeds`).
    upper : float, optional
        U; default the one the summaries were prepared with (a different one is refused).
    batch_rows : int
        Summary rows per batch released in one Python call (memory per task).

    Returns
    -------
    dict
        output, mechanism, epsilon, seed, hats (releases written), published (False).
    """
    get_mechanism(name)
    if MECHANISMS[name].release_all is None:
        raise HexplorerError(
            f"release --all on Spark runs the mechanisms with an all-HATs release form "
            f"({', '.join(vectorised_names())}); {name} releases HAT by HAT: use the default "
            "engine."
        )
    epsilon = check_epsilon(epsilon)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HexplorerError(f"The 'seed' parameter must be an integer >= 0. Got {seed!r} instead.")
    seed = int(seed)
    batch_rows = check_positive_int("batch_rows", batch_rows)
    src, dest = str(source), str(target)
    fmt = next((s for s in ("parquet", "csv") if dest.rstrip("/").lower().endswith("." + s)), None)
    if fmt is None:
        raise HexplorerError(
            f"--output must end in .parquet or .csv (a folder of parts is written). Got {dest!r}."
        )
    check_spark()
    spark = spark if spark is not None else session(master)
    mode = check_target(spark, dest, overwrite=overwrite, marker="_SUCCESS", what="a release")
    stored = _stored_upper(spark, src)
    if upper is not None and check_upper(upper) != stored:
        raise HexplorerError(
            f"{src!r} was prepared with upper = {stored!r}; --upper {upper!r} cannot change it "
            "(prepare the raw records again)."
        )
    from pyspark.sql import functions as F

    def release(table: pa.Table) -> pa.Table:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        frame = frame.select(
            pl.col("hat").cast(pl.String),
            pl.col("user_id").cast(pl.String),
            pl.col("m").cast(pl.Int64),
            pl.col("s").cast(pl.Float64),
        )
        if frame.height == 0:
            return RELEASE_SCHEMA.empty_table()
        check_values(frame, stored, src)
        batch = HatBatch.from_summaries(frame.sort("hat", "user_id"), upper=stored)
        out: pd.DataFrame = release_all(name, batch, epsilon, seed=seed)
        return pa.Table.from_pandas(out, schema=RELEASE_SCHEMA, preserve_index=False)

    try:
        try:
            reader = spark.read
            if is_url(src) or Path(src).is_dir():
                # every part-*.parquet below the folder (no partition columns from folder
                # names); Spark skips names that start with _ or . (sidecar, _SUCCESS, .crc)
                reader = reader.option("recursiveFileLookup", "true")
                reader = reader.option("pathGlobFilter", "part-*.parquet")
            rows = reader.parquet(src)
        except Exception as exc:
            raise HexplorerError(f"Spark could not read {src!r}: {job_error(exc)}") from None
        missing = [c for c in ("hat", "user_id", "m", "s") if c not in rows.columns]
        if missing:
            raise HexplorerError(f"{src!r} lacks the summary columns {', '.join(missing)}.")
        rows = rows.select("hat", "user_id", "m", "s")
        n_batches = max(1, -(-rows.count() // batch_rows))
        releases = (
            rows.withColumn("_batch", F.pmod(F.xxhash64("hat"), F.lit(n_batches)))
            .groupBy("_batch")
            .applyInArrow(release, spark_schema(RELEASE_SCHEMA))
        )
        with staged_folder(spark, dest) as staging:  # dest is replaced only by a whole table
            writer = releases.sortWithinPartitions("hat").write.mode("errorifexists")
            if fmt == "parquet":
                writer.option("compression", "zstd").parquet(staging)
                written = spark.read.parquet(staging)
            else:
                writer.option("header", True).csv(staging)
                written = spark.read.option("header", True).csv(staging)
            hats = written.count()
    except HexplorerError as exc:
        raise HexplorerError(f"{exc} {left_as_it_was(dest, mode)}") from None
    except Exception as exc:  # Spark wraps worker errors (a HexplorerError too) in its own
        raise HexplorerError(
            f"The Spark job failed: {job_error(exc)} {left_as_it_was(dest, mode)}"
        ) from None
    return {
        "output": dest,
        "mechanism": name,
        "epsilon": epsilon,
        "seed": seed,
        "hats": int(hats),
        "published": False,
        "engine": "spark",
    }
