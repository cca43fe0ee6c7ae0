"""The error map's frames document (``dashboard.map.frames``): the browser recolours the map at
each stop of the ε slider from it (``dashboard/common/view/livemap.py``'s ``applyStop``), so the
rows of the map drawn at one stop, patched with stop k, must be the rows the page draws at k."""

from __future__ import annotations

import copy
import json

import pytest

from core.data import default_slot, hat_table
from dashboard.common.sidebar import default_spec
from dashboard.common.source import compute
from dashboard.common.source.units import Units
from dashboard.common.view import livemap
from dashboard.map import compute as mc
from dashboard.map import frames as map_frames
from dashboard.map import layers
from dashboard.map.colouring import Look, drawn_at
from dashboard.map.panels import _base_texts

STOPS = [0.1, 0.25, 1.0, 4.0]


def apply_stop(rows: list[dict], doc: dict, k: int) -> list[dict]:
    """livemap.py's ``applyStop`` in Python: each field the document has for stop ``k`` that a
    row already has (the fill and the hover texts as indices into the palette and the values;
    q)."""
    out = copy.deepcopy(rows)
    fill, q = doc["fill"][k], doc["q"][k]
    for j, row in enumerate(out):
        if "fill" in row:
            row["fill"] = doc["palette"][fill[j]]
        if "q" in row:
            row["q"] = q[j]
        for key, text in doc["texts"].items():
            if key in row:
                row[key] = text["values"][text["index"][k][j]]
    return out


@pytest.fixture(scope="module")
def demo():
    spec = default_spec()
    slot = default_slot(hat_table(compute.prepared(spec).summaries))
    return spec, slot


def _rows(spec, slot, look, eps, draw) -> layers.Rows:
    base = mc.base(spec, slot)
    d = drawn_at(spec, slot, look, eps)
    return layers.records(base, d.styled, {**_base_texts(base), **d.texts}, draw=draw)


@pytest.mark.parametrize("metric", ["error", "relative_error", "within_target", "release"])
@pytest.mark.parametrize("draw", ["hexagons", "both", "dots"])
def test_a_stop_patched_onto_another_stops_rows_is_that_stops_rows(demo, metric, draw):
    spec, slot = demo
    look = Look(metric, "opt-arrayavg", 5.0, "mean", metric == "relative_error", 3, Units())
    doc = json.loads(json.dumps(map_frames.document(spec, slot, look, STOPS)))  # as sent
    assert doc["stops"] == STOPS
    first = _rows(spec, slot, look, STOPS[0], draw)
    for k, eps in enumerate(STOPS):
        want = _rows(spec, slot, look, eps, draw)
        assert apply_stop(first.hexagons, doc, k) == want.hexagons
        assert apply_stop(first.dots or [], doc, k) == (want.dots or [])
        assert doc["colours"][k] == want.colours  # the rows' colour fingerprint: no redraw
    changed = [apply_stop(first.hexagons or first.dots, doc, k) for k in range(len(STOPS))]
    assert changed[0] != changed[-1]  # ε moves the colours: the test can fail


def test_the_document_is_keyed_by_everything_but_epsilon(demo):
    spec, slot = demo
    look = Look("error", "opt-arrayavg", 5.0, "mean", False, 0, Units())
    path = map_frames.url(spec, slot, look, STOPS)
    assert map_frames.url(spec, slot, look, STOPS) == path
    others = {
        map_frames.url(
            spec, slot, Look("error", "opt-bounding", 5.0, "mean", False, 0, Units()), STOPS
        ),
        map_frames.url(
            spec, slot, Look("error", "opt-arrayavg", 2.0, "mean", False, 0, Units()), STOPS
        ),
        map_frames.url(spec, slot, look, [*STOPS, 8.0]),
        map_frames.url(spec, "another slot", look, STOPS),
    }
    assert path not in others and len(others) == 4


def test_the_map_component_loads_deckgl_and_its_json_converter_served_by_the_app():
    from dashboard.common.view import liveplot, served

    routes = {r.path for r in liveplot.routes()}
    cache = liveplot.static_files()
    for name, file in livemap.BUNDLES.items():
        route = served.file_route(name)
        assert route.endswith("/" + file.name) and route in routes and route in cache
        body, control = cache[route]()
        assert body == file and "max-age" in control
        head = file.read_text(encoding="utf-8")[:400]
        assert "define.amd" in head  # a UMD: a global (window.h3, window.deck) in the frame
    text = livemap.BUNDLES["deck.gl"].read_text(encoding="utf-8")
    assert "H3HexagonLayer" in text and "ScatterplotLayer" in text
    json_text = livemap.BUNDLES["deck.gl-json"].read_text(encoding="utf-8")
    assert "JSONConverter" in json_text
    assert "MIT" in (livemap.STATIC / "DECKGL-LICENSE").read_text()
    script = livemap.script()
    assert all(served.file_route(name) in script for name in livemap.BUNDLES)
    assert "__BUNDLES__" not in script and "__IDLE_MS__" not in script
    assert served.route("livemap") in cache


def test_the_panel_and_legend_around_the_map_are_written_at_each_stop_as_core_gives_them(demo):
    """The document's ``side`` texts (what livemap's ``writeSide`` puts in the panel's metrics
    and caption and in the legend's items at a stop) are core's shares within the target and
    trust classes at that stop's ε: the figures ``tests/app/test_map_errors.py`` checks the
    page shows."""
    from core.citywide import derived, errors
    from core.citywide.gridset import grid_set
    from dashboard.map.scales import trust_legend

    spec, slot = demo
    look = Look("error", "opt-arrayavg", 5.0, "mean", False, 0, Units())
    doc = json.loads(json.dumps(map_frames.document(spec, slot, look, STOPS)))
    table = errors.error_table(
        grid_set(compute.prepared(spec).summaries, slot=slot), upper=spec.upper
    )
    for k, eps in enumerate(STOPS):
        at = errors.errors_at(table, eps, "opt-arrayavg")
        w = derived.within_target(at.total, table.records, 5.0)
        assert doc["side"][k]["panel"] == [
            f"{w.share_hexagons:.0%}",
            f"{w.share_records:.0%}",
            f"ε = {eps:g}, opt-arrayavg, mean noise measure.",
        ]
        classes = derived.trust_classes(at.total, target=5.0, upper=spec.upper)
        assert doc["side"][k]["legend"] == trust_legend(classes, 5.0, spec.upper, Units())
    assert doc["side"][0] != doc["side"][-1]  # ε moves them: the test can fail
    within = Look("within_target", "opt-arrayavg", 5.0, "mean", False, 0, Units())
    assert map_frames.document(spec, slot, within, STOPS)["side"][0]["legend"] == []
