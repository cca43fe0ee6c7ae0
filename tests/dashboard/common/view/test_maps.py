"""The hexagon map tested as data: ``deck.to_json()`` layers, colours, legend, no basemap."""

from __future__ import annotations

import json

import h3
import numpy as np
import pandas as pd
import pytest

from dashboard.common.view import maps


@pytest.fixture
def cells() -> pd.DataFrame:
    centre = h3.latlng_to_cell(21.195, 72.83, 7)
    ring = sorted(h3.grid_disk(centre, 1))
    return pd.DataFrame(
        {
            "hat": [f"{c}/2024-03-04T08:00" for c in ring],
            "cell": ring,
            "records": np.arange(1, len(ring) + 1) * 10,
            "users": np.arange(len(ring)) + 1,
            "true_mean": np.linspace(15.0, 30.0, len(ring)),
        }
    )


def _country_cells(resolution: int = 7) -> list[str]:
    lats = np.linspace(20.0, 30.0, 12)
    lngs = np.linspace(70.0, 85.0, 12)
    return sorted({h3.latlng_to_cell(a, b, resolution) for a in lats for b in lngs})


def _spec(deck) -> dict:
    return json.loads(deck.to_json())


def test_no_basemap_and_no_token(cells):
    hm = maps.hexagon_map(cells, value_col="records", value_label="records")
    spec = _spec(hm.deck)
    # pydeck's style sentinel, which Streamlit 1.67 reads as "no basemap" (no Carto/Mapbox fetch)
    assert spec.get("mapStyle") == "__MAP_STYLE__"
    assert "mapProvider" not in spec
    assert not getattr(hm.deck, "mapbox_key", None)


def test_hexagon_layer_rows_colours_and_tooltip(cells):
    hm = maps.hexagon_map(
        cells,
        value_col="records",
        value_label="records",
        tooltip_cols={"users": "buses", "true_mean": "true mean"},
    )
    layers = _spec(hm.deck)["layers"]
    assert hm.scale.hex_px >= maps.DOTS_BELOW_PX  # a city's ring: hexagons wide on screen
    assert [layer["@@type"] for layer in layers] == ["H3HexagonLayer"]  # so no dots
    (layer,) = layers
    assert layer["id"] == maps.HEX_LAYER_ID and layer["pickable"] is True
    assert layer["stroked"] is True and layer["lineWidthMinPixels"] >= 1
    assert layer["getHexagon"] == "@@=cell"
    assert [row["cell"] for row in layer["data"]] == cells["cell"].tolist()
    assert [row["records"] for row in layer["data"]] == cells["records"].tolist()
    # quantile bins: the smallest value gets the first palette colour, the largest the last
    fills = [tuple(row["fill"][:3]) for row in layer["data"]]
    assert fills[0] == maps.PALETTE[0] and fills[-1] == maps.PALETTE[-1]
    assert all(row["fill"][3] == 255 for row in layer["data"])  # opaque: the legend's colours
    assert len(hm.legend) == len(maps.PALETTE)
    assert hm.legend[0].low == 10 and hm.legend[-1].high == 70
    text = hm.deck._tooltip["text"]
    assert "{cell}" in text and "{value_text}" in text and "{users_text}" in text


def test_narrow_hexagons_are_also_dots_of_a_minimum_size():
    country = _country_cells(7)
    frame = pd.DataFrame({"cell": country, "records": np.arange(1, len(country) + 1)})
    hm = maps.hexagon_map(frame, value_col="records", value_label="r")
    assert hm.scale.hex_px < maps.DOTS_BELOW_PX
    hexes, dots = _spec(hm.deck)["layers"]
    assert dots["id"] == f"{maps.HEX_LAYER_ID}-points" and dots["pickable"] is True
    assert dots["radiusMinPixels"] == maps.MIN_POINT_PIXELS > 1
    assert "radiusUnits" not in dots  # deck.gl default: meters (pydeck would quote a string)
    edge = h3.average_hexagon_edge_length(7, "m")
    assert dots["getRadius"] == pytest.approx(0.8 * edge)  # inside the hexagon when zoomed in
    for row, dot in zip(hexes["data"], dots["data"], strict=True):
        lat, lng = h3.cell_to_latlng(row["cell"])
        assert dot["pos"] == pytest.approx([lng, lat]) and dot["fill"] == row["fill"]
    assert hexes["lineWidthMinPixels"] >= 1


def test_selection_is_an_outline_and_fills_keep_the_legend_colours(cells):
    plain = _spec(maps.hexagon_map(cells, value_col="users", value_label="u").deck)["layers"]
    chosen = cells["cell"].iloc[2]
    hm = maps.hexagon_map(
        cells, value_col="users", value_label="buses", selected_cell=chosen, pick_token=3
    )
    layers = _spec(hm.deck)["layers"]
    assert [layer["id"] for layer in layers] == [f"{maps.HEX_LAYER_ID}-3", maps.SELECTED_LAYER_ID]
    assert [r["fill"] for r in layers[0]["data"]] == [r["fill"] for r in plain[0]["data"]]
    outline = layers[1]
    assert outline["data"] == [{"cell": chosen}] and outline["pickable"] is False
    assert outline["filled"] is False and outline["stroked"] is True
    assert layers[0]["extruded"] is False and outline["extruded"] is False


def test_density_context_layer_is_faint_and_under_the_hexagons(cells):
    """Only the cells the slot has no hexagon of are drawn, shaded over all cells."""
    outside = sorted(set(h3.grid_ring(cells["cell"].iloc[3], 2)) - set(cells["cell"]))[:3]
    density = pd.DataFrame(
        {"cell": [*outside, *cells["cell"]], "records": [1, 1000, 10, 1, 10, 100, 1e4, 10, 1, 5]}
    )
    layers = _spec(
        maps.hexagon_map(cells, value_col="records", value_label="r", density=density).deck
    )["layers"]
    assert [layer["id"] for layer in layers] == [maps.DENSITY_LAYER_ID, maps.HEX_LAYER_ID]
    context = layers[0]
    assert [row["cell"] for row in context["data"]] == outside  # not under the map's own
    assert context["pickable"] is False and context["stroked"] is False  # no outlines to draw
    alphas = [row["fill"][3] for row in context["data"]]
    # shades on the scale of every cell: 1000 records is not the darkest (10 000 is, hidden)
    assert alphas[0] == 45 and 45 < alphas[2] < alphas[1] < 140
    assert {tuple(row["fill"][:3]) for row in context["data"]} == {maps.DENSITY_COLOR}


def test_no_density_layer_where_every_cell_has_its_own_hexagon(cells):
    """Hidden under opaque hexagons, a context layer would only cost the first frame."""
    density = pd.DataFrame({"cell": cells["cell"], "records": [1, 10, 100, 1000, 10, 1, 5]})
    layers = _spec(
        maps.hexagon_map(cells, value_col="records", value_label="r", density=density).deck
    )["layers"]
    assert [layer["id"] for layer in layers] == [maps.HEX_LAYER_ID]
    assert maps.density_layers(density, under=cells["cell"]) == []
    assert len(maps.density_layers(density, dots=False)) == 1  # without ``under``: every cell


def test_the_mouse_wheel_scrolls_the_page_not_the_map(cells):
    spec = _spec(maps.hexagon_map(cells, value_col="records", value_label="r").deck)
    (view,) = spec["views"]
    assert view["@@type"] == "MapView"
    assert view["controller"]["scrollZoom"] is False
    assert view["controller"]["doubleClickZoom"] is True and view["controller"]["keyboard"]


def test_basemap_is_optional_and_off_by_default(cells):
    off = _spec(maps.hexagon_map(cells, value_col="records", value_label="r").deck)
    on = _spec(maps.hexagon_map(cells, value_col="records", value_label="r", basemap=True).deck)
    assert off["mapStyle"] == "__MAP_STYLE__" and "mapProvider" not in off
    assert on["mapProvider"] == "carto" and "cartocdn" in on["mapStyle"]


def test_country_extent_suggests_a_coarser_resolution():
    view, scale = maps.fit_view(_country_cells(7))
    assert scale.hex_px < maps.MIN_HEX_PIXELS
    assert scale.suggested_resolution is not None and scale.suggested_resolution < 7
    assert scale.width_km > 1_000  # about 15 degrees of longitude, padded
    # the suggestion is big enough: its hexagons are at least MIN_HEX_PIXELS wide at this zoom
    edge = h3.average_hexagon_edge_length(scale.suggested_resolution, "km")
    assert 2 * edge / scale.km_per_px >= maps.MIN_HEX_PIXELS
    assert "Resolution" in scale.caption() and "km" in scale.caption()
    # the whole box fits: the view's span in pixels is within the map
    assert 20.0 < view.latitude < 30.0 and 70.0 < view.longitude < 85.0


def test_city_extent_needs_no_suggestion(cells):
    _, scale = maps.fit_view(cells["cell"].tolist())
    assert scale.suggested_resolution is None and scale.hex_px >= maps.MIN_HEX_PIXELS
    assert "Too small" not in scale.caption()


def test_view_is_centred_on_the_cells(cells):
    view = _spec(maps.hexagon_map(cells, value_col="records", value_label="r").deck)[
        "initialViewState"
    ]
    assert view["latitude"] == pytest.approx(21.195, abs=0.05)
    assert view["longitude"] == pytest.approx(72.83, abs=0.05)
    assert 8 <= view["zoom"] <= 14


def test_color_bins_equal_values_and_nan():
    idx, legend = maps.color_bins(np.array([3.0, 3.0, np.nan]))
    assert idx.tolist() == [0, 0, -1] and len(legend) == 1 and legend[0].label == "3"


def test_color_bins_quantiles():
    idx, legend = maps.color_bins(np.array([1.0, 2.0, 3.0, 100.0]), n_bins=2)
    assert idx.tolist() == [0, 0, 1, 1]
    assert [(e.low, e.high) for e in legend] == [(1.0, 2.5), (2.5, 100.0)]


def test_missing_column_is_reported(cells):
    with pytest.raises(KeyError, match="speed"):
        maps.hexagon_map(cells, value_col="speed", value_label="speed")
