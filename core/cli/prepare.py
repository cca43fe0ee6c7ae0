"""``hexplorer prepare``: raw records -> a summaries file (SPEC section 1), out of core.

The summaries file (per HAT and user: m, s, q, with the settings and the data report in its
metadata, :mod:`core.data.summaries`) is accepted as DATA by every other subcommand and by the
dashboard, which then skip preparation. The input is streamed in batches on this
machine (:mod:`core.data.stream`), so its size is not bounded by memory.
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
    common.add_output_options(p, "SUMMARIES.parquet", "the summaries file to write (required)")
    p.add_argument(
        "--batch-rows",
        type=int,
        default=None,
        metavar="N",
        help="rows per streamed batch [5000000]",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.data import ColumnMap, PrepConfig

    if args.output is None:
        raise HexplorerError("prepare needs --output SUMMARIES.parquet.")
    if args.data is None:
        raise HexplorerError("prepare needs a DATA file of raw records (CSV or Parquet).")
    target = common.output_path(args.output, force=args.force, suffixes=(".parquet",))
    source = Path(args.data)
    if not source.is_file():
        raise HexplorerError(f"Data file {args.data!r} does not exist or is not a file.")
    if source.resolve() == target.resolve():
        raise HexplorerError("--output must differ from DATA.")
    from core.data.summaries import is_summaries

    if is_summaries(source):
        raise HexplorerError(f"{args.data!r} is already a summaries file; give the raw records.")
    config = PrepConfig(
        upper=args.upper, resolution=args.resolution, slot=args.slot, keep_zeros=args.keep_zeros
    )
    columns = ColumnMap(
        user=args.user_col,
        lat=args.lat_col,
        lon=args.lon_col,
        time=args.time_col,
        value=args.value_col,
    )
    from core.data.stream import DEFAULT_BATCH_ROWS, prepare_to_file

    batch = DEFAULT_BATCH_ROWS if args.batch_rows is None else args.batch_rows
    report = prepare_to_file(source, target, columns, config, batch_rows=batch)
    if report.worth_noting:
        print(f"hexplorer: note: {' '.join(report.lines())}", file=sys.stderr)
    return {
        "output": str(target),
        "engine": "polars",
        "rows_read": report.rows_read,
        "rejected": report.n_rejected,
        "records": report.records,
        "duplicates": report.duplicates,
        "users": report.users,
        "hats": report.hats,
    }
