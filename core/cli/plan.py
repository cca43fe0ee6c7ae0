"""``hexplorer plan``: the smallest eps whose error is within a target, for one HAT or every HAT of
a slot, a day or the file (``core.plan``)."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common
from core.errors import HexplorerError
from core.mechanisms import analytic_names


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "plan", parents=[data], help="the smallest eps whose worst-case error is within a target"
    )
    p.add_argument(
        "--target-error",
        required=True,
        type=float,
        metavar="E",
        help="the error one can live with, in the data's unit (e.g. 2 for +-2 km/h)",
    )
    p.add_argument(
        "--mechanism",
        default="opt-arrayavg",
        choices=names,
        metavar="NAME",
        help="[opt-arrayavg]; one without an analytic worst case is simulated (--trials)",
    )
    p.add_argument("--noise-measure", choices=["mean", "std"], default="mean")
    p.add_argument(
        "--all",
        action="store_true",
        help="every HAT of the file (or --slot-filter / --day): the eps at which --coverage of "
        "them are within target, and the per-user privacy loss it implies",
    )
    p.add_argument("--coverage", type=float, default=0.9, metavar="SHARE", help="with --all [0.9]")
    p.add_argument("--slot-filter", metavar="SLOT", help="with --all: only this slot's HATs")
    p.add_argument("--day", metavar="YYYY-MM-DD", help="with --all: only this day's HATs")
    p.add_argument(
        "--trials",
        type=int,
        default=2000,
        metavar="N",
        help="runs per eps of the Monte-Carlo plan (mechanisms without an analytic worst case) "
        "[2000]",
    )
    p.add_argument("--seed", type=int, help="seed of the Monte-Carlo plan")
    from core.cli import adaptive

    adaptive.add_options(p, target=False)
    p.add_argument(
        "--epsilon",
        type=float,
        default=1.0,
        metavar="EPS",
        help="with --adaptive: eps per cell [1]",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core import plan
    from core.params import check_upper

    upper = check_upper(args.upper)
    target = plan.check_target(args.target_error)
    if args.adaptive:
        from core.cli import adaptive

        return adaptive.run_plan(args, upper, target)
    if args.all:
        return run_all(args, upper, target)
    for flag, value in (("--slot-filter", args.slot_filter), ("--day", args.day)):
        if value is not None:
            raise HexplorerError(f"{flag} needs --all (every HAT at once).")
    hat = common.hat_of(args)
    if args.mechanism in analytic_names():
        result = plan.epsilon_for_error(
            hat.counts, upper, target, args.mechanism, args.noise_measure
        )
        return {"hat": hat.hat, "kind": "worst case", **result.to_dict()}
    if args.noise_measure != "mean":
        raise HexplorerError(
            "--noise-measure applies to the analytic worst case; the Monte-Carlo plan of "
            f"{args.mechanism} uses the mean absolute error."
        )
    mc = plan.epsilon_for_error_mc(
        hat, target, args.mechanism, rng=common.rng(args.seed), n_runs=args.trials
    )
    out = mc.to_dict()
    return {
        "hat": hat.hat,
        "kind": "Monte Carlo (smallest eps of a grid, 40 per decade from 0.01 to 100)",
        "status": out.pop("status"),
        "epsilon": out.pop("epsilon"),
        "m_ub": out.pop("m_ub"),
        "mae": out.pop("value"),
        **out,
    }


def run_all(args: argparse.Namespace, upper: float, target: float) -> Any:
    from core import plan
    from core.citywide.errors import error_table
    from core.citywide.gridset import grid_set

    coverage = plan.check_coverage(args.coverage)
    if args.mechanism not in analytic_names():
        raise HexplorerError(
            f"--all needs a mechanism with an analytic worst case "
            f"({', '.join(analytic_names())}); {args.mechanism} has none."
        )
    grids = grid_set(common.prepared(args).summaries, slot=args.slot_filter, day=args.day)
    table = error_table(grids, upper=upper, noise_measure=args.noise_measure)
    result = plan.city_plan(table, target, coverage=coverage, mechanism=args.mechanism, grids=grids)
    return {"slot": args.slot_filter, "day": args.day, **result.to_dict()}
