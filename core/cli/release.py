"""``hexplorer release``: one noisy release of a HAT's mean, simulated (``--seed``) or published."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from core.cli import common
from core.data.staging import staged
from core.errors import HexplorerError


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser("release", parents=[data], help="one noisy release of a HAT's mean")
    p.add_argument(
        "--mechanism", required=True, choices=names, metavar="NAME", help=", ".join(names)
    )
    p.add_argument("--epsilon", required=True, type=float, metavar="E")
    p.add_argument("--m-ub", type=int, metavar="M", help="override the mechanism's default m_UB")
    p.add_argument(
        "--seed",
        type=int,
        help="simulate with this seed (nothing is published); without it the release is published: "
        "OpenDP noise, recorded in the ledger, charged to each user, the same request returns the "
        "recorded value",
    )
    common.add_ledger_options(p)
    common.add_output_options(
        p,
        "FILE",
        "write the published release to FILE (.csv, .parquet or .geojson); with --all the table "
        "of every HAT (.csv or .parquet; published also .geojson)",
    )
    every = p.add_argument_group("every HAT at once (core.citywide.batch)")
    every.add_argument(
        "--all",
        action="store_true",
        help="release every HAT (of --slot-filter / --day, else of the data) in one vectorised "
        "pass, one row per HAT to --output; simulated with --seed, else published (one ledger "
        "record, each user charged per --accounting)",
    )
    every.add_argument(
        "--accounting",
        choices=["per-user", "max"],
        default=None,
        help="with --all, published: charge each user k*eps for the k HATs its records enter "
        "(per-user, default) or eps*max k to every user (max)",
    )
    every.add_argument("--slot-filter", metavar="SLOT", help="with --all: the HATs of this slot")
    every.add_argument("--day", metavar="YYYY-MM-DD", help="with --all: the HATs of this day")
    every.add_argument(
        "--engine",
        choices=["polars", "spark"],
        default="polars",
        help="with --all --seed: polars (this machine, default) or spark (every HAT released on "
        "the executors, written there as a folder of parts)",
    )
    every.add_argument(
        "--spark-master", default="local[*]", metavar="URL", help="for --engine spark [local[*]]"
    )
    from core.cli import adaptive

    adaptive.add_options(p, target=True)  # one cell per area at the resolution that meets it
    p.set_defaults(func=run)


def run_all(args: argparse.Namespace) -> Any:
    """``release --all``: one release per HAT (core.citywide.batch) to ``--output``: simulated
    with ``--seed``, else published (core.publish.batch)."""
    if args.engine == "spark":
        from core.cli import release_spark

        return release_spark.run_all(args)
    if args.output is None:
        raise HexplorerError("--all needs --output FILE (.csv or .parquet; .geojson published).")
    if args.m_ub is not None or args.hat is not None:
        raise HexplorerError("--all uses each HAT's default m_UB and every HAT: drop --m-ub/--hat.")
    if args.seed is not None:
        for flag in ("budget", "namespace", "ledger", "accounting"):
            if getattr(args, flag) is not None:
                raise HexplorerError(
                    f"--{flag} is for published releases; drop --seed to publish "
                    "(a simulated release is never recorded)."
                )
    if args.seed is not None:  # a simulated table: core.publish is not imported
        suffixes: tuple[str, ...] = (".csv", ".parquet")
    else:
        from core.publish.files import OUTPUT_SUFFIXES as suffixes
    target = common.output_path(args.output, force=args.force, suffixes=suffixes)
    if args.seed is None:
        from core.publish.files import check_writable

        check_writable(target)  # before reading the data: nothing is charged for an unwritable file
    (epsilon,) = common.epsilons([args.epsilon])
    if args.seed is not None and _whole_file(args):
        from core.citywide.pieces import release_runs, release_table
        from core.data.runs import summary_runs
        from core.data.summaries import is_dataset, summary_pieces
        from core.mechanisms import MECHANISMS

        # the vectorised releases never read the user ids (rows in file order suffice)
        vectorised = MECHANISMS[args.mechanism].release_all is not None
        runs = summary_runs(args.data) if vectorised else None  # a file: its HATs as runs
        if runs is not None:
            common.keep_freed_memory()  # batches of a few MB, freed and made again
            with _no_cycle_collection():
                table = release_runs(
                    args.mechanism, runs, epsilon, seed=args.seed, upper=args.upper
                )
                return _write_simulated(args, table, target, epsilon)
        pieces = summary_pieces(args.data, ["hat", *([] if vectorised else ["user_id"]), "m", "s"])
        table = release_table(
            args.mechanism,
            pieces,
            epsilon,
            seed=args.seed,
            upper=args.upper,
            whole_hats=is_dataset(args.data),  # a dataset: part by part, each holds whole HATs
        )
        return _write_simulated(args, table, target, epsilon)
    if args.seed is None and _whole_file(args):
        from core.data.summaries import is_dataset

        if is_dataset(args.data):
            from core.data.dataset import parts_ascending

            if parts_ascending(args.data):  # part by part, one ledger transaction
                return publish_all(args, None, epsilon, target)
    from core.citywide.batch import HatBatch, release_all

    summaries = _summaries(args)
    if args.slot_filter is not None or args.day is not None:
        from core.citywide.gridset import select_grids

        summaries = select_grids(summaries, slot=args.slot_filter, day=args.day)
    batch = HatBatch.from_summaries(summaries, upper=args.upper)
    if args.seed is None:
        return publish_all(args, batch, epsilon, target)
    table = release_all(args.mechanism, batch, epsilon, seed=args.seed)
    return _write_simulated(args, table, target, epsilon)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused: a release of every HAT makes ~10⁶ small objects without
    cycles (labels, digests), and each collection they trigger walks every object the imports
    made (~0.05 CPU s at 10⁷ records). Reference counting still frees everything."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _write_simulated(args: argparse.Namespace, table: Any, target: Any, epsilon: float) -> Any:
    """Write a simulated ``--all`` table (a :class:`~core.citywide.release_table.ReleaseTable`,
    written without pandas where it can, or a pandas frame) and say what was written."""
    with staged(target) as path:  # whole or not at all: an earlier file stays until then
        if hasattr(table, "to_parquet"):  # pandas (a filtered or prepared table)
            if str(target).lower().endswith(".parquet"):
                table.to_parquet(path, index=False)
            else:
                table.to_csv(path, index=False)
        else:
            table.write(path)
    return {
        "output": str(target),
        "mechanism": args.mechanism,
        "epsilon": epsilon,
        "seed": args.seed,
        "hats": int(len(table)),
        "published": False,
    }


def _summaries(args: argparse.Namespace) -> Any:
    """The per-(HAT, user) summaries ``--all`` releases: read straight into polars from a
    summaries file (no pandas) when no filter needs them as pandas, else prepared."""
    from pathlib import Path

    from core.data.summaries import read_summary_frame

    if _whole_file(args):
        return read_summary_frame(Path(args.data), ["hat", "user_id", "m", "s"])
    return common.prepared(args).summaries


def _whole_file(args: argparse.Namespace) -> bool:
    """Whether ``--all`` releases every HAT of a summaries file or dataset (no filter)."""
    from pathlib import Path

    from core.data.summaries import is_summaries

    if args.slot_filter is not None or args.day is not None or args.data is None:
        return False
    path = Path(args.data)
    return (path.is_file() or path.is_dir()) and is_summaries(path)


def _part_batches(args: argparse.Namespace) -> Any:
    """The parts of the summaries dataset ``args.data`` as HatBatches, one at a time."""
    from core.citywide.batch import HatBatch
    from core.data.summaries import summary_pieces

    for frame in summary_pieces(args.data, ["hat", "user_id", "m", "s"]):
        if frame.height:
            yield HatBatch.from_summaries(frame, upper=args.upper)


def publish_all(args: argparse.Namespace, batch, epsilon: float, target) -> dict[str, Any]:
    """``release --all`` without ``--seed``: every HAT published as one ledger record (``batch``
    None: the parts of a summaries dataset, read one at a time, :mod:`core.publish.parts`)."""
    from functools import partial

    from core.publish import batch as publish_batch
    from core.publish import files

    if batch is None:  # a summaries dataset with its HATs in order: read part by part
        from core.publish.parts import publish_parts

        publish = partial(publish_parts, args.mechanism, partial(_part_batches, args))
    else:
        publish = partial(publish_batch.publish_all, args.mechanism, batch)
    with files.StagedFile(target) as staged:  # an unwritable --output: refused before charging
        published = publish(
            epsilon,
            accounting=args.accounting or "per-user",
            **common.ledger_options(args),
            before_commit=lambda rel: staged.write(
                files.to_bytes(files.hats_table(rel), target.suffix)
            ),
        )
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
        "created": release.created,
        "accounting": release.accounting,
        "release_privacy_loss": release.privacy_loss,
        "ledger": str(published.ledger),
        **common.ledger_report(published),
    }


def release_dict(release, hat) -> dict[str, Any]:
    clip = release.clip_interval
    return {
        "hat": hat.hat,
        "mechanism": release.mechanism,
        "epsilon": release.epsilon,
        "m_ub": release.m_ub,
        "sensitivity": release.sensitivity,
        "noise_scale": release.noise_scale,
        "n_arrays": release.n_arrays,
        "clip_interval": None if clip is None else list(clip),
        "estimate": release.estimate,
    }


def run(args: argparse.Namespace) -> Any:
    from core import mechanisms

    if args.engine == "spark" and not args.all:
        raise HexplorerError("--engine spark releases every HAT: it needs --all.")
    if args.adaptive:
        from core.cli import adaptive

        return adaptive.run_release(args)
    if args.all:
        return run_all(args)
    if args.slot_filter is not None or args.day is not None or args.accounting is not None:
        raise HexplorerError("--slot-filter, --day and --accounting need --all (every HAT).")
    if args.seed is not None:
        for flag in ("output", "budget", "namespace", "ledger"):
            if getattr(args, flag) is not None:
                raise HexplorerError(
                    f"--{flag} is for published releases; drop --seed to publish "
                    "(a simulated release is never recorded or written)."
                )
    from core.publish.files import OUTPUT_SUFFIXES

    target = None
    if args.output is not None:
        target = common.output_path(args.output, force=args.force, suffixes=OUTPUT_SUFFIXES)
        from core.publish.files import check_writable

        check_writable(target)  # before reading the data: nothing is charged for an unwritable file
    hat = common.hat_of(args)
    (epsilon,) = common.epsilons([args.epsilon])
    if args.seed is not None:
        out = release_dict(
            mechanisms.release(
                args.mechanism, hat, epsilon, m_ub=args.m_ub, rng=common.rng(args.seed)
            ),
            hat,
        )
        out["published"] = False
        return out
    from core import publish
    from core.publish import files

    staged = None if target is None else files.StagedFile(target)  # refused before charging
    try:
        published = publish.publish(
            args.mechanism,
            hat,
            epsilon,
            m_ub=args.m_ub,
            **common.ledger_options(args),
            before_commit=None
            if staged is None
            else lambda entry: staged.write(
                files.to_bytes(files.hat_table(entry), staged.target.suffix)
            ),
        )
        out = release_dict(published.release, hat)
        out.update(
            published=True,
            reused=published.reused,
            release_id=published.release_id,
            created=published.entry.created,
            ledger=str(published.ledger),
            **common.ledger_report(published),
        )
        if staged is not None:
            out["output"] = str(staged.commit(published.release_id))
    finally:
        if staged is not None:
            staged.discard()
    return out
