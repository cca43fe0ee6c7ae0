"""What a person feels, measured in a real browser (Playwright + Debian's Chromium).

Run by hand: ``python bench/bench_browser.py [--starts 5] [--moves 10] [--hexagon-only]``
(``--hexagon-only``: One hexagon's ε step alone, on a fresh server). Targets (issue 7):

* first map: from the server answering its health check to the Map's hexagons drawn on the demo
  city, at most 3 s (median over ``--starts`` fresh servers; the demo city's summaries come from
  the disk cache, ``dashboard.common.source.democache``, which the first start fills if it is
  empty);
* the Map page's reaction: a change of "Colour by" or of the timeslot until the page is idle
  again with the new legend shown (median of ``--moves`` moves);
* One hexagon: a move of the ε slider (keyboard on its thumb) until both ε charts show the new
  ε and the page is idle, plus two animation frames (drawn), at most 300 ms median (the
  One-hexagon page's own target; issue 29 asks 100 ms). The browser's slider sends ε to the
  server only after a pause, so the charts are drawn from the frames document before the rerun
  starts; the time until that rerun is done (the headline shows the new ε) is reported too.

``--ab NAME A B`` compares two versions of a change that reads the environment variable NAME
(a temporary switch, never committed): fresh servers with NAME=A and NAME=B, interleaved start by
start (ABBA…), so that the machine's drift falls on both; ``--starts`` pairs, first map only.

"Idle" is Streamlit's status widget gone and no element marked stale. Numbers depend on the
machine and its load; they are reported, never asserted in tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FIRST_MAP_TARGET_S = 3.0
EPSILON_TARGET_MS = 300.0
DECK = '[data-testid="stDeckGlJsonChart"] canvas'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(
    *, env: dict | None = None, timeout: float = 120.0, app: str = "app.py"
) -> Iterator[tuple]:
    """``streamlit run app.py`` (or ``app``) on a free port; yields (url, seconds until healthy)."""
    port = free_port()
    # As on a default Python install, the server's modules are compiled once and cached: a
    # machine that sets PYTHONDONTWRITEBYTECODE (this project's sandbox does) would otherwise
    # compile the dashboard's sources again on every start (about 0.15 s of the first map).
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", app, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = start + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with status {proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"no answer at {url}") from None
                time.sleep(0.05)
        yield url, time.perf_counter() - start
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Until Streamlit has finished the run: no 'running' status, no stale element."""
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]')
               && document.querySelectorAll('[data-stale="true"]').length === 0""",
        timeout=timeout_ms,
    )


def first_map(browser, url: str) -> float:
    """Seconds from opening the app to the Map's canvas drawn and the page idle."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.locator(DECK).first.wait_for(state="visible", timeout=120_000)
    page.get_by_text("Selected HAT:").wait_for(timeout=120_000)
    wait_idle(page)
    elapsed = time.perf_counter() - start
    page.close()
    return elapsed


def map_moves(page, n: int) -> list[float]:
    """Milliseconds per change of 'Colour by' (cycling its options) until idle."""
    times = []
    radio = page.locator('[data-testid="stRadio"]').filter(has_text="Colour by")
    radio.locator("label").nth(2).wait_for(timeout=60_000)  # the map may be drawn before it
    labels = [t.strip() for t in radio.locator("label").all_inner_texts() if t.strip()]
    labels = [t for t in labels if t != "Colour by"]
    for i in range(n):
        label = labels[(i + 1) % len(labels)]
        start = time.perf_counter()
        radio.get_by_text(label, exact=True).click()
        # the legend's title names the new colouring once it is drawn
        page.wait_for_function(  # HTML legend (records, users, true mean) or plotly (errors)
            "t => [...document.querySelectorAll('.hexplorer-legend-title, .gtitle')]"
            ".some(e => e.textContent.startsWith(t))",
            arg=label,
            timeout=60_000,
        )
        wait_idle(page)
        times.append((time.perf_counter() - start) * 1000.0)
    return times


CHARTS_JS = """
const idle = () => !document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]')
  && document.querySelectorAll('[data-stale="true"]').length === 0;
const plots = () => [...document.querySelectorAll('.js-plotly-plot, .hexplorer-lite')];
const titled = (eps) => plots().some(g => [...g.querySelectorAll('.gtitle, .lite-title')]
  .some(t => t.textContent.includes(`at ε = ${eps}`)));
const marked = (eps) => plots().some(g => ((g._fullLayout || (g.__lite || {}).figure?.layout || {}).shapes || [])
  .some(s => Math.abs(s.x0 - eps) < 1e-9 * eps && Math.abs(s.x1 - eps) < 1e-9 * eps));
"""
WATCH_JS = (
    """
(label) => {
  const t0 = performance.now();"""
    + CHARTS_JS
    + """
  const thumb = () => document.querySelector(`input[aria-label="${label}"]`)
    || [...document.querySelectorAll('[data-testid="stSlider"]')]
      .find(e => e.textContent.includes('Privacy loss ε'))?.querySelector('[role="slider"]');
  const before = thumb().getAttribute('aria-valuetext');
  window.__hexplorerDrawn = new Promise((resolve) => {
    const tick = () => {
      const eps = thumb().getAttribute('aria-valuetext');
      if (eps !== before && titled(eps) && marked(eps)) {
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
      } else {
        requestAnimationFrame(tick);
      }
    };
    tick();
  });
  return t0;
}
"""
)
"""Called just before a step: watches, from then on, for both ε charts to show the slider's
new ε (whoever draws them: the frames document before the rerun, or the rerun) and resolves
``window.__hexplorerDrawn`` (ms since the call) two animation frames later, idle or not. Set up
before the key press, so its frames are counted from when the charts change, not from when the
benchmark asks (by then the rerun may hold the main thread). The page itself watches (as in
``bench_map.py``): polling with Playwright's text locator from outside scans the whole page on
every poll, on the same main thread the charts are drawn on, and added about 100 ms to every
step it timed."""
SETTLED_JS = """
([eps, t0]) => new Promise((resolve) => {
  const idle = () => !document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]')
    && document.querySelectorAll('[data-stale="true"]').length === 0;
  const headline = () => [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .some(e => e.textContent.includes(`release be? ε = ${eps},`));
  const tick = () => {
    if (headline() && idle()) resolve(performance.now() - t0);
    else requestAnimationFrame(tick);
  };
  tick();
})
"""
"""Resolves (ms since ``t0``) once the headline shows the new ε and Streamlit is idle: the
rerun that follows a step of the browser's slider after its pause
(``dashboard.common.view.slider.PAUSE_MS``) is done."""
EPSILON_LABEL = "Privacy loss ε (log scale)"


def epsilon_thumb(page):
    """One hexagon's ε slider: the browser's range input, or (an older version, for an A/B)
    Streamlit's slider thumb."""
    return page.get_by_role("slider", name=EPSILON_LABEL, exact=True).or_(
        page.get_by_test_id("stSlider").filter(has_text="Privacy loss ε").get_by_role("slider")
    )


def epsilon_moves(page, n: int, settled: list[float] | None = None) -> list[float]:
    """Milliseconds per ε-slider step (ArrowLeft/ArrowRight on its thumb), key press to both
    charts repainted (:data:`WATCH_JS`). Each step then waits for the rerun to be done
    (:data:`SETTLED_JS`; its milliseconds since the key press go to ``settled``), so every step
    starts from a settled page."""
    thumb = epsilon_thumb(page)
    times = []
    for i in range(n):
        key = "ArrowLeft" if (i // 4) % 2 == 0 else "ArrowRight"
        thumb.focus()
        t0 = page.evaluate(WATCH_JS, EPSILON_LABEL)
        thumb.press(key)
        value = thumb.get_attribute("aria-valuetext")
        times.append(page.evaluate("() => window.__hexplorerDrawn"))
        done = page.evaluate(SETTLED_JS, [value, t0])
        if settled is not None:
            settled.append(done)
    return times


def hexagon_steps(browser, n: int, settled: list[float] | None = None) -> list[float]:
    """``n`` ε steps on One hexagon, opened directly on a fresh server (:func:`epsilon_moves`,
    after four unmeasured steps that fill the ε stops' caches)."""
    with streamlit_server() as (url, _up):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/one_hexagon")
        page.get_by_text("at ε = ").first.wait_for(timeout=120_000)  # the distribution
        wait_idle(page)
        epsilon_moves(page, 4)
        return epsilon_moves(page, n, settled)


def first_map_ab(browser, name: str, values: list[str], pairs: int) -> dict[str, list[float]]:
    """Seconds to the first map with ``name`` set to each of ``values``, interleaved."""
    with streamlit_server() as (url, _up):
        first_map(browser, url)  # fills the demo cache if empty
    times: dict[str, list[float]] = {value: [] for value in values}
    for i in range(pairs):
        for value in values if i % 2 == 0 else values[::-1]:
            with streamlit_server(env={**os.environ, name: value}) as (url, _up):
                times[value].append(first_map(browser, url))
    return times


def _line(name: str, xs: list[float], unit: str) -> str:
    return (
        f"{name:<46} median {statistics.median(xs):8.1f} {unit}   max {max(xs):8.1f} {unit}"
        f"   (n = {len(xs)})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="fresh servers for the first map")
    parser.add_argument("--moves", type=int, default=12, help="moves per measured interaction")
    parser.add_argument("--ab", nargs=3, metavar=("NAME", "A", "B"), help="interleaved A/B")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="first maps of the app and of a bare Streamlit page with one deck.gl map "
        "(bench/floor_map_app.py), interleaved",
    )
    parser.add_argument(
        "--hexagon-only", action="store_true", help="only One hexagon's ε step (no Map parts)"
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    if args.floor:
        times: dict[str, list[float]] = {"app.py": [], "bench/floor_map_app.py": []}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for i in range(args.starts + 1):
                    for app, xs in times.items():
                        with streamlit_server(app=app) as (url, _up):
                            seconds = first_map(browser, url)
                        if i:  # the first start of each fills caches
                            xs.append(seconds)
            finally:
                browser.close()
        for app, xs in times.items():
            print(_line(f"first map after the server is up, {app}", [x * 1000 for x in xs], "ms"))
        print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        return 0

    if args.ab:
        name, *values = args.ab
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            try:
                times = first_map_ab(browser, name, values, args.starts)
            finally:
                browser.close()
        for value, xs in times.items():
            print(_line(f"first map, {name}={value!r}", [x * 1000 for x in xs], "ms"))
        return 0

    if args.hexagon_only:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            try:
                settled: list[float] = []
                eps = hexagon_steps(browser, args.moves, settled)
            finally:
                browser.close()
        print(_line("One hexagon: ε-slider step until both charts drawn", eps, "ms"))
        print(_line("One hexagon: ε-slider step until the rerun is done", settled, "ms"))
        print(f"load average {os.getloadavg()[0]:.1f} / {os.getloadavg()[1]:.1f}")
        return 0

    firsts, ups = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for i in range(args.starts + 1):
                with streamlit_server() as (url, up):
                    seconds = first_map(browser, url)
                if i == 0:
                    print(f"first start (fills the demo cache if empty): {seconds:.2f} s")
                    continue
                firsts.append(seconds)
                ups.append(up)
            with streamlit_server() as (url, _up):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url)
                page.locator(DECK).first.wait_for(state="visible", timeout=120_000)
                wait_idle(page)
                moves = map_moves(page, args.moves)
                page.get_by_role("link", name="One hexagon").click()
                page.get_by_text("at ε = ").first.wait_for(timeout=120_000)  # the distribution
                wait_idle(page)
                epsilon_moves(page, 4)  # warm the ε stops' caches
                eps = epsilon_moves(page, args.moves)
        finally:
            browser.close()

    print(_line("server start until healthy", [u * 1000 for u in ups], "ms"))
    print(_line("first map after the server is up", [f * 1000 for f in firsts], "ms"))
    print(_line("Map: change 'Colour by' until idle", moves, "ms"))
    print(_line("One hexagon: ε-slider step until both charts drawn", eps, "ms"))
    verdict = "meets" if statistics.median(firsts) <= FIRST_MAP_TARGET_S else "MISSES"
    print(f"first map: {verdict} {FIRST_MAP_TARGET_S:g} s")
    verdict = "meets" if statistics.median(eps) <= EPSILON_TARGET_MS else "MISSES"
    print(f"ε-slider repaint: {verdict} {EPSILON_TARGET_MS:g} ms (the One-hexagon page's target)")
    print("Machine caveat: numbers depend on the machine and its load.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
