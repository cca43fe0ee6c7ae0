"""``hexplorer release``: one noisy release of a HAT's mean, simulated (``--seed``) or published."""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import common


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
        "OpenDP noise, recorded in the ledger, the same request returns the recorded value",
    )
    p.add_argument(
        "--ledger", metavar="FILE", help="ledger of published releases [~/.hexplorer/ledger.jsonl]"
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

    published = publish.publish(
        args.mechanism,
        hat,
        epsilon,
        m_ub=args.m_ub,
        dataset=args.data or "demo",
        ledger=args.ledger,
    )
    out = release_dict(published.release, hat)
    book = publish.Ledger(published.ledger)
    out.update(
        published=True,
        reused=published.reused,
        ledger=str(published.ledger),
        epsilon_spent_on_hat=book.epsilon_spent(published.entry.fingerprint, hat.hat),
    )
    return out
