"""``hexplorer worstcase``: worst-case error, m^(eps) and its staircase (SPEC section 4)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from core.cli import common
from core.errors import HexplorerError


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "worstcase", parents=[data], help="worst-case error, m^(eps) and its staircase"
    )
    p.add_argument(
        "--counts", metavar="FILE", help="one user's record count per line, instead of DATA"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument("--noise-measure", choices=["mean", "std"], default="mean")
    p.set_defaults(func=run)


def read_counts(path: str) -> np.ndarray:
    from core.params import check_counts

    try:
        lines = Path(path).read_text(encoding="utf-8").split()
    except OSError as exc:
        raise HexplorerError(f"Cannot read counts file {path!r}: {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise HexplorerError(f"Counts file {path!r} is not UTF-8 text.") from None
    if not lines:
        raise HexplorerError(f"Counts file {path!r} is empty; it needs one integer per line.")
    counts = []
    for number, token in enumerate(lines, start=1):
        try:
            value = int(token)
        except ValueError:
            raise HexplorerError(
                f"Counts file {path!r}: entry {number} is {token!r}, not an integer."
            ) from None
        if value < 1:
            raise HexplorerError(
                f"Counts file {path!r}: entry {number} is {value}; counts must be >= 1."
            )
        counts.append(value)
    try:
        array = np.asarray(counts, dtype=np.int64)
    except OverflowError:  # beyond int64: let check_counts name the limit
        array = np.asarray(counts, dtype=object)
    return check_counts(array)


def run(args: argparse.Namespace) -> Any:
    from core import worstcase as wc
    from core.params import check_upper

    upper = check_upper(args.upper)
    if args.counts is not None:
        if args.data is not None:
            raise HexplorerError("Give either DATA or --counts, not both.")
        counts = read_counts(args.counts)
    else:
        counts = common.hat_of(args).counts
    epsilons = common.epsilons(args.epsilon)
    results = []
    for epsilon in epsilons:
        m = wc.m_opt(counts, upper, epsilon, args.noise_measure)
        parts = wc.worst_case_error(counts, upper, m, epsilon, args.noise_measure)
        results.append(
            {
                "epsilon": epsilon,
                "m_opt": int(m),
                "error": float(parts.total),
                "clipping_error": float(parts.clipping),
                "noise_error": float(parts.noise),
                "opt_bounding_error": float(
                    wc.opt_bounding_error(counts, upper, epsilon, args.noise_measure)
                ),
                "baseline_error": float(
                    wc.baseline_error(counts, upper, epsilon, args.noise_measure)
                ),
            }
        )
    steps = wc.staircase(counts, upper, args.noise_measure)
    return {
        "users": int(counts.size),
        "records": int(counts.sum()),
        "noise_measure": args.noise_measure,
        "results": results,
        "staircase": [
            {"epsilon_from": s.epsilon_from, "epsilon_to": s.epsilon_to, "m": int(s.m)}
            for s in steps
        ],
        "m_levy": int(wc.m_levy(counts)),
        "m_convex": int(wc.m_convex(counts)),
        "m_median": int(wc.median_count(counts)),
    }
