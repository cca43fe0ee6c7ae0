"""The browser's share of One hexagon: Chromium main-thread time of its first render and of an ε step.

Run by hand (not in CI): ``python bench/bench_render.py [--starts 3]``. Starts the app
(``tests/app/browser_server.py``), opens ``/one_hexagon`` in Debian's Chromium (headless,
1280×720) and reads the DevTools protocol's ``Performance.getMetrics`` through a CDP session:
``TaskDuration`` (all main-thread tasks) and ``ScriptDuration`` (JavaScript), in seconds, from
navigation until the page is idle with its charts drawn; then the same for one ε step (the
slider's thumb, ArrowRight) until idle again. Each start is a fresh browser and a fresh session.

Issue 31's targets: first render ≤ 1 s of main-thread time, an ε step ≤ 150 ms. Numbers on a
machine shared with other work are noisy: report the load (``uptime``) with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "app"))

from browser_server import (  # noqa: E402
    CHART,
    CHROMIUM,
    CHROMIUM_ARGS,
    step_epsilon,
    streamlit_server,
    wait_idle,
)

METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def _metrics(cdp) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {k: float(got.get(k, 0.0)) for k in METRICS}


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in METRICS}


def one_start(url: str) -> tuple[dict[str, float], dict[str, float]]:
    """(first render, ε step) main-thread seconds of one fresh browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(300_000)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
            start = _metrics(cdp)
            page.goto(f"{url}/one_hexagon", wait_until="domcontentloaded")
            page.locator(CHART).filter(has_text="Where releases").wait_for(state="visible")
            wait_idle(page)
            page.wait_for_timeout(1000)  # plotly's last frames
            first = _delta(_metrics(cdp), start)
            before = _metrics(cdp)
            step_epsilon(page, "ArrowRight")
            page.wait_for_timeout(300)
            wait_idle(page)
            page.wait_for_timeout(500)
            step = _delta(_metrics(cdp), before)
        finally:
            browser.close()
    return first, step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"Chromium not found at {CHROMIUM}", file=sys.stderr)
        return 2
    firsts, steps = [], []
    with streamlit_server(ROOT / "test-artifacts" / "bench-render.log") as url:
        for i in range(args.starts):
            first, step = one_start(url)
            firsts.append(first)
            steps.append(step)
            print(
                f"start {i + 1}: first render task {first['TaskDuration']:.2f} s "
                f"(script {first['ScriptDuration']:.2f} s); ε step task "
                f"{step['TaskDuration'] * 1000:.0f} ms (script {step['ScriptDuration'] * 1000:.0f} ms)"
            )
    med = {k: statistics.median(x[k] for x in firsts) for k in ("TaskDuration", "ScriptDuration")}
    med_step = {
        k: statistics.median(x[k] for x in steps) for k in ("TaskDuration", "ScriptDuration")
    }
    load = os.getloadavg()[0]
    print(
        f"median of {args.starts}: first render {med['TaskDuration']:.2f} s main thread "
        f"({med['ScriptDuration']:.2f} s script; target ≤ 1 s), ε step "
        f"{med_step['TaskDuration'] * 1000:.0f} ms ({med_step['ScriptDuration'] * 1000:.0f} ms "
        f"script; target ≤ 150 ms); load average {load:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
