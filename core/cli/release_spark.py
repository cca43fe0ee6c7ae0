"""``release --all --engine spark``: the command line's side of
:func:`core.citywide.spark_release.release_all_spark` (its flags checked, one line each)."""

from __future__ import annotations

import argparse
from typing import Any

from core.errors import HexplorerError


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Release every HAT of DATA (a summaries dataset or file) on Spark to ``--output``."""
    from core.citywide.spark_release import release_all_spark

    if args.seed is None:
        raise HexplorerError(
            "release --all --engine spark simulates releases (give --seed); publishing records "
            "every user's charge in the local ledger in one transaction, which a Spark job "
            "cannot keep: publish with the default engine (drop --engine spark)."
        )
    for flag in (
        "budget",
        "namespace",
        "ledger",
        "accounting",
        "slot_filter",
        "day",
        "m_ub",
        "hat",
    ):
        if getattr(args, flag, None) is not None:
            raise HexplorerError(
                f"--{flag.replace('_', '-')} is not available with --engine spark (it releases "
                "every HAT of DATA with each HAT's default m_UB)."
            )
    if args.output is None:
        raise HexplorerError("--all needs --output FOLDER.parquet or FOLDER.csv (parts written).")
    if args.data is None:
        raise HexplorerError("--engine spark needs DATA: a summaries dataset or file.")
    if args.seed < 0:
        raise HexplorerError(f"--seed must be an integer >= 0. Got {args.seed} instead.")
    return release_all_spark(
        args.data,
        args.output,
        args.mechanism,
        args.epsilon,
        seed=args.seed,
        upper=None if args.upper == 65.0 else args.upper,
        master=args.spark_master,
        overwrite=args.force,
    )
