"""What every subcommand shares: the one-line-error parser, the data options, loading and
preparing DATA (SPEC section 1), the chosen HAT, epsilons and the seeded generator."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from core.errors import HexplorerError


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (no usage block), status 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def data_options() -> Parser:
    parent = Parser(add_help=False)
    group = parent.add_argument_group("data (defaults: the built-in demo city)")
    group.add_argument(
        "data",
        nargs="?",
        metavar="DATA",
        help="CSV or Parquet file, or summaries (a file or dataset folder of `prepare`); omit "
        "for the demo city",
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
        "--ids",
        choices=["keep", "casefold"],
        default="keep",
        help="user ids are stripped, 7.0 read as 7 and NFC-normalised; casefold also folds "
        "case (Bus7 = bus7) [keep]",
    )
    group.add_argument(
        "--hat",
        metavar="CELL/SLOT",
        help="the HAT to analyse (default: the busiest hexagon-hour, the first `hats` lists)",
    )
    group.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parent


def prepared(args: argparse.Namespace):
    """Load and prepare the dataset the options describe (SPEC section 1).

    A summaries file or dataset written by ``hexplorer prepare`` is read as it is, whole (no
    preparation); its
    settings are the ones in force (:func:`summaries_settings` put them into ``args``).
    """
    from core.data import ColumnMap, PrepConfig, load_demo, prepare, prepare_file
    from core.data.summaries import is_summaries, read_summaries

    config = PrepConfig(
        upper=args.upper,
        resolution=args.resolution,
        slot=args.slot,
        keep_zeros=args.keep_zeros,
        ids=args.ids,
    )
    if args.data is None:
        return reported(prepare(load_demo(), ColumnMap(), config))
    path = Path(args.data)
    if path.is_dir() and is_summaries(path):  # a summaries dataset (hexplorer prepare)
        return read_summaries(path)
    if not path.is_file():
        raise HexplorerError(f"Data file {args.data!r} does not exist or is not a file.")
    if is_summaries(path):
        return read_summaries(path)
    columns = ColumnMap(
        user=args.user_col,
        lat=args.lat_col,
        lon=args.lon_col,
        time=args.time_col,
        value=args.value_col,
    )
    return reported(prepare_file(path, columns, config))


_SETTINGS = {"upper": 65.0, "resolution": 7, "slot": "1h", "keep_zeros": False, "ids": "keep"}
"""The preparation options and their defaults (as in :func:`data_options`)."""


def summaries_settings(args: argparse.Namespace) -> None:
    """When DATA is a summaries file (``hexplorer prepare``), put the settings it was prepared
    with into ``args`` (so every subcommand uses its U), refusing in one line an option given
    on the command line that contradicts them. Other DATA: nothing to do."""
    from core.data.summaries import is_summaries, read_metadata

    data = getattr(args, "data", None)
    if data is None or getattr(args, "command", None) == "prepare" or "://" in str(data):
        return
    path = Path(data)
    if not (path.is_file() or path.is_dir()) or not is_summaries(path):
        return
    stored = read_metadata(path)["config"]
    for name, default in _SETTINGS.items():
        given, kept = getattr(args, name, default), getattr(stored, name)
        if given != default and given != kept:
            flag = f"--{name.replace('_', '-')}"
            shown = "" if isinstance(given, bool) else f" {given!r}"
            raise HexplorerError(
                f"{data!r} was prepared with {name} = {kept!r}; {flag}{shown} cannot change it "
                "(prepare the raw records again)."
            )
        setattr(args, name, kept)


def reported(result):
    """Say on stderr what preparation rejected or clamped (SPEC section 1: never silently)."""
    report = result.report
    if report.worth_noting:
        print(f"hexplorer: note: {' '.join(report.lines())}", file=sys.stderr)
    return result


def hat_of(args: argparse.Namespace):
    """The chosen HAT (or the busiest hexagon-hour) of the dataset, as HatData."""
    from core.data import hat_data

    return hat_data(prepared(args).summaries, args.hat, upper=args.upper)


def epsilons(values: Sequence[float]) -> list[float]:
    from core.params import check_epsilon

    return [check_epsilon(e) for e in values]


MAX_TRIALS = 10_000_000
"""Most Monte-Carlo runs one request may ask for: each run holds several float64s per
(mechanism, ε) cell, so 10^7 runs already need hundreds of MB; 10^9 would exhaust the machine."""


def check_trials(trials: int) -> int:
    """``--trials`` as an int in [1, MAX_TRIALS], or a one-line :class:`HexplorerError`."""
    from core.params import check_positive_int

    value = check_positive_int("trials", trials)
    if value > MAX_TRIALS:
        raise HexplorerError(
            f"--trials {value:,} would run out of memory; ask for at most {MAX_TRIALS:,}."
        )
    return value


def rng(seed: int | None) -> np.random.Generator:
    """The generator of ``--seed`` (fresh entropy without one); a negative seed is refused."""
    if seed is not None and seed < 0:
        raise HexplorerError(f"--seed must be an integer >= 0. Got {seed} instead.")
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# Subcommands: each returns a JSON-able object; printing is done once in main()


def progress(done: int, total: int) -> None:
    """A progress line on stderr for long Monte-Carlo work (only when stderr is a terminal)."""
    print(
        f"\r  {done}/{total} (mechanism, epsilon) cells",
        end="" if done < total else "\n",
        file=sys.stderr,
    )


_ERASE = "\x1b[K"  # ANSI: erase from the cursor to the end of the line


class PhaseLine(dict):
    """The seconds per phase of a preparation (what its ``timings=`` receives), shown on one
    line of ``stream`` as each phase of each batch ends, the line rewritten in place: 10⁸
    records take a minute or more, and a terminal should not sit silent that long.
    :meth:`clear` wipes the line, so that what follows starts on a clean one.

    >>> import io
    >>> out = io.StringIO(); line = PhaseLine(out)
    >>> line["read"] = 0.4; line["h3 cells"] = 1.5; line["read"] = 0.8; line["write"] = 2.0
    >>> line.clear()
    >>> shown = out.getvalue().replace(_ERASE, "").split(chr(13))
    >>> [part.rsplit(",", 1)[0] for part in shown if part]
    ['prepare: batch 1, read done', 'prepare: batch 1, h3 cells done', 'prepare: batch 2, read done', 'prepare: write done']
    >>> dict(line)
    {'read': 0.8, 'h3 cells': 1.5, 'write': 2.0}
    """

    #: The phases of each batch (core.data.clean, stream and outofcore); the others come once.
    BATCH_PHASES = frozenset(
        ("read", "parse and check", "reject and drop zeros", "clamp, ids, hashes", "h3 cells")
        + ("aggregate", "spill")
    )

    def __init__(self, stream: Any = None) -> None:
        super().__init__()
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.clock = time.perf_counter
        self.start = self.clock()
        self.batch = 0

    def __setitem__(self, phase: str, seconds: float) -> None:
        super().__setitem__(phase, seconds)
        if phase == "read":  # each batch's first phase
            self.batch += 1
        step = f"batch {max(self.batch, 1)}, {phase}" if phase in self.BATCH_PHASES else phase
        text = f"prepare: {step} done, {self.clock() - self.start:.0f} s"
        # cut to the terminal's width (a wrapped line would not be rewritten), the rest of the
        # line erased (ANSI "erase to end of line")
        width = shutil.get_terminal_size((80, 24)).columns - 1
        self.stream.write(f"\r{text[:width]}{_ERASE}")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write(f"\r{_ERASE}")
        self.stream.flush()


def add_output_options(
    parser: argparse.ArgumentParser, metavar: str, help: str, *, required: bool = False
) -> None:
    """``--output`` and ``--force`` as every writing subcommand has them."""
    parser.add_argument("--output", metavar=metavar, help=help, required=required)
    parser.add_argument(
        "--force", action="store_true", help="overwrite --output if it exists (refused otherwise)"
    )


def output_path(path: str, *, force: bool, suffixes: Sequence[str], flag: str = "--output") -> Path:
    """Check an ``--output`` path before any work: known suffix, existing folder, not a folder,
    and no existing file unless ``force``. Raises :class:`HexplorerError` (one line)."""
    target = Path(path)
    if not any(path.lower().endswith(s) for s in suffixes):
        raise HexplorerError(f"{flag} must end in {' or '.join(suffixes)}. Got {path!r} instead.")
    if target.is_dir():
        raise HexplorerError(f"{flag} {path!r} is a folder; name a file.")
    if not target.parent.is_dir():
        raise HexplorerError(f"{flag} folder {str(target.parent)!r} does not exist.")
    if target.exists() and not force:
        raise HexplorerError(f"{flag} {path!r} exists; pass --force to overwrite it.")
    return target


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--ledger``, ``--budget`` and ``--namespace`` of the publishing subcommands."""
    parser.add_argument(
        "--ledger",
        metavar="FILE",
        help="ledger of published releases [$HEXPLORER_LEDGER or ~/.hexplorer/ledger.sqlite]",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="EPS",
        help="the namespace's per-user budget: sets it when it has none, else confirms or lowers "
        "it (raising is the operator's: hexplorer ledger set-budget E --raise --reason TEXT); a "
        "release that would take any user's cumulative epsilon past it is refused",
    )
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        help="users' namespace in the ledger: the same user id in one namespace is one person "
        "[default]",
    )


def ledger_report(published) -> dict:
    """What a published release reports about the ledger after it (its ``summary``: the
    namespace's budget, the largest ε of a user) and the operator's ``warnings`` (printed on
    stderr by :func:`core.cli.main`)."""
    summary = published.summary
    return {
        "max_user_epsilon": summary.max_user_epsilon,
        "budget": summary.budget,
        "users_near_budget": summary.users_near_budget,
        "warnings": list(published.warnings),
    }


def id_form(args: argparse.Namespace) -> str:
    """How the data's user ids were canonicalised (``--ids``: ``"keep"`` unless the operator
    asked for ``"casefold"``), recorded per namespace by the ledger."""
    return str(getattr(args, "ids", None) or "keep")


def dataset_name(args: argparse.Namespace) -> str:
    """What a published release records of its data: the file's name (never its path)."""
    return Path(args.data).name if args.data else "demo"


def ledger_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments every publisher takes from the command line: the data's name, the
    ledger, its namespace, the budget and the id form."""
    return {
        "dataset": dataset_name(args),
        "ledger": args.ledger,
        "namespace": args.namespace,
        "budget": args.budget,
        "id_form": id_form(args),
    }


#: glibc's mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Ask the C allocator (glibc's malloc) to keep memory it frees for reuse: blocks up to
    32 MB come from its heap, not a fresh ``mmap`` each, and up to 512 MB freed at the heap's
    top stay mapped. ``release --all`` allocates and frees arrays of a few MB per batch of
    HATs; the kernel zeroed each of them anew (half the command's page faults, ~0.05 CPU s at
    10⁷ records). A setting of the whole process, made by the command only (the library never
    calls it); it stays for the rest of the process. False (nothing done) where there is no
    ``mallopt``."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl, Windows)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(
        mallopt(_M_TRIM_THRESHOLD, 512 << 20)
    )
