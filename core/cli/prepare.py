"""``hexplorer prepare``: raw records -> a summaries file (SPEC section 1), out of core.

The summaries file (per HAT and user: m, s, q, with the settings and the data report in its
metadata, :mod:`core.data.summaries`) is accepted as DATA by every other subcommand and by the
dashboard, which then skip preparation. ``--engine polars`` (default) streams the input in
batches on this machine (:mod:`core.data.stream`; a large input through buckets on disk,
:mod:`core.data.outofcore`, so memory stays bounded); ``--engine spark`` runs the same
preparation as an Apache Spark job (:mod:`core.data.spark`, ``pip install -e ".[spark]"`` and
Java). ``--layout dataset`` writes a summaries dataset instead of one file: a folder of part
files, every HAT in one part (:mod:`core.data.dataset`), that ``release --all`` releases part by
part.
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
        "SUMMARIES",
        "the summaries to write (required): a .parquet file, or with --layout dataset a folder "
        "(with --engine spark always a folder: local or a URL such as s3a://bucket/summaries/)",
    )
    p.add_argument(
        "--layout",
        choices=["file", "dataset"],
        default=None,
        help="file: one Parquet file (the default engine's default); dataset: a folder of part "
        "files, every HAT in one part, that release --all releases part by part (for 10^8 "
        "records and more; what --engine spark writes)",
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
        help="rows per streamed batch for --engine polars [10000000 for a file from up to 1.5e7 "
        "rows, else 5000000]",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.data import ColumnMap, PrepConfig

    if args.output is None:
        raise HexplorerError(
            "prepare needs --output SUMMARIES.parquet (or a folder with --layout dataset)."
        )
    if args.data is None:
        raise HexplorerError("prepare needs a DATA file of raw records (CSV or Parquet).")
    spark = args.engine == "spark"
    layout = args.layout or ("dataset" if spark else "file")
    if spark and layout != "dataset":
        raise HexplorerError(
            "--engine spark writes a summaries dataset (a folder), never one file: "
            "drop --layout file, or use --engine polars."
        )
    if spark:  # a folder, local or a URL (core.data.spark_dataset checks it)
        target = Path(args.output)
    elif layout == "dataset":
        target = _dataset_target(args.output, force=args.force)
    else:
        target = common.output_path(args.output, force=args.force, suffixes=(".parquet",))
    remote = "://" in args.data  # e.g. s3a://bucket/records/: read by Spark itself
    if remote and args.engine != "spark":
        raise HexplorerError(f"{args.data!r} is a URL: read it with --engine spark.")
    source = Path(args.data)
    if not remote:
        from core.data.summaries import is_dataset

        if is_dataset(source):
            raise HexplorerError(
                f"{args.data!r} is already a summaries dataset; give the raw records."
            )
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
        from core.data.outofcore import prepare_summaries

        # in a terminal, each phase of each batch on one line as it ends (cleared at the end)
        phases = common.PhaseLine() if sys.stderr.isatty() and not args.json else None
        try:
            report = prepare_summaries(
                source,
                target,
                columns,
                config,
                layout=layout,
                batch_rows=args.batch_rows,
                force=args.force,
                timings=phases,
            )
        finally:
            if phases is not None:
                phases.clear()
    if report.worth_noting:  # the warnings follow on lines of their own (core.cli.main)
        print(f"hexplorer: note: {' '.join(report.lines(warnings=False))}", file=sys.stderr)
    return {
        "output": args.output if spark else str(target),
        "layout": layout,
        "engine": args.engine,
        "rows_read": report.rows_read,
        "rejected": report.n_rejected,
        "clamped": report.clamped,
        "records": report.records,
        "duplicates": report.duplicates,
        "ids_merged": report.ids_merged,
        "ids_merged_into": report.ids_merged_into,
        "users": report.users,
        "hats": report.hats,
        "warnings": list(report.warnings),
    }


def _dataset_target(output: str, *, force: bool) -> Path:
    """``--output`` of ``--layout dataset``: a new or empty folder (``--force``: one holding a
    dataset), in an existing folder. One line otherwise."""
    target = Path(output)
    if target.suffix.lower() == ".parquet":
        raise HexplorerError(
            f"--layout dataset writes a folder; name one without .parquet. Got {output!r}."
        )
    if target.exists() and not target.is_dir():
        raise HexplorerError(f"--output {output!r} is a file; --layout dataset names a folder.")
    if not target.parent.is_dir():
        raise HexplorerError(f"--output folder {str(target.parent)!r} does not exist.")
    if target.is_dir() and any(not p.name.startswith(".") for p in target.iterdir()) and not force:
        raise HexplorerError(f"--output {output!r} is not empty; pass --force to overwrite it.")
    return target
