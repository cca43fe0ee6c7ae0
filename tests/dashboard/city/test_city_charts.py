"""The Whole-city page's builders tested as data: traces, shapes, layers and values."""

from __future__ import annotations

import json

import h3
import numpy as np
import pandas as pd
import pytest

from dashboard.city import charts as city_charts
from dashboard.common.view import maps


def _hlines(fig) -> list[float]:
    return [s.y0 for s in fig.layout.shapes if s.y0 == s.y1 and s.xref == "paper"]


def _vlines(fig) -> list[float]:
    return [s.x0 for s in fig.layout.shapes if s.x0 == s.x1 and s.yref == "paper"]


@pytest.fixture
def release() -> pd.DataFrame:
    """Seven grids of one slot, shaped like ``city_compute.release``."""
    centre = h3.latlng_to_cell(21.195, 72.83, 7)
    ring = sorted(h3.grid_disk(centre, 1))
    n = len(ring)
    return pd.DataFrame(
        {
            "hat": [f"{c}/2024-03-04T08:00" for c in ring],
            "cell": ring,
            "slot": ["2024-03-04T08:00"] * n,
            "users": np.arange(1, n + 1),
            "records": np.arange(1, n + 1) * 10,
            "retained": np.arange(1, n + 1) * 10 - 1,
            "true_mean": np.linspace(10.0, 40.0, n),
            "true_var": np.linspace(1.0, 7.0, n),
            "noisy_mean": np.array([-5.0, 15.0, 20.0, 25.0, 30.0, 35.0, 90.0]),
            "noisy_var": np.linspace(1.0, 7.0, n) + 0.5,
            "error_bound": np.array([3.0, 2.0, 5.0, 1.0, 4.0, 4.0, 0.5]),
            "error_before": np.array([3.0, 6.0, 5.0, 1.0, 4.0, 2.0, 0.5]),
        }
    )


# --- maps ------------------------------------------------------------------------------------


def test_paired_maps_share_the_true_colour_scale(release):
    pm = city_charts.paired_maps(release, statistic="mean")
    true_spec, noisy_spec = json.loads(pm.true_deck.to_json()), json.loads(pm.noisy_deck.to_json())
    for spec, layer_id in ((true_spec, city_charts.TRUE_LAYER_ID), (noisy_spec, "city-noisy")):
        assert spec.get("mapStyle") == "__MAP_STYLE__"  # no basemap, as dashboard.maps
        (layer,) = spec["layers"]  # hexagons wide on screen: no dots (maps.needs_dots)
        assert layer["@@type"] == "H3HexagonLayer" and layer["id"] == layer_id
        assert spec["views"][0]["controller"]["scrollZoom"] is False
        assert [r["cell"] for r in layer["data"]] == release["cell"].tolist()
        assert [r["true"] for r in layer["data"]] == release["true_mean"].tolist()
        assert [r["noisy"] for r in layer["data"]] == release["noisy_mean"].tolist()
    palette = [list(c) for c in maps.PALETTE]
    true_fill = [r["fill"][:3] for r in true_spec["layers"][0]["data"]]
    noisy_fill = [r["fill"][:3] for r in noisy_spec["layers"][0]["data"]]
    # true values 10, 15, ..., 40 are quantile-binned: one per bin, the last two share the top
    assert true_fill == [palette[i] for i in (0, 1, 2, 3, 4, 5, 5)]
    # noisy -5 is below the range (first colour), 90 above it (last); the rest by the same edges
    assert noisy_fill == [palette[i] for i in (0, 1, 2, 3, 4, 5, 5)]
    assert pm.legend[0].label.startswith("below ") and pm.legend[-1].label.endswith(" and above")
    assert pm.legend[0].low == -np.inf and pm.legend[-1].high == np.inf


def test_paired_maps_variance_and_tooltip(release):
    pm = city_charts.paired_maps(release, statistic="var")
    layer = json.loads(pm.noisy_deck.to_json())["layers"][0]
    assert [r["true"] for r in layer["data"]] == release["true_var"].tolist()
    assert [r["noisy"] for r in layer["data"]] == release["noisy_var"].tolist()
    assert layer["data"][0]["retained_text"] == "9" and layer["data"][0]["records_text"] == "10"
    text = pm.noisy_deck._tooltip["text"]
    assert "true variance ((km/h)²)" in text and "{noisy_text}" in text
    assert "{retained_text}" in text and "buses: {users_text}" in text
    with pytest.raises(KeyError, match="statistic"):
        city_charts.paired_maps(release, statistic="median")
    with pytest.raises(KeyError, match="retained"):
        city_charts.paired_maps(release.drop(columns="retained"))


def test_paired_maps_units_density_and_scale(release):
    from dashboard.common.source.units import Units

    elsewhere = sorted(h3.grid_ring(release["cell"].iloc[3], 3))[0]  # only in another slot
    density = pd.DataFrame(
        {"cell": [*release["cell"], elsewhere], "records": np.arange(1, 9) * 100}
    )
    pm = city_charts.paired_maps(
        release, statistic="mean", units=Units(value="knots", user="ship"), density=density
    )
    spec = json.loads(pm.true_deck.to_json())
    ids = [layer["id"] for layer in spec["layers"]]
    assert ids == [maps.DENSITY_LAYER_ID, city_charts.TRUE_LAYER_ID]  # wide: no dots
    assert [row["cell"] for row in spec["layers"][0]["data"]] == [elsewhere]  # not under
    text = pm.true_deck._tooltip["text"]
    assert "true mean (knots)" in text and "ships: {users_text}" in text and "km/h" not in text
    assert pm.scale.suggested_resolution is None and pm.scale.width_km > 0


def test_shared_bins_edges_and_nan():
    t, n, legend = city_charts.shared_bins(np.array([1.0, 2.0]), np.array([np.nan, 1.5, 7.0]))
    # six quantile bins of [1, 2] with edges 1, 7/6, 4/3, 3/2, 5/3, 11/6, 2
    assert t.tolist() == [0, 5] and n.tolist() == [-1, 3, 5]
    labels = [e.label for e in legend]
    assert (
        labels[0] == "below 1.17" and labels[3] == "1.50 – 1.67" and labels[5] == "1.83 and above"
    )
    # all true values equal: one colour, every finite noisy value in it
    t, n, legend = city_charts.shared_bins(np.array([3.0, 3.0]), np.array([0.0, 9.0]))
    assert t.tolist() == [0, 0] and n.tolist() == [0, 0] and len(legend) == 1


# --- charts ----------------------------------------------------------------------------------


def test_grids_per_user_histogram():
    before, after = np.array([1, 3, 3, 5]), np.array([1, 3, 3, 3])
    fig = city_charts.grids_per_user_histogram(before, after, k_before=5, k_after=3)
    assert [t.type for t in fig.data] == ["histogram", "histogram"]
    assert list(fig.data[0].x) == [1, 3, 3, 5] and list(fig.data[1].x) == [1, 3, 3, 3]
    assert fig.data[0].xbins.size == 1 and fig.data[0].xbins.start == 0.5
    assert _vlines(fig) == [5, 3]
    assert [a.text for a in fig.layout.annotations] == ["max G_ℓ = 5", "K = 3"]


def test_loss_chart_three_accountings_and_current_point():
    losses = pd.DataFrame(
        {
            "epsilon": [0.1, 1.0],
            "basic_loss": [5.8, 58.0],
            "user_loss": [1.1, 11.0],
            "chop_loss": [0.3, 4.0],
        }
    )
    current = {"basic_loss": 29.0, "user_loss": 5.5, "chop_loss": 2.0}
    fig = city_charts.loss_chart(losses, epsilon=0.5, current=current)
    assert [t.name for t in fig.data[:3]] == list(city_charts.LOSS_LABELS.values())
    assert list(fig.data[0].y) == [5.8, 58.0] and list(fig.data[2].y) == [0.3, 4.0]
    assert list(fig.data[3].x) == [0.5] * 3 and list(fig.data[3].y) == [29.0, 5.5, 2.0]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert _vlines(fig) == [pytest.approx(0.5)]  # shapes on a log axis take data coordinates
    assert len(city_charts.loss_chart(losses, epsilon=1.0).data) == 3


def test_error_chart_sorted_by_error_before_with_threshold(release):
    fig = city_charts.error_chart(release, threshold=6.0, epsilon=1.0)
    before, after = fig.data
    assert list(before.y) == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.5]
    assert list(before.x) == list(range(1, 8))
    # after values follow their grid: the grid with 6.0 before has 2.0 after, ...
    assert list(after.y) == [2.0, 5.0, 4.0, 3.0, 4.0, 1.0, 0.5]
    assert list(after.customdata) == list(before.customdata)
    assert before.customdata[0] == release["hat"].iloc[1]
    assert _hlines(fig) == [6.0]
    assert fig.layout.annotations[0].text == "E_thresh = 6.000"


def test_fmt():
    assert [city_charts.fmt(v) for v in (3.0, 12.34, 0.123, 1234.0, np.nan)] == [
        "3",
        "12.3",
        "0.12",
        "1,234",
        "–",
    ]


def test_coverage_chart_as_data():
    from dashboard.city.charts import COVERAGE_COLOR, PLAN_COLOR, coverage_chart
    from dashboard.common.view.colours import mechanism_colour
    from dashboard.common.view.figures import EPSILON_COLOR

    curve = pd.DataFrame({"epsilon": [0.1, 1.0, 10.0], "share": [0.0, 0.5, 1.0]})
    fig = coverage_chart(
        curve, coverage=0.9, planned=3.5, epsilon=1.0, mechanism="opt-bounding",
        target_label="±2 km/h",
    )  # fmt: skip
    (trace,) = fig.data
    assert list(trace.x) == [0.1, 1.0, 10.0] and list(trace.y) == [0.0, 0.5, 1.0]
    assert trace.line.color == mechanism_colour("opt-bounding")
    wanted, planned, slider = fig.layout.shapes
    assert (wanted.y0, wanted.line.color) == (0.9, COVERAGE_COLOR)
    assert (planned.x0, planned.line.color) == (3.5, PLAN_COLOR)
    assert (slider.x0, slider.line.color) == (1.0, EPSILON_COLOR)
    assert "±2 km/h" in fig.layout.title.text
    assert fig.layout.xaxis.type == "log"
    fig = coverage_chart(
        curve, coverage=0.9, planned=None, epsilon=1.0, mechanism="baseline", target_label="±2"
    )
    assert len(fig.layout.shapes) == 2  # no planned ε: wanted share and slider only


def test_coverage_chart_labels_its_epsilon_axis_past_10():
    """Issue 27: a target that needs ε beyond 10 (90 % of hexagons within ±3 km/h) put the planned
    ε where the axis had no label; the axis is labelled over the product's whole range."""
    from dashboard.city.charts import coverage_chart

    curve = pd.DataFrame({"epsilon": [0.01, 1.0, 14.0, 100.0], "share": [0.0, 0.5, 0.9, 1.0]})
    fig = coverage_chart(
        curve, coverage=0.9, planned=14.0, epsilon=1.0, mechanism="opt-bounding",
        target_label="±3 km/h",
    )  # fmt: skip
    ticks = list(fig.layout.xaxis.tickvals)
    assert {0.01, 10, 20, 50, 100} <= set(ticks)
    assert list(fig.layout.xaxis.ticktext) == [f"{v:g}" for v in ticks]
