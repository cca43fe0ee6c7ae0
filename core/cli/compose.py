"""``hexplorer compose``: many hexagons at once — composition and CHOP-USER (SPEC section 5), a
workbench simulation (``--simulate``) or a published city-wide release (``--publish``, SPEC §7)."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common
from core.errors import HexplorerError

_GONE = (
    "--release is gone: use --publish for a published release (OpenDP noise, recorded in the "
    "ledger, noisy values only) or --simulate --seed S for the workbench simulation (shows true "
    "values)."
)


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "compose",
        parents=[data],
        help="many hexagons at once: composition, CHOP-USER, simulated or published release",
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument(
        "--slot-filter",
        metavar="SLOT",
        help=(
            "grids = all cells of this slot (default: the slot of the busiest hexagon-hour, "
            "the first HAT `hats` lists; not the busiest hour city-wide: `hats --slots`)"
        ),
    )
    p.add_argument("--day", metavar="YYYY-MM-DD", help="grids = all HATs of this day")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--simulate",
        action="store_true",
        help="simulate one release of noisy mean and variance per grid (numpy noise, --seed; "
        "nothing published; shows true values beside the noisy ones)",
    )
    mode.add_argument(
        "--publish",
        action="store_true",
        help="publish noisy mean and variance per grid: OpenDP noise, recorded in the ledger and "
        "charged to each user, the same request returns the recorded values; never true values",
    )
    mode.add_argument("--release", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--accounting",
        choices=("per-user", "max", "chop"),
        default="per-user",
        help="what each user is charged: G_l*eps (per-user), eps*max G_l (max), or K*eps after "
        "CHOP-USER suppression (chop) [per-user]",
    )
    p.add_argument("--seed", type=int, help="seed of --simulate's noise")
    from core.cli import adaptive

    adaptive.add_options(p, target=True)  # with --publish: the cells of an adaptive cover
    p.add_argument(
        "--mechanism", default="opt-arrayavg", choices=names, metavar="NAME",
        help="with --adaptive: the worst case that chooses the cells [opt-arrayavg]",
    )  # fmt: skip
    common.add_ledger_options(p)
    common.add_output_options(
        p, "FILE", "with --publish: write the release to FILE (.csv, .parquet or .geojson)"
    )
    p.set_defaults(func=run)


def _check_flags(args: argparse.Namespace) -> None:
    if args.release:
        raise HexplorerError(_GONE)
    if not args.publish:
        for flag in ("output", "budget", "namespace", "ledger"):
            if getattr(args, flag) is not None:
                raise HexplorerError(f"--{flag} is for published releases; add --publish.")
    if args.publish and args.seed is not None:
        raise HexplorerError(
            "--seed is for --simulate: a published release's noise is never seeded."
        )
    if (args.simulate or args.publish) and len(args.epsilon) != 1:
        mode = "--publish" if args.publish else "--simulate"
        raise HexplorerError(f"{mode} needs exactly one --epsilon value.")


def run(args: argparse.Namespace) -> Any:
    from core.citywide import accounting, chop, grids, gridset
    from core.data import default_slot, hat_table

    _check_flags(args)
    target = None
    if args.output is not None:
        from core.publish.files import OUTPUT_SUFFIXES, check_writable

        target = common.output_path(args.output, force=args.force, suffixes=OUTPUT_SUFFIXES)
        check_writable(target)  # before reading the data: nothing is charged for an unwritable file
    if args.adaptive:
        from core.cli import adaptive

        if not args.publish:
            raise HexplorerError("--adaptive publishes its cells: add --publish.")
        return adaptive.run_compose(args, common.epsilons(args.epsilon)[0], target)
    summaries = common.prepared(args).summaries
    slot = args.slot_filter
    if slot is None and args.day is None:  # all cells of the busiest hexagon-hour's slot
        slot = default_slot(hat_table(summaries))
    rows = gridset.select_grids(summaries, slot=slot, day=args.day)
    gs = gridset.GridSet.from_summaries(rows)
    epsilons = common.epsilons(args.epsilon)
    if args.publish:
        return _publish(args, gs, epsilons[0], slot, target)
    out = {"slot": slot, "day": args.day, **accounting.compose(gs, epsilons, args.upper)}
    if args.simulate:
        eps = epsilons[0]
        keep = None
        from core.publish.city import user_charges

        k = gs.max_grids_per_user
        if args.accounting == "chop":
            result = chop.chop_user(gs, eps, upper=args.upper)
            keep, k = result.retained, result.k_final
        table = grids.release_grids(
            gs, eps, upper=args.upper, rng=common.rng(args.seed), retained=keep
        )
        out.update(
            simulated=True,
            accounting=args.accounting,
            release_privacy_loss=float(user_charges(gs, eps, args.accounting, k).max()),
            release=table.to_dict(orient="records"),
        )
    return out


def _publish(args, gs, epsilon: float, slot, target) -> dict[str, Any]:
    from core.publish import city, files

    staged = None if target is None else files.StagedFile(target)  # refused before charging
    try:
        published = city.publish_grids(
            gs,
            epsilon,
            upper=args.upper,
            accounting=args.accounting,
            **common.ledger_options(args),
            before_commit=None
            if staged is None
            else lambda rel: staged.write(
                files.to_bytes(files.city_table(rel), staged.target.suffix)
            ),
        )
        if staged is not None:
            staged.commit(published.release.release_id)
    finally:
        if staged is not None:
            staged.discard()
    rel = published.release
    table = files.city_table(rel)
    out: dict[str, Any] = {
        "slot": slot,
        "day": args.day,
        "grids": gs.n_grids,
        "published": True,
        "reused": published.reused,
        "release_id": rel.release_id,
        "created": rel.created,
        "ledger": str(published.ledger),
        "epsilon": rel.epsilon,
        "accounting": rel.accounting,
        "privacy_loss": rel.privacy_loss,
        "k": rel.k,
        "suppressed_pairs": rel.suppressed_pairs,
        **common.ledger_report(published),
        "release": table[["hat", "cell", "slot", "noisy_mean", "noisy_var"]].to_dict(
            orient="records"
        ),
    }
    if target is not None:
        out["output"] = str(target)
    return out
