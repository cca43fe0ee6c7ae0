"""Figure builders tested as data: traces, values and marked lines (no browser)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dashboard.common import figures
from dashboard.common.maps import LegendEntry
from dashboard.hexagon import charts


def _vlines(fig: go.Figure) -> list[float]:
    return [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]


def test_counts_histogram_draws_counts_and_every_mark():
    counts = np.array([9, 5, 5, 3, 1])
    marks = {"median": 5, "m^(L)": 4, "m^(ε)": 9, "m^(O,2)": 3}
    fig = charts.counts_histogram(counts, m_ub=7, marks=marks)
    assert len(fig.data) == 1 and fig.data[0].type == "histogram"
    assert list(fig.data[0].x) == [9, 5, 5, 3, 1]
    assert _vlines(fig) == [7, 5, 4, 9, 3]
    texts = [a.text for a in fig.layout.annotations]
    assert texts[0] == "m_UB = 7"
    assert texts[1:] == ["median = 5", "m^(L) = 4", "m^(ε) = 9", "m^(O,2) = 3"]


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
    assert names[:3] == ["E1 clipping (full-array model)", "E2 noise", "E = E1 + E2"]
    assert list(fig.data[0].y) == [2.0, 1.0, 0.0]
    assert list(fig.data[1].y) == [0.5, 0.8, 1.5]
    assert list(fig.data[2].y) == [2.5, 1.8, 1.5]
    assert (list(fig.data[3].x), list(fig.data[3].y)) == ([3], [1.5])
    assert names[4] == "exact BestFit bias at m_UB"
    assert (list(fig.data[4].x), list(fig.data[4].y)) == ([2], [0.7])
    assert _vlines(fig) == [2]
    assert "ε = 0.5" in fig.layout.title.text


def test_error_curve_without_bias_has_four_traces():
    curve = pd.DataFrame({"m": [1], "clipping": [0.0], "noise": [1.0], "total": [1.0]})
    assert len(charts.error_curve(curve, m_ub=1, m_opt=1, epsilon=1.0).data) == 4


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
    fig = charts.mae_vs_epsilon(results, epsilon=0.5, n_runs=2000)
    assert [t.name for t in fig.data] == ["levy", "baseline"]
    assert list(fig.data[1].y) == [2.0, 1.0]
    assert "2,000 runs" in fig.layout.title.text


def test_release_chart_spread_and_true_mean():
    rel = pd.DataFrame(
        {
            "mechanism": ["a", "b"],
            "estimate": [20.0, 22.0],
            "q05": [18.0, 15.0],
            "q95": [23.0, 30.0],
        }
    )
    fig = charts.release_chart(rel, true_mean=20.5)
    spread, single = fig.data
    assert list(spread.x) == [18.0, 15.0]
    assert list(spread.error_x.array) == [5.0, 15.0]
    assert list(single.x) == [20.0, 22.0] and list(single.y) == ["a", "b"]
    assert _vlines(fig) == [20.5]


def test_legend_bar_one_segment_per_entry():
    entries = [
        LegendEntry(label="1 – 2", color=(1, 2, 3), low=1, high=2),
        LegendEntry(label="2 – 5", color=(4, 5, 6), low=2, high=5),
    ]
    fig = figures.legend_bar(entries, title="records")
    assert [t.name for t in fig.data] == ["1 – 2", "2 – 5"]
    assert [t.marker.color for t in fig.data] == ["rgb(1,2,3)", "rgb(4,5,6)"]


def test_png_export_kept():
    assert figures.PNG_CONFIG["toImageButtonOptions"]["format"] == "png"
    assert "modeBarButtonsToRemove" not in figures.PNG_CONFIG


@pytest.mark.parametrize("builder", ["counts_histogram", "error_curve"])
def test_builders_do_not_touch_streamlit(builder):
    import inspect

    assert "st." not in inspect.getsource(getattr(charts, builder))


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
        charts.staircase_chart(steps, epsilon=1.0, m_current=2, eps_range=(0.05, 10.0)),
        charts.worst_case_vs_epsilon(curves, epsilon=1.0),
        charts.mae_vs_epsilon(results, epsilon=0.5, n_runs=2000),
    ]
    for fig in figs:
        _assert_complete_log_labels(fig.layout.xaxis)
        if fig.layout.yaxis.type == "log":
            _assert_complete_log_labels(fig.layout.yaxis)
