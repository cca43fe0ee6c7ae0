"""The ``hexplorer`` command line: a thin shell over the functions the dashboard calls.

Every subcommand reads a dataset (a CSV/Parquet path, or the built-in demo city when none is
given), maps its columns, prepares it (SPEC section 1) and prints a table, or JSON with
``--json``. Bad input prints one line naming the problem and exits with status 2.

Examples
--------
::

    hexplorer hats --json
    hexplorer release --mechanism arrayavg-best --epsilon 1 --seed 7 --json
    hexplorer evaluate --epsilon 0.5 1 2 --trials 10000 --seed 1 --json
    hexplorer worstcase --epsilon 0.5 1 2 --json
    hexplorer compose --epsilon 1 --slot-filter 2024-03-05T08:00 --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from core.errors import HexplorerError
from core.params import check_positive_int

# ---------------------------------------------------------------------------------------------
# Data options shared by every subcommand


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (no usage block), status 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _data_options() -> _Parser:
    parent = _Parser(add_help=False)
    group = parent.add_argument_group("data (defaults: the built-in demo city)")
    group.add_argument(
        "data", nargs="?", metavar="DATA", help="CSV or Parquet file; omit for the demo city"
    )
    group.add_argument(
        "--user-col", default="user_id", help="column with the user (bus) id [user_id]"
    )
    group.add_argument("--lat-col", default="lat", help="latitude column [lat]")
    group.add_argument("--lon-col", default="lon", help="longitude column [lon]")
    group.add_argument("--time-col", default="timestamp", help="timestamp column [timestamp]")
    group.add_argument("--value-col", default="speed", help="value (speed) column [speed]")
    group.add_argument("--upper", type=float, default=65.0, metavar="U", help="value bound U [65]")
    group.add_argument("--resolution", type=int, default=7, metavar="R", help="H3 resolution [7]")
    group.add_argument(
        "--slot", default="1h", help="timeslot: a duration such as 1h or 30min, or hour-of-day [1h]"
    )
    group.add_argument(
        "--keep-zeros", action="store_true", help="keep zero values (dropped by default)"
    )
    group.add_argument(
        "--hat", metavar="CELL/SLOT", help="the HAT to analyse (default: the busiest)"
    )
    group.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parent


def _prepared(args: argparse.Namespace):
    """Load and prepare the dataset the options describe (SPEC section 1)."""
    from core.data import ColumnMap, PrepConfig, load_demo, prepare, prepare_file

    config = PrepConfig(
        upper=args.upper, resolution=args.resolution, slot=args.slot, keep_zeros=args.keep_zeros
    )
    if args.data is None:
        return _reported(prepare(load_demo(), ColumnMap(), config))
    path = Path(args.data)
    if not path.is_file():
        raise HexplorerError(f"Data file {args.data!r} does not exist or is not a file.")
    columns = ColumnMap(
        user=args.user_col,
        lat=args.lat_col,
        lon=args.lon_col,
        time=args.time_col,
        value=args.value_col,
    )
    return _reported(prepare_file(path, columns, config))


def _reported(prepared):
    """Say on stderr what preparation rejected or clamped (SPEC section 1: never silently)."""
    report = prepared.report
    if report.n_rejected or report.clamped:
        print(f"hexplorer: note: {' '.join(report.lines())}", file=sys.stderr)
    return prepared


def _hat(args: argparse.Namespace):
    """The chosen HAT (or the busiest) of the dataset, as HatData."""
    from core.data import hat_data

    prepared = _prepared(args)
    return hat_data(prepared.summaries, args.hat, upper=args.upper)


def _epsilons(values: Sequence[float]) -> list[float]:
    from core.params import check_epsilon

    return [check_epsilon(e) for e in values]


def _rng(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# Subcommands: each returns a JSON-able object; printing is done once in main()


def cmd_hats(args: argparse.Namespace) -> Any:
    from core.data import hat_table

    table = hat_table(_prepared(args).summaries)
    return table.to_dict(orient="records")


def _release_dict(release, hat) -> dict[str, Any]:
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


def cmd_release(args: argparse.Namespace) -> Any:
    from core import mechanisms

    hat = _hat(args)
    (epsilon,) = _epsilons([args.epsilon])
    if args.seed is not None:
        out = _release_dict(
            mechanisms.release(args.mechanism, hat, epsilon, m_ub=args.m_ub, rng=_rng(args.seed)),
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
    out = _release_dict(published.release, hat)
    book = publish.Ledger(published.ledger)
    out.update(
        published=True,
        reused=published.reused,
        ledger=str(published.ledger),
        epsilon_spent_on_hat=book.epsilon_spent(published.entry.fingerprint, hat.hat),
    )
    return out


def cmd_evaluate(args: argparse.Namespace) -> Any:
    from core.evaluation import monte_carlo

    hat = _hat(args)
    epsilons = _epsilons(args.epsilon)
    table = monte_carlo(
        hat,
        epsilons,
        args.mechanism or None,
        n_runs=args.trials,
        rng=_rng(args.seed),
        m_ub=args.m_ub,
        progress=_progress if sys.stderr.isatty() and not args.json else None,
    )
    keep = [c for c in ("mechanism", "epsilon", "m_ub", "mae", "note") if c in table.columns]
    return {
        "hat": hat.hat,
        "true_mean": hat.true_mean,
        "results": table[keep].to_dict(orient="records"),
    }


def _progress(done: int, total: int) -> None:
    print(
        f"\r  {done}/{total} (mechanism, epsilon) cells",
        end="" if done < total else "\n",
        file=sys.stderr,
    )


def cmd_simulate(args: argparse.Namespace) -> Any:
    from core.mechanisms import run_mechanism

    if not args.output.endswith(".npy"):
        raise HexplorerError(f"--output must name a .npy file. Got {args.output!r} instead.")
    folder = Path(args.output).parent
    if not folder.is_dir():
        raise HexplorerError(
            f"--output folder {str(folder)!r} does not exist. Got {args.output!r}."
        )
    hat = _hat(args)
    (epsilon,) = _epsilons([args.epsilon])
    draws = run_mechanism(
        args.mechanism, hat, epsilon, m_ub=args.m_ub, rng=_rng(args.seed), size=args.trials
    )
    try:
        np.save(args.output, draws.estimates)
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


def _read_counts(path: str) -> np.ndarray:
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


def cmd_worstcase(args: argparse.Namespace) -> Any:
    from core import worstcase as wc
    from core.params import check_upper

    upper = check_upper(args.upper)
    if args.counts is not None:
        if args.data is not None:
            raise HexplorerError("Give either DATA or --counts, not both.")
        counts = _read_counts(args.counts)
    else:
        counts = _hat(args).counts
    epsilons = _epsilons(args.epsilon)
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


def cmd_compose(args: argparse.Namespace) -> Any:
    from core import multigrid

    summaries = _prepared(args).summaries
    slot = args.slot_filter
    if slot is None and args.day is None:  # all cells of the busiest slot (most records)
        slot = multigrid.busiest_slot(summaries)
    rows = multigrid.select_grids(summaries, slot=slot, day=args.day)
    grids = multigrid.GridSet.from_summaries(rows)
    epsilons = _epsilons(args.epsilon)
    out = {"slot": slot, "day": args.day, **multigrid.compose(grids, epsilons, args.upper)}
    if args.release:
        if len(epsilons) != 1:
            raise HexplorerError("--release needs exactly one --epsilon value.")
        chop = multigrid.chop_user(grids, epsilons[0], upper=args.upper)
        table = multigrid.release_grids(
            grids, epsilons[0], upper=args.upper, rng=_rng(args.seed), retained=chop.retained
        )
        out["release_privacy_loss"] = chop.privacy_loss
        out["release"] = table.to_dict(orient="records")
    return out


# ---------------------------------------------------------------------------------------------
# Parser and output


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("dp-hexplorer")
    except metadata.PackageNotFoundError:  # running from a checkout that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    from core.mechanisms import MECHANISMS

    names = list(MECHANISMS)
    data = _data_options()
    parser = _Parser(
        prog="hexplorer",
        description="User-level differential privacy for mean speeds per hexagon and hour (HAT).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("hats", parents=[data], help="list HATs, busiest first")
    p.set_defaults(func=cmd_hats)

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
    p.set_defaults(func=cmd_release)

    p = sub.add_parser(
        "evaluate", parents=[data], help="Monte-Carlo MAE of mechanisms over epsilons"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument("--mechanism", nargs="+", choices=names, metavar="NAME", help="default: all")
    p.add_argument("--trials", required=True, type=int, metavar="N")
    p.add_argument("--m-ub", type=int, metavar="M")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("simulate", parents=[data], help="raw outputs of N runs, saved as .npy")
    p.add_argument("--mechanism", required=True, choices=names, metavar="NAME")
    p.add_argument("--epsilon", required=True, type=float, metavar="E")
    p.add_argument("--trials", required=True, type=int, metavar="N")
    p.add_argument("--m-ub", type=int, metavar="M")
    p.add_argument("--seed", type=int)
    p.add_argument("--output", required=True, metavar="FILE.npy")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser(
        "worstcase", parents=[data], help="worst-case error, m^(eps) and its staircase"
    )
    p.add_argument(
        "--counts", metavar="FILE", help="one user's record count per line, instead of DATA"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument("--noise-measure", choices=["mean", "std"], default="mean")
    p.set_defaults(func=cmd_worstcase)

    p = sub.add_parser(
        "compose", parents=[data], help="many hexagons at once: composition and CHOP-USER"
    )
    p.add_argument("--epsilon", required=True, type=float, nargs="+", metavar="E")
    p.add_argument(
        "--slot-filter",
        metavar="SLOT",
        help="grids = all cells of this slot (default: the slot with the most records)",
    )
    p.add_argument("--day", metavar="YYYY-MM-DD", help="grids = all HATs of this day")
    p.add_argument(
        "--release",
        action="store_true",
        help="also release noisy mean and variance per grid, after CHOP-USER (privacy loss K*eps)",
    )
    p.add_argument("--seed", type=int)
    p.set_defaults(func=cmd_compose)
    return parser


def _jsonable(value: Any) -> Any:
    """Plain JSON: numpy scalars to Python, NaN and infinities to null."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_table(result: Any) -> None:
    """A readable rendering for people; scripts should use --json."""
    import pandas as pd

    if isinstance(result, list):
        print(pd.DataFrame(result).to_string(index=False))
        return
    for key, value in result.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            print(f"{key}:")
            print(pd.DataFrame(value).to_string(index=False))
        else:
            print(f"{key}: {value}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "trials", None) is not None:
            check_positive_int("trials", args.trials)
        result = _jsonable(args.func(args))
    except HexplorerError as exc:
        print(f"hexplorer: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # e.g. --trials 10^11: numpy refuses the allocation up front
        print(f"hexplorer: error: out of memory ({exc}); ask for less (--trials).", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hexplorer: interrupted", file=sys.stderr)
        return 130
    try:
        if args.json:
            json.dump(result, sys.stdout, indent=2, allow_nan=False)
            sys.stdout.write("\n")
        else:
            _print_table(result)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `hexplorer hats | head`: the reader left, not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
