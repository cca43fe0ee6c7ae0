"""Load test: many visitors at once on one ``streamlit run app.py`` server, in real browsers.

Run by hand: ``python bench/bench_many_visitors.py [--sessions 10] [--seconds 60]``.

Starts the dashboard as a demo host would (headless, its own ``.streamlit/config.toml``), then
opens ``--sessions`` Chromium pages (separate browser contexts, so separate Streamlit sessions)
at once. Each uploads its *own* CSV (same shape, its own constant speed, so its own true mean),
opens One hexagon and, for ``--seconds``, keeps moving ε and m_UB with the keyboard, waiting
for each rerun to finish. After every rerun the page must show no exception and the true mean
of its own upload (sessions never see each other's data). The server's resident memory (VmRSS
of the streamlit process) is sampled every second: before any visitor, at its peak, and after
the visitors left (10 s later, caches still warm).

Pass: no exception or wrong mean in any session, every session made progress, and the RSS
growth stays under ``--max-growth-mb`` (default 1500 MB). Prints a summary line for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TRUE_MEAN = re.compile(r"true mean (\d+\.\d{3})")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def visitor_csv(index: int) -> tuple[str, bytes, float]:
    """(file name, CSV bytes, true mean): 8 buses with 1..8 records in one HAT, speed 20 + i."""
    speed = 20.0 + index
    lines = ["user_id,lat,lon,timestamp,speed"]
    for bus in range(8):
        for k in range(bus + 1):
            lines.append(f"bus{bus},21.2,72.8,2024-03-05 08:{10 + k:02d}:{bus:02d},{speed:g}")
    return f"visitor_{index:02d}.csv", ("\n".join(lines) + "\n").encode(), speed


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (from /proc)."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total / 1024


@dataclass
class Session:
    index: int
    name: str
    mean: float
    reruns: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


async def _idle(page, timeout_s: float = 120.0) -> None:
    """Wait until the app has finished its rerun (Streamlit's 'Running...' widget is gone)."""
    await page.wait_for_timeout(150)
    running = page.get_by_test_id("stStatusWidget")
    deadline = time.monotonic() + timeout_s
    while await running.count() and time.monotonic() < deadline:
        await page.wait_for_timeout(100)


async def _visit(browser, url: str, folder: Path, session: Session, seconds: float) -> None:
    from playwright.async_api import expect

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    try:
        name, content, _ = visitor_csv(session.index)
        path = folder / name
        path.write_bytes(content)
        await page.goto(f"{url}/data", wait_until="domcontentloaded", timeout=120_000)
        sidebar = page.get_by_test_id("stSidebar")
        await sidebar.get_by_text("Upload a file").click(timeout=300_000)
        await sidebar.locator('input[type="file"]').set_input_files(str(path), timeout=300_000)
        await expect(page.get_by_text(f"Report for {name}")).to_be_visible(timeout=300_000)
        await page.get_by_role("link", name="One hexagon").click()
        true_mean = page.get_by_text(TRUE_MEAN)  # the HAT caption: "... true mean 20.000 km/h"
        await expect(true_mean).to_contain_text(f"true mean {session.mean:.3f}", timeout=300_000)
        await _idle(page, 300.0)  # the first run of the page (Monte-Carlo spreads) is the longest
        eps = page.get_by_test_id("stSlider").filter(has_text="Privacy loss ε")
        m_ub = page.get_by_test_id("stSlider").filter(has_text="(m_UB)")
        thumbs = [eps.get_by_role("slider"), m_ub.get_by_role("slider")]
        keys = ["ArrowLeft", "ArrowRight"]
        deadline = time.monotonic() + seconds
        step = 0
        while time.monotonic() < deadline:
            thumb = thumbs[step % 2]
            key = keys[(step // 4) % 2]  # two moves of each slider one way, then back
            start = time.perf_counter()
            await thumb.focus(timeout=300_000)
            await page.keyboard.press(key)
            await _idle(page)
            session.latencies.append(time.perf_counter() - start)
            session.reruns += 1
            if await page.get_by_test_id("stException").count():
                session.errors.append("exception shown")
            shown = TRUE_MEAN.search(await true_mean.first.inner_text())
            if shown is None or shown.group(1) != f"{session.mean:.3f}":
                session.errors.append(
                    f"true mean {shown and shown.group(1)!r}, own {session.mean:.3f}"
                )
            step += 1
    except Exception as exc:  # noqa: BLE001 (reported, and fails the run)
        session.errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        if os.environ.get("BENCH_SCREENSHOTS"):
            await page.screenshot(
                path=f"{os.environ['BENCH_SCREENSHOTS']}/visitor_{session.index}.png"
            )
    finally:
        await context.close()


async def _run(url: str, pid: int, sessions: int, seconds: float) -> dict:
    from playwright.async_api import async_playwright

    samples: list[float] = []
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            samples.append(rss_mb(pid))
            await asyncio.sleep(1.0)

    visitors = [
        Session(index=i, name=visitor_csv(i)[0], mean=visitor_csv(i)[2]) for i in range(sessions)
    ]
    before = rss_mb(pid)
    sampler = asyncio.create_task(sample())
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                await asyncio.gather(
                    *(_visit(browser, url, Path(folder), s, seconds) for s in visitors)
                )
            finally:
                await browser.close()
    elapsed = time.monotonic() - start
    await asyncio.sleep(10.0)
    stop.set()
    await sampler
    after = rss_mb(pid)
    return {
        "visitors": visitors,
        "elapsed": elapsed,
        "rss_before": before,
        "rss_peak": max(samples + [after]),
        "rss_after": after,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-growth-mb", type=float, default=1500.0)
    args = parser.parse_args(argv)

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "HEXPLORER_DATA_DIR"}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    print("streamlit did not start", file=sys.stderr)
                    return 1
                time.sleep(0.5)
        result = asyncio.run(_run(url, server.pid, args.sessions, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)

    visitors: list[Session] = result["visitors"]
    errors = [f"session {s.index}: {e}" for s in visitors for e in s.errors]
    reruns = sum(s.reruns for s in visitors)
    latencies = sorted(x for s in visitors for x in s.latencies)
    growth = result["rss_after"] - result["rss_before"]
    load = os.getloadavg()[0]
    for s in visitors:
        print(f"session {s.index:2d}: {s.reruns:4d} reruns, {len(s.errors)} errors")
    for line in errors[:20]:
        print("  " + line)
    median = statistics.median(latencies) if latencies else float("nan")
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    print(
        f"{len(visitors)} sessions for {args.seconds:g} s (wall {result['elapsed']:.0f} s): "
        f"{reruns} reruns (median {median:.2f} s, p95 {p95:.2f} s per move), {len(errors)} errors; "
        f"server RSS {result['rss_before']:.0f} MB before, {result['rss_peak']:.0f} MB peak, "
        f"{result['rss_after']:.0f} MB after (growth {growth:+.0f} MB); load average {load:.1f}"
    )
    ok = not errors and all(s.reruns > 0 for s in visitors) and growth < args.max_growth_mb
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
