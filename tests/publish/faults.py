"""Publishers at once, killed at random moments: the ledger after each round (issue 26).

Shared by ``tests/publish/test_faults.py`` (a few publishers, a few rounds) and
``bench/bench_ledger_faults.py`` (20 publishers, more rounds). Each publisher is a real process
that publishes every-HAT releases (``core.publish.batch.publish_all``) of random HATs over a
shared pool of users, at random ε, into one ledger whose budget the operator set: many of them
partly exceed the budget and are refused. Its noise sampler sleeps a little, so kills land inside
the write transaction. After each round (every publisher killed with SIGKILL after a random
number of its releases, a few milliseconds into the next one, or finished) :func:`check_ledger` asks: SQLite's integrity check passes, every user's
total equals the sum of its charges, every release is whole (as many charges as users, its
charges the accounting of its own HATs, all its HATs' values), no user is past the budget, and
every release a publisher printed is recorded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.publish import Ledger

ROOT = Path(__file__).resolve().parents[2]

#: A publisher: ``python -c PUBLISHER LEDGER SEED N``; prints "ready", then "published ID" per
#: recorded release and "refused" per budget refusal.
PUBLISHER = """
import random, sys, time
import numpy as np
import pandas as pd
from core.citywide.batch import HatBatch
from core.publish import BudgetExceeded
from core.publish import batch as pb

real = pb.opendp_laplace
def slow(*args, **kwargs):
    time.sleep(random.uniform(0.0, 0.02))  # hold the write transaction for a while
    return real(*args, **kwargs)
pb.opendp_laplace = slow

ledger, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
users = [f"bus-{i:03d}" for i in range(30)]
print("ready", flush=True)
for k in range(n):
    rows = []
    for h in range(int(rng.integers(2, 7))):
        for u in rng.choice(len(users), size=int(rng.integers(2, 9)), replace=False):
            m = int(rng.integers(1, 5))
            rows.append((f"c{seed}-{k}-{h}/s", users[u], m, float(m * rng.uniform(0, 30))))
    frame = pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"])
    eps = round(float(rng.uniform(0.1, 0.6)), 4)
    try:
        out = pb.publish_all("baseline", HatBatch.from_summaries(frame, upper=30.0), eps,
                             ledger=ledger)
    except BudgetExceeded:
        print("refused", flush=True)
        continue
    print("published", out.record.release_id, flush=True)
"""


@dataclass
class Round:
    """What one round saw: releases printed, refusals printed, publishers killed."""

    printed: set[str]
    refused: int
    killed: int


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_round(ledger: Path, *, publishers: int, releases: int, seed: int, max_lines: int) -> Round:
    """Start ``publishers`` processes at once; kill each with SIGKILL at its own random moment:
    after it printed a random number (1 to ``max_lines``) of outcomes, plus a random few
    milliseconds (so kills land anywhere in the next release, its transaction included). Kills
    follow progress, not the clock, so a loaded machine still sees releases, refusals and kills.
    """
    rng = np.random.default_rng(seed)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PUBLISHER, str(ledger), str(seed * 1000 + i), str(releases)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            text=True,
        )
        for i in range(publishers)
    ]
    lines: list[list[str]] = [[] for _ in procs]
    errors: list[list[str]] = [[] for _ in procs]

    def read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.strip())

    readers = [
        threading.Thread(target=read, args=(stream, into), daemon=True)
        for p, out, err in zip(procs, lines, errors, strict=True)
        for stream, into in ((p.stdout, out), (p.stderr, err))
    ]
    for t in readers:
        t.start()
    targets = rng.integers(1, max_lines + 1, size=publishers) + 1  # "ready" is the first line
    delays = rng.uniform(0.0, 0.05, size=publishers)
    killed = 0
    try:
        due: dict[int, float] = {}
        deadline = time.monotonic() + 600
        while any(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, "publishers made no progress"
            now = time.monotonic()
            for i, p in enumerate(procs):
                if p.poll() is not None:
                    continue
                if i not in due and len(lines[i]) >= targets[i]:
                    due[i] = now + delays[i]
                if i in due and now >= due[i]:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
                    killed += 1
            time.sleep(0.002)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for t in readers:
            t.join(timeout=60)
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
    for p, err in zip(procs, errors, strict=True):
        assert p.returncode in (0, -signal.SIGKILL), "\n".join(err)
    flat = [ln for out in lines for ln in out]
    printed = {ln.split()[1] for ln in flat if ln.startswith("published")}
    return Round(printed=printed, refused=sum(ln == "refused" for ln in flat), killed=killed)


def check_ledger(ledger: Path, budget: float, printed: set[str]) -> int:
    """Assert the ledger is whole (see the module docstring); returns its number of releases."""
    book = Ledger(ledger)
    book.check()  # integrity_check, totals = sums of charges, charges per release = its users
    records = book.records()
    assert printed <= {r.release_id for r in records}  # printed implies recorded
    exported = book.export()
    for rec, rel in zip(records, exported["releases"], strict=True):
        hats = rec.body["hats"]
        assert len(hats["estimate"]) == len(hats["hat"]) >= 2  # every HAT's value
        charges = sorted(c["epsilon"] for c in rel["charges"])
        assert len(charges) == rec.n_users and max(charges) == rec.max_charge
        # per-user accounting: eps times the HATs each user is in, so the charges are multiples
        # of eps summing to eps times the release's (HAT, user) pairs, at most all its HATs
        k = np.asarray(charges) / rec.epsilon
        np.testing.assert_allclose(k, np.round(k), atol=1e-9)
        assert 1 <= k.min() and k.max() <= len(hats["hat"]) + 1e-9
    totals = book.user_epsilons()
    assert totals.size == 0 or totals.max() <= budget * (1 + 1e-9), totals.max()
    return len(records)
