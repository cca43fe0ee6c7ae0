"""``hexplorer compose``: many hexagons at once, composition and CHOP-USER (SPEC section 5)."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common
from core.errors import HexplorerError


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "compose", parents=[data], help="many hexagons at once: composition and CHOP-USER"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument(
        "--slot-filter",
        metavar="SLOT",
        help="grids = all cells of this slot (default: the slot with the most records)",
    )
    p.add_argument("--day", metavar="YYYY-MM-DD", help="grids = all HATs of this day")
    p.add_argument(
        "--release",
        action="store_true",
        help="also release noisy mean and variance per grid, after CHOP-USER (privacy loss K*eps)",
    )
    p.add_argument("--seed", type=int)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.citywide import accounting, chop, grids, gridset

    summaries = common.prepared(args).summaries
    slot = args.slot_filter
    if slot is None and args.day is None:  # all cells of the busiest slot (most records)
        slot = gridset.busiest_slot(summaries)
    rows = gridset.select_grids(summaries, slot=slot, day=args.day)
    gs = gridset.GridSet.from_summaries(rows)
    epsilons = common.epsilons(args.epsilon)
    out = {"slot": slot, "day": args.day, **accounting.compose(gs, epsilons, args.upper)}
    if args.release:
        if len(epsilons) != 1:
            raise HexplorerError("--release needs exactly one --epsilon value.")
        result = chop.chop_user(gs, epsilons[0], upper=args.upper)
        table = grids.release_grids(
            gs, epsilons[0], upper=args.upper, rng=common.rng(args.seed), retained=result.retained
        )
        out["release_privacy_loss"] = result.privacy_loss
        out["release"] = table.to_dict(orient="records")
    return out


# ---------------------------------------------------------------------------------------------
# Parser and output
