"""AppTest of the Map's error views against core: the share within target, the colours as ε
moves, one source of truth for ε / mechanism / target, the split view, the derived mean, the
downloads with provenance."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.citywide import derived, errors
from core.citywide.gridset import grid_set, select_grids
from core.data import hat_table, load_demo, prepare
from dashboard.city import state as cs
from dashboard.common.session import state
from dashboard.common.source.units import Units
from dashboard.common.view import downloads
from dashboard.hexagon import state as hs
from dashboard.map import panels
from dashboard.map import state as ms

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
MAP = "dashboard/map/page.py"
CITY = "dashboard/city/page.py"
ONE = "dashboard/hexagon/page.py"
TIMEOUT = 180
U = 65.0


@pytest.fixture(scope="module")
def demo():
    summaries = prepare(load_demo()).summaries
    slot = str(hat_table(summaries)["slot"].iloc[0])  # the busiest HAT's slot: the Map's
    return summaries, slot


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _map(metric: str = "error") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.radio(key=state.MAP_METRIC).set_value(metric).run()
    _ok(at)
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _decks(at: AppTest) -> list[dict]:
    return [json.loads(d.proto.json) for d in at.get("deck_gl_json_chart")]


def _fills(deck: dict, prefix: str = "hexagons") -> dict[str, list[int]]:
    layer = next(
        x for x in deck["layers"] if x["id"].startswith(prefix) and x["@@type"] == "H3HexagonLayer"
    )
    return {r["cell"]: r["fill"] for r in layer["data"]}  # RGB


def _core(summaries, slot, eps, mechanism="opt-arrayavg", target=5.0):
    table = errors.error_table(grid_set(summaries, slot=slot), upper=U)
    at = errors.errors_at(table, eps, mechanism)
    return table, at, derived.within_target(at.total, table.records, target)


def test_share_within_target_equals_core_and_moves_with_epsilon(demo):
    summaries, slot = demo
    at = _map()
    for eps in (1.0, 0.2, 5.0):
        if eps != 1.0:
            at.select_slider(key=ms.EPSILON).set_value(eps).run()
            _ok(at)
        _, _, w = _core(summaries, slot, eps)
        m = _metrics(at)
        assert m["Hexagons within ±5 km/h"] == f"{w.share_hexagons:.0%}"
        assert m["Records within target"] == f"{w.share_records:.0%}"
        assert at.session_state[state.EPSILON] == eps  # the shared ε


def test_epsilon_change_changes_the_colours_and_the_scale_stays(demo):
    summaries, slot = demo
    at = _map()
    before = _fills(_decks(at)[0])
    at.select_slider(key=ms.EPSILON).set_value(5.0).run()
    _ok(at)
    after = _fills(_decks(at)[0])
    assert before.keys() == after.keys()
    changed = [c for c in before if before[c] != after[c]]
    assert changed
    # every colour is the fixed scale's colour of core's error at that ε (dimmed by class)
    table, core_at, _ = _core(summaries, slot, 5.0)
    from dashboard.map import scales

    scale = scales.error_scale(5.0, Units())
    classes = derived.trust_classes(core_at.total, target=5.0, upper=U)
    styled = scales.style(core_at.total, scale, classes)
    expected = dict(zip(table.cells.astype(str), styled.fill[:, :3].tolist(), strict=True))
    assert after == expected


def test_an_epsilon_move_sends_the_bound_widgets_unset():
    """An ε move re-sends the slider, the mechanism and the target without a value "set" from
    code (a one-shot effect the browser applies by rebuilding the widget: every step rebuilt
    all three, for the values they showed); a value that differs — ε moved on another page —
    is still set. Fails on the code before (each of the three bound on every run)."""
    at = _map()
    at.select_slider(key=ms.EPSILON).set_value(0.5).run()
    _ok(at)
    widgets = {
        "ε": at.select_slider(key=ms.EPSILON),
        "mechanism": at.selectbox(key=ms.MECHANISM),
        "target": at.number_input(key=ms.TARGET),
    }
    assert {k: w.proto.set_value for k, w in widgets.items()} == dict.fromkeys(widgets, False)
    assert at.select_slider(key=ms.EPSILON).value == 0.5
    at.switch_page(CITY).run()
    at.select_slider(key=cs.EPSILON).set_value(2.0).run()
    at.switch_page(MAP).run()
    _ok(at)
    assert at.select_slider(key=ms.EPSILON).value == 2.0


def test_mechanism_and_target_are_shared_with_whole_city(demo):
    at = _map()
    at.selectbox(key=ms.MECHANISM).set_value("opt-bounding").run()
    at.number_input(key=ms.TARGET).set_value(3.0).run()
    at.select_slider(key=ms.EPSILON).set_value(0.5).run()
    _ok(at)
    assert "Hexagons within ±3 km/h" in _metrics(at)
    at.switch_page(CITY).run()
    assert not at.exception
    assert at.select_slider(key=cs.EPSILON).value == 0.5
    assert at.selectbox(key=cs.PLAN_MECHANISM).value == "opt-bounding"
    assert at.number_input(key=cs.TARGET).value == 3.0
    at.select_slider(key=cs.EPSILON).set_value(2.0).run()
    at.selectbox(key=cs.PLAN_MECHANISM).set_value("baseline").run()
    at.switch_page(MAP).run()
    _ok(at)
    assert at.select_slider(key=ms.EPSILON).value == 2.0
    assert at.selectbox(key=ms.MECHANISM).value == "baseline"
    at.switch_page(ONE).run()
    assert not at.exception
    assert at.selectbox(key=hs.TARGET_MECHANISM).value == "baseline"
    assert at.session_state[state.EPSILON] == 2.0
    at.selectbox(key=hs.TARGET_MECHANISM).set_value("arrayavg-best").run()
    at.switch_page(MAP).run()
    _ok(at)
    assert at.selectbox(key=ms.MECHANISM).value == "arrayavg-best"


def test_every_error_colouring_runs_and_the_release_is_cores(demo):
    summaries, slot = demo
    at = _map("relative_error")
    at.radio(key=state.MAP_METRIC).set_value("within_target").run()
    _ok(at)
    at.radio(key=state.MAP_METRIC).set_value("release").run()
    _ok(at)
    deck = _decks(at)[0]
    layer = next(x for x in deck["layers"] if x["@@type"] == "H3HexagonLayer" and "hex" in x["id"])
    shown = {r["cell"]: r["v"] for r in layer["data"]}
    one = derived.one_release(select_grids(summaries, slot=slot), 1.0, "opt-arrayavg", upper=U,
                              seed=0)  # fmt: skip
    cells = one["hat"].str.split("/").str[0]
    for cell, value in zip(cells, one["estimate"], strict=True):
        assert shown[cell] == f"{value:.2f}"


def test_split_view_shows_two_linked_maps_and_each_sides_share(demo):
    summaries, slot = demo
    at = _map()
    at.toggle(key=ms.SPLIT).set_value(True).run()
    _ok(at)
    split = next(d for d in _decks(at) if any(x["id"].startswith("b-") for x in d["layers"]))
    assert len(split["views"]) == 1  # one view: a pan or zoom moves both sides
    b_sides = [x for x in split["layers"] if x["id"].startswith("b-")]
    assert b_sides and all(x["modelMatrix"][12] > 0 for x in b_sides)  # B drawn to the east
    m = _metrics(at)
    for side, eps in (("A", 1.0), ("B", 2.0)):
        _, _, w = _core(summaries, slot, eps)
        label = f"{side}: ε = {eps:g}, opt-arrayavg — hexagons within ±5 km/h"
        assert m[label] == f"{w.share_hexagons:.0%}"
    at.radio(key=ms.SPLIT_MODE).set_value("rule").run()
    at.radio(key=ms.SPLIT_SHOW).set_value("difference").run()
    _ok(at)
    assert any(k.startswith("B: ε = 1, arrayavg-best") for k in _metrics(at))


def test_derived_mean_equals_core(demo):
    summaries, slot = demo
    at = _map()
    at.button(key="map_derived_go").click().run()
    _ok(at)
    d = derived.derived_mean(grid_set(summaries, slot=slot), 1.0, "opt-arrayavg", upper=U,
                             n_runs=2_000, seed=0)  # fmt: skip
    m = _metrics(at)
    assert m[f"True city-wide mean of slot {slot} (km/h)"] == f"{d.true_value:,.2f}"
    assert m["90% of releases land in"] == f"{d.low:,.2f} – {d.high:,.2f}"
    assert any(d.sentence("km/h", f"city-wide mean of slot {slot}") == x.value for x in at.markdown)


def test_downloads_carry_provenance_and_geometry(demo):
    summaries, slot = demo
    table, core_at, _ = _core(summaries, slot, 1.0)
    base = pd.DataFrame(
        {
            "hat": table.hats.astype(str),
            "cell": table.cells.astype(str),
            "users": table.users,
            "records": table.records,
            "true_mean": np.ones(table.n_hats),
        }
    )
    from dashboard.map import compute as mc

    sh = mc.shown("error", core_at, base, target=5.0, upper=U)
    frame = panels.error_frame(base, sh, core_at, target=5.0)
    prov = downloads.Provenance(
        data="demo city", fingerprint="abcdef123456", upper=U, units=Units(value="knots"),
        hat=f"slot {slot}", mechanism="opt-arrayavg", epsilon=1.0,
    )  # fmt: skip
    csv = pd.read_csv(io.BytesIO(panels.csv_file(frame, prov, Units(value="knots"))))
    for column in downloads.PROVENANCE_COLUMNS:
        assert column in csv.columns
    assert "worst_case_error [knots]" in csv.columns
    np.testing.assert_allclose(csv["worst_case_error [knots]"], core_at.total)
    assert (csv["data_fingerprint"] == "abcdef123456").all()
    geo = json.loads(panels.geojson_file(frame, prov, Units(value="knots")))
    assert len(geo["features"]) == table.n_hats
    props = geo["features"][0]["properties"]
    assert props["epsilon"] == 1.0 and props["value_unit"] == "knots"
    assert props["within_target"] in (True, False)


def test_the_maps_own_settings_survive_a_visit_to_another_page():
    """The split view and its settings, the colour scale, the table: kept after One hexagon
    and Learn ran (Streamlit drops a widget's value in a run that does not draw it; the kept
    copy gives it back: ``state.keep_widgets``)."""
    at = _map("error")
    at.toggle(key=ms.SPLIT).set_value(True).run()
    at.radio(key=ms.SPLIT_MODE).set_value("mechanism").run()
    at.toggle(key=ms.AUTO_SCALE).set_value(True).run()
    at.toggle(key=ms.TABLE_SHOWN).set_value(True).run()
    _ok(at)
    kept = {key: at.session_state[key] for key in (ms.SPLIT, ms.SPLIT_MODE, ms.AUTO_SCALE)}
    assert kept == {ms.SPLIT: True, ms.SPLIT_MODE: "mechanism", ms.AUTO_SCALE: True}
    at.switch_page("dashboard/hexagon/page.py").run()
    at.switch_page("dashboard/learn/page.py").run()
    at.switch_page("dashboard/map/page.py").run()
    _ok(at)
    assert at.toggle(key=ms.SPLIT).value is True
    assert at.radio(key=ms.SPLIT_MODE).value == "mechanism"
    assert at.toggle(key=ms.AUTO_SCALE).value is True
    assert at.toggle(key=ms.TABLE_SHOWN).value is True
    assert at.radio(key=state.MAP_METRIC).value == "error"
    assert len(_decks(at)) == 2  # the map and the split view's two linked maps


def test_the_error_maps_legend_is_html_and_no_plotly_chart_is_drawn():
    """The error map's legend is plain HTML (a plotly strip made the browser load Streamlit's
    plotly.js for a row of boxes)."""
    at = _map()
    assert len(at.get("plotly_chart")) == 0
    legend = " ".join(h.proto.body for h in at.get("html") if "hexplorer-legend" in h.proto.body)
    assert "error at ε" in legend and legend.count("hexplorer-legend-box") >= 2
