"""``hexplorer evaluate``: Monte-Carlo MAE of mechanisms over epsilons."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from core.cli import common


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "evaluate", parents=[data], help="Monte-Carlo MAE of mechanisms over epsilons"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument("--mechanism", nargs="+", choices=names, metavar="NAME", help="default: all")
    p.add_argument("--trials", required=True, type=int, metavar="N")
    p.add_argument("--m-ub", type=int, metavar="M")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.evaluation import monte_carlo

    hat = common.hat_of(args)
    epsilons = common.epsilons(args.epsilon)
    table = monte_carlo(
        hat,
        epsilons,
        args.mechanism or None,
        n_runs=args.trials,
        rng=common.rng(args.seed),
        m_ub=args.m_ub,
        progress=common.progress if sys.stderr.isatty() and not args.json else None,
    )
    keep = [c for c in ("mechanism", "epsilon", "m_ub", "mae", "note") if c in table.columns]
    return {
        "hat": hat.hat,
        "true_mean": hat.true_mean,
        "results": table[keep].to_dict(orient="records"),
    }
