"""AppTest: One hexagon's "code for this view" snippet runs and agrees with the page; the report
button is there and the report holds the figures the page drew."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from html import escape as html_escape
from pathlib import Path

import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from core.data import hat_table, load_demo, prepare
from dashboard.common.report.panel import CAPTIONS, CODE_PANEL
from dashboard.hexagon import state as hs
from tests.app.links import open_at

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
ONE = "one_hexagon"  # its URL path (app.py's PAGES), as a link opens it


@pytest.fixture(scope="module")
def hats():
    return hat_table(prepare(load_demo()).summaries)


def _numbers(at: AppTest) -> list[float]:
    out = []
    for m in at.metric:
        for tok in re.findall(r"-?\d[\d,]*\.?\d*(?:e[-+]?\d+)?", str(m.value)):
            out.append(float(tok.replace(",", "")))
    return out


def test_code_for_this_view_runs_and_agrees_with_the_page(hats, tmp_path):
    label = str(hats["hat"].iloc[2])
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in {
        "hat": label,
        "eps": "0.5",
        "seed": "5",
        "mech": "baseline,arrayavg-best,levy",
    }.items():
        at.query_params[k] = v
    open_at(at, ONE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    closed = [c for c in at.code if c.value.startswith("hexplorer worstcase")]
    assert not closed  # the expander starts closed: its code boxes are not drawn
    at.session_state[CODE_PANEL] = True  # the reader opens "Code for this view"
    at.run()
    snippets = [c.value for c in at.code if c.value.startswith('"""Code for this view')]
    assert len(snippets) == 1
    commands = [c.value for c in at.code if c.value.startswith("hexplorer worstcase")]
    assert len(commands) == 1 and f"--hat {label}" in commands[0]
    script = tmp_path / "view.py"
    script.write_text(snippets[0], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["hat"] == label and out["epsilon"] == 0.5
    assert out["m_ub"] == at.session_state["m_ub"]
    at.session_state[hs.TAB] = hs.TAB_DETAIL  # the worst case in detail: E1, E2, E, bias
    at.run()
    shown = _numbers(at)
    at.session_state[hs.TAB] = hs.TAB_TABLES
    at.run()
    for key in ("worst_case_error", "clipping_error", "noise_error", "bestfit_bias"):
        assert any(math.isclose(out[key], s, rel_tol=1e-3, abs_tol=1e-3) for s in shown), key
    # The headline (simulated releases at each mechanism's own rule) equals the page's.
    table = next(
        df.value for df in at.dataframe if list(df.value.columns)[:2] == ["mechanism", "title"]
    )
    assert table["mechanism"].tolist() == ["baseline", "arrayavg-best", "levy"]
    for row in table.to_dict("records"):
        got = out["headline"][row["mechanism"]]
        assert got["typical"] == pytest.approx(row["typical error (km/h)"], rel=1e-12)
        assert got["bound90"] == pytest.approx(row["90 % of releases within ± (km/h)"], rel=1e-12)
        assert got["share_within"] == row["share within ±1 km/h"]
        worst = row["worst case (km/h)"]
        assert (got["worst_case"] is None and pd.isna(worst)) or got["worst_case"] == worst


def test_report_button_is_on_the_page(hats):
    at = AppTest.from_file(APP, default_timeout=180)
    open_at(at, ONE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    buttons = [b for b in at.get("download_button") if "report" in b.proto.label.lower()]
    assert len(buttons) == 1
    assert buttons[0].proto.label.startswith("Download a report of this view (HTML")


def test_report_holds_every_chart_of_the_page_also_of_closed_tabs(monkeypatch):
    """Only the open tab is drawn, but the report (built on click) has all six charts: those of
    the closed tabs are built from the run's numbers when the report is written."""
    made = {}
    original = MediaFileManager.add_deferred

    def spy(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        made[file_name] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    at = AppTest.from_file(APP, default_timeout=180)
    open_at(at, ONE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[hs.TAB] == hs.TAB_READOUTS
    assert len(at.get("plotly_chart")) == 2  # the two charts above the tabs, nothing hidden
    report = next(f for name, f in made.items() if name and name.endswith(".html"))
    html = report().decode("utf-8")
    assert html.count('<div class="figure">') == 6
    for key in ("error_curve", "histogram", "staircase", "mae", "worst_case_vs_epsilon"):
        assert html_escape(CAPTIONS[key]) in html
