"""SIGTERM while ``hexplorer prepare`` runs out of core: the command unwinds as Ctrl-C does
(exit 143, one line), so its spill folder is removed instead of left beside the output, and a
summaries file is written whole or not at all (an earlier file at the target stays as it was)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

# Runs `prepare` through the buckets and sends the process SIGTERM at the patched step (the
# spill pass over, or the first row group of the output being labelled); the sleep is what a
# long aggregation or write would be.
SCRIPT = """
import os, signal, sys, time
import core.data.outofcore as outofcore

def stopped(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)

setattr(outofcore, sys.argv.pop(1), stopped)
outofcore.prepare_to_file = None  # through the buckets, whatever the input's size
from core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _raw(tmp_path: Path) -> Path:
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
    return raw


def _prepare(stop_at: str | None, *argv: str) -> subprocess.CompletedProcess:
    plain = "import sys; from core.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", *((SCRIPT, stop_at) if stop_at else (plain,))]
    return subprocess.run(
        [*command, "prepare", *argv, "--batch-rows", "500"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_sigterm_removes_the_spill_folder_and_says_so(tmp_path):
    raw, out = _raw(tmp_path), tmp_path / "out"
    out.mkdir()
    done = _prepare("_aggregate_buckets", str(raw), "--output", str(out / "s.parquet"))
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert done.stderr.strip() == "hexplorer: terminated (SIGTERM)"
    assert sorted(p.name for p in out.iterdir()) == []  # no spill folder, no output


def test_sigterm_while_writing_keeps_the_earlier_summaries_file(tmp_path):
    raw, out = _raw(tmp_path), tmp_path / "out"
    out.mkdir()
    target = out / "s.parquet"
    assert _prepare(None, str(raw), "--output", str(target)).returncode == 0
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    done = _prepare("_labelled", str(raw), "--output", str(target), "--force")
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before  # not half overwritten
    assert sorted(p.name for p in out.iterdir()) == ["s.parquet"]  # no partial file left


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_sigterm_while_writing_keeps_the_earlier_dataset(tmp_path):
    raw, out = _raw(tmp_path), tmp_path / "out"
    out.mkdir()
    target = out / "s"
    argv = [str(raw), "--output", str(target), "--layout", "dataset"]
    assert _prepare(None, *argv).returncode == 0
    before = _digests(target)
    assert len(before) >= 2  # parts and the sidecar
    done = _prepare("_row_groups", *argv, "--force")
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert _digests(target) == before  # its parts were not deleted before the new ones were whole
    assert sorted(p.name for p in out.iterdir()) == ["s"]  # no staging or spill folder left
    assert _prepare(None, *argv, "--force").returncode == 0  # and --force still replaces it
    assert _digests(target) == before  # the same input gives the same bytes
