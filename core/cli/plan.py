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
    p.add_argument(
        "--adaptive",
        action="store_true",
        help="the adaptive cover of one slot (--slot-filter, default the busiest): hexagons of "
        "mixed --resolutions, each area at the finest one whose worst case at --epsilon is "
        "within --target-error (the data are prepared at the finest resolution)",
    )
    p.add_argument(
        "--resolutions", default="5-7", metavar="RMIN-RMAX", help="with --adaptive [5-7]"
    )
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
        return run_adaptive(args, upper, target)
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


def adaptive_resolutions(args: argparse.Namespace) -> tuple[int, int]:
    """``--resolutions`` checked; the data are prepared at r_max (``--resolution`` may only
    repeat it)."""
    from core.citywide.adaptive import parse_resolutions

    r_min, r_max = parse_resolutions(args.resolutions)
    if args.resolution not in (r_max, common._SETTINGS["resolution"]):
        raise HexplorerError(
            f"--adaptive prepares the data at the finest of --resolutions ({r_max}); "
            f"--resolution {args.resolution} contradicts it."
        )
    args.resolution = r_max
    return r_min, r_max


def adaptive_cover(args: argparse.Namespace, upper: float, target: float):
    """The cover ``--adaptive`` asks for (shared with ``release`` and ``compose``)."""
    from core.citywide.adaptive import adaptive_cover as cover_of
    from core.citywide.gridset import busiest_slot
    from core.params import check_epsilon

    if args.mechanism not in plan_mechanisms():
        raise HexplorerError(
            f"--adaptive needs a mechanism with an analytic worst case "
            f"({', '.join(plan_mechanisms())}); {args.mechanism} has none."
        )
    if getattr(args, "day", None) is not None:
        raise HexplorerError("--adaptive covers one slot (--slot-filter), not a --day.")
    epsilon = check_epsilon(args.epsilon)
    resolutions = adaptive_resolutions(args)
    summaries = common.prepared(args).summaries
    slot = args.slot_filter or busiest_slot(summaries)
    return cover_of(
        summaries, slot=slot, epsilon=epsilon, target=target, mechanism=args.mechanism,
        resolutions=resolutions, upper=upper, noise_measure=args.noise_measure,
    )  # fmt: skip


def plan_mechanisms() -> tuple[str, ...]:
    from core.mechanisms import analytic_names

    return analytic_names()


def run_adaptive(args: argparse.Namespace, upper: float, target: float) -> Any:
    from core.citywide.accounting import privacy_loss
    from core.citywide.gridset import GridSet

    cover = adaptive_cover(args, upper, target)
    grids = GridSet.from_summaries(cover.summaries())
    loss = privacy_loss(grids, cover.params.epsilon)
    out = cover.to_dict()
    out["privacy_loss"] = {"basic": loss.basic, "by_users": loss.by_users}
    return out
