"""AppTest of the Map's "Resolution: adaptive" against core.citywide.adaptive: the mixed cells
drawn, their colours by error, the shares beside the fixed resolution's, the split view, and a
coarse cell opened on One hexagon."""

from __future__ import annotations

import json
from pathlib import Path

import h3
import pytest
from streamlit.testing.v1 import AppTest

from core.citywide.adaptive import adaptive_cover
from core.data import busiest_hexagon_hour, hat_data, hat_table, load_demo, prepare
from dashboard.common.session import selection, state
from dashboard.map import state as ms

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
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


def _cells(deck: dict, prefix: str) -> list[str]:
    layer = next(
        x for x in deck["layers"] if x["id"].startswith(prefix) and x["@@type"] == "H3HexagonLayer"
    )
    assert layer["highPrecision"] is True  # mixed resolutions need exact polygons
    return [r["cell"] for r in layer["data"]]


def test_adaptive_map_equals_core_and_beats_fixed(demo):
    summaries, slot = demo
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.radio(key=state.MAP_METRIC).set_value("error").run()
    at.radio(key=ms.RESOLUTION_MODE).set_value("adaptive").run()
    _ok(at)
    eps, target = float(at.session_state[state.EPSILON]), float(at.session_state[state.TARGET])
    cover = adaptive_cover(summaries, slot=slot, epsilon=eps, target=target, resolutions=(5, 7))
    deck = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
    cells = _cells(deck, "hexagons")
    assert cells == cover.cells.tolist()
    assert len({h3.get_resolution(c) for c in cells}) >= 2
    assert cover.share_records > cover.fixed_share_records(7)
    text = " ".join(m.value for m in at.markdown)
    assert f"fixed res 7: {cover.fixed_share_records(7):.0%} of records" in text
    assert f"adaptive 7–5: {cover.share_records:.0%}" in text
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Records within ±{target:g} km/h"] == f"{cover.share_records:.0%}"
    # the split view: fixed (A) beside adaptive (B)
    at.toggle(key=ms.SPLIT).set_value(True).run()
    at.radio(key=ms.SPLIT_MODE).set_value("adaptive").run()
    _ok(at)
    split = json.loads(at.get("deck_gl_json_chart")[1].proto.json)
    assert _cells(split, "b-hexagons") == cover.cells.tolist()


def test_a_coarse_cell_opens_on_one_hexagon(demo):
    summaries, slot = demo
    cover = adaptive_cover(summaries, slot=slot, epsilon=1.0, target=3.0, resolutions=(5, 7))
    coarse = next(c for c, r in zip(cover.cells, cover.resolution, strict=True) if r < 7)
    label = f"{coarse}/{slot}"
    at = AppTest.from_file(str(ROOT / "dashboard/hexagon/page.py"), default_timeout=TIMEOUT)
    at.session_state[state.HAT] = label  # as a click on the Map's adaptive cover leaves it
    at.session_state[selection.COARSE_PICKED] = label
    at.run()
    _ok(at)
    assert at.session_state[state.HAT] == label
    assert at.selectbox(key=state.HAT_PICK).value == label
    want = hat_data(summaries, label, upper=U)
    assert want.n_records == int(cover.records[cover.cells.tolist().index(coarse)])
    at.run()  # kept on later runs on the same data
    assert at.session_state[state.HAT] == label


def test_a_coarse_hat_left_from_another_resolution_is_not_kept(demo):
    """A coarse HAT is one opened from the adaptive cover: the same label set without that
    pick (what a change of the data's resolution leaves) moves to the busiest hexagon-hour."""
    summaries, slot = demo
    cover = adaptive_cover(summaries, slot=slot, epsilon=1.0, target=3.0, resolutions=(5, 7))
    coarse = next(c for c, r in zip(cover.cells, cover.resolution, strict=True) if r < 7)
    at = AppTest.from_file(str(ROOT / "dashboard/hexagon/page.py"), default_timeout=TIMEOUT)
    at.session_state[state.HAT] = f"{coarse}/{slot}"
    at.run()
    _ok(at)
    assert at.session_state[state.HAT] == busiest_hexagon_hour(hat_table(summaries))


def test_whole_city_and_learn_explain_the_choice(demo):
    summaries, slot = demo
    at = AppTest.from_file(str(ROOT / "dashboard/city/page.py"), default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert "Larger hexagons where the data are thin" in [s.value for s in at.subheader]
    eps, target = float(at.session_state[state.EPSILON]), float(at.session_state[state.TARGET])
    cover = adaptive_cover(summaries, slot=slot, epsilon=eps, target=target, resolutions=(5, 7))
    note = next(m.value for m in at.markdown if "an **adaptive** map" in m.value)
    assert f"**{cover.fixed_share_records(7):.0%}**" in note
    assert f"**{cover.share_records:.0%}**" in note
    assert "public" in note and "noisy counts" in note
    learn = AppTest.from_file(str(ROOT / "dashboard/learn/page.py"), default_timeout=TIMEOUT)
    learn.run()
    _ok(learn)
    text = " ".join(" ".join(m.value.split()) for m in learn.markdown)
    assert "cell_to_parent" in text and "stricter reading" in text and "outskirts" in text


def _blocks_above(node, key: str, chain: tuple = ()) -> tuple | None:
    """The types of the blocks from ``node`` down to the widget keyed ``key`` (None: absent)."""
    for child in getattr(node, "children", {}).values():
        if getattr(child, "key", None) == key:
            return chain
        found = _blocks_above(child, key, (*chain, child.type))
        if found is not None:
            return found
    return None


def test_the_resolution_row_has_columns_only_when_adaptive():
    """At the fixed resolution the "Resolution" radio stands alone in the map's fragment (no
    empty column beside it, which every ε step re-sent and every commit of the browser
    re-rendered); adaptive, it and the coarsest-resolution slider share a row. Fails on the
    code before (the radio always in a column)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.radio(key=state.MAP_METRIC).set_value("error").run()
    _ok(at)
    assert _blocks_above(at.main, ms.RESOLUTION_MODE) == ("flex_container",)  # the fragment's
    at.radio(key=ms.RESOLUTION_MODE).set_value("adaptive").run()
    _ok(at)
    row = ("flex_container", "flex_container", "column")
    assert _blocks_above(at.main, ms.RESOLUTION_MODE) == row
    assert _blocks_above(at.main, ms.ADAPTIVE_LEVELS) == row
    at.radio(key=ms.RESOLUTION_MODE).set_value("fixed").run()
    _ok(at)
    assert _blocks_above(at.main, ms.RESOLUTION_MODE) == ("flex_container",)
    assert _blocks_above(at.main, ms.ADAPTIVE_LEVELS) is None
