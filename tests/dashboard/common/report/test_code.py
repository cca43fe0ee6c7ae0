"""dashboard.common.report.code: the generated commands and snippet run and give core's numbers."""

from __future__ import annotations

import doctest
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core import worstcase
from core.data import hat_data, hat_table, load_demo, prepare
from core.mechanisms import MECHANISMS, release
from dashboard.common.report import code
from dashboard.common.report.code import View, cli_commands, python_snippet
from dashboard.common.source.compute import rng_for

ROOT = Path(__file__).resolve().parents[4]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def demo():
    summaries = prepare(load_demo()).summaries
    return summaries, hat_table(summaries)


def _view(hat_label: str, **kw) -> View:
    fields = dict(
        source_kind="demo", source_name="demo city",
        columns=("user_id", "lat", "lon", "timestamp", "speed"), upper=65.0, resolution=7,
        slot="1h", keep_zeros=False, hat=hat_label, epsilon=0.5, m_ub=30, override=False,
        mechanisms=("baseline", "arrayavg-best", "levy", "opt-bounding"), noise_measure="std",
        seed=4,
    )  # fmt: skip
    fields.update(kw)
    return View(**fields)


def test_snippet_runs_and_prints_cores_numbers(demo, tmp_path):
    summaries, table = demo
    label = str(table["hat"].iloc[2])
    view = _view(label, override=True, m_ub=25)
    script = tmp_path / "view.py"
    script.write_text(python_snippet(view), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    hat = hat_data(summaries, label, upper=65.0)
    parts = worstcase.worst_case_error(hat.counts, 65.0, 25, 0.5, noise_measure="std")
    assert out["hat"] == label and out["records"] == hat.n_records
    assert out["worst_case_error"] == pytest.approx(float(parts.total), rel=1e-12)
    assert out["m_opt"] == worstcase.m_opt(hat.counts, 65.0, 0.5, noise_measure="std")
    assert out["bestfit_bias"] == pytest.approx(worstcase.bestfit_bias(hat.counts, 65.0, 25))
    for name in view.mechanisms:
        rng = rng_for(4, "release", name)  # the page's stream
        r = release(name, hat, 0.5, m_ub=25 if MECHANISMS[name].uses_m_ub else None, rng=rng)
        assert out["releases"][name]["estimate"] == pytest.approx(r.estimate, rel=1e-12)


def test_cli_commands_run_and_agree_on_the_worst_case(demo):
    summaries, table = demo
    label = str(table["hat"].iloc[1])
    view = _view(label, mechanisms=("arrayavg-best",))
    first, second = cli_commands(view).splitlines()
    exe = str(Path(sys.executable).with_name("hexplorer"))
    args = shlex.split(first)
    assert args[0] == "hexplorer"
    done = subprocess.run(
        [exe, *args[1:]], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    rows = got["results"] if isinstance(got, dict) else got
    hat = hat_data(summaries, label, upper=65.0)
    m = worstcase.m_opt(hat.counts, 65.0, 0.5, noise_measure="std")
    assert rows[0]["m_opt"] == m
    expected = worstcase.worst_case_error(hat.counts, 65.0, m, 0.5, noise_measure="std").total
    assert rows[0]["error"] == pytest.approx(float(expected))
    assert "--mechanism arrayavg-best" in second and "--seed 4" in second
    assert "--m-ub" not in second  # each mechanism's own m_UB unless overridden


def test_uploaded_data_snippet_reads_the_file_by_name():
    view = _view("c/s", source_kind="upload", source_name="ships.csv",
                 columns=("MMSI", "LAT", "LON", "BaseDateTime", "SOG"), upper=30.0)  # fmt: skip
    snippet = python_snippet(view)
    assert "prepare_file('ships.csv', columns, config)" in snippet
    assert "user='MMSI'" in snippet and "upper=30.0" in snippet
    cmds = cli_commands(view)
    assert cmds.startswith("hexplorer worstcase ships.csv --user-col MMSI")
    assert "--upper 30" in cmds


def test_view_refuses_unknown_mechanisms():
    with pytest.raises(ValueError, match="magic"):
        _view("c/s", mechanisms=("magic",))


def test_the_modules_examples_run():
    assert doctest.testmod(code).failed == 0
