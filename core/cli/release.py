"""``hexplorer release``: one noisy release of a HAT's mean, simulated (``--seed``) or published."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common
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
        p, "FILE", "write the published release to FILE (.csv, .parquet or .geojson)"
    )
    p.set_defaults(func=run)


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

    published = publish.publish(
        args.mechanism,
        hat,
        epsilon,
        m_ub=args.m_ub,
        dataset=args.data or "demo",
        ledger=args.ledger,
        namespace=args.namespace,
        budget=args.budget,
    )
    out = release_dict(published.release, hat)
    out.update(
        published=True,
        reused=published.reused,
        release_id=published.release_id,
        created=published.entry.created,
        ledger=str(published.ledger),
        **common.ledger_report(published.summary),
    )
    if target is not None:
        files.write_table(files.hat_table(published.entry), target)
        out["output"] = str(target)
    return out
