"""The ε slider drawn by the browser and the charts that follow it before any rerun (Playwright
+ Debian's Chromium), on a small page (``frames_app.py``) whose frames document the test serves
itself. The server's rerun is slow on purpose there, so a chart showing the new stop while the
page still shows the server's old ε was redrawn by the browser alone.

The path rules of a patch (``data[i].prop``, ``layout.a.b``, ``layout.list[j].prop``) are the
interface with the document's builder; a ``null`` patch or no document: the chart waits for
the rerun.
"""

from __future__ import annotations

import io
import json
import os
import re
import time

import pytest
from browser_server import DRAWS, ROOT, chromium_page, streamlit_server
from PIL import Image  # a dependency of streamlit

ARTIFACTS = ROOT / "test-artifacts"
LOG = ARTIFACTS / "streamlit-browser-frames.log"
LABEL = "Privacy loss ε (log scale)"
STOPS = [0.5, 1.0, 2.0, 4.0]
FRAMES = "**/_hexplorer/frames/test.json"
DOCUMENT = {
    "stops": STOPS,
    "charts": {
        "chart_distribution": [None]  # another structure at 0.5: the rerun draws it
        + [
            {"layout.title.text": f"Where releases land at ε = {e:g}", "data[0].y": [1, 2 * e, 1]}
            for e in STOPS[1:]
        ],
        "chart_worst_case_vs_epsilon": [
            {"layout.shapes[0].x0": e, "layout.shapes[0].x1": e} for e in STOPS
        ],
    },
}
SHOWN = """() => {
  const charts = [...document.querySelectorAll('.hexplorer-lite')];
  const text = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .map(e => e.textContent).join(' | ');
  return {title: charts[0].dataset.title, y: charts[0].__lite.figure.data[0].y,
          line: charts[1].__lite.figure.layout.shapes[0].x0, text};
}"""

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(LOG, app="tests/app/frames_app.py") as url:
        yield url


def _serve_document(route) -> None:
    """Answer a request for the frames document with :data:`DOCUMENT`."""
    route.fulfill(status=200, content_type="application/json", body=json.dumps(DOCUMENT))


def _open(page, expect, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)
    expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=60_000)
    expect(page.get_by_text("server ε = 1;")).to_be_visible(timeout=30_000)


def _until(page, condition: str, timeout: int = 1_500) -> dict:
    """What the page shows once ``condition`` (a JS expression over ``s``, :data:`SHOWN`)."""
    page.wait_for_function(
        f"() => {{ const s = ({SHOWN})(); return {condition}; }}", timeout=timeout
    )
    return page.evaluate(SHOWN)


def test_the_charts_follow_the_slider_before_the_rerun(server):
    with chromium_page(ARTIFACTS / "browser-frames-failure.png") as (page, expect):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        fetched: list[str] = []

        def serve(route):
            fetched.append(route.request.url)
            _serve_document(route)

        page.route(FRAMES, serve)
        _open(page, expect, server)
        thumb = page.get_by_role("slider", name=LABEL, exact=True)
        assert thumb.get_attribute("aria-valuetext") == "1"

        # One step right: both charts show ε = 2 while the server still shows ε = 1.
        thumb.focus()
        thumb.press("ArrowRight")
        shown = _until(page, "s.title.endsWith('= 2') && s.line === 2")
        assert "server ε = 1;" in shown["text"], shown  # no rerun yet: the browser drew it
        assert shown["y"] == [1, 4, 1], shown  # data[0].y patched too
        assert thumb.get_attribute("aria-valuetext") == "2"
        expect(page.get_by_text("ε = 2", exact=True)).to_be_visible()  # the slider's value
        # The key released: the rerun, of the fragment only.
        expect(page.get_by_text("server ε = 2; fragment runs 2")).to_be_visible(timeout=30_000)
        expect(page.get_by_text("full runs 1")).to_be_visible()

        # The key held down for two steps left: one rerun, after the pause (the key still
        # held); stop 0.5's distribution patch is null (the chart keeps stop 1's until the
        # rerun), its worst-case line moves; releasing the key then sends nothing more.
        start = time.perf_counter()
        page.keyboard.down("ArrowLeft")
        page.keyboard.down("ArrowLeft")  # a repeat
        # Both within the pause: one rerun. On a loaded machine the repeat can come after it:
        # stop 1 is then rightly sent first (two reruns).
        runs = "3" if time.perf_counter() - start < 0.25 else "[34]"
        at_half = re.compile(rf"^server ε = 0\.5; fragment runs {runs}$")
        shown = _until(page, "s.line === 0.5")
        assert shown["title"].endswith("= 1") and "server ε = 2;" in shown["text"], shown
        expect(page.get_by_text(at_half)).to_be_visible(timeout=30_000)
        page.keyboard.up("ArrowLeft")
        _until(page, "s.title.endsWith('= 0.5')", timeout=10_000)  # the rerun's figure
        done = page.get_by_text(at_half).inner_text()
        page.wait_for_timeout(2_500)
        expect(page.get_by_text(done, exact=True)).to_be_visible()  # nothing more was sent

        # A value the server sets is shown by the slider.
        page.get_by_role("button", name="Set ε = 4 from the server").click()
        expect(page.get_by_text("server ε = 4;")).to_be_visible(timeout=30_000)
        page.wait_for_function(
            "(name) => document.querySelector(`input[aria-label='${name}']`)"
            ".getAttribute('aria-valuetext') === '4'",
            arg=LABEL,
            timeout=10_000,
        )
        assert thumb.input_value() == "3"

        # The mouse: a click at the track's left end sends 0.5 without waiting for a pause.
        box = thumb.bounding_box()
        page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
        _until(page, "s.line === 0.5")
        expect(page.get_by_text("server ε = 0.5;")).to_be_visible(timeout=30_000)

        assert len(fetched) == 1, fetched  # the document is fetched once for the page
        assert errors == [], errors


def test_a_rerun_at_the_stop_already_drawn_does_not_redraw(server):
    """The rerun after a stop the frames document drew brings the same figures: neither chart
    is drawn again (a second draw and layout for nothing); a rerun with another figure is."""
    with chromium_page(ARTIFACTS / "browser-frames-same-failure.png") as (page, expect):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(FRAMES, _serve_document)
        _open(page, expect, server)
        thumb = page.get_by_role("slider", name=LABEL, exact=True)
        thumb.focus()
        before = page.evaluate(DRAWS)
        thumb.press("ArrowRight")
        _until(page, "s.title.endsWith('= 2') && s.line === 2")
        drawn = page.evaluate(DRAWS)
        assert drawn == [n + 1 for n in before], (before, drawn)  # the patches, each once
        expect(page.get_by_text("server ε = 2; fragment runs 2")).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1_000)  # the rerun's figures reached the charts
        assert page.evaluate(DRAWS) == drawn  # the same figures: not drawn again
        assert page.evaluate(SHOWN)["y"] == [1, 4, 1]
        # The server sets ε = 4 (no frame before): both charts are drawn by the rerun.
        page.get_by_role("button", name="Set ε = 4 from the server").click()
        _until(page, "s.title.endsWith('= 4') && s.line === 4", timeout=30_000)
        assert page.evaluate(DRAWS) == [n + 1 for n in drawn]
        assert errors == [], errors


def test_no_document_the_charts_wait_for_the_rerun(server):
    with chromium_page(ARTIFACTS / "browser-frames-missing-failure.png") as (page, expect):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(FRAMES, lambda route: route.fulfill(status=404, body="unknown frames"))
        _open(page, expect, server)
        thumb = page.get_by_role("slider", name=LABEL, exact=True)
        thumb.focus()
        thumb.press("ArrowRight")
        page.wait_for_timeout(1_000)  # well before the (slow) rerun
        shown = page.evaluate(SHOWN)
        assert shown["title"].endswith("= 1") and shown["line"] == 1, shown
        assert "server ε = 1;" in shown["text"], shown
        expect(page.get_by_text("server ε = 2;")).to_be_visible(timeout=30_000)
        _until(page, "s.title.endsWith('= 2') && s.line === 2", timeout=10_000)
        assert errors == [], errors


SEEN = """() => {
  // Every change of what the page shows (the two charts' stop, the slider's value), per frame.
  window.__seen = [];
  const look = () => {
    const charts = [...document.querySelectorAll('.hexplorer-lite')];
    const thumb = document.querySelector('input.hx-range');
    const now = [charts[0].dataset.title.split('= ').pop(),
                 String(charts[1].__lite.figure.layout.shapes[0].x0),
                 thumb.getAttribute('aria-valuetext')].join(' ');
    if (window.__seen[window.__seen.length - 1] !== now) window.__seen.push(now);
    requestAnimationFrame(look);
  };
  look();
}"""


def _picked(eps: float) -> int:
    """How many times the server's log says its callback took ``eps`` (``frames_app._picked``)."""
    return LOG.read_text().count(f"picked {eps:g}\n")


def _wait_for(condition, what: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(0.05)


def test_an_older_rerun_never_draws_over_a_later_stop(server):
    """Two separate taps: the rerun for the first stop arrives (the server is slow) after the
    second stop was drawn; neither chart nor the slider goes back to the first stop."""
    with chromium_page(ARTIFACTS / "browser-frames-stale-failure.png") as (page, expect):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(FRAMES, _serve_document)
        _open(page, expect, server)
        thumb = page.get_by_role("slider", name=LABEL, exact=True)
        picked = _picked(2)
        thumb.focus()
        thumb.press("ArrowRight")  # 2: sent after the pause, the server takes 2 s
        _until(page, "s.line === 2")
        # 4 must reach the server while the run for 2 is under way: sent earlier (a loaded
        # machine), Streamlit folds both into one run for 4 and no older rerun ever arrives.
        _wait_for(lambda: _picked(2) > picked, "the server's run for ε = 2 to begin")
        page.evaluate(SEEN)
        thumb.press("ArrowRight")  # 4, while the rerun for 2 is under way
        _until(page, "s.title.endsWith('= 4') && s.line === 4")
        expect(page.get_by_text("server ε = 4;")).to_be_visible(timeout=30_000)
        # The run for 2 was drawn, then the one for 4 (read from the page at the end: on a
        # loaded machine the browser may show 2's text for less than a poll).
        expect(page.get_by_text(re.compile(r"server drew .*2 → 4$"))).to_be_visible()
        page.wait_for_timeout(500)
        seen = page.evaluate("() => window.__seen")
        assert seen[-1] == "4 4 4", seen
        first = seen.index("4 4 4")
        assert set(seen[first:]) == {"4 4 4"}, seen  # never back to 2
        assert errors == [], errors


def test_a_burst_of_taps_costs_one_rerun_and_ends_on_the_last(server):
    """Three quick taps (not a key held): one rerun, after the pause, for the last stop."""
    with chromium_page(ARTIFACTS / "browser-frames-burst-failure.png") as (page, expect):
        page.route(FRAMES, _serve_document)
        _open(page, expect, server)
        runs = int(page.get_by_text("fragment runs").first.inner_text().split("fragment runs ")[1])
        thumb = page.get_by_role("slider", name=LABEL, exact=True)
        thumb.focus()
        for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):
            thumb.press(key)
            page.wait_for_timeout(120)
        _until(page, "s.line === 2")
        expect(page.get_by_text(f"server ε = 2; fragment runs {runs + 1}")).to_be_visible(
            timeout=30_000
        )
        page.wait_for_timeout(3_000)  # nothing else comes
        expect(page.get_by_text(f"server ε = 2; fragment runs {runs + 1}")).to_be_visible()
        assert thumb.get_attribute("aria-valuetext") == "2"


def test_the_slider_is_legible_in_the_dark_theme():
    """In Streamlit's dark theme the slider's track right of the thumb is not a white bar (the
    native range input drew one)."""
    log = ARTIFACTS / "streamlit-browser-frames-dark.log"
    env = {**os.environ, "STREAMLIT_THEME_BASE": "dark"}
    with streamlit_server(log, app="tests/app/frames_app.py", env=env) as url:
        with chromium_page(ARTIFACTS / "browser-frames-dark-failure.png") as (page, expect):
            _open(page, expect, url)
            thumb = page.get_by_role("slider", name=LABEL, exact=True)
            png = thumb.screenshot()
            image = Image.open(io.BytesIO(png)).convert("L")
            w, h = image.size
            # Stop 1 of 0..3: the track right of 2/3 of the width is the part not yet reached.
            right = image.crop((int(w * 0.75), 0, w - 2, h))
            brightest = right.getextrema()[1]
            assert brightest < 160, brightest
