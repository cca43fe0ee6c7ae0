"""The ``hexplorer`` command line: a thin shell over the functions the dashboard calls.

Every subcommand reads a dataset (a CSV/Parquet path, or the built-in demo city when none is
given), maps its columns, prepares it (SPEC section 1) and prints a table, or JSON with
``--json``; a summaries file written by ``hexplorer prepare`` is read as it is, with the
settings it was prepared with. Bad input prints one line naming the problem and exits with
status 2.

Examples
--------
::

    hexplorer hats --json
    hexplorer prepare buses.parquet --output summaries.parquet
    hexplorer hats summaries.parquet --json
    hexplorer release --mechanism arrayavg-best --epsilon 1 --seed 7 --json
    hexplorer evaluate --epsilon 0.5 1 2 --trials 10000 --seed 1 --json
    hexplorer worstcase --epsilon 0.5 1 2 --json
    hexplorer compose --epsilon 1 --slot-filter 2024-03-05T08:00 --json
    hexplorer compose --epsilon 1 --publish --budget 5 --output city.geojson --json
    hexplorer ledger --json
    hexplorer plan --target-error 2 --json
    hexplorer reproduce --list --json
    hexplorer reproduce spatio-temporal-fig3 --runs 1000 --seed 1 --output fig3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

# No command multiplies matrices (nothing in core calls BLAS: no dot, matmul, einsum or
# linalg), so numpy's OpenBLAS need not start a thread per core when it loads (~0.04 CPU s
# per process, most of it those threads starting). Set before numpy's first import (`import
# core` imports no numpy); a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from core.cli import (
    common,
    compose,
    evaluate,
    hats,
    ledger,
    plan,
    prepare,
    release,
    reproduce,
    simulate,
    worstcase,
)
from core.errors import HexplorerError

COMMANDS = (prepare, hats, release, evaluate, simulate, worstcase, compose, ledger, plan, reproduce)
"""One module per subcommand, each with ``register(sub, data, names)`` and ``run(args)``:
adding a subcommand is one new module and one entry here."""


def _version() -> str:
    from core.version import software_version

    return software_version()


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked for (importlib.metadata
    costs every other command ~40 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any):
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from core.mechanisms import MECHANISMS

    names = list(MECHANISMS)
    data = common.data_options()
    parser = common.Parser(
        prog="hexplorer",
        description="User-level differential privacy for mean speeds per hexagon and hour (HAT).",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show program's version number and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub, data, names)
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
    """A readable rendering for people; scripts should use --json (pandas only for the tables)."""
    if isinstance(result, list):
        import pandas as pd

        print(pd.DataFrame(result).to_string(index=False))
        return
    for key, value in result.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            import pandas as pd

            print(f"{key}:")
            print(pd.DataFrame(value).to_string(index=False))
        else:
            print(f"{key}: {value}")


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler's or a container's stop) while a command runs."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 130 interrupted, 143
    terminated). SIGTERM unwinds the command as Ctrl-C does, so its ``finally`` blocks run
    (``prepare``'s spill folder is removed, a staged output is not moved into place) instead of
    the process vanishing mid-write."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handled = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if handled else None
    try:
        if getattr(args, "trials", None) is not None:
            common.check_trials(args.trials)
        common.summaries_settings(args)
        result = _jsonable(args.func(args))
        if isinstance(result, dict):
            for warning in result.get("warnings") or ():
                print(f"hexplorer: warning: {warning}", file=sys.stderr)
    except HexplorerError as exc:
        print(f"hexplorer: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # e.g. --trials 10^11: numpy refuses the allocation up front
        print(f"hexplorer: error: out of memory ({exc}); ask for less (--trials).", file=sys.stderr)
        return 2
    except Terminated:
        print("hexplorer: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("hexplorer: interrupted", file=sys.stderr)
        return 130
    finally:
        if handled:
            signal.signal(signal.SIGTERM, previous)
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
