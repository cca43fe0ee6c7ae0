"""Concurrency and fault run of the ledger: 20 publishers at once, killed at random moments.

Run by hand: ``python bench/bench_ledger_faults.py [--publishers 20] [--rounds 10]
[--releases 60] [--budget 6] [--max-lines 8]``.

Each round starts ``--publishers`` processes at once, each publishing up to ``--releases``
every-HAT releases (2-6 random HATs over a pool of 30 users, random ε, many partly past the
operator's budget and refused) into one ledger, and kills each with SIGKILL after a random
number (1 to ``--max-lines``) of its outcomes, a few milliseconds into the next release
(``tests/publish/faults.py``). After every
round: SQLite's integrity check, every user's total equal to the sum of its charges, every
release whole (as many charges as users, each a multiple of its ε, all its HATs' values), no
user past the budget, every printed release recorded. Prints one line per round and a summary;
exits 1 on the first failure. The fast version is ``tests/publish/test_faults.py``.

Measured 2026-11-26 on a shared 2-core machine at load 30-37 (timings noisy): 2 rounds x 20
publishers with --budget 1.5: 9 releases, 289 refusals, 40 kills, whole after every round,
largest user eps 1.489 (at 1.5 the 30 users' budgets fill in the first round; the default 6
keeps releases going round after round).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from core.publish import Ledger  # noqa: E402
from tests.publish.faults import check_ledger, run_round  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--publishers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--releases", type=int, default=60)
    parser.add_argument("--budget", type=float, default=6.0)
    parser.add_argument("--max-lines", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger.sqlite"
        Ledger(ledger).set_budget(args.budget)
        printed: set[str] = set()
        refused = killed = recorded = 0
        start = time.perf_counter()
        for r in range(args.rounds):
            t0 = time.perf_counter()
            seen = run_round(
                ledger,
                publishers=args.publishers,
                releases=args.releases,
                seed=r + 1,
                max_lines=args.max_lines,
            )
            printed |= seen.printed
            refused += seen.refused
            killed += seen.killed
            try:
                recorded = check_ledger(ledger, args.budget, printed)
            except AssertionError as exc:
                print(f"round {r + 1}: LEDGER NOT WHOLE: {exc!r}")
                return 1
            top = float(Ledger(ledger).user_epsilons().max(initial=0.0))
            print(
                f"round {r + 1}: {recorded} releases recorded, {refused} refusals, {killed} "
                f"publishers killed so far; largest user eps {top:.4g} <= budget "
                f"{args.budget:g}; whole ({time.perf_counter() - t0:.1f} s)"
            )
        print(
            f"{args.rounds} rounds x {args.publishers} publishers: {recorded} releases, "
            f"{refused} refusals, {killed} kills, ledger whole after every round "
            f"({time.perf_counter() - start:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
