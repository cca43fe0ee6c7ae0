"""``hexplorer hats``: list HATs, the busiest hexagon-hour first; ``--slots``: list slots, the
busiest hour (most records city-wide) first (the two "busiest" of :mod:`core.data.busiest`)."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "hats",
        parents=[data],
        help="list HATs, the busiest hexagon-hour (most records) first",
    )
    p.add_argument(
        "--slots",
        action="store_true",
        help="list slots instead, the busiest hour (most records city-wide) first, each named",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.data import hat_table, slot_names, slot_table

    table = hat_table(common.prepared(args).summaries)
    if getattr(args, "slots", False):
        slots = slot_table(table)
        names = slot_names(table)
        slots["busiest"] = [names.get(s, "") for s in slots["slot"]]
        return slots.to_dict(orient="records")
    return table.to_dict(orient="records")
