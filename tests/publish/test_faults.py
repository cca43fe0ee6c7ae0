"""Several publishers at once, multi-HAT releases that partly exceed the budget, SIGKILL at
random moments (issue 26): after every round the ledger is whole (``tests/publish/faults.py``).
The longer run, 20 publishers: ``bench/bench_ledger_faults.py``."""

from __future__ import annotations

import pytest

from core.publish import Ledger
from tests.publish.faults import check_ledger, run_round

BUDGET = 1.5


@pytest.mark.slow
def test_publishers_killed_at_random_moments_leave_every_release_whole(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_budget(BUDGET)
    printed: set[str] = set()
    recorded = refused = killed = 0
    for round_ in range(3):
        seen = run_round(ledger, publishers=4, releases=40, seed=round_ + 1, max_lines=6)
        printed |= seen.printed
        refused += seen.refused
        killed += seen.killed
        n = check_ledger(ledger, BUDGET, printed)
        assert n >= recorded
        recorded = n
    # the run exercised what it claims: kills, recorded releases and budget refusals
    assert killed > 0 and recorded > 0 and refused > 0
    assert Ledger(ledger).user_epsilons().max() > 0.5 * BUDGET
