"""``hexplorer ledger``: the ledger of published releases at a glance, its namespaces and budgets
with their history, its audit export; ``ledger set-budget`` (the operator's) and ``ledger
migrate`` (a schema 2 ledger's ids keyed, once)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.cli import common

_LEDGER_HELP = "ledger of published releases [$HEXPLORER_LEDGER or ~/.hexplorer/ledger.sqlite]"


def _common(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--ledger", metavar="FILE", default=default, help=_LEDGER_HELP)
    p.add_argument(
        "--json", action="store_true", default=default or False, help="print JSON, not a table"
    )


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "ledger",
        help="published releases: users, largest cumulative epsilon, namespaces and budgets; "
        "set-budget, migrate",
        description="The ledger at a glance. `ledger set-budget EPS` sets a namespace's budget "
        "(lower freely; raise only with --raise --reason TEXT, kept in the audit trail); "
        "`ledger migrate` keys the ids of a schema 2 ledger.",
    )
    _common(p, None)
    p.add_argument(
        "--budget",
        type=float,
        metavar="EPS",
        help="as `ledger set-budget EPS` for the default namespace: sets a first budget or "
        "lowers it (raising needs set-budget --raise --reason)",
    )
    p.add_argument(
        "--export",
        metavar="FILE.json",
        help="write the ledger for an auditor (JSON): releases with what they cost each hashed "
        "user, users' totals, namespaces, budget history; no key, no path, no unkeyed digest",
    )
    p.add_argument("--force", action="store_true", help="overwrite --export if it exists")
    p.add_argument(
        "--check",
        action="store_true",
        help="also run SQLite's integrity check and check every total against its charges",
    )
    p.set_defaults(func=run)
    actions = p.add_subparsers(dest="ledger_action", metavar="ACTION")
    sb = actions.add_parser(
        "set-budget",
        help="set a namespace's per-user budget (the operator's: lower freely, raise with a "
        "reason)",
    )
    sb.add_argument("epsilon", type=float, metavar="EPS", help="the largest cumulative epsilon")
    sb.add_argument("--namespace", metavar="NAME", help="the users' namespace [default]")
    sb.add_argument(
        "--raise",
        dest="raising",
        action="store_true",
        help="allow a higher budget than the current one (needs --reason)",
    )
    sb.add_argument("--reason", metavar="TEXT", help="why (kept with the time in the audit trail)")
    _common(sb, argparse.SUPPRESS)
    sb.set_defaults(func=run_set_budget)
    mg = actions.add_parser(
        "migrate",
        help="key the ids of a schema 2 ledger (unkeyed salted hashes) in place; makes its key",
    )
    _common(mg, argparse.SUPPRESS)
    mg.set_defaults(func=run_migrate)


def _overview(book) -> dict[str, Any]:
    out: dict[str, Any] = book.summary().as_dict()
    out["ledger"] = str(book.path)
    out["namespaces"] = book.namespaces()
    out["budget_changes"] = book.budget_changes()
    return out


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
    out = _overview(book)
    if target is not None:
        from core.publish.files import write_bytes

        text = json.dumps(book.export(), indent=1, allow_nan=False, ensure_ascii=False)
        write_bytes((text + "\n").encode(), target)
        out["export"] = str(target)
    return out


def run_set_budget(args: argparse.Namespace) -> Any:
    from core.errors import HexplorerError
    from core.publish import Ledger

    if args.reason is not None and not args.raising:
        raise HexplorerError("--reason goes with --raise (a lower budget needs no reason).")
    book = Ledger(args.ledger)
    book.set_budget(
        args.epsilon, namespace=args.namespace, reason=args.reason, raising=args.raising
    )
    return _overview(book)


def run_migrate(args: argparse.Namespace) -> Any:
    from core.publish import Ledger
    from core.publish.migrate import migrate

    book = Ledger(args.ledger)
    out = {"migrated": str(book.path), **migrate(book)}
    return {**out, **_overview(Ledger(args.ledger))}
