"""``--adaptive`` of ``plan``, ``release`` and ``compose``: an adaptive H3 cover of one slot
(:mod:`core.citywide.adaptive`) — printed (``plan``) or published (``release``, ``compose
--publish``, through :mod:`core.publish.adaptive`) with each cell's resolution in the files."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common
from core.errors import HexplorerError


def add_options(p: argparse.ArgumentParser, *, target: bool) -> None:
    """``--adaptive`` and ``--resolutions`` (and ``--target-error`` where the command has none)."""
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
    if target:
        p.add_argument(
            "--target-error", type=float, metavar="E", help="with --adaptive: the target error"
        )


def resolutions(args: argparse.Namespace) -> tuple[int, int]:
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


def inputs(args: argparse.Namespace, epsilon: float, mechanism: str):
    """(summaries, the cover's arguments) of ``--adaptive`` (one-line errors)."""
    from core.data import default_slot, hat_table
    from core.mechanisms import analytic_names
    from core.params import check_epsilon, check_upper
    from core.plan import check_target

    if mechanism not in analytic_names():
        raise HexplorerError(
            f"--adaptive needs a mechanism with an analytic worst case "
            f"({', '.join(analytic_names())}); {mechanism} has none."
        )
    if getattr(args, "day", None) is not None:
        raise HexplorerError("--adaptive covers one slot (--slot-filter), not a --day.")
    if args.target_error is None:
        raise HexplorerError("--adaptive needs --target-error E (the error one can live with).")
    target = check_target(args.target_error)
    eps = check_epsilon(epsilon)
    r_min, r_max = resolutions(args)
    summaries = common.prepared(args).summaries
    slot = args.slot_filter or default_slot(hat_table(summaries))
    cover_args = dict(
        slot=slot, epsilon=eps, target=target, mechanism=mechanism, resolutions=(r_min, r_max),
        upper=check_upper(args.upper), noise_measure=getattr(args, "noise_measure", "mean"),
    )  # fmt: skip
    return summaries, cover_args


def _cover_dict(cover) -> dict[str, Any]:
    out = cover.to_dict()
    del out["cells"]
    return out


def run_plan(args: argparse.Namespace, upper: float, target: float) -> Any:
    """``plan --adaptive``: the cover, the shares within target, the per-user loss."""
    from core.citywide.accounting import privacy_loss
    from core.citywide.adaptive import adaptive_cover
    from core.citywide.gridset import GridSet

    summaries, cover_args = inputs(args, args.epsilon, args.mechanism)
    cover = adaptive_cover(summaries, **cover_args)
    loss = privacy_loss(GridSet.from_summaries(cover.summaries()), cover.params.epsilon)
    out = cover.to_dict()
    out["privacy_loss"] = {"basic": loss.basic, "by_users": loss.by_users}
    return out


def run_release(args: argparse.Namespace) -> Any:
    """``release --adaptive``: one release of ``--mechanism`` per cell of the cover, published
    (one ledger record, each user charged per ``--accounting``) and written to ``--output``."""
    from core.publish import files
    from core.publish.adaptive import publish_adaptive_hats, with_resolution

    if args.output is None:
        raise HexplorerError("--adaptive needs --output FILE (.csv, .parquet or .geojson).")
    if args.seed is not None or args.m_ub is not None or args.hat is not None:
        raise HexplorerError(
            "--adaptive publishes every cell at its default m_UB: drop --seed, --m-ub and --hat."
        )
    target = common.output_path(args.output, force=args.force, suffixes=files.OUTPUT_SUFFIXES)
    with files.StagedFile(target) as staged:  # an unwritable --output: refused before charging
        summaries, cover_args = inputs(args, args.epsilon, args.mechanism)
        cover, published = publish_adaptive_hats(
            summaries, cover_args=cover_args, accounting=args.accounting or "per-user",
            **common.ledger_options(args),
            before_commit=lambda rel: staged.write(
                files.to_bytes(with_resolution(files.hats_table(rel)), target.suffix)
            ),
        )  # fmt: skip
        release = published.release
        staged.commit(release.release_id)
    return {
        "output": str(target),
        "mechanism": release.mechanism,
        "epsilon": release.epsilon,
        "hats": int(len(release.table)),
        "published": True,
        "reused": published.reused,
        "release_id": release.release_id,
        "accounting": release.accounting,
        "release_privacy_loss": release.privacy_loss,
        "ledger": str(published.ledger),
        **common.ledger_report(published),
        "cover": _cover_dict(cover),
    }


def run_compose(args: argparse.Namespace, epsilon: float, target) -> Any:
    """``compose --publish --adaptive``: noisy mean and variance of every cell of the cover (the
    cells chosen by ``--mechanism``'s worst case), published as one city-wide release."""
    from core.publish import files
    from core.publish.adaptive import publish_adaptive_city, with_resolution

    staged = None if target is None else files.StagedFile(target)  # refused before charging
    try:
        summaries, cover_args = inputs(args, epsilon, args.mechanism)
        cover, published = publish_adaptive_city(
            summaries, cover_args=cover_args, accounting=args.accounting,
            **common.ledger_options(args),
            before_commit=None
            if staged is None
            else lambda rel: staged.write(
                files.to_bytes(with_resolution(files.city_table(rel)), staged.target.suffix)
            ),
        )  # fmt: skip
        if staged is not None:
            staged.commit(published.release.release_id)
    finally:
        if staged is not None:
            staged.discard()
    rel = published.release
    table = with_resolution(files.city_table(rel))
    out: dict[str, Any] = {
        "slot": cover.slot,
        "grids": int(len(table)),
        "published": True,
        "reused": published.reused,
        "release_id": rel.release_id,
        "ledger": str(published.ledger),
        "epsilon": rel.epsilon,
        "accounting": rel.accounting,
        "privacy_loss": rel.privacy_loss,
        "k": rel.k,
        **common.ledger_report(published),
        "cover": _cover_dict(cover),
        "release": table[["hat", "cell", "resolution", "slot", "noisy_mean", "noisy_var"]].to_dict(
            orient="records"
        ),
    }
    if target is not None:
        out["output"] = str(target)
    return out
