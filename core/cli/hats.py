"""``hexplorer hats``: list HATs, busiest first."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser("hats", parents=[data], help="list HATs, busiest first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.data import hat_table

    table = hat_table(common.prepared(args).summaries)
    return table.to_dict(orient="records")
