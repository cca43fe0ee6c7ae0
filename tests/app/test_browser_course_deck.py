"""The course and the deck in a real browser (Playwright + Debian's Chromium).

A course step's ε chart follows the ε slider before any rerun (its frames document). Walks the
course from step 1 to 6 (each step answered right with its control, the answer
core.course's, the step in the URL), adds three views to the deck on three pages, presents
them (previous / next, full screen), downloads the handout and opens it offline (network
blocked): every view's plotly charts draw. Without Chromium (or Playwright) the test fails when
CI is set and is skipped otherwise.
"""

from __future__ import annotations

import re

import pytest
from browser_server import (
    CHART,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    HeldMessages,
    chromium_page,
    streamlit_server,
    wait_idle,
)

from core import course
from core.citywide.gridset import grid_set
from core.data import hat_data, load_demo, prepare

ARTIFACTS = ROOT / "test-artifacts"
GRID = course.EPSILON_GRID
TIMEOUT = 180_000

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(ARTIFACTS / "streamlit-browser-course.log") as url:
        yield url


@pytest.fixture(scope="module")
def demo():
    return prepare(load_demo()).summaries


@pytest.fixture(scope="module")
def answers(demo) -> course.Course:
    h = hat_data(demo)
    return course.course(h, grid_set(demo, slot=h.hat.split("/", 1)[1]))


def _slider(page, label: str):
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider")


def _move_to(page, label: str, target: int, lo: int, hi: int, position) -> None:
    """Put a slider's thumb at ``target`` (a position in [lo, hi]; ``position`` reads it from
    the thumb's aria-valuetext): one click on the track near it, then one arrow at a time,
    each waited for (a burst of key presses reruns the app under itself)."""
    thumb = _slider(page, label)
    box = page.locator('[data-testid="stSlider"]').filter(has_text=label).bounding_box()
    knob = thumb.bounding_box()
    assert box is not None and knob is not None
    pad = knob["width"] / 2
    x = box["x"] + pad + (target - lo) / (hi - lo) * (box["width"] - 2 * pad)
    page.mouse.click(x, knob["y"] + knob["height"] / 2)
    wait_idle(page)
    for _ in range(40):
        now = position(thumb.get_attribute("aria-valuetext"))
        if now == target:
            break
        thumb.focus()
        thumb.press("ArrowRight" if target > now else "ArrowLeft")
        wait_idle(page)
    page.wait_for_timeout(300)
    wait_idle(page)
    assert position(thumb.get_attribute("aria-valuetext")) == target


EPSILON = "Privacy loss ε"
SERVER_AT_JS = """(k) => {
  const s = (document.querySelector('div.hexplorer-slider') || {}).__slider;
  return !!s && s.data.index === k;
}"""
"""True once the server has drawn the step's ε slider (``dashboard.common.view.slider``) at
stop ``k``: the stop was sent and the step reran with it."""


def _epsilon_range(page):
    """A course step's ε slider: the browser's range input (its value the stop's index)."""
    return page.get_by_role("slider", name=EPSILON, exact=True)


def _epsilon(page, value: float) -> None:
    """Put the step's ε slider at ``value`` (set as a drag would, one ``input`` event) and wait
    until the server has it (the slider sends it after its pause; the step reruns)."""
    k = GRID.index(value)
    thumb = _epsilon_range(page)
    thumb.fill(str(k))
    assert thumb.get_attribute("aria-valuetext") == f"{value:g}"
    page.wait_for_function(SERVER_AT_JS, arg=k)
    wait_idle(page)


def _check_and_next(page, expect, step: int) -> None:
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_contain_text(
        "Right", timeout=TIMEOUT
    )
    if step < 6:
        page.get_by_role("button", name="Next step →").click()
        expect(page.get_by_role("heading", name=re.compile(f"^Step {step + 1}:"))).to_be_visible(
            timeout=TIMEOUT
        )
        expect(page).to_have_url(re.compile(rf"[?&]step={step + 1}\b"), timeout=TIMEOUT)
        wait_idle(page)


def _add_to_deck(page, expect, title: str, note: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    sidebar = page.locator('[data-testid="stSidebar"]')
    pop = page.locator('[data-testid="stPopoverBody"]')
    for _ in range(3):  # on a loaded machine the popover was seen to close again by itself
        wait_idle(page)  # a rerun still drawing the sidebar would redraw it under a click
        if not pop.get_by_label("Title").is_visible():
            sidebar.get_by_role("button", name=re.compile("Add this view to the deck")).click()
        try:  # closed again before its form showed (seen in CI, at -n 2): clicked again
            pop.get_by_label("Title").wait_for(state="visible", timeout=60_000)
            wait_idle(page)
            pop.get_by_label("Title").fill(title, timeout=20_000)
            pop.get_by_label("One-line note").fill(note, timeout=20_000)
            pop.get_by_role("button", name="Add to the deck").click(timeout=20_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError("the deck's popover closed three times before its form was sent")
    expect(page.get_by_text(f"Added “{title}”")).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("Escape")
    wait_idle(page)


def _largest_at_most(x: float) -> float:
    return max(e for e in GRID if e <= x)


def _smallest_at_least(x: float) -> float:
    return min(e for e in GRID if e >= x)


STEP4_JS = """() => {
  const chart = document.querySelector('.st-key-chart_course_releases .hexplorer-lite')
    || document.querySelector('.hexplorer-lite');
  const metric = [...document.querySelectorAll('[data-testid="stMetricValue"]')]
    .map(e => e.textContent.trim());
  return {title: chart ? chart.dataset.title || '' : '', metric: metric[0] || ''};
}"""


def test_a_course_step_chart_shows_a_new_epsilon_before_the_rerun(server):
    """Step 4 (where releases land): ArrowRight on the ε slider redraws the chart at the new
    stop (its title: the ε and the share within the band) while the page's messages to the
    server are held, so no rerun can have drawn it; released, the rerun brings the metric,
    which agrees with the title."""
    with chromium_page(ARTIFACTS / "browser-course-frames-failure.png") as (page, expect):
        held = HeldMessages(page)
        page.goto(f"{server}/course?step=4", wait_until="domcontentloaded", timeout=60_000)
        expect(page.get_by_role("heading", name=re.compile("^Step 4:"))).to_be_visible(
            timeout=TIMEOUT
        )
        page.wait_for_function(f"() => ({STEP4_JS})().title.startsWith('ε = 1:')")
        wait_idle(page)
        before = page.evaluate(STEP4_JS)
        held.hold()
        thumb = _epsilon_range(page)
        thumb.focus()
        thumb.press("ArrowRight")
        assert thumb.get_attribute("aria-valuetext") == "1.05"
        page.wait_for_function(
            f"() => ({STEP4_JS})().title.startsWith('ε = 1.05:')", timeout=10_000
        )
        now = page.evaluate(STEP4_JS)
        assert now["metric"] == before["metric"], "no rerun while the messages are held"
        held.wait_for_one("the slider sends its stop after its pause")
        held.release()
        page.wait_for_function(SERVER_AT_JS, arg=GRID.index(1.05), timeout=60_000)
        wait_idle(page)
        after = page.evaluate(STEP4_JS)
        assert after["title"] == now["title"]  # the rerun's figure: the frame's
        share = re.search(r": ([\d.]+%) of releases", after["title"])
        assert share and after["metric"] == share.group(1)
        assert page.locator('[data-testid="stException"]').count() == 0


def test_course_walk_and_a_three_view_deck(server, demo, answers, tmp_path):
    failure = ARTIFACTS / "browser-course-failure.png"
    with chromium_page(failure, width=1400, height=1000) as (page, expect):
        page.set_default_timeout(TIMEOUT)  # the machine may be loaded
        page.goto(f"{server}/course", wait_until="domcontentloaded", timeout=60_000)
        expect(page.get_by_role("heading", name=re.compile("^Step 1:"))).to_be_visible(
            timeout=TIMEOUT
        )
        wait_idle(page)

        _epsilon(page, _largest_at_most(answers.answer(1).value))
        _check_and_next(page, expect, 1)

        user = str(answers.answer(2).value)
        box = page.locator('[data-testid="stSelectbox"]').filter(has_text="whose records change")
        box.click()
        page.keyboard.type(user)
        page.get_by_role("option", name=re.compile(rf"^{re.escape(user)} —")).click()
        wait_idle(page)
        _check_and_next(page, expect, 2)

        m = int(answers.answer(3).value)
        demo = hat_data(demo)
        _move_to(page, "m_UB (records kept per user)", m, demo.m_min, demo.m_max, int)
        _check_and_next(page, expect, 3)

        _epsilon(page, _smallest_at_least(answers.answer(4).value))
        _check_and_next(page, expect, 4)

        _epsilon(page, _smallest_at_least(answers.answer(5).value))
        page.get_by_role("button", name="Check my answer").click()
        expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_contain_text("Right")
        _add_to_deck(page, expect, "The staircase", "Smallest ε for the target")
        page.get_by_role("button", name="Next step →").click()
        expect(page.get_by_role("heading", name=re.compile("^Step 6:"))).to_be_visible(
            timeout=TIMEOUT
        )
        wait_idle(page)
        _epsilon(page, _largest_at_most(answers.answer(6).value))
        _check_and_next(page, expect, 6)

        # Two more views, on two other pages (the sidebar's links: the same session).
        _nav(page, "Lesson: neighbours")
        expect(page.locator(CHART).first).to_be_visible(timeout=TIMEOUT)
        wait_idle(page)
        _add_to_deck(page, expect, "Neighbours", "One bus changes")
        _nav(page, "One hexagon")
        expect(page.locator(CHART).filter(has_text="Where releases")).to_be_visible(timeout=TIMEOUT)
        wait_idle(page)
        _add_to_deck(page, expect, "One hexagon", "Where releases land")

        _nav(page, "Deck")
        expect(page.get_by_text("3. One hexagon")).to_be_visible(timeout=TIMEOUT)
        link = page.locator('[data-testid="stCode"]').first.inner_text().strip()
        assert "/deck?deck=" in link

        # Present: full screen (no sidebar), large type, next / previous.
        page.get_by_role("button", name=re.compile("Present the deck")).click()
        bar = page.locator(".st-key-deck_presenter")
        expect(bar).to_contain_text("1 / 3 · The staircase", timeout=TIMEOUT)
        expect(bar).to_contain_text("Smallest ε for the target")
        expect(page.get_by_role("heading", name=re.compile("^Step 5:"))).to_be_visible(
            timeout=TIMEOUT
        )
        expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
        size = page.evaluate(
            "() => getComputedStyle(document.querySelector('[data-testid=stMain] p')).fontSize"
        )
        assert float(size.rstrip("px")) >= 19.5  # 1.25 rem
        for i, title in ((2, "Neighbours"), (3, "One hexagon")):
            bar.get_by_role("button", name="Next ▶").click()
            expect(bar).to_contain_text(f"{i} / 3 · {title}", timeout=TIMEOUT)
            expect(page.locator(CHART).first).to_be_visible(timeout=TIMEOUT)
            wait_idle(page)
        bar.get_by_role("button", name="◀ Previous").click()
        expect(bar).to_contain_text("2 / 3 · Neighbours", timeout=TIMEOUT)
        wait_idle(page)
        bar.get_by_role("button", name="Exit").click()
        expect(bar).to_have_count(0, timeout=TIMEOUT)
        wait_idle(page)

        # The handout: one HTML file.
        _nav(page, "Deck")
        button = page.get_by_role("button", name=re.compile("Download the handout"))
        expect(button).to_be_visible(timeout=TIMEOUT)
        with page.expect_download(timeout=TIMEOUT) as info:
            button.click()
        path = tmp_path / "deck.html"
        info.value.save_as(path)
    _opens_offline(path, ["The staircase", "Neighbours", "One hexagon"])


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
    wait_idle(page)


def _opens_offline(path, titles: list[str]) -> None:
    """Open the handout from file:// with every other request aborted and the context offline:
    each view's section is there in order and every plotly chart draws."""
    from playwright.sync_api import sync_playwright

    html = path.read_text(encoding="utf-8")
    starts = [html.index(f". {t}</h2>") for t in titles]
    assert starts == sorted(starts)
    n_figures = html.count('class="plotly-graph-div"')
    assert n_figures >= 6, n_figures
    url = path.as_uri()
    outside: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_offline(True)

            def _route(route) -> None:
                if route.request.url == url:
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()

            context.route("**/*", _route)
            view = context.new_page()
            view.goto(url, wait_until="load", timeout=60_000)
            view.wait_for_function("() => window.Plotly !== undefined", timeout=60_000)
            view.wait_for_function(
                f"() => document.querySelectorAll('.plotly-graph-div .main-svg').length >= "
                f"{n_figures}",
                timeout=120_000,
            )
            drawn = view.evaluate(
                "() => [...document.querySelectorAll('.plotly-graph-div')]"
                ".filter(d => d.querySelector('.main-svg')).length"
            )
            sections = view.evaluate(
                "() => [...document.querySelectorAll('section.view')].map("
                "s => s.querySelectorAll('.plotly-graph-div .main-svg').length)"
            )
        finally:
            browser.close()
    assert drawn == n_figures
    assert len(sections) == 3 and all(n > 0 for n in sections), sections
    assert [u for u in outside if not u.startswith("data:")] == []
