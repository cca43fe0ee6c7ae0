"""Charts keep their titles and tick labels in view (issue 27, item 6)."""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.common.report.build import Report, build_html
from dashboard.common.view import figures


def test_the_title_sits_above_the_plot_below_the_modebar_row():
    fig = figures.figure([go.Scatter(x=[1], y=[100])], "A long title " * 8)
    title = fig.layout.title
    assert (title.yref, title.y, title.yanchor) == ("paper", 1, "bottom")
    assert fig.layout.margin.t >= 48  # the modebar's row (about 25 px) above the title
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin


def test_the_offline_report_gives_tick_labels_their_room():
    bare = go.Figure(go.Bar(x=["a"], y=[100]), layout=dict(margin=dict(l=5)))
    html = build_html(
        Report(title="t", parameters={}, figures=[("f", bare)], texts=[], summary={}, version="x")
    )
    assert '"yaxis":{"automargin":true' in html.replace(" ", "")  # its own, not the template's
    assert bare.layout.yaxis.automargin is None  # the caller's figure is left alone
