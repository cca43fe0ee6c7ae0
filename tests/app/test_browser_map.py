"""Real browser (Playwright + Debian's Chromium) on the Map's error views: choosing *error at ε*
and moving ε changes the map's pixels; the split view shows two maps in one canvas, and a drag in
one pans both.

Without Chromium at /usr/bin/chromium (or without Playwright) the tests fail when the CI
environment variable is set and are skipped otherwise.
"""

from __future__ import annotations

import io

import pytest
from browser_server import CHROMIUM, CHROMIUM_ARGS, ROOT, streamlit_server
from browser_server import unavailable as _unavailable

ARTIFACTS = ROOT / "test-artifacts"
DECK = '[data-testid="stDeckGlJsonChart"]'
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(ARTIFACTS / "streamlit-browser-map.log") as url:
        yield url


def _playwright():
    if not CHROMIUM.exists():
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    return expect, sync_playwright


def _pixels(png: bytes):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _coloured(img, tolerance: int = 40) -> int:
    """Pixels that are neither white nor grey (hexagons in a palette colour)."""
    spread = img.max(axis=2) - img.min(axis=2)
    return int((spread > tolerance).sum())


def _settled(locator, page, *, differs_from=None, tries: int = 40):
    """The canvas's pixels once two screenshots a moment apart agree (and, if given, differ
    from ``differs_from``)."""
    import numpy as np

    last = _pixels(locator.screenshot())
    for _ in range(tries):
        page.wait_for_timeout(500)
        now = _pixels(locator.screenshot())
        same = now.shape == last.shape and np.array_equal(now, last)
        if same and _coloured(now) > 0:
            if differs_from is None or now.shape != differs_from.shape:
                return now
            if not np.array_equal(now, differs_from):
                return now
        last = now
    return last


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def _open_error_map(page, expect, server) -> None:
    page.goto(server, wait_until="domcontentloaded", timeout=60_000)
    expect(page.locator(f"{DECK} canvas").first).to_be_visible(timeout=240_000)
    page.get_by_text("error at ε (km/h)").click()
    expect(page.get_by_text("Hexagons within ±5 km/h")).to_be_visible(timeout=120_000)
    _no_exception(page)


def test_error_at_epsilon_and_moving_epsilon_change_the_maps_pixels(server):
    import numpy as np

    expect, sync_playwright = _playwright()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            try:
                page.goto(server, wait_until="domcontentloaded", timeout=60_000)
                canvas = page.locator(f"{DECK} canvas").first
                expect(canvas).to_be_visible(timeout=240_000)
                records = _settled(canvas, page)
                page.get_by_text("error at ε (km/h)").click()
                expect(page.get_by_text("Hexagons within ±5 km/h")).to_be_visible(timeout=120_000)
                canvas = page.locator(f"{DECK} canvas").first
                at_one = _settled(canvas, page, differs_from=records)
                assert not np.array_equal(at_one, records)  # error colours, not record counts
                share = page.locator('[data-testid="stMetricValue"]').first.inner_text()

                slider = page.locator('[data-testid="stSlider"]').filter(
                    has_text="ε per hexagon (log scale)"
                )
                thumb = slider.get_by_role("slider")
                thumb.focus()
                for _ in range(6):  # 1 → 0.3: much more error
                    thumb.press("ArrowLeft")
                at_small = _settled(canvas, page, differs_from=at_one)
                assert not np.array_equal(at_small, at_one)
                changed = np.any(at_small != at_one, axis=2).mean()
                assert changed > 0.001, changed
                expect(page.locator('[data-testid="stMetricValue"]').first).not_to_have_text(
                    share, timeout=30_000
                )
                _no_exception(page)
                page.screenshot(path=str(ARTIFACTS / "browser-error-map.png"))
            except Exception:
                page.screenshot(path=str(ARTIFACTS / "browser-error-map-failure.png"))
                raise
        finally:
            browser.close()


def test_split_view_shows_two_maps_that_pan_together(server):
    import numpy as np

    expect, sync_playwright = _playwright()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            try:
                _open_error_map(page, expect, server)
                page.get_by_text("Two settings side by side").click()
                expect(page.get_by_text("Left A (ε = 1, opt-arrayavg)")).to_be_visible(
                    timeout=120_000
                )
                split = page.locator(f"{DECK} canvas").nth(1)  # the split view: the second deck
                split.scroll_into_view_if_needed()
                expect(split).to_be_visible(timeout=60_000)
                before = _settled(split, page)
                w = before.shape[1]
                left, right = before[:, : int(w * 0.49)], before[:, int(w * 0.51) :]
                assert _coloured(left) > 50 and _coloured(right) > 50  # two maps
                assert not np.array_equal(left[:, : right.shape[1]], right[:, : left.shape[1]])

                box = split.bounding_box()
                x0, y0 = box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.5
                page.mouse.move(x0, y0)
                page.mouse.down()
                for step in range(1, 11):
                    page.mouse.move(x0 + 12 * step, y0 + 6 * step)
                page.mouse.up()
                after = _settled(split, page, differs_from=before)
                h, w = after.shape[:2]
                moved_left = np.any(after[:, : int(w * 0.49)] != before[:, : int(w * 0.49)], axis=2)
                moved_right = np.any(
                    after[:, int(w * 0.51) :] != before[:, int(w * 0.51) :], axis=2
                )
                assert moved_left.mean() > 0.001 and moved_right.mean() > 0.001, (
                    moved_left.mean(),
                    moved_right.mean(),
                )
                _no_exception(page)
                page.screenshot(path=str(ARTIFACTS / "browser-split-view.png"))
            except Exception:
                page.screenshot(path=str(ARTIFACTS / "browser-split-view-failure.png"))
                raise
        finally:
            browser.close()
