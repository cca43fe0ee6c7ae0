"""``hexplorer prepare``: raw records -> a summaries file (SPEC section 1), out of core.

The summaries file (per HAT and user: m, s, q, with the settings and the data report in its
metadata, :mod:`core.data.summaries`) is accepted as DATA by every other subcommand and by the
dashboard, which then skip preparation. ``--engine polars`` (default) streams the input in
batches on this machine (:mod:`core.data.stream`); ``--engine spark`` runs the same preparation
as an Apache Spark job (:mod:`core.data.spark`, ``pip install -e ".[spark]"`` and Java).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.cli import common
from core.errors import HexplorerError


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "prepare", parents=[data], help="raw records -> a summaries file the other commands read"
    )
    common.add_output_options(
        p,
        "SUMMARIES.parquet",
        "the summaries file to write (required); with --engine spark a folder (a summaries "
        "dataset, local or a URL such as s3a://bucket/summaries/)",
    )
    p.add_argument(
        "--engine",
        choices=["polars", "spark"],
        default="polars",
        help="polars: stream on this machine (default); spark: an Apache Spark job",
    )
    p.add_argument(
        "--spark-master",
        default="local[*]",
        metavar="URL",
        help="Spark master for --engine spark [local[*]]",
    )
    p.add_argument(
        "--batch-rows",
        type=int,
        default=None,
        metavar="N",
        help="rows per streamed batch for --engine polars [5000000]",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.data import ColumnMap, PrepConfig

    if args.output is None:
        raise HexplorerError("prepare needs --output SUMMARIES.parquet.")
    if args.data is None:
        raise HexplorerError("prepare needs a DATA file of raw records (CSV or Parquet).")
    spark = args.engine == "spark"  # writes a folder (core.data.spark_dataset checks it)
    target = (
        Path(args.output)
        if spark
        else common.output_path(args.output, force=args.force, suffixes=(".parquet",))
    )
    remote = "://" in args.data  # e.g. s3a://bucket/records/: read by Spark itself
    if remote and args.engine != "spark":
        raise HexplorerError(f"{args.data!r} is a URL: read it with --engine spark.")
    source = Path(args.data)
    if not remote:
        if not source.is_file():
            raise HexplorerError(f"Data file {args.data!r} does not exist or is not a file.")
        if source.resolve() == target.resolve():
            raise HexplorerError("--output must differ from DATA.")
        from core.data.summaries import is_summaries

        if is_summaries(source):
            raise HexplorerError(
                f"{args.data!r} is already a summaries file; give the raw records."
            )
    config = PrepConfig(
        upper=args.upper,
        resolution=args.resolution,
        slot=args.slot,
        keep_zeros=args.keep_zeros,
        ids=args.ids,
    )
    columns = ColumnMap(
        user=args.user_col,
        lat=args.lat_col,
        lon=args.lon_col,
        time=args.time_col,
        value=args.value_col,
    )
    if args.engine == "spark":
        from core.data.spark import prepare_spark

        report = prepare_spark(
            args.data if remote else source,
            args.output,
            columns,
            config,
            master=args.spark_master,
            overwrite=args.force,
        )
    else:
        from core.data.stream import DEFAULT_BATCH_ROWS, prepare_to_file

        batch = DEFAULT_BATCH_ROWS if args.batch_rows is None else args.batch_rows
        report = prepare_to_file(source, target, columns, config, batch_rows=batch)
    if report.worth_noting:
        print(f"hexplorer: note: {' '.join(report.lines())}", file=sys.stderr)
    return {
        "output": args.output if spark else str(target),
        "engine": args.engine,
        "rows_read": report.rows_read,
        "rejected": report.n_rejected,
        "records": report.records,
        "duplicates": report.duplicates,
        "ids_merged": report.ids_merged,
        "ids_merged_into": report.ids_merged_into,
        "users": report.users,
        "hats": report.hats,
    }
