"""The hexagon map tested as data: ``deck.to_json()`` layers, colours, legend, no basemap."""

from __future__ import annotations

import json

import h3
import numpy as np
import pandas as pd
import pytest

from dashboard.common import maps


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
    assert [layer["@@type"] for layer in layers] == ["H3HexagonLayer"]
    layer = layers[0]
    assert layer["id"] == maps.HEX_LAYER_ID and layer["pickable"] is True
    assert layer["getHexagon"] == "@@=cell"
    assert [row["cell"] for row in layer["data"]] == cells["cell"].tolist()
    assert [row["records"] for row in layer["data"]] == cells["records"].tolist()
    # quantile bins: the smallest value gets the first palette colour, the largest the last
    fills = [tuple(row["fill"][:3]) for row in layer["data"]]
    assert fills[0] == maps.PALETTE[0] and fills[-1] == maps.PALETTE[-1]
    assert len(hm.legend) == len(maps.PALETTE)
    assert hm.legend[0].low == 10 and hm.legend[-1].high == 70
    text = hm.deck._tooltip["text"]
    assert "{cell}" in text and "{value_text}" in text and "{users_text}" in text


def test_selected_cell_gets_outline_layer(cells):
    chosen = cells["cell"].iloc[2]
    hm = maps.hexagon_map(cells, value_col="users", value_label="buses", selected_cell=chosen)
    layers = _spec(hm.deck)["layers"]
    assert [layer["id"] for layer in layers] == [maps.HEX_LAYER_ID, maps.SELECTED_LAYER_ID]
    assert layers[1]["data"] == [{"cell": chosen}] and layers[1]["pickable"] is False
    assert layers[0]["extruded"] is False and layers[1]["extruded"] is False


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
