"""The error map's builders as data: fixed colour scales, the dimmed set, legend text with
units, the split view's one Deck with two views sharing one view state, the handout figure."""

from __future__ import annotations

import json
import math

import h3
import numpy as np
import pandas as pd
import pydeck as pdk
import pytest

from core.citywide import derived, errors
from core.citywide.gridset import busiest_slot, grid_set
from core.data import load_demo, prepare
from dashboard.common.session import selection
from dashboard.common.source.units import Units
from dashboard.common.view import maps
from dashboard.map import charts, layers, scales

U = 65.0
KNOTS = Units(value="knots", user="ship")


@pytest.fixture(scope="module")
def demo_slot():
    summaries = prepare(load_demo()).summaries
    g = grid_set(summaries, slot=busiest_slot(summaries))
    table = errors.error_table(g, upper=U)
    cells = [str(c) for c in g.cells]
    base = pd.DataFrame(
        {
            "hat": table.hats.astype(str),
            "cell": cells,
            "pos": [maps.centre(c) for c in cells],
            "records": table.records,
            "users_text": [str(v) for v in table.users],
            "records_text": [str(v) for v in table.records],
            "true_text": ["1.00"] * len(cells),
        }
    )
    return table, base


def test_error_scale_is_fixed_while_epsilon_moves_and_colours_follow_the_error(demo_slot):
    table, _ = demo_slot
    scale = scales.error_scale(5.0, KNOTS)
    assert scale.edges == (0.0, 1.25, 2.5, 5.0, 10.0, 20.0, math.inf)
    assert scale.fixed and scale.colors == maps.PALETTE
    e1 = errors.errors_at(table, 0.5).total
    e2 = errors.errors_at(table, 2.0).total
    s1 = scales.style(e1, scale, None)
    s2 = scales.style(e2, scale, None)
    # the same error gets the same colour at both ε; a different bin gets a different colour
    for s, e in ((s1, e1), (s2, e2)):
        expected = np.array([maps.PALETTE[int(np.searchsorted(scale.edges[1:-1], v, "right"))]
                             for v in e])  # fmt: skip
        np.testing.assert_array_equal(s.fill[:, :3], expected)
    assert (s1.bins != s2.bins).any()
    assert (s2.bins <= s1.bins).all()  # more ε, never more error (opt-arrayavg's W is decreasing)


def test_auto_scale_depends_on_the_values_and_says_so():
    a = scales.auto_scale(np.array([1.0, 2.0, 3.0, 4.0]), title="t")
    b = scales.auto_scale(np.array([10.0, 20.0, 30.0, 40.0]), title="t")
    assert not a.fixed and a.edges != b.edges
    assert "automatic" in charts.legend(a).layout.title.text
    assert "automatic" not in charts.legend(scales.error_scale(5.0, KNOTS)).layout.title.text


def test_dimmed_set_is_the_hexagons_over_target_with_their_outlines(demo_slot):
    table, _ = demo_slot
    at = errors.errors_at(table, 1.0)
    classes = derived.trust_classes(at.total, target=5.0, upper=U)
    assert {0, 1, 2} <= set(classes.tolist())  # the demo slot has all three at ε = 1
    styled = scales.style(at.total, scales.error_scale(5.0, KNOTS), classes)
    np.testing.assert_array_equal(styled.dimmed(), np.flatnonzero(classes != 0))
    over, none = classes == 1, classes == 2
    assert (styled.line[over, :3] == scales.OVER_OUTLINE).all()
    assert (styled.line[none, :3] == scales.NO_USE_OUTLINE).all()
    assert (styled.width[classes != 0] == scales.OUTLINE_PX).all()
    assert (styled.width[classes == 0] == 1).all()
    assert (styled.fill[:, 3] == maps.FILL_ALPHA).all()  # opaque: the dots stay hidden
    plain = scales.style(at.total, scales.error_scale(5.0, KNOTS), None)
    np.testing.assert_array_equal(styled.fill[classes == 0], plain.fill[classes == 0])
    assert (styled.fill[over, :3] > plain.fill[over, :3]).all()  # mixed with white: paler
    assert (styled.fill[none, :3] == scales.NO_USE_FILL).all()


def test_legend_text_carries_the_units_and_counts():
    scale = scales.error_scale(2.0, KNOTS)
    assert scale.labels[0] == "0.00 – 0.50 knots" and scale.labels[-1] == "≥ 8.00 knots"
    assert "knots" in scale.title
    assert [e.label for e in scale.legend()] == list(scale.labels)
    words = scales.trust_legend(np.array([0, 1, 1, 2]), 2.0, 30.0, KNOTS)
    assert words[0].startswith("Faded, orange outline: over target — 2 hexagons")
    assert "±2 knots" in words[0]
    assert "1 hexagon with too few ships" in words[1] and "U/2 = 15 knots" in words[1]
    assert scales.relative_scale().labels[:2] == ("0 – 2.5%", "2.5 – 5%")
    assert scales.value_scale(30.0, KNOTS).labels[-1] == "25.0 – 30.0 knots"
    assert scales.difference_scale(4.0, KNOTS).labels[0] == "B better by > 4.00 knots"
    assert "{v}" not in layers.tooltip(None, KNOTS)["text"]  # the error map's value is e
    tip = layers.tooltip("relative error", KNOTS)["text"]
    assert "relative error: {v}" in tip
    for word in ("ships: {u}", "records: {r}", "m_UB: {m}", "worst-case error (±knots): {e}",
                 "true mean (knots): {t}", "trust: {k}"):  # fmt: skip
        assert word in tip


def test_split_deck_draws_b_half_a_map_east_in_one_view(demo_slot):
    table, base = demo_slot
    scale = scales.error_scale(5.0, KNOTS)
    texts = {"v": ["x"] * len(base)}
    rows = [
        layers.records(base, scales.style(errors.errors_at(table, e).total, scale, None), texts)
        for e in (0.5, 2.0)
    ]
    view, _ = maps.fit_view(base["cell"].tolist(), width_px=380)
    deck = layers.split_deck(
        rows[0], rows[1], view, width_px=760, tooltip_spec={"text": "{value_text}"}
    )
    spec = json.loads(deck.to_json())
    # one view (Streamlit's map draws every layer in every view): a pan or zoom moves both
    assert len(spec["views"]) == 1 and spec["views"][0]["controller"]
    shift = 380 * 360.0 / (512 * 2.0**view.zoom)  # half of 760 px in degrees at this zoom
    assert layers.half_width_degrees(view.zoom, 760) == pytest.approx(shift)
    ivs = spec["initialViewState"]
    assert ivs["longitude"] == pytest.approx(view.longitude + shift / 2)
    assert ivs["latitude"] == view.latitude and ivs["zoom"] == view.zoom
    ids = [layer["id"] for layer in spec["layers"]]
    g = rows[0].geometry
    assert g == rows[1].geometry  # the same hexagons on both sides
    assert ids == [f"a-hexagons-{g}", f"a-hexagons-{g}-points", f"b-hexagons-{g}",
                   f"b-hexagons-{g}-points"]  # fmt: skip
    for layer in spec["layers"]:
        if layer["id"].startswith("a-"):
            assert "modelMatrix" not in layer
        else:  # B: translated east by `shift` degrees of longitude, nothing else
            m = layer["modelMatrix"]
            assert m[:12] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0] and m[13:] == [0, 0, 1]
            assert m[12] == pytest.approx(shift)
    fills = [
        [r["fill"] for r in layer["data"]]
        for layer in spec["layers"]
        if layer["@@type"] == "H3HexagonLayer"
    ]
    assert fills[0] != fills[1]  # the two sides differ


def test_error_deck_rows_are_small_and_outlines_follow_the_trust_code(demo_slot):
    table, base = demo_slot
    at = errors.errors_at(table, 1.0)
    classes = derived.trust_classes(at.total, target=5.0, upper=U)
    styled = scales.style(at.total, scales.error_scale(5.0, KNOTS), classes)
    rows = layers.records(base, styled, {"v": ["v"] * len(base)}, draw="hexagons")
    assert rows.dots is None
    assert set(rows.hexagons[0]) == {"cell", "fill", "q", "v"}
    assert [r["q"] for r in rows.hexagons] == classes.tolist()  # 0 within, 1 over, 2 none
    assert [r["fill"] for r in rows.hexagons] == styled.fill[:, :3].tolist()
    view, _ = maps.fit_view(base["cell"].tolist())
    deck = layers.error_deck(rows, view, tooltip_spec={"text": ""}, selected_cell=rows.hexagons[0]["cell"],
                             pick_token=3)  # fmt: skip
    text = deck.to_json()
    assert "\n" not in text and len(text) < len(pdk.Deck.to_json(deck)) / 2  # compact JSON
    spec = json.loads(text)
    ids = [x["id"] for x in spec["layers"]]
    assert ids == [f"hexagons-3-{rows.geometry}", maps.SELECTED_LAYER_ID]  # no dots: wide hexagons
    hexes = spec["layers"][0]
    assert hexes["getLineColor"] == f"@@={layers.LINE_COLOR}"
    assert hexes["getLineWidth"] == f"@@={layers.LINE_WIDTH}"
    assert hexes["lineWidthUnits"] == "pixels"  # a plain string, not an accessor
    assert "[230, 97, 1, 255]" in layers.LINE_COLOR  # over target: the orange outline
    with_dots = layers.records(base, styled, {}, draw="both")
    assert with_dots.dots is not None and set(with_dots.dots[0]) == {"pos", "fill", "q"}
    assert set(with_dots.hexagons[0]) == {"cell", "fill"}  # the dots draw the outlines
    drawn = layers.hexagon_layers(with_dots, layer_id="h", pickable=True)
    assert [x.id for x in drawn] == [f"h-{rows.geometry}", f"h-{rows.geometry}-points"]
    assert drawn[1].pickable is False
    # with dots, the dots carry the trust outlines; the hexagons are filled polygons only (the
    # outlines of many small hexagons are what a frame costs in software WebGL)
    dotted = json.loads(layers.CompactDeck(layers=drawn).to_json())["layers"]
    assert dotted[0]["stroked"] is False and dotted[0]["highPrecision"] is True
    assert "getLineColor" not in dotted[0]
    assert dotted[1]["stroked"] is True and dotted[1]["getLineColor"] == f"@@={layers.LINE_COLOR}"
    assert hexes["stroked"] is True  # without dots the hexagons keep their outlines


def test_hexagons_smaller_than_a_dot_are_drawn_as_dots_that_answer_the_mouse(demo_slot):
    """Below a dot's width each dot hides its hexagon: only the dots are drawn, and they carry
    what a click and the tooltip read (cell, texts) besides position, fill and trust code."""
    table, base = demo_slot
    at = errors.errors_at(table, 1.0)
    classes = derived.trust_classes(at.total, target=5.0, upper=U)
    styled = scales.style(at.total, scales.error_scale(5.0, KNOTS), classes)
    assert layers.draw_mode(2 * maps.MIN_POINT_PIXELS - 0.1) == "dots"
    assert layers.draw_mode(2 * maps.MIN_POINT_PIXELS) == "both"
    assert layers.draw_mode(layers.DOTS_BELOW_PX) == "hexagons"
    rows = layers.records(base, styled, {"e": ["1.0"] * len(base)}, draw="dots")
    assert rows.hexagons == [] and len(rows.dots) == len(base)
    assert set(rows.dots[0]) == {"cell", "pos", "fill", "q", "e"}
    assert [r["cell"] for r in rows.dots] == base["cell"].tolist()
    assert [r["q"] for r in rows.dots] == classes.tolist()
    assert [r["fill"] for r in rows.dots] == styled.fill[:, :3].tolist()
    drawn = layers.hexagon_layers(rows, layer_id="h", pickable=True)
    assert [x.id for x in drawn] == [f"h-{rows.geometry}-points"]
    spec = json.loads(layers.CompactDeck(layers=drawn).to_json())["layers"][0]
    assert spec["@@type"] == "ScatterplotLayer" and spec["pickable"] is True
    assert spec["autoHighlight"] is True and spec["stroked"] is True
    assert spec["getLineColor"] == f"@@={layers.LINE_COLOR}"
    assert spec["updateTriggers"]["getFillColor"] == [rows.colours]
    # a click on a dot names its cell, as a click on a hexagon does
    picked = {"selection": {"objects": {drawn[0].id: [rows.dots[3]]}}}
    assert selection.picked_row(picked, "h")["cell"] == base["cell"].iloc[3]
    assert (
        layers.hexagon_layers(layers.Rows(hexagons=[], dots=[]), layer_id="h", pickable=True) == []
    )


def test_handout_map_has_one_trace_per_colour_and_the_dimmed_classes(demo_slot):
    table, base = demo_slot
    at = errors.errors_at(table, 1.0)
    classes = derived.trust_classes(at.total, target=5.0, upper=U)
    scale = scales.error_scale(5.0, KNOTS)
    styled = scales.style(at.total, scale, classes)
    words = scales.trust_legend(classes, 5.0, U, KNOTS)
    fig = charts.handout_map(base, styled, scale, classes=classes, title="T", trust_words=words)
    names = [t.name for t in fig.data]
    assert "Faded, orange outline: over target" in names
    assert "Pale grey, dark grey outline: no useful release" in names
    assert set(names) - set(scale.labels) <= {
        "Faded, orange outline: over target",
        "Pale grey, dark grey outline: no useful release",
    }
    n_rings = sum(sum(1 for v in t.x if v is None) for t in fig.data)
    assert n_rings == len(base)  # every hexagon drawn once
    first = base["cell"].iloc[0]
    assert h3.is_valid_cell(first)


def test_a_new_epsilon_changes_only_the_colours_of_the_same_layers(demo_slot):
    """Streamlit parses the Deck anew on every ε step: the layers say their rows are the same
    data (no polygon rebuilt), their ids carry the cells' fingerprint (other hexagons are other
    layers) and the colours' fingerprint triggers the colour update."""
    table, base = demo_slot
    scale = scales.error_scale(5.0, KNOTS)

    def rows_at(eps):
        at = errors.errors_at(table, eps)
        classes = derived.trust_classes(at.total, target=5.0, upper=U)
        styled = scales.style(at.total, scale, classes)
        return layers.records(base, styled, {}, draw="both")

    a, b = rows_at(0.5), rows_at(2.0)
    assert a.geometry == b.geometry and a.colours != b.colours
    assert rows_at(0.5).colours == a.colours  # the same drawing, the same fingerprint
    view, _ = maps.fit_view(base["cell"].tolist())
    specs = [json.loads(layers.error_deck(r, view, tooltip_spec={"text": ""}).to_json())
             for r in (a, b)]  # fmt: skip
    for spec, rows in zip(specs, (a, b), strict=True):
        hexes, dots = spec["layers"][:2]
        assert hexes["id"] == f"hexagons-{a.geometry}"  # the same layer at both ε
        for layer in (hexes, dots):
            assert layer["dataComparator"] == "@@=true"
            assert layer["updateTriggers"] == {
                "getFillColor": [rows.colours],
                "getLineColor": [rows.colours],
                "getLineWidth": [rows.colours],
            }
        sub = hexes["_subLayerProps"]
        assert sub["hexagon-cell"]["dataComparator"] == "@@=true"
        assert sub["hexagon-cell-hifi"]["_subLayerProps"]["fill"]["dataComparator"] == "@@=true"
    # other hexagons (fewer, or in another order) are another layer
    other = layers.records(base.iloc[::-1].reset_index(drop=True),
                           scales.style(np.zeros(len(base)), scale, None), {})  # fmt: skip
    assert other.geometry != a.geometry
    bare = layers.hexagon_layers(layers.Rows(hexagons=a.hexagons), layer_id="h", pickable=True)
    assert bare[0].id == "h" and not hasattr(bare[0], "data_comparator")  # no fingerprint: default
