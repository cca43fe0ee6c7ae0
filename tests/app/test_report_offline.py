"""The HTML report opens offline in a real browser: no request leaves the machine, charts draw.

Chromium (Debian's, /usr/bin/chromium) opens the report from a file:// URL with every request
routed through a recorder that aborts anything that is not the file itself, and the browser
context offline. The plotly charts must still render (an SVG per figure, Plotly defined).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from core import lessons
from core.hat import HatData
from dashboard.common.report.build import Report, build_html
from dashboard.common.source.units import Units
from dashboard.lessons import charts

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.browser


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)")
    pytest.skip(reason)


def _report() -> Report:
    rng = np.random.default_rng(1)
    counts = np.array([40, 25, 12, 9, 5, 3, 2, 1, 1])
    hat = HatData.from_arrays(counts, counts * rng.uniform(10, 40, counts.size), upper=65.0)
    nb = lessons.neighbours(hat, hat.user_ids[0])
    lr = lessons.exact_log_ratio("baseline", nb, 1.0)
    u = Units()
    return Report(
        title="Offline report",
        parameters={"ε": "1"},
        figures=[
            ("data", charts.dataset_chart(nb, u)),
            ("distributions", charts.distributions_chart(lr, u)),
            ("log-ratio", charts.log_ratio_chart(lr, u)),
        ],
        texts=["read-out"],
        summary={"users": "9"},
        version="test",
        code="print(1)",
    )


def test_report_opens_offline_with_its_charts(tmp_path):
    if not CHROMIUM.exists():
        _unavailable(f"Chromium not found at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    path = tmp_path / "report.html"
    path.write_text(build_html(_report()), encoding="utf-8")
    url = path.as_uri()
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_offline(True)

            def _route(route) -> None:
                requests.append(route.request.url)
                if route.request.url == url:
                    route.continue_()
                else:
                    route.abort()

            context.route("**/*", _route)
            page = context.new_page()
            page.on("request", lambda req: requests.append(req.url))
            page.goto(url, wait_until="load", timeout=60_000)
            page.wait_for_function("() => window.Plotly !== undefined", timeout=60_000)
            svgs = page.locator(".plotly-graph-div .main-svg")
            page.wait_for_function(
                "() => document.querySelectorAll('.plotly-graph-div .main-svg').length >= 3",
                timeout=60_000,
            )
            assert page.locator(".plotly-graph-div").count() == 3
            assert svgs.count() >= 3
            assert page.locator(".plotly-graph-div .scatterlayer .trace").count() >= 3
        finally:
            browser.close()
    outside = sorted({r for r in requests if not r.startswith("file://")})
    assert outside == [], outside
    assert set(requests) <= {url}
