"""The ledger under concurrent publishers and killed publishers — real processes, not threads.

- Twenty processes ask for the same release at the same instant (a start gate: each imports
  everything, says it is ready, and waits for a "go" file): one record, the same value and release
  id printed twenty times.
- A publisher recording release after release is killed with SIGKILL at random moments (its noise
  sampler sleeps a little, so some kills land inside the write transaction): after every kill the
  next run reads the ledger, SQLite's integrity check passes, every user's total equals the sum of
  its charges, every release the killed publisher printed is recorded, and a new release goes in.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import publish
from core.hat import HatData
from core.publish import Ledger

ROOT = Path(__file__).resolve().parents[2]

GATED_CLI = """
import sys, time
from pathlib import Path
import opendp.prelude  # noqa: F401  (imported before the gate: the race is on the ledger)
from core.cli import main
from core.data import prepare  # noqa: F401
gate = Path(sys.argv[1])
(gate / f"ready-{sys.argv[2]}").touch()
while not (gate / "go").exists():
    time.sleep(0.01)
sys.exit(main(sys.argv[3:]))
"""

KILLED_PUBLISHER = """
import random, sys, time
from core.hat import HatData
from core.publish import publish, single

real = single.opendp_laplace
def slow(*args, **kwargs):
    time.sleep(random.uniform(0.0, 0.05))  # hold the write transaction for a while
    return real(*args, **kwargs)
single.opendp_laplace = slow

n = 2000
ids = [f"bus-{i:05d}" for i in range(n)]
hat = HatData.from_arrays([1 + i % 7 for i in range(n)], [float(1 + i % 7) for i in range(n)],
                          user_ids=ids, upper=10.0, hat="c/s")
print("ready", flush=True)
start = int(sys.argv[2])
for k in range(start, start + 100000):
    eps = round(0.001 * (k + 1), 6)
    out = publish("baseline", hat, eps, ledger=sys.argv[1])
    print("published", out.release_id, eps, flush=True)
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.slow
def test_twenty_concurrent_identical_requests_give_one_record(tmp_path):
    csv = tmp_path / "fleet.csv"
    rows = [
        {"user_id": f"bus-{u}", "lat": 21.195, "lon": 72.83,
         "timestamp": f"2024-03-05 08:{i:02d}:00", "speed": 10.0 + i}
        for u in range(6) for i in range(3 + u)
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(csv, index=False)
    ledger = tmp_path / "ledger.sqlite"
    gate = tmp_path / "gate"
    gate.mkdir()
    argv = ["release", str(csv), "--mechanism", "baseline", "--epsilon", "0.7",
            "--ledger", str(ledger), "--json"]  # fmt: skip
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GATED_CLI, str(gate), str(i), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=tmp_path,
        )
        for i in range(20)
    ]
    try:
        deadline = time.monotonic() + 600
        while len(list(gate.glob("ready-*"))) < 20:
            assert time.monotonic() < deadline, "publishers did not start"
            assert all(p.poll() is None for p in procs), "a publisher died before the gate"
            time.sleep(0.05)
        (gate / "go").touch()
        results = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    failed = {i: (p.returncode, results[i][1]) for i, p in enumerate(procs) if p.returncode}
    assert not failed, failed
    outs = [json.loads(out) for out, _ in results]
    assert len({o["estimate"] for o in outs}) == 1
    assert len({o["release_id"] for o in outs}) == 1
    assert sorted(o["reused"] for o in outs) == [False] + [True] * 19
    book = Ledger(ledger)
    assert book.summary().releases == 1
    np.testing.assert_allclose(book.user_epsilons(), [0.7] * 6)
    book.check()


@pytest.mark.slow
def test_a_publisher_killed_at_any_moment_leaves_a_readable_ledger(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    rng = np.random.default_rng(8)
    printed: set[str] = set()
    recorded = 0
    start = 0
    for round_ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_PUBLISHER, str(ledger), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else ""
        # early rounds: kill while the ledger is being created or the first release written
        time.sleep(float(rng.uniform(0.0, 0.3 if round_ < 3 else 2.0)))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        printed |= {ln.split()[1] for ln in out.splitlines() if ln.startswith("published")}
        start += 1000
        book = Ledger(ledger)
        if not ledger.exists():
            continue
        book.check()  # integrity, and every user's total equals the sum of its charges
        records = book.records()
        assert len(records) >= recorded
        recorded = len(records)
        assert printed <= {r.release_id for r in records}  # printed implies recorded
        totals = book.user_epsilons()
        if records:
            assert totals.size == 2000
            np.testing.assert_allclose(totals, sum(r.epsilon for r in records), rtol=1e-9)
    # the next run reads the ledger and records a new release
    hat = HatData.from_arrays([1, 2], [1.0, 2.0], user_ids=["bus-00000", "x"], upper=10.0, hat="h")
    out = publish.publish("baseline", hat, 0.5, ledger=ledger)
    assert not out.reused and Ledger(ledger).summary().releases == recorded + 1
    Ledger(ledger).check()
