"""``hexplorer worstcase``: worst-case error, m^(eps) and its staircase (SPEC section 4); with
``--all``, every HAT's worst-case error of a mechanism at eps (``core.citywide.errors``), one row
per HAT, as JSON, a table, CSV or GeoJSON."""

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
    group = p.add_argument_group("every HAT at once (--all)")
    group.add_argument(
        "--all", action="store_true", help="one row per HAT of the file (or --slot-filter/--day)"
    )
    group.add_argument(
        "--mechanism",
        default="opt-arrayavg",
        choices=names,
        metavar="NAME",
        help="with --all: the mechanism at its m_UB rule [opt-arrayavg]; one without an analytic "
        "worst case needs --trials (simulated 90%% quantile of |error|)",
    )
    group.add_argument("--slot-filter", metavar="SLOT", help="with --all: only this slot's HATs")
    group.add_argument("--day", metavar="YYYY-MM-DD", help="with --all: only this day's HATs")
    group.add_argument(
        "--trials",
        type=int,
        metavar="N",
        help="with --all: also simulate N runs per HAT for the 90%% quantile of |error|",
    )
    group.add_argument("--seed", type=int, default=0, help="seed of --trials [0]")
    common.add_output_options(
        group, "FILE.csv|FILE.geojson", "with --all: write the rows (GeoJSON: hexagon polygons)"
    )
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
    if args.all:
        return run_all(args, upper)
    for flag, value in (
        ("--output", args.output),
        ("--slot-filter", args.slot_filter),
        ("--day", args.day),
        ("--trials", args.trials),
    ):
        if value is not None:
            raise HexplorerError(f"{flag} needs --all (every HAT at once).")
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


def run_all(args: argparse.Namespace, upper: float) -> Any:
    """Every HAT's worst-case error (and with --trials its simulated 90% quantile) at each eps."""
    import pandas as pd

    from core.citywide import errors
    from core.citywide.gridset import grid_set
    from core.mechanisms import analytic_names
    from core.params import check_positive_int

    if args.counts is not None:
        raise HexplorerError("--all reads DATA (every HAT), not --counts.")
    analytic = args.mechanism in analytic_names()
    if not analytic and args.trials is None:
        raise HexplorerError(
            f"{args.mechanism} has no analytic worst case ({', '.join(analytic_names())} do); "
            "add --trials N to simulate its 90% quantile of |error|."
        )
    trials = None if args.trials is None else check_positive_int("trials", args.trials)
    target = None
    if args.output is not None:
        target = common.output_path(args.output, force=args.force, suffixes=(".csv", ".geojson"))
    epsilons = common.epsilons(args.epsilon)
    grids = grid_set(common.prepared(args).summaries, slot=args.slot_filter, day=args.day)
    table = (
        errors.error_table(grids, upper=upper, noise_measure=args.noise_measure)
        if analytic
        else None
    )
    frames = []
    for epsilon in epsilons:
        if table is not None:
            frame = errors.errors_at(table, epsilon, args.mechanism).frame()
        else:
            frame = pd.DataFrame(
                {
                    "hat": grids.hats.astype(str),
                    "cell": grids.cells.astype(str),
                    "slot": grids.slots.astype(str),
                    "users": grids.users_per_grid,
                    "records": grids.records,
                    "m_ub": pd.array([pd.NA] * grids.n_grids, dtype="Int64"),
                    "worst_case_error": float("nan"),
                    "mechanism": args.mechanism,
                    "epsilon": epsilon,
                }
            )
        frame["noise_measure"] = args.noise_measure
        if trials is not None:
            sim = errors.simulated_quantiles(
                grids, epsilon, args.mechanism, upper=upper, n_runs=trials, seed=args.seed
            )
            if table is None:
                frame["m_ub"] = sim["m_ub"].to_numpy()
            frame["q90_error"] = sim["quantile"].to_numpy()
            frame["q90_se"] = sim["standard_error"].to_numpy()
            frame["trials"] = trials
            frame["seed"] = args.seed
        frames.append(frame)
    rows = pd.concat(frames, ignore_index=True)
    if target is None:
        return [{k: errors._json_value(v) for k, v in r.items()} for r in rows.to_dict("records")]
    try:
        if target.suffix.lower() == ".csv":
            rows.to_csv(target, index=False)
        else:
            import json

            with open(target, "w", encoding="utf-8") as fh:
                json.dump(errors.hexagon_geojson(rows), fh, allow_nan=False)
    except OSError as exc:
        raise HexplorerError(
            f"--output {args.output!r} cannot be written: {exc.strerror}."
        ) from None
    return {"output": str(target), "rows": int(len(rows)), "hats": grids.n_grids}
