"""``hexplorer simulate``: the raw outputs of N runs of one mechanism, saved as ``.npy``."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from core.cli import common
from core.errors import HexplorerError


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser("simulate", parents=[data], help="raw outputs of N runs, saved as .npy")
    p.add_argument("--mechanism", required=True, choices=names, metavar="NAME")
    p.add_argument("--epsilon", required=True, type=float, metavar="E")
    p.add_argument("--trials", required=True, type=int, metavar="N")
    p.add_argument("--m-ub", type=int, metavar="M")
    p.add_argument("--seed", type=int)
    common.add_output_options(p, "FILE.npy", "where to save the outputs (.npy)", required=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> Any:
    from core.mechanisms import run_mechanism

    target = common.output_path(args.output, force=args.force, suffixes=(".npy",))
    hat = common.hat_of(args)
    (epsilon,) = common.epsilons([args.epsilon])
    draws = run_mechanism(
        args.mechanism, hat, epsilon, m_ub=args.m_ub, rng=common.rng(args.seed), size=args.trials
    )
    try:
        np.save(target, draws.estimates)
    except OSError as exc:
        raise HexplorerError(
            f"--output {args.output!r} cannot be written: {exc.strerror}."
        ) from None
    return {
        "hat": hat.hat,
        "mechanism": draws.mechanism,
        "epsilon": draws.epsilon,
        "m_ub": draws.m_ub,
        "trials": int(draws.estimates.size),
        "true_mean": hat.true_mean,
        "output": args.output,
    }
