"""A new user's journey over two uploads, the demo city and every kind of page (issue 27).

demo → upload A (U = 30) → upload B (its own default U) → demo (U = 65, true mean 20.679) →
One hexagon (a mechanism removed) → Experiments → One hexagon (mechanisms as chosen) → Map
(colour by users) → One hexagon (same HAT) → Map (colour-by as chosen) → upload B again (its
settings back) → reload (the upload still in use). At a real 1280×720 window: viewport 1280×633.
Screenshots of each stop go to test-artifacts/journey-*.png.
"""

from __future__ import annotations

import re
import time

import pytest
from browser_server import ROOT, chromium_page, streamlit_server, wait_idle
from sample_files import flights_csv, ships_csv

ARTIFACTS = ROOT / "test-artifacts"
WIDTH, HEIGHT = 1280, 633  # a 1280×720 window less Chromium's tabs and address bar

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    with streamlit_server(ARTIFACTS / "streamlit-journey.log") as url:
        yield url


def _in_use(page, expect, text: str) -> None:
    expect(page.get_by_text(re.compile(f"In use: {re.escape(text)}")).first).to_be_visible(
        timeout=120_000
    )


def _upload(page, expect, name: str, data: bytes) -> None:
    page.get_by_role("radio", name="Upload a file").check(force=True, timeout=120_000)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "text/csv", "buffer": data}]
    )
    _in_use(page, expect, name)
    wait_idle(page)


def _go(page, expect, title: str) -> None:
    page.get_by_role("link", name=title, exact=True).click()
    expect(page.get_by_role("heading", name=title).first).to_be_visible(timeout=120_000)
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"journey-{name}.png"))


def _mechanism_tags(page) -> list[str]:
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Mechanisms").first
    return [str(t.get_attribute("aria-label")) for t in box.locator("[data-tag]").all()]


def _expect_tags(page, names: list[str], timeout_s: float = 60.0) -> None:
    """The Mechanisms box shows ``names``: read until it does (the page's run may still be
    drawing its sidebar when the heading shows and the status has not yet said "running"), and
    fail with what it shows after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (shown := _mechanism_tags(page)) != names and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    assert shown == names


def test_journey_over_uploads_demo_and_pages(server):
    with chromium_page(ARTIFACTS / "journey-failure.png", width=WIDTH, height=HEIGHT) as (
        page,
        expect,
    ):
        page.goto(server, wait_until="domcontentloaded", timeout=60_000)
        expect(page.get_by_text("Selected HAT:")).to_be_visible(timeout=180_000)
        wait_idle(page)

        # upload A, U = 30 knots
        _upload(page, expect, "ships.csv", ships_csv())
        upper = page.get_by_label(re.compile(r"^U, upper bound on the value"))
        upper.fill("30")
        upper.press("Enter")
        _in_use(page, expect, "ships.csv · U = 30 knots")

        # upload B: its own default U, not A's 30
        _upload(page, expect, "flights.csv", flights_csv(600, 40, 4))
        _in_use(page, expect, "flights.csv · U = 65 km/h")

        # back to the demo city: U = 65, its true mean
        page.get_by_role("radio", name="Demo city").check(force=True)
        _in_use(page, expect, "demo city · U = 65 km/h")
        _go(page, expect, "One hexagon")
        expect(page.get_by_text("true mean 20.679 km/h").first).to_be_visible(timeout=120_000)
        _shot(page, "one-hexagon")
        hat_line = page.get_by_text(re.compile(r"true mean 20\.679")).first.inner_text()

        # a page's own choice: drop Baseline from the mechanisms
        before = _mechanism_tags(page)
        assert "Baseline" in before, before
        box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Mechanisms").first
        box.get_by_role("button", name="Remove Baseline").click()
        wait_idle(page)
        chosen = _mechanism_tags(page)
        assert chosen == [m for m in before if m != "Baseline"], chosen

        _go(page, expect, "Experiments")
        _go(page, expect, "One hexagon")
        _expect_tags(page, chosen)
        _in_use(page, expect, "demo city · U = 65 km/h")

        # the Map's own choice: colour by buses; a Map visit leaves One hexagon's HAT
        _go(page, expect, "Map")
        radio = page.locator('[data-testid="stRadio"]').filter(has_text="Colour by")
        radio.get_by_text("buses", exact=True).click()
        wait_idle(page)
        _shot(page, "map")
        _go(page, expect, "One hexagon")
        assert page.get_by_text(re.compile(r"true mean 20\.679")).first.inner_text() == hat_line
        _expect_tags(page, chosen)
        _go(page, expect, "Experiments")
        _go(page, expect, "Map")
        expect(radio.get_by_role("radio", name="buses")).to_be_checked()

        # back to the upload: B with its own settings
        page.get_by_role("radio", name="Upload a file").check(force=True)
        _in_use(page, expect, "flights.csv · U = 65 km/h")
        wait_idle(page)

        # a reload keeps the upload for this browser
        link = page.url
        assert "hexplorer_browser" not in link and "file=" in link
        page.reload(wait_until="domcontentloaded")
        _in_use(page, expect, "flights.csv · U = 65 km/h")
        wait_idle(page)
        assert page.get_by_text("Upload the same file").count() == 0
        expect(
            page.get_by_text("A reload of this view in this browser finds the file")
        ).to_be_visible()
        _shot(page, "after-reload")

        # a colleague with the link only (another browser, no cookie) is asked for the file
        other = page.context.browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        try:
            other.goto(link, wait_until="domcontentloaded")
            expect(other.get_by_text("Upload the same file").first).to_be_visible(timeout=120_000)
            assert other.get_by_text("In use: flights.csv").count() == 0
        finally:
            other.close()
