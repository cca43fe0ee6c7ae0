"""AppTest: the Whole-city page's coverage curve and planned ε equal core.plan's numbers."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import plan
from core.citywide import errors
from core.citywide.gridset import grid_set
from core.data import load_demo, prepare
from dashboard.city import state as cs

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dashboard" / "city" / "page.py")
U = 65.0


@pytest.fixture(scope="module")
def grids():
    """The grids of a slot, from the summaries: the page opens on the selected HAT's slot (one
    source of truth across pages), so the test reads which slot that is from the page."""
    s = prepare(load_demo()).summaries
    return lambda slot: grid_set(s, slot=slot)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _array(value) -> np.ndarray:
    """A plotly JSON array: a list, or {'dtype', 'bdata'} (base64 binary)."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value)


def _coverage_figure(at: AppTest) -> dict:
    for chart in at.get("plotly_chart"):
        fig = json.loads(chart.proto.spec)
        if "within" in fig["layout"]["title"]["text"]:
            return fig
    raise AssertionError("no coverage chart")


def _check(at: AppTest, grids_of, *, target: float, coverage: float, mechanism: str) -> None:
    assert not at.exception, [e.value for e in at.exception]
    grids = grids_of(at.session_state[cs.SLOT])
    table = errors.error_table(grids, upper=U)
    want = plan.city_plan(table, target, coverage=coverage, mechanism=mechanism, grids=grids)
    metrics = _metrics(at)
    label = f"ε for {coverage:.0%} within ±{target:g} km/h"
    assert want.status == "ok"
    assert metrics[label] == f"{want.epsilon:.4g}"
    assert metrics["Hexagons within target at it"] == (
        f"{want.hats_reaching:,} of {want.hats_total:,}"
    )
    assert metrics["Per-bus loss ε·max G_ℓ"] == f"{want.user_loss.by_users:,.3g}"
    assert metrics["Per-bus loss after CHOP-USER K·ε"] == f"{want.user_loss.after_chop:,.3g}"
    fig = _coverage_figure(at)
    curve = plan.coverage_curve(table, target, cs.COVERAGE_EPSILONS, mechanism)
    np.testing.assert_array_equal(_array(fig["data"][0]["x"]), curve["epsilon"])
    np.testing.assert_array_equal(_array(fig["data"][0]["y"]), curve["share"])
    planned_line = fig["layout"]["shapes"][1]
    assert planned_line["x0"] == want.epsilon
    assert fig["layout"]["shapes"][0]["y0"] == coverage


def test_coverage_curve_and_planned_epsilon_equal_core(grids):
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.run()
    _check(at, grids, target=5.0, coverage=0.9, mechanism="opt-arrayavg")
    # entering a target moves the planned ε to core's answer for it
    at.number_input(key=cs.TARGET).set_value(2.0).run()
    _check(at, grids, target=2.0, coverage=0.9, mechanism="opt-arrayavg")
    at.slider(key=cs.COVERAGE).set_value(0.6).run()
    at.selectbox(key=cs.PLAN_MECHANISM).set_value("opt-bounding").run()
    _check(at, grids, target=2.0, coverage=0.6, mechanism="opt-bounding")


def test_unreachable_target_is_a_warning_not_an_error(grids):
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.run()
    at.selectbox(key=cs.PLAN_MECHANISM).set_value("arrayavg-best").run()
    at.number_input(key=cs.TARGET).set_value(0.0).run()
    assert not at.exception
    assert any("No ε puts" in w.value for w in at.warning)
    assert _metrics(at)["ε for 90% within ±0 km/h"] == "–"
