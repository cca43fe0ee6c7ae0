"""The charts that update in place: plotly.js served from the installed plotly package, and a
plain ``st.plotly_chart`` wherever that route is not served (AppTest, a page run on its own)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from starlette.requests import Request
from streamlit.testing.v1 import AppTest

from dashboard.common.view import liveplot


def test_the_route_serves_the_installed_plotly_js():
    route = liveplot.routes()[0]
    assert route.path == liveplot.ROUTE and liveplot.ROUTE in liveplot.JS  # what the JS loads
    request = Request({"type": "http", "method": "GET", "path": liveplot.ROUTE, "headers": []})
    response = asyncio.run(route.endpoint(request))
    assert response.status_code == 200
    assert response.media_type == "text/javascript"
    assert "max-age" in response.headers["cache-control"]
    path = Path(response.path)
    assert path == liveplot.plotly_js() and path.is_file()
    assert b"plotly.js v" in path.read_bytes()[:300]


def test_the_basic_bundle_is_served_and_is_the_packages_plotly_js_version():
    routes = {r.path: r for r in liveplot.routes()}
    assert liveplot.BASIC_ROUTE in routes and liveplot.BASIC_ROUTE in liveplot.JS
    request = Request(
        {"type": "http", "method": "GET", "path": liveplot.BASIC_ROUTE, "headers": []}
    )
    response = asyncio.run(routes[liveplot.BASIC_ROUTE].endpoint(request))
    assert response.status_code == 200 and response.media_type == "text/javascript"
    head = Path(response.path).read_bytes()[:300].decode()
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
