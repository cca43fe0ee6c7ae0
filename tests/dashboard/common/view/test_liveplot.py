"""The charts that update in place: plotly.js served from the installed plotly package, and a
plain ``st.plotly_chart`` wherever that route is not served (AppTest, a page run on its own)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from starlette.requests import Request
from streamlit.testing.v1 import AppTest

from dashboard.common.view import liveplot, served


def _served(path: str) -> Path:
    """The file the route ``path`` answers with (JavaScript, cached for good), checked to be the
    one the server's static cache sends for it and one the component's script loads."""
    routes = {r.path: r for r in liveplot.routes()}
    assert path in routes and path in liveplot.script()  # what the JS loads
    request = Request({"type": "http", "method": "GET", "path": path, "headers": []})
    response = asyncio.run(routes[path].endpoint(request))
    assert response.status_code == 200
    assert response.media_type == "text/javascript"
    assert "max-age" in response.headers["cache-control"]
    file, cache_control = liveplot.static_files()[path]()
    assert Path(response.path) == file and cache_control == response.headers["cache-control"]
    return file


def test_the_route_serves_the_installed_plotly_js():
    path = _served(served.file_route(liveplot.PLOTLY))
    assert path == liveplot.plotly_js() and path.is_file()
    assert b"plotly.js v" in path.read_bytes()[:300]


def test_the_basic_bundle_is_served_and_is_the_packages_plotly_js_version():
    head = _served(served.file_route(liveplot.BASIC)).read_bytes()[:300].decode()
    full = liveplot.plotly_js().read_bytes()[:300].decode()
    version = re.search(r"plotly\.js v(\d+)\.", full)
    assert "(basic - minified)" in head and version is not None
    assert f"v{version.group(1)}." in head  # same major version as the figures plotly writes


def test_a_figure_of_scatter_bar_and_pie_traces_uses_the_basic_bundle_any_other_the_full():
    import plotly.graph_objects as go

    basic = go.Figure([go.Scatter(x=[1], y=[2]), go.Bar(x=[1], y=[2]), go.Pie(values=[1])])
    assert liveplot.bundle(basic) == "basic"
    assert liveplot.bundle(go.Figure()) == "basic"
    assert liveplot.bundle(go.Figure([go.Scatter(x=[1]), go.Histogram(x=[1, 2])])) == "full"
    assert liveplot.bundle(go.Figure(go.Heatmap(z=[[1]]))) == "full"


def test_the_uplot_route_serves_uplot_and_the_component_loads_it():
    assert _served(served.file_route(liveplot.UPLOT)) == liveplot.uplot_js()
    assert b"uPlot" in liveplot.uplot_js().read_bytes()[:2000]
    assert "MIT" in (liveplot.STATIC / "UPLOT-LICENSE").read_text()


def test_lite_only_when_asked_and_only_for_what_liteplot_draws():
    import plotly.graph_objects as go

    from dashboard.common.view.figures import label_at, vline

    fine = go.Figure(
        [
            go.Scatter(x=[1, 2, 3], y=[1, 4, 9], mode="lines", fill="toself"),
            go.Scatter(x=[2], y=[4], mode="markers"),
            go.Bar(x=[1, 2], y=[3, 1]),
        ],
        layout=dict(
            shapes=[vline(2.0, "#000")],
            annotations=[label_at(2.0, "ε")],
            xaxis=dict(type="log"),
        ),
    )
    assert liveplot.lite_ok(fine)
    assert liveplot.bundle(fine, lite=True) == "lite"
    assert liveplot.bundle(fine) == "basic"  # not asked for
    refused = {
        "pie": go.Figure(go.Pie(values=[1])),
        "heatmap": go.Figure(go.Heatmap(z=[[1]])),
        "tonexty": go.Figure([go.Scatter(y=[1]), go.Scatter(y=[2], fill="tonexty")]),
        "text mode": go.Figure(go.Scatter(y=[1], mode="text", text=["a"])),
        "error bars": go.Figure(go.Scatter(y=[1], error_y=dict(array=[0.1]))),
        "horizontal bar": go.Figure(go.Bar(x=[1], y=["a"], orientation="h")),
        "two bars": go.Figure([go.Bar(y=[1]), go.Bar(y=[2])]),
        "second axis": go.Figure(go.Scatter(y=[1], yaxis="y2")),
        "arrow": go.Figure(go.Scatter(y=[1]), layout=dict(annotations=[dict(x=0, y=1, text="a")])),
        "circle shape": go.Figure(
            go.Scatter(y=[1]), layout=dict(shapes=[dict(type="circle", x0=0, x1=1, y0=0, y1=1)])
        ),
        "spline": go.Figure(go.Scatter(y=[1, 2], line=dict(shape="spline"))),
        "category axis": go.Figure(go.Scatter(y=[1]), layout=dict(xaxis=dict(type="category"))),
    }
    for name, fig in refused.items():
        assert not liveplot.lite_ok(fig), name
        assert liveplot.bundle(fig, lite=True) != "lite", name


def test_one_hexagons_two_epsilon_charts_are_drawn_lite():
    import numpy as np
    import pandas as pd

    from dashboard.hexagon import charts

    sets = [
        charts.ReleaseSet(
            mechanism=name, title=name, values=np.linspace(18, 22, 50), share_within=0.5
        )
        for name in ("baseline", "array_averaging")
    ]
    dist = charts.releases_distribution(sets, true_mean=20.0, within=1.0, epsilon=1.0)
    curves = pd.DataFrame({"epsilon": [0.1, 1, 10], "baseline": [10, 1, 0.1]})
    worst = charts.worst_case_vs_epsilon(curves, epsilon=1.0, target=2.0, target_epsilon=0.5)
    assert liveplot.lite_ok(dist) and liveplot.lite_ok(worst)


def _page():
    import plotly.graph_objects as go

    from dashboard.common.view import ui

    ui.chart(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), key="k")


def test_without_the_route_a_live_chart_is_streamlits_plotly_chart():
    assert not liveplot.enabled()  # only app.py's st.App serves the route
    at = AppTest.from_function(_page).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and '"y":[3,4]' in charts[0].proto.spec.replace(" ", "")


def _page_with_frames():
    import plotly.graph_objects as go

    from dashboard.common.view import ui

    ui.chart(
        go.Figure(go.Scatter(x=[1, 2], y=[3, 4])),
        key="k",
        frames="/_hexplorer/frames/x.json",
        group="hexagon_epsilon",
    )


def test_a_chart_with_frames_is_streamlits_plotly_chart_without_the_route():
    """Without the component (AppTest) frames change nothing: the rerun draws every stop."""
    at = AppTest.from_function(_page_with_frames).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1


def test_frames_need_the_group_of_the_events_they_follow():
    import plotly.graph_objects as go
    import pytest

    with pytest.raises(ValueError, match="group="):
        liveplot.chart(go.Figure(), key="k", config={}, frames="/_hexplorer/frames/x.json")


def test_a_frozen_figure_is_serialised_once_and_sent_as_an_unfrozen_one_is(monkeypatch):
    """A figure shared between runs (memo's) is serialised once: the same JSON and bundle as a
    fresh serialisation, however often it is shown; a figure not frozen is serialised anew
    each time (a later change is sent)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    calls = []
    to_json = pio.to_json
    monkeypatch.setattr(pio, "to_json", lambda fig, **kw: calls.append(fig) or to_json(fig, **kw))
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"height": 300})
    fresh = (to_json(fig, validate=False), liveplot.bundle(fig, lite=True))
    assert liveplot.freeze(fig) is fig
    assert liveplot.sent(fig, lite=True) == fresh
    assert liveplot.sent(fig, lite=True) == fresh
    assert liveplot.sent(fig, lite=False) == (fresh[0], liveplot.bundle(fig, lite=False))
    assert len(calls) == 1  # once, for both bundles
    loose = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    liveplot.sent(loose, lite=True)
    loose.data[0].y = (5, 6)
    assert '"y":[5,6]' in liveplot.sent(loose, lite=True)[0].replace(" ", "")
    assert len(calls) == 3
    assert liveplot.freeze({"not": "a figure"}) == {"not": "a figure"}  # left as it is
