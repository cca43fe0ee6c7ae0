"""bench/bench_scaling.py's comparison stages: the input they share, and OpenDP's stage on a tiny
summaries file. No timing is asserted (the numbers live in README)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from importlib.metadata import requires, version
from pathlib import Path

import numpy as np
import pytest

from core.data import PrepConfig, load_demo, prepare
from core.data.summaries import write_summaries

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "bench_scaling.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_scaling", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    """A summaries file of 4,000 demo records prepared with U = 60 (not the default 65)."""
    prepared = prepare(load_demo().head(4_000), config=PrepConfig(upper=60.0))
    path = tmp_path_factory.mktemp("scaling") / "summaries.parquet"
    write_summaries(prepared, path)
    return path, prepared.summaries


def test_mean_records_repeat_each_users_mean(summaries):
    path, s = summaries
    r = _bench().mean_records(str(path))
    assert r["user"].size == r["hat"].size == r["value"].size == int(s["m"].sum())
    assert r["n_hats"] == s["hat"].nunique()
    assert r["per_user"] == int(s.groupby("user_id")["hat"].nunique().max())
    assert r["m_ub"] == int(np.median(s["m"]))
    assert r["upper"] == 60.0
    # one value per (HAT, user), the user's mean there, repeated m times
    pairs = r["hat"].astype(np.int64) * (r["user"].max() + 1) + r["user"]
    keys, first, counts = np.unique(pairs, return_index=True, return_counts=True)
    assert keys.size == len(s)
    assert sorted(counts.tolist()) == sorted(s["m"].tolist())
    assert sorted(np.round(r["value"][first], 9).tolist()) == sorted(
        np.round(s["s"] / s["m"], 9).tolist()
    )


def _opendp_python() -> str | None:
    """A Python whose polars is the one OpenDP's Polars API was built against, if any."""
    pinned = [r.split(";")[0] for r in requires("opendp") or [] if r.startswith("polars==")]
    if pinned and pinned[0] == f"polars=={version('polars')}":
        return sys.executable
    return os.environ.get("HEXPLORER_OPENDP_PYTHON")


def test_opendp_stage_releases_one_mean_per_hat(summaries, tmp_path):
    python = _opendp_python()
    if python is None:
        pytest.skip("no Python with opendp[polars] (set HEXPLORER_OPENDP_PYTHON)")
    path, s = summaries
    cmd = [python, str(SCRIPT), "--child", "opendp", str(path), str(tmp_path / "x")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hats"] == s["hat"].nunique()
    assert result["records"] == int(s["m"].sum())


def test_opendp_stage_names_a_polars_mismatch_in_one_line(summaries, tmp_path):
    pinned = [r.split(";")[0] for r in requires("opendp") or [] if r.startswith("polars==")]
    if not pinned or pinned[0] == f"polars=={version('polars')}":
        pytest.skip("this Python's polars is the one OpenDP's Polars API wants")
    path, _ = summaries
    cmd = [sys.executable, str(SCRIPT), "--child", "opendp", str(path), str(tmp_path / "x")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0
    assert "--opendp-python" in done.stderr
