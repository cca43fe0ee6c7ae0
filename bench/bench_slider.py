"""One hexagon's ε slider in a user's hands: what a burst of key taps costs, and when the frames
document arrives.

Run by hand (not in CI): ``python bench/bench_slider.py [--bursts 4] [--gap-ms 120]``. Starts
the app (``tests/app/browser_server.py``), opens One hexagon in Debian's Chromium and

* per burst, taps ArrowRight three times ``--gap-ms`` apart on the ε slider (separate key
  presses, not a held key) and counts the page's messages to the server (Streamlit's websocket;
  each stop sent is one, and one rerun), and the milliseconds from the last tap until the
  headline shows the last stop;
* reports when the frames document (``dashboard/hexagon/frames.py``) was requested, counted
  from when both ε charts were first drawn, and the main-thread milliseconds Chromium takes to
  parse it (``Response.json()`` of the same URL, timed in the page), with its size.

Prints one README-ready line with the load average (``uptime``): numbers on a shared machine
are noisy.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "app"))

from browser_server import chromium_page, epsilon_thumb, streamlit_server, wait_idle  # noqa: E402

HEADLINE_AT_JS = """(eps) => [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
  .some(e => e.textContent.includes(`release be? ε = ${eps},`))"""
PARSE_JS = """async (url) => {
  const r = await fetch(url, {credentials: 'same-origin'});
  const text = await r.text();
  const t0 = performance.now();
  JSON.parse(text);
  return [performance.now() - t0, text.length];
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=4)
    parser.add_argument("--gap-ms", type=int, default=120)
    args = parser.parse_args()
    art = ROOT / "test-artifacts"
    art.mkdir(exist_ok=True)
    with streamlit_server(art / "bench-slider.log") as url:
        with chromium_page(art / "bench-slider-failure.png") as (page, expect):
            sent: list[float] = []
            asked: list[float] = []

            def stream(ws) -> None:
                upstream = ws.connect_to_server()

                def to_server(message) -> None:
                    sent.append(time.monotonic())
                    upstream.send(message)

                ws.on_message(to_server)

            page.route_web_socket(re.compile(r"/_stcore/stream"), stream)
            page.on(
                "request",
                lambda r: (
                    asked.append(time.monotonic()) if "/_hexplorer/frames/" in r.url else None
                ),
            )
            page.goto(f"{url}/one_hexagon", wait_until="domcontentloaded", timeout=120_000)
            expect(page.locator(".hexplorer-lite").nth(1)).to_be_visible(timeout=180_000)
            drawn = time.monotonic()
            wait_idle(page)
            page.wait_for_timeout(6_000)  # the document, if the page fetches it when idle
            doc_at = f"{(asked[0] - drawn) * 1000:.0f} ms" if asked else "not requested"
            frames_url = page.evaluate(
                "() => [...document.querySelectorAll('.hexplorer-lite')]"
                ".map(g => (g.parentElement.__hexplorerFrames || {}).url).find(u => u) || null"
            )
            parse_ms, size = page.evaluate(PARSE_JS, frames_url) if frames_url else (0.0, 0)
            thumb = epsilon_thumb(page)
            messages, settle = [], []
            for _ in range(args.bursts):
                wait_idle(page)
                page.wait_for_timeout(1_000)
                thumb.focus()
                before = len(sent)
                for _tap in range(3):
                    thumb.press("ArrowRight")
                    page.wait_for_timeout(args.gap_ms)
                last = thumb.get_attribute("aria-valuetext")
                t0 = time.monotonic() - args.gap_ms / 1000
                page.wait_for_function(HEADLINE_AT_JS, arg=last, timeout=60_000)
                settle.append((time.monotonic() - t0) * 1000)
                wait_idle(page)
                page.wait_for_timeout(1_000)
                messages.append(len(sent) - before)
    load = os.getloadavg()
    print(
        f"- ε slider, {args.bursts} bursts of 3 taps {args.gap_ms} ms apart: messages to the "
        f"server per burst {statistics.median(messages):g} (each {messages}); last tap to the "
        f"headline at the last stop {statistics.median(settle):.0f} ms median "
        f"(max {max(settle):.0f}). Frames document requested {doc_at} after the charts were "
        f"drawn; {size / 1e6:.2f} MB of JSON, parsed in {parse_ms:.0f} ms of Chromium's main "
        f"thread. Load average {load[0]:.1f} / {load[1]:.1f}."
    )


if __name__ == "__main__":
    main()
