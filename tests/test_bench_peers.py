"""bench/bench_peers.py at a tiny size: every tool runs in its own process from the same records
and gives a row (or, for a peer that is not installed, a one-line error). No timing is asserted
(the numbers live in docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "bench" / "bench_peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_bench_peers_runs_every_tool_on_the_same_records(tmp_path, capsys):
    bench = _bench()
    tools = ["ours", "floor", "pipelinedp"]
    if os.environ.get("HEXPLORER_BENCH_PEERS_OPENDP") and os.environ.get("HEXPLORER_OPENDP_PYTHON"):
        tools.append("opendp")  # by hand only: OpenDP's noise-scale search takes minutes even
        # at 3,000 records, and its environment is tested by test_bench_scaling in CI
    results = bench.main(["--rows", "3000", "--tools", *tools, "--data-dir", str(tmp_path)])
    by_tool = {r["tool"]: r for r in results}
    assert set(by_tool) == set(tools)
    for tool in ("ours", "floor"):
        r = by_tool[tool]
        assert "error" not in r, r
        assert r["cpu_s"] > 0 and r["wall_s"] > 0 and r["peak_mb"] > 0 and "load_average" in r
    # ours releases every HAT of the same records the floor groups (zeros dropped by ours)
    assert 0 < by_tool["ours"]["pairs"] <= by_tool["floor"]["pairs"]
    assert by_tool["ours"]["hats"] <= by_tool["ours"]["pairs"]
    if "opendp" in by_tool:
        assert by_tool["opendp"].get("hats") == by_tool["ours"]["hats"], by_tool["opendp"]
    r = by_tool["pipelinedp"]
    assert ("hats" in r and r["hats"] == by_tool["ours"]["hats"]) or "pipeline_dp" in r["error"]
    if "hats" in r:  # its own cells from the raw file give the same (HAT, user) pairs as ours
        assert r["pairs"] == by_tool["ours"]["pairs"]
    # every tool starts from the one raw file (no precomputed HATs), ours as two CLI processes
    assert [p.name for p in tmp_path.glob("*.parquet")] == ["fleet_3000.parquet"]
    assert by_tool["ours"]["prepare"]["cpu_s"] > 0 and by_tool["ours"]["release"]["cpu_s"] > 0
    assert "| 3e+03 | ours |" in capsys.readouterr().out
