"""One hexagon in a real browser (Playwright + Debian's Chromium) in a presenter's 1280×720 window
(viewport 1280×633).

Checks what only a browser shows: the ε slider, the m_UB slider and the two charts they move are
on screen together without scrolling (bounding boxes), the distribution of releases is drawn (one
filled ridge per mechanism), the headline carries the data's unit, and no label is cut. Without
Chromium (or Playwright) the test fails when CI is set and is skipped otherwise.
"""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path

import pytest
from browser_server import (
    CHART,
    DRAWS,
    ROOT,
    HeldMessages,
    chromium_page,
    epsilon_thumb,
    inside,
    step_epsilon,
    streamlit_server,
)

from dashboard.common.session import state
from dashboard.hexagon import state as hs

ARTIFACTS = ROOT / "test-artifacts"
WIDTH, HEIGHT = 1280, 633  # a 1280×720 window less Chromium's tabs and address bar

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(ARTIFACTS / "streamlit-browser-hexagon.log") as url:
        yield url


def test_presenter_view_at_1280x720(server):
    failure = ARTIFACTS / "browser-hexagon-failure.png"
    with chromium_page(failure, width=WIDTH, height=HEIGHT) as (page, expect):
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        charts = page.locator(CHART)
        distribution = charts.filter(has_text="Where releases")
        worst = charts.filter(has_text="Worst-case error against ε")
        expect(distribution).to_be_visible(timeout=180_000)
        expect(worst).to_be_visible(timeout=60_000)
        page.wait_for_timeout(1_500)  # plotly finishes drawing
        assert page.locator('[data-testid="stException"]').count() == 0

        # The controls and the two charts they move, together, without scrolling.
        eps = page.locator(".hexplorer-slider")  # the browser's ε slider: label, track, value
        m_ub = page.locator('[data-testid="stSlider"]').filter(has_text="(m_UB)")
        boxes = {
            "ε slider": eps.bounding_box(),
            "m_UB slider": m_ub.bounding_box(),
            "distribution chart": distribution.bounding_box(),
            "worst case chart": worst.bounding_box(),
        }
        page.screenshot(path=str(ARTIFACTS / "browser-hexagon-1280x720.png"))
        outside = {k: b for k, b in boxes.items() if not inside(b, WIDTH, HEIGHT)}
        assert outside == {}, outside
        assert page.evaluate("window.scrollY") == 0

        # The distribution is drawn (uPlot's canvas, dashboard/common/view/static/liteplot.js,
        # counts what it drew): one filled ridge per chosen mechanism, plus the band and the
        # true-mean line, and each ridge's label.
        n = len(state.DEFAULT_MECHANISMS)
        drawn = distribution.evaluate("g => g.__lite.drawn")
        assert drawn["parts"] == n + 2, drawn
        assert drawn["fills"] == n + 1, drawn  # n ridges and the ±X band
        assert len(drawn["texts"]) == n and "within ±1" in drawn["texts"][0], drawn
        painted = distribution.locator("canvas").first.evaluate(
            """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                      let k = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) k++;
                      return k / (c.width * c.height); }"""
        )
        assert painted > 0.1, painted  # the ridges cover a good part of the plot
        # Its PNG export (plotly's modebar gave one): title, canvas and legend, as a PNG file.
        distribution.hover()
        with page.expect_download() as got:
            distribution.locator(".lite-png").click()
        download = got.value
        assert download.suggested_filename.startswith("Where_releases")
        assert download.suggested_filename.endswith(".png")
        data = Path(download.path()).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
        (png_height,) = struct.unpack(">I", data[20:24])  # IHDR: width, then height
        plot_height, dpr = distribution.locator("canvas").first.evaluate(
            "c => [c.height, devicePixelRatio]"
        )
        assert distribution.locator(".lite-legend > span").count() > 0
        assert png_height >= plot_height + (28 + 20) * dpr, (png_height, plot_height)  # legend

        # The headline carries the unit in every number's label.
        headline = page.locator(".st-key-hexagon_headline table")
        expect(headline).to_be_visible()
        header = headline.locator("th").all_inner_texts()
        assert sum("(km/h)" in h for h in header) == 4, header
        assert re.search(r"Array-Averaging \(BestFit\)", headline.inner_text())

        # No truncated label: buttons and metric labels show their whole text.
        cut = page.evaluate(
            """() => [...document.querySelectorAll(
                '[data-testid="stSidebar"] button p, [data-testid="stMetricLabel"] p')]
                .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
                .map(e => e.textContent)"""
        )
        assert cut == [], cut

        # The presenter toggle makes the type larger.
        size = page.evaluate(
            "() => parseFloat(getComputedStyle("
            "document.querySelector('.st-key-hexagon_headline td')).fontSize)"
        )
        page.locator('[data-testid="stSidebar"]').get_by_text("Presenter (larger type)").click()
        expect(page.locator(CHART).first).to_be_visible()
        page.wait_for_function(
            f"""() => {{
                const td = document.querySelector('.st-key-hexagon_headline td');
                return td && parseFloat(getComputedStyle(td).fontSize) > {size};
            }}""",
            timeout=60_000,
        )
        page.screenshot(path=str(ARTIFACTS / "browser-hexagon-presenter.png"))
        assert page.locator('[data-testid="stException"]').count() == 0


def _elements(frames: list) -> list[str]:
    """The kinds of the elements (``new_element`` deltas) in the server's websocket frames."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    kinds = []
    for frame in frames:
        if isinstance(frame, str):
            continue
        msg = ForwardMsg()
        msg.ParseFromString(frame)
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            kinds.append(msg.delta.new_element.WhichOneof("type"))
    return kinds


def test_an_epsilon_step_updates_both_charts_in_place(server):
    """The two charts ε moves are kept on the page and given the new figure (redrawn by uPlot),
    not thrown away and rebuilt (what Streamlit's plotly element does when its figure changes):
    the same chart nodes before and after a step, showing the new ε — the distribution's
    title and the worst-case chart's ε line."""
    with chromium_page(ARTIFACTS / "browser-hexagon-in-place-failure.png") as (page, expect):
        received: list[bytes] = []
        page.on(
            "websocket",
            lambda ws: ws.on("framereceived", lambda m: received.append(m)),
        )
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        plots = page.locator(".hexplorer-lite")  # both drawn by the lite renderer, not plotly.js
        expect(plots.nth(1)).to_be_visible(timeout=180_000)
        expect(page.get_by_text(re.compile("land at ε = 1$"))).to_be_visible()
        expect(page.get_by_role("button", name="Download a report of this view")).to_be_visible(
            timeout=60_000
        )  # the first run done
        page.wait_for_timeout(500)
        received.clear()
        page.evaluate(
            "() => document.querySelectorAll('.hexplorer-lite')"
            ".forEach((g, i) => { g.dataset.mark = 'kept' + i; })"
        )
        value = step_epsilon(page, "ArrowLeft")
        assert value != "1"
        expect(page.get_by_text(re.compile(f"land at ε = {re.escape(value)}$"))).to_be_visible(
            timeout=60_000
        )
        page.wait_for_function(
            """(eps) => [...document.querySelectorAll('.hexplorer-lite')].some(g =>
                (g.__lite.figure.layout.shapes || []).some(s => Math.abs(s.x0 - eps) < 1e-9 * eps))""",
            arg=float(value),
            timeout=60_000,
        )
        marks = page.evaluate(
            "() => [...document.querySelectorAll('.hexplorer-lite')]"
            ".map(g => g.dataset.mark || 'new')"
        )
        assert marks[:2] == ["kept0", "kept1"], marks  # the same two charts, updated
        # The step's rerun re-sends what ε moves, not the hexagon-hour picker (drawn by the full
        # run: re-sent, the browser rebuilt it and its 100 options on every step).
        expect(
            page.get_by_text(
                re.compile(rf"^How far off will a release be\? ε = {re.escape(value)},")
            )
        ).to_be_visible(timeout=60_000)
        page.wait_for_timeout(500)
        sent = _elements(received)
        assert "number_input" in sent and "bidi_component" in sent, sent  # the rerun's deltas
        assert "selectbox" not in sent, sent
        assert page.evaluate("() => typeof window.Plotly") == "undefined"  # no plotly.js loaded
        assert page.locator('[data-testid="stException"]').count() == 0


def test_the_epsilon_slider_sends_after_a_pause_and_shows_the_servers_value(server):
    """The browser's ε slider (dashboard/common/view/slider.py): ArrowRight shows the new stop at
    once; after the pause the headline, the exact-ε box and the URL show it; a reload keeps it;
    a value typed in the exact-ε box is shown by the slider."""
    with chromium_page(ARTIFACTS / "browser-hexagon-slider-failure.png") as (page, expect):
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=180_000)
        headline = page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1,"))
        expect(headline).to_be_visible(timeout=60_000)
        thumb = epsilon_thumb(page)
        assert thumb.get_attribute("aria-valuetext") == "1"
        assert step_epsilon(page, "ArrowRight") == "1.1"
        expect(page.locator(".hexplorer-slider")).to_contain_text("ε = 1.1")
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.1,"))
        ).to_be_visible(timeout=60_000)
        exact = page.get_by_role("spinbutton", name="Exact ε")
        expect(exact).to_have_value("1.1")
        expect(page).to_have_url(re.compile(r"[?&]eps=1\.1(&|$)"))
        page.reload(wait_until="domcontentloaded")
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.1,"))
        ).to_be_visible(timeout=120_000)
        expect(thumb).to_have_attribute("aria-valuetext", "1.1", timeout=30_000)
        # A value the server sets (the exact-ε box) is shown by the slider, added to its stops.
        exact.fill("0.5423")
        exact.press("Enter")
        expect(thumb).to_have_attribute("aria-valuetext", "0.5423", timeout=60_000)
        assert step_epsilon(page, "ArrowRight") == "0.55"
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 0\.55,"))
        ).to_be_visible(timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0


HELD = """() => {
  const charts = [...document.querySelectorAll('.hexplorer-lite')];
  const head = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .map(e => e.textContent).find(t => t.startsWith('How far off will a release be?')) || '';
  return {title: charts[0].dataset.title, shapes: charts[1].__lite.figure.layout.shapes || [],
          head, frames: charts.map(g => (g.parentElement.__hexplorerFrames || {}).url || null)};
}"""

FADED = (
    "Object.fromEntries("
    + json.dumps(list(hs.BEHIND))
    + """.map((k) => {
  const e = document.querySelector(".st-key-" + k);
  return [k, e ? getComputedStyle(e).opacity : null];
}))"""
)
"""The opacity of each container that waits for the rerun (faded while the slider is ahead)."""


def test_an_epsilon_step_repaints_both_charts_before_the_rerun(server):
    """With the frames document wired (``dashboard/hexagon/frames.py``), ArrowRight on the ε
    slider redraws both charts at the new stop while the page's messages to the server are
    held (so no rerun can have drawn them): the distribution's title and the worst-case chart's
    ε line; the heading, the table and the tabs, which wait for the rerun, are faded
    meanwhile. Released, the rerun brings the headline and they are whole again."""
    with chromium_page(ARTIFACTS / "browser-hexagon-frames-failure.png") as (page, expect):
        held = HeldMessages(page)
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=180_000)
        expect(page.get_by_text(re.compile("land at ε = 1$"))).to_be_visible(timeout=60_000)
        urls = page.evaluate(HELD)["frames"]
        assert all(urls) and len(set(urls)) == 1, urls  # both charts, one document
        # The document: fetched once the page is idle after the charts were drawn.
        page.wait_for_function(
            "(url) => (window.__hexplorerFrames || {})[url] !== undefined",
            arg=urls[0],
            timeout=30_000,
        )
        assert page.evaluate(
            "(url) => window.__hexplorerFrames[url].then(d => d !== null)", urls[0]
        )
        held.hold()
        assert step_epsilon(page, "ArrowRight") == "1.1"
        page.wait_for_function(
            f"""() => {{ const s = ({HELD})();
                return s.title.endsWith('at ε = 1.1')
                  && s.shapes.some(x => Math.abs(x.x0 - 1.1) < 1e-9 && Math.abs(x.x1 - 1.1) < 1e-9);
            }}""",
            timeout=5_000,
        )
        assert page.evaluate(HELD)["head"].startswith("How far off will a release be? ε = 1,")
        faded = f"() => ({FADED})"
        page.wait_for_function(  # the old ε's numbers: faded (after their 120 ms transition)
            f"() => Object.values(({faded})()).every(o => o === '0.45')", timeout=5_000
        )
        assert set(page.evaluate(faded)) == set(hs.BEHIND)
        drawn = page.evaluate(DRAWS)
        held.wait_for_one("the slider sends its stop after its pause (300 ms without input)")
        held.release()
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.1,"))
        ).to_be_visible(timeout=60_000)
        expect(page.get_by_text(re.compile("land at ε = 1.1$"))).to_be_visible()
        page.wait_for_function(f"() => Object.values(({faded})()).every(o => o === '1')")
        # The rerun's figures are the ones the patches drew (its numpy arrays as base64, the
        # patches' as lists): neither chart is drawn again.
        page.wait_for_timeout(1_000)
        assert page.evaluate(DRAWS) == drawn
        assert page.locator('[data-testid="stException"]').count() == 0


def test_the_epsilon_slider_in_a_users_hands(server, tmp_path):
    """Quick taps end on the last stop (headline, exact-ε box, URL); the report downloaded right
    after a step is the shown stop's; a reload right after a step keeps it; the slider's help
    is shown to a keyboard user (focus on its "?")."""
    with chromium_page(ARTIFACTS / "browser-hexagon-hands-failure.png") as (page, expect):
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=180_000)
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1,"))
        ).to_be_visible(timeout=60_000)
        thumb = epsilon_thumb(page)
        thumb.focus()
        for key in ("ArrowRight", "ArrowRight", "ArrowRight", "ArrowLeft"):
            thumb.press(key)
            page.wait_for_timeout(80)
        assert thumb.get_attribute("aria-valuetext") == "1.2"
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.2,"))
        ).to_be_visible(timeout=60_000)
        # (Playwright's 5 s default is too short on a loaded machine: the run drew the headline
        # first; the box and the URL follow it.)
        expect(page.get_by_role("spinbutton", name="Exact ε")).to_have_value("1.2", timeout=60_000)
        expect(page).to_have_url(re.compile(r"[?&]eps=1\.2(&|$)"), timeout=60_000)

        # The report at once after a step: the stop the slider shows, not the server's last.
        assert step_epsilon(page, "ArrowRight") == "1.3"
        with page.expect_download(timeout=60_000) as got:
            page.get_by_role("button", name=re.compile("Download a report of this view")).click()
        report = Path(got.value.path()).read_text()
        assert re.findall(r"ε = ([0-9.]+)", report)[0] == "1.3"

        # A reload right after a step, before its rerun, keeps the stop shown: the URL has it
        # once the stop is painted (the next frame; a reload in the same few milliseconds as
        # the key press, as Playwright can make it, comes before that frame on a loaded machine).
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.3,"))
        ).to_be_visible(timeout=60_000)
        assert step_epsilon(page, "ArrowRight") == "1.4"
        expect(page).to_have_url(re.compile(r"[?&]eps=1\.4(&|$)"), timeout=5_000)
        page.reload(wait_until="domcontentloaded")
        expect(
            page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1\.4,"))
        ).to_be_visible(timeout=120_000)
        expect(thumb).to_have_attribute("aria-valuetext", "1.4", timeout=30_000)

        # The help, for the keyboard: Tab reaches the "?", which shows it.
        help_mark = page.locator(".hexplorer-slider .hx-help")
        tip = page.locator(".hexplorer-slider .hx-tip")
        expect(tip).to_be_hidden()
        help_mark.focus()
        expect(tip).to_be_visible()
        assert "Smaller ε = more noise" in tip.inner_text()
        assert thumb.get_attribute("aria-describedby") == tip.get_attribute("id")
        assert page.locator('[data-testid="stException"]').count() == 0


def test_a_tap_then_a_page_link_at_once_opens_the_next_page_whole(server):
    """A tap on the ε slider, then a page link before its 300 ms pause is over: the pending
    stop is dropped (it would reach the server as a rerun of One hexagon's fragment during the
    Map's run: "Couldn't find fragment", the Map left blank, or a KeyError traceback). The Map
    opens whole, at the ε the server had, and One hexagon again after it."""
    with chromium_page(ARTIFACTS / "browser-hexagon-tap-link-failure.png") as (page, expect):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server}/one_hexagon", wait_until="domcontentloaded", timeout=60_000)
        expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=180_000)
        headline = page.get_by_text(re.compile(r"^How far off will a release be\? ε = 1,"))
        expect(headline).to_be_visible(timeout=60_000)
        thumb = epsilon_thumb(page)
        thumb.focus()
        start = time.perf_counter()
        thumb.press("ArrowRight")  # 1.1, pending for 300 ms
        page.get_by_role("link", name="Map", exact=True).click()
        # On a loaded machine the click may come after the pause: 1.1 is then sent, and taken,
        # before the Map opens. Within it (both done in less than the pause), it is dropped.
        within = time.perf_counter() - start < 0.3
        expect(page.get_by_text("Selected HAT:")).to_be_visible(timeout=120_000)
        expect(page.locator('[data-testid="stDeckGlJsonChart"]').first).to_be_visible(
            timeout=120_000
        )
        page.wait_for_timeout(1_500)  # a stray fragment rerun would arrive by now
        assert page.locator('[data-testid="stException"]').count() == 0
        expect(page.get_by_text("Selected HAT:")).to_be_visible()
        page.get_by_role("link", name="One hexagon", exact=True).click()
        had = r"1" if within else r"1(\.1)?"  # the ε the server had
        expect(
            page.get_by_text(re.compile(rf"^How far off will a release be\? ε = {had},"))
        ).to_be_visible(timeout=120_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == []
