"""SIGTERM while ``hexplorer prepare`` runs out of core: the command unwinds as Ctrl-C does
(exit 143, one line), so its spill folder is removed instead of left beside the output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

# Runs `prepare` through the buckets and sends the process SIGTERM when the spill pass is over
# (the buckets are on disk); the sleep is what a long aggregation would be.
SCRIPT = """
import os, signal, sys, time
import core.data.outofcore as outofcore

def stopped(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)

outofcore._aggregate_buckets = stopped
outofcore.prepare_to_file = None  # through the buckets, whatever the input's size
from core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_removes_the_spill_folder_and_says_so(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    raw = tmp_path / "raw.parquet"
    pd.DataFrame(
        {
            "user_id": [f"u{i % 17}" for i in range(n)],
            "lat": 21.17 + rng.uniform(0, 0.05, n),
            "lon": 72.80 + rng.uniform(0, 0.05, n),
            "timestamp": pd.Timestamp("2024-03-05")
            + pd.to_timedelta(rng.integers(0, 7200, n), "s"),
            "speed": rng.uniform(1, 40, n),
        }
    ).to_parquet(raw)
    out = tmp_path / "out"
    out.mkdir()
    argv = ["prepare", str(raw), "--output", str(out / "s.parquet"), "--batch-rows", "500"]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert done.stderr.strip() == "hexplorer: terminated (SIGTERM)"
    assert sorted(p.name for p in out.iterdir()) == []  # no spill folder, no output
