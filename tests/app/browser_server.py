"""A `streamlit run app.py` server and Debian's Chromium for every browser test and the browser
benchmark (``bench/bench_browser_epsilon.py``). Playwright's own browsers are never used.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHART = '[data-testid="stPlotlyChart"], .hexplorer-liveplot'
"""A plotly chart: Streamlit's element, or one that updates in place
(dashboard.common.view.liveplot)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


DRAWS = """() => [...document.querySelectorAll('.hexplorer-lite')].map(c => +c.dataset.drawn)"""
"""How many times each chart has been drawn (``liteplot.js`` counts its draws)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout} s")


def unavailable(reason: str) -> None:
    """No Chromium or Playwright: a failure when CI is set (CI installs both), a skip otherwise."""
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)")
    pytest.skip(reason)


@contextmanager
def streamlit_server(
    log_path: Path, *, env: dict[str, str] | None = None, timeout: float = 90, app: str = "app.py"
) -> Iterator[str]:
    """Run the app (or ``app``) on a free loopback port (with ``env`` if given); yield its URL;
    stop it."""
    port = free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                app,
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc, timeout=timeout)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def inside(box: dict | None, width: int, height: int) -> bool:
    """Whether a bounding box lies wholly inside a ``width`` × ``height`` viewport."""
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width + 0.5
        and box["y"] + box["height"] <= height + 0.5
    )


# --- shared page steps (tests and bench/bench_map.py) ---------------------------------------

DECK = '[data-testid="stDeckGlJsonChart"]'
LIVE_MAP = ".hexplorer-livemap"
"""The error map the browser recolours (``dashboard.common.view.livemap``); its canvas is in
its own frame (:func:`error_map_canvas`)."""
MAPS = f"{DECK}, {LIVE_MAP}"
"""Every map on the page, Streamlit's and the browser's, in the page's order."""
IDLE_JS = """() => !document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]')
  && document.querySelectorAll('[data-stale="true"]').length === 0"""
"""True once Streamlit has finished running and no element is stale."""
ERROR_SLIDER = "ε per hexagon (log scale)"


def error_map_canvas(page):
    """The canvas of the Map's error map (drawn by the browser in its own frame)."""
    return page.frame_locator(f"{LIVE_MAP} iframe").locator("canvas").first


def wait_idle(page, timeout_ms: int = 600_000, polling: int | str = "raf") -> None:
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=polling)


def open_error_map(page, url: str, timeout_ms: int = 600_000) -> float:
    """Open ``url`` (the Map), choose "Colour by: error at ε" and wait until the error map and
    its read-out are shown and the page is idle; returns the seconds from the choice to then."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    page.locator(f"{DECK} canvas").first.wait_for(state="visible", timeout=timeout_ms)
    wait_idle(page, timeout_ms)
    start = time.perf_counter()
    radio = page.locator('[data-testid="stRadio"]').filter(has_text="Colour by")
    radio.get_by_text("error at ε", exact=False).first.click()
    page.get_by_text(ERROR_SLIDER).wait_for(timeout=timeout_ms)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
        ".some(e => e.textContent.startsWith('ε = '))",
        timeout=timeout_ms,
    )
    wait_idle(page, timeout_ms)
    # the browser's map: drawn once it names its stop (its bundle loads in its own frame)
    page.wait_for_function(
        f"() => [...document.querySelectorAll('{LIVE_MAP}')].every(m => m.dataset.stop)",
        timeout=timeout_ms,
    )
    return time.perf_counter() - start


def centre_hat() -> str | None:
    """The demo's HAT under the centre of the Map's first view (the first slot's hexagons,
    fitted), or None when no hexagon is there or it is the HAT selected on opening."""
    import h3

    from core.data import hat_table, load_demo, prepare
    from dashboard.common.view.maps import view_for_cells

    table = hat_table(prepare(load_demo()).summaries)
    cells = table[table["slot"] == table["slot"].iloc[0]]
    view = view_for_cells(cells["cell"].tolist())
    centre = h3.latlng_to_cell(
        view.latitude, view.longitude, h3.get_resolution(cells["cell"].iloc[0])
    )
    row = cells[cells["cell"] == centre]
    return (
        None if row.empty or row["hat"].iloc[0] == table["hat"].iloc[0] else str(row["hat"].iloc[0])
    )


@contextmanager
def chromium_page(
    failure_png: Path, *, width: int = 1400, height: int = 1000
) -> Iterator[tuple[Any, Any]]:
    """A page of Debian's Chromium (headless, ``width`` × ``height``) and Playwright's
    ``expect``; the page's screenshot goes to ``failure_png`` when the block fails. Without
    Chromium or Playwright: :func:`unavailable`."""
    if not CHROMIUM.exists():
        unavailable(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            try:
                yield page, expect
            except Exception:
                failure_png.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(failure_png))
                raise
        finally:
            browser.close()


EPSILON_LABEL = "Privacy loss ε (log scale)"


def epsilon_thumb(page):
    """One hexagon's ε slider ("Privacy loss ε (log scale)"), for the keyboard: the browser's
    own range input (``dashboard.common.view.slider``), its ``aria-valuetext`` the ε shown."""
    return page.get_by_role("slider", name=EPSILON_LABEL, exact=True)


def slider_thumb(page, label: str):
    """The thumb of the slider labelled ``label``: the browser's own (the ε sliders of
    ``dashboard.common.view.slider``), else Streamlit's (a bare page's ``st.select_slider``)."""
    own = page.get_by_role("slider", name=label, exact=True)
    if own.count():
        return own.first
    return (
        page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first
    )


def step_epsilon(page, key: str) -> str:
    """Move One hexagon's ε slider one stop with ``key`` on its thumb; the new ε as shown."""
    thumb = epsilon_thumb(page)
    thumb.focus()
    thumb.press(key)
    return str(thumb.get_attribute("aria-valuetext"))


class HeldMessages:
    """The page's messages to Streamlit's server, held on demand (Playwright's
    ``route_web_socket`` on ``/_stcore/stream``): while held, no rerun can start, so whatever
    the page shows then was drawn by the browser alone. Install before ``page.goto``."""

    def __init__(self, page) -> None:
        import re

        self.page = page
        self.on = False
        self.queue: list = []
        page.route_web_socket(re.compile(r"/_stcore/stream"), self._stream)

    def _stream(self, ws) -> None:
        upstream = ws.connect_to_server()

        def to_server(message) -> None:
            if self.on:
                self.queue.append((upstream, message))
            else:
                upstream.send(message)

        ws.on_message(to_server)

    def hold(self) -> None:
        self.on = True

    def wait_for_one(self, what: str, timeout_ms: int = 10_000) -> None:
        """Until the page has sent at least one message (e.g. a slider's stop after its
        pause); ``what`` names it in the failure."""
        for _ in range(timeout_ms // 100):
            if self.queue:
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"{what}: no message within {timeout_ms} ms")

    def release(self) -> None:
        """Send what was held, in order, and stop holding."""
        self.on = False
        queue, self.queue = self.queue, []
        for upstream, message in queue:
            upstream.send(message)


def click_until(page, expect, shown, at, *, attempts: int = 12) -> None:
    """Click the point ``at()`` (x, y) until the locator ``shown`` is visible (deck.gl picks
    only once its first frames are drawn, so early clicks may miss)."""
    for _attempt in range(attempts):
        page.wait_for_timeout(1_000)
        x, y = at()
        page.mouse.move(x, y)
        page.mouse.click(x, y)
        try:
            expect(shown).to_be_visible(timeout=5_000)
            return
        except AssertionError:
            continue
    expect(shown).to_be_visible(timeout=30_000)


def click_map_centre(page, expect, shown, *, deck: int = 0, attempts: int = 12) -> None:
    """Click the centre of the ``deck``-th map (:data:`MAPS`) until the locator ``shown`` is
    visible."""

    def centre() -> tuple[float, float]:
        box = page.locator(MAPS).nth(deck).bounding_box()
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    click_until(page, expect, shown, centre, attempts=attempts)
