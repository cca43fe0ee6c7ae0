"""AppTest: the Experiments page shows a figure, the claim and its check, as core computes them."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.experiments import get_experiment, run_experiment
from dashboard.experiments import state as es

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = "dashboard/experiments/page.py"
TIMEOUT = 180


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _page() -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=TIMEOUT)
    at.session_state[es.EXPERIMENT] = "real-world-baseline"
    at.session_state[es.RUNS] = 40
    at.session_state[es.SEED] = 2
    at.run()
    _ok(at)
    return at


def test_page_shows_the_figure_claim_and_check_as_core_computes_them():
    at = _page()
    exp = get_experiment("real-world-baseline")
    out = run_experiment(exp, runs=40, seed=2)
    assert at.title[0].value == "Experiments: reproduce the papers"
    assert any(exp.claim in m.value for m in at.markdown)
    verdicts = [m.value for m in (at.success if out.holds else at.warning)]
    assert any(out.evidence in v for v in verdicts)
    assert len(at.get("plotly_chart")) == 1
    assert any(
        "hexplorer reproduce real-world-baseline --runs 40 --seed 2" in c.value for c in at.caption
    )


def test_runs_seed_and_fresh_are_adjustable():
    at = _page()
    at.selectbox(key=es.EXPERIMENT).set_value("bounding-fig3").run()
    _ok(at)
    at.number_input(key=es.RUNS).set_value(3).run()
    at.toggle(key=es.FRESH).set_value(True).run()
    _ok(at)
    out = run_experiment("bounding-fig3", runs=3, seed=2, fresh=True)
    shown = [m.value for m in (*at.success, *at.warning)]
    assert any(out.evidence in v for v in shown)
    assert any("--fresh" in c.value for c in at.caption)


def test_exact_experiments_disable_runs_and_seed():
    at = _page()
    at.selectbox(key=es.EXPERIMENT).set_value("real-world-staircase").run()
    _ok(at)
    assert at.number_input(key=es.RUNS).disabled
    assert at.toggle(key=es.FRESH).disabled


def test_the_app_routes_to_the_page():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Experiments: reproduce the papers"
