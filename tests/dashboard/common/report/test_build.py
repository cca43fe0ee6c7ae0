"""dashboard.common.report.build: a self-contained HTML report, tested as data (no Streamlit)."""

from __future__ import annotations

import doctest
import re

import plotly.graph_objects as go
import pytest

from dashboard.common.report import build
from dashboard.common.report.build import Report, build_html


def _report(**kw) -> Report:
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[2.0, 1.0, 3.0], name="curve"))
    fields = dict(
        title="One hexagon — 8742d9d69ffffff/2024-03-05T15:00",
        parameters={"ε (privacy loss)": "0.5", "m_UB": "46"},
        figures=[("E(m)", fig), ("Staircase", go.Figure(go.Bar(x=["a"], y=[1])))],
        texts=["90 % of releases land within ±1.2 km/h <of> the true mean"],
        summary={"records here (N)": "17,759"},
        version="0.1.0",
        link="http://localhost:8501/one_hexagon?eps=0.5",
        code="print('hello')",
        created="2026-11-24 06:00 UTC",
    )
    fields.update(kw)
    return Report(**fields)


def test_report_holds_parameters_texts_summary_code_and_version():
    page = build_html(_report())
    for needle in ("ε (privacy loss)", "0.5", "17,759", "print(&#x27;hello&#x27;)", "0.1.0",
                   "&lt;of&gt;", "eps=0.5", "2026-11-24 06:00 UTC"):  # fmt: skip
        assert needle in page, needle


def test_plotly_js_is_inline_once_and_every_figure_is_drawn():
    page = build_html(_report())
    assert page.count("<script") >= 3
    bundle = re.findall(r"<script[^>]*>/\*\*\n\* plotly\.js v", page)
    assert len(bundle) == 1  # plotly.js once, inline
    assert page.count("Plotly.newPlot(") >= 2
    assert 'id="figure-0"' in page and 'id="figure-1"' in page


def test_report_references_nothing_on_the_network():
    page = build_html(_report())
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert not re.search(r"<(img|iframe)[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert not re.search(r"@import|url\(\s*[\"']?(https?:)?//", page.split("<script")[0], re.I)


def test_no_figures_means_no_script_at_all():
    page = build_html(_report(figures=[]))
    assert "<script" not in page and "<h2>Charts</h2>" not in page


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="plotly Figure"):
        _report(figures=[("x", {"data": []})])
    with pytest.raises(ValueError, match="title"):
        _report(title="  ")


def test_the_modules_examples_run():
    assert doctest.testmod(build).failed == 0
