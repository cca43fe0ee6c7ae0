"""``hexplorer ledger``: the ledger of published releases at a glance, its budget, its export."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.cli import common


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "ledger",
        help="published releases: count, users, largest cumulative epsilon of a user, budget",
    )
    p.add_argument(
        "--ledger",
        metavar="FILE",
        help="ledger of published releases [$HEXPLORER_LEDGER or ~/.hexplorer/ledger.sqlite]",
    )
    p.add_argument(
        "--budget",
        type=float,
        metavar="EPS",
        help="set the per-user budget kept in the ledger (a release taking any user past it is "
        "refused)",
    )
    p.add_argument(
        "--export",
        metavar="FILE.json",
        help="write the whole ledger as JSON for audit (user ids as salted hashes)",
    )
    p.add_argument("--force", action="store_true", help="overwrite --export if it exists")
    p.add_argument(
        "--check", action="store_true", help="also run SQLite's integrity check on the ledger"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.publish import Ledger

    book = Ledger(args.ledger)
    target = None
    if args.export is not None:
        target = common.output_path(
            args.export, force=args.force, suffixes=(".json",), flag="--export"
        )
    if args.budget is not None:
        book.set_budget(args.budget)
    if args.check:
        book.check()
    out: dict[str, Any] = book.summary().as_dict()
    out["ledger"] = str(book.path)
    if target is not None:
        from core.publish.files import write_bytes

        text = json.dumps(book.export(), indent=1, allow_nan=False, ensure_ascii=False)
        write_bytes((text + "\n").encode(), target)
        out["export"] = str(target)
    return out
