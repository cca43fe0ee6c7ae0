"""Figure builders tested as data: traces, values and marked lines (no browser)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dashboard.common.source.units import Units
from dashboard.common.view import figures
from dashboard.common.view.colours import mechanism_colour
from dashboard.common.view.maps import LegendEntry
from dashboard.hexagon import charts


def _vlines(fig: go.Figure) -> list[float]:
    return [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]


def test_counts_histogram_draws_counts_and_every_mark():
    counts = np.array([9, 5, 5, 3, 1])
    marks = [
        charts.Mark(label="median rule = 5", m=5, colour="#7F7F7F"),
        charts.Mark(label="Levy's rule, m^(L) = 4", m=4, colour="#9467BD"),
        charts.Mark(label="best for this ε, m^(ε) = 9", m=9, colour="#2CA02C"),
    ]
    fig = charts.counts_histogram(counts, m_ub=7, marks=marks)
    assert fig.data[0].type == "histogram"
    assert list(fig.data[0].x) == [9, 5, 5, 3, 1]
    assert _vlines(fig) == [7, 5, 4, 9]
    # Marker labels are legend entries (no overlap with each other or the bars), same order.
    assert not fig.layout.annotations
    assert [t.name for t in fig.data[1:]] == [
        "records kept per bus m_UB = 7",
        "median rule = 5",
        "Levy's rule, m^(L) = 4",
        "best for this ε, m^(ε) = 9",
    ]
    assert [t.line.color for t in fig.data[1:]] == [s.line.color for s in fig.layout.shapes]
    assert [s.line.color for s in fig.layout.shapes][1:] == [m.colour for m in marks]


def test_error_curve_traces_minimiser_and_bestfit_bias():
    curve = pd.DataFrame(
        {
            "m": [1, 2, 3],
            "clipping": [2.0, 1.0, 0.0],
            "noise": [0.5, 0.8, 1.5],
            "total": [2.5, 1.8, 1.5],
        }
    )
    fig = charts.error_curve(curve, m_ub=2, m_opt=3, bestfit_bias=0.7, epsilon=0.5)
    names = [t.name for t in fig.data]
    assert names[:3] == [
        "clipping error E1 (full arrays)",
        "noise error E2",
        "worst-case error E = E1 + E2",
    ]
    assert list(fig.data[0].y) == [2.0, 1.0, 0.0]
    assert list(fig.data[1].y) == [0.5, 0.8, 1.5]
    assert list(fig.data[2].y) == [2.5, 1.8, 1.5]
    assert (list(fig.data[3].x), list(fig.data[3].y)) == ([3], [1.5])
    assert names[4] == "exact clipping bias of BestFit's arrays"
    assert (list(fig.data[4].x), list(fig.data[4].y)) == ([2], [0.7])
    assert _vlines(fig) == [2]
    assert "ε = 0.5" in fig.layout.title.text


def test_error_curve_without_bias_has_four_traces():
    curve = pd.DataFrame({"m": [1], "clipping": [0.0], "noise": [1.0], "total": [1.0]})
    assert len(charts.error_curve(curve, m_ub=1, m_opt=1, epsilon=1.0).data) == 5  # + m_UB entry


def test_staircase_clips_to_range_and_marks_breakpoints():
    steps = pd.DataFrame(
        {"epsilon_from": [0.0, 0.2, 0.6], "epsilon_to": [0.2, 0.6, np.inf], "m": [1, 2, 3]}
    )
    fig = charts.staircase_chart(steps, epsilon=1.0, m_current=3, eps_range=(0.05, 10.0))
    assert list(fig.data[0].x) == [0.05, 0.2, 0.2, 0.6, 0.6, 10.0]
    assert list(fig.data[0].y) == [1, 1, 2, 2, 3, 3]
    assert (list(fig.data[1].x), list(fig.data[1].y)) == ([0.2, 0.6], [2, 3])
    assert (list(fig.data[2].x), list(fig.data[2].y)) == ([1.0], [3])
    assert fig.layout.xaxis.type == "log"
    assert _vlines(fig) == [1.0]  # data coordinates, also on a log axis (plotly.js 3)


def test_staircase_drops_steps_outside_range():
    steps = pd.DataFrame({"epsilon_from": [0.0, 20.0], "epsilon_to": [20.0, np.inf], "m": [4, 9]})
    fig = charts.staircase_chart(steps, epsilon=2.0, m_current=4, eps_range=(0.05, 10.0))
    assert list(fig.data[0].y) == [4, 4] and list(fig.data[1].x) == []


def test_worst_case_vs_epsilon_one_trace_per_method():
    curves = pd.DataFrame(
        {
            "epsilon": [0.5, 1.0],
            "baseline": [4.0, 2.0],
            "opt_arrayavg": [3.0, 1.5],
            "opt_bounding": [2.5, 1.2],
        }
    )
    fig = charts.worst_case_vs_epsilon(curves, epsilon=1.0)
    assert [t.name for t in fig.data] == list(charts.WORST_CASE_LABELS.values())
    assert [t.line.color for t in fig.data] == [
        mechanism_colour(m) for m in ("baseline", "opt-arrayavg", "opt-bounding")
    ]
    assert fig.layout.yaxis.title.text == "worst-case error (km/h)"
    assert [list(t.y) for t in fig.data] == [[4.0, 2.0], [3.0, 1.5], [2.5, 1.2]]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert _vlines(fig) == [1.0]


def test_mae_vs_epsilon_groups_by_mechanism_in_order():
    results = pd.DataFrame(
        {
            "mechanism": ["levy", "levy", "baseline", "baseline"],
            "epsilon": [0.5, 1.0, 0.5, 1.0],
            "mae": [0.9, 0.5, 2.0, 1.0],
        }
    )
    fig = charts.mae_vs_epsilon(
        results, epsilon=0.5, n_runs=2000, titles={"levy": "Levy (BestFit)"}
    )
    assert [t.name for t in fig.data] == ["Levy (BestFit)", "baseline"]
    assert [t.line.color for t in fig.data] == [mechanism_colour("levy"), "#000000"]
    assert list(fig.data[1].y) == [2.0, 1.0]
    assert "2,000 simulated runs" in fig.layout.title.text


def test_legend_bar_one_segment_per_entry():
    entries = [
        LegendEntry(label="1 – 2", color=(1, 2, 3), low=1, high=2),
        LegendEntry(label="2 – 5", color=(4, 5, 6), low=2, high=5),
    ]
    fig = figures.legend_bar(entries, title="records")
    assert [t.name for t in fig.data] == ["1 – 2", "2 – 5"]
    assert [t.marker.color for t in fig.data] == ["rgb(1,2,3)", "rgb(4,5,6)"]


def test_legend_html_one_readable_box_per_entry_low_to_high():
    entries = [
        LegendEntry(label="1 – 2", color=(68, 1, 84), low=1, high=2),
        LegendEntry(label="2 – <5>", color=(253, 231, 37), low=2, high=5),
    ]
    out = figures.legend_html(entries, title="true mean (km/h)")
    assert out.count("hexplorer-legend-box") == 2
    assert out.index("rgb(68,1,84)") < out.index("rgb(253,231,37)")
    assert "background:rgb(68,1,84);color:#FFFFFF" in out  # white on dark purple
    assert "background:rgb(253,231,37);color:#000000" in out  # black on yellow
    assert "2 – &lt;5&gt;" in out and "<5>" not in out
    assert "true mean (km/h)" in out


def test_png_export_kept():
    assert figures.PNG_CONFIG["toImageButtonOptions"]["format"] == "png"
    assert "modeBarButtonsToRemove" not in figures.PNG_CONFIG


@pytest.mark.parametrize(
    "builder", ["counts_histogram", "error_curve", "releases_distribution", "worst_case_vs_epsilon"]
)
def test_builders_do_not_touch_streamlit(builder):
    import inspect

    assert re.search(r"\bst\.", inspect.getsource(getattr(charts, builder))) is None


def _assert_complete_log_labels(axis) -> None:
    """Plotly abbreviates minor log labels (0.05 shows as "5"); our log axes never rely on them."""
    assert axis.type == "log"
    if axis.tickvals is not None:
        assert list(axis.ticktext) == [f"{v:g}" for v in axis.tickvals]
        assert "0.05" in axis.ticktext
    else:
        assert axis.dtick == 1  # whole decades only: 0.1, 1, 10


def test_log_axes_have_complete_tick_labels():
    steps = pd.DataFrame({"epsilon_from": [0.0, 0.2], "epsilon_to": [0.2, np.inf], "m": [1, 2]})
    curves = pd.DataFrame(
        {
            "epsilon": [0.5, 1.0],
            "baseline": [4.0, 2.0],
            "opt_arrayavg": [3.0, 1.5],
            "opt_bounding": [2.5, 1.2],
        }
    )
    results = pd.DataFrame(
        {"mechanism": ["levy", "levy"], "epsilon": [0.5, 1.0], "mae": [0.9, 0.5]}
    )
    figs = [
        charts.staircase_chart(steps, epsilon=1.0, m_current=2),
        charts.worst_case_vs_epsilon(curves, epsilon=1.0),
        charts.mae_vs_epsilon(results, epsilon=0.5, n_runs=2000),
    ]
    for fig in figs:
        _assert_complete_log_labels(fig.layout.xaxis)
        if fig.layout.yaxis.type == "log":
            _assert_complete_log_labels(fig.layout.yaxis)


# --- Where releases land ---------------------------------------------------------------------


def _sets():
    rng = np.random.default_rng(0)
    a = 20.0 + rng.laplace(0, 0.5, 2000)
    b = 20.0 + rng.laplace(0, 2.0, 2000)
    return [
        charts.ReleaseSet(mechanism="arrayavg-best", title="Array-Averaging (BestFit)", values=a,
                          share_within=float(np.mean(np.abs(a - 20.0) <= 1.0))),
        charts.ReleaseSet(mechanism="baseline", title="Baseline", values=b,
                          share_within=float(np.mean(np.abs(b - 20.0) <= 1.0))),
    ]  # fmt: skip


def test_distribution_one_ridge_per_mechanism_fixed_colours_mean_and_band():
    sets = _sets()
    fig = charts.releases_distribution(sets, true_mean=20.0, within=1.0, epsilon=0.5)
    band, *ridges, mean = fig.data
    assert len(ridges) == 2
    assert [r.line.color for r in ridges] == [
        mechanism_colour("arrayavg-best"),
        mechanism_colour("baseline"),
    ]
    assert [r.fillcolor for r in ridges] == [r.line.color for r in ridges]
    # The ±X band spans exactly [f − X, f + X]; the true mean is one vertical line at f.
    assert min(band.x) == 19.0 and max(band.x) == 21.0 and band.fill == "toself"
    assert band.name == "±1 km/h around the true mean"
    assert list(mean.x) == [20.0, 20.0] and mean.name == "true mean 20.00 km/h"
    # The first mechanism is on top; each ridge sits on its own baseline.
    assert min(ridges[0].y) == 1.0 and min(ridges[1].y) == 0.0
    assert max(ridges[0].y) == pytest.approx(1.9) and max(ridges[1].y) == pytest.approx(0.9)
    # Shares are printed per mechanism, in order, with the unit.
    texts = [a.text for a in fig.layout.annotations]
    assert texts == [
        f"Array-Averaging (BestFit) · {sets[0].share_within:.0%} within ±1 km/h",
        f"Baseline · {sets[1].share_within:.0%} within ±1 km/h",
    ]
    assert fig.layout.xaxis.title.text == "released mean (km/h)"
    assert "ε = 0.5" in fig.layout.title.text and "clamped" in fig.layout.title.text


def test_distribution_histogram_is_the_releases():
    sets = _sets()[:1]
    fig = charts.releases_distribution(sets, true_mean=20.0, within=1.0, epsilon=1.0, bins=10)
    ridge = fig.data[1]
    lo, hi = fig.layout.xaxis.range
    edges = np.linspace(lo, hi, 11)
    hist = np.histogram(sets[0].values, bins=edges)[0]
    np.testing.assert_allclose(np.asarray(ridge.y[1:-1]), 0.9 * hist / hist.max())
    np.testing.assert_allclose(np.asarray(ridge.customdata[1:-1]), hist / 2000)


def test_distribution_units_raw_and_constant_releases():
    s = charts.ReleaseSet(mechanism="akmv", title="AKMV", values=np.full(50, 3.0), share_within=1.0)
    units = Units(value="knots", user="ship")
    fig = charts.releases_distribution(
        [s], true_mean=3.0, within=0.0, epsilon=2.0, units=units, raw=True
    )
    assert fig.layout.xaxis.title.text == "released mean (knots)"
    assert "raw releases" in fig.layout.title.text
    lo, hi = fig.layout.xaxis.range
    assert lo < 3.0 < hi  # a constant release still gets a readable axis
    assert fig.layout.annotations[0].text == "AKMV · 100% within ±0 knots"


def test_worst_case_vs_epsilon_target_line_meets_the_curve():
    curves = pd.DataFrame(
        {
            "epsilon": [0.1, 1.0, 10.0],
            "baseline": [40.0, 4.0, 0.4],
            "opt_arrayavg": [30.0, 3.0, 0.3],
            "opt_bounding": [20.0, 2.0, 0.2],
        }
    )
    fig = charts.worst_case_vs_epsilon(curves, epsilon=1.0, target=2.0, target_epsilon=1.5)
    line, meet = fig.data[3], fig.data[4]
    assert list(line.x) == [0.1, 10.0] and list(line.y) == [2.0, 2.0]
    assert line.name == "target 2 km/h"
    assert (list(meet.x), list(meet.y)) == ([1.5], [2.0]) and "1.5" in meet.name
    assert len(charts.worst_case_vs_epsilon(curves, epsilon=1.0).data) == 3


def _all_text(fig: go.Figure) -> str:
    parts = [fig.layout.title.text or ""]
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        parts.append(axis.title.text or "")
    parts += [t.name or "" for t in fig.data]
    parts += [a.text or "" for a in fig.layout.annotations]
    return " ".join(parts)


def test_units_and_plain_labels_in_every_builder():
    units = Units(value="knots", user="ship")
    curve = pd.DataFrame(
        {"m": [1, 2], "clipping": [1.0, 0.0], "noise": [0.5, 0.9], "total": [1.5, 0.9]}
    )
    steps = pd.DataFrame({"epsilon_from": [0.0], "epsilon_to": [np.inf], "m": [2]})
    curves = pd.DataFrame(
        {
            "epsilon": [0.5, 1.0],
            "baseline": [4.0, 2.0],
            "opt_arrayavg": [3.0, 1.5],
            "opt_bounding": [2.5, 1.2],
        }
    )
    results = pd.DataFrame({"mechanism": ["levy"], "epsilon": [0.5], "mae": [0.9]})
    figs = {
        "histogram": charts.counts_histogram(
            [1, 2, 2], m_ub=2, marks=[charts.Mark(label="median rule = 2", m=2, colour="#7F7F7F")], units=units
        ),
        "error": charts.error_curve(curve, m_ub=2, m_opt=2, epsilon=1.0, units=units),
        "stairs": charts.staircase_chart(steps, epsilon=1.0, m_current=2, units=units),
        "worst": charts.worst_case_vs_epsilon(curves, epsilon=1.0, target=1.0, units=units),
        "mae": charts.mae_vs_epsilon(results, epsilon=0.5, n_runs=10, units=units),
        "dist": charts.releases_distribution(_sets(), true_mean=20.0, within=1.0, epsilon=1.0, units=units),
    }  # fmt: skip
    for name, fig in figs.items():
        text = _all_text(fig)
        assert "km/h" not in text and "bus" not in text, name
    assert "(knots)" in _all_text(figs["error"]) and "(knots)" in _all_text(figs["worst"])
    assert "(knots)" in _all_text(figs["mae"]) and "(knots)" in _all_text(figs["dist"])
    assert "records kept per ship" in _all_text(figs["error"])
    assert "records per ship" in _all_text(figs["histogram"])
    assert "clipping error E1" in _all_text(figs["error"]) and "noise error E2" in _all_text(
        figs["error"]
    )
    assert "hexagon-hour" in _all_text(figs["histogram"])


def test_presenter_font():
    fig = charts.worst_case_vs_epsilon(
        pd.DataFrame({"epsilon": [1.0], "baseline": [1.0], "opt_arrayavg": [1.0], "opt_bounding": [1.0]}),
        epsilon=1.0,
        font_size=17,
    )  # fmt: skip
    assert fig.layout.font.size == 17
