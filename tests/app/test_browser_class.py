"""A class on several Streamlit processes behind nginx (``deploy/class.sh``), in a real browser.

Two processes behind Debian's nginx. Two visitors, each held by its own process (their
``hexplorer_node`` cookies name processes 1 and 2; nginx says which process answered in the
``X-Hexplorer-Upstream`` header), each upload their own file and see their own true mean on One
hexagon: the upload (an HTTP request) reached the process that holds the visitor's websocket
session. A third visitor, without a cookie, is given one by nginx and kept on that process.
Streamlit's own static files (``/static/``: its JavaScript, style sheets and fonts) are answered
by nginx itself, byte for byte the installed package's files, gzipped or not, cached a year,
without reaching a process (no ``X-Hexplorer-Upstream``); a path there that is not such a file
still reaches Streamlit.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_server import CHART, CHROMIUM, CHROMIUM_ARGS, ROOT, free_port, unavailable

from dashboard.server.statics import streamlit_static

ARTIFACTS = ROOT / "test-artifacts"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

pytestmark = pytest.mark.browser


def _records(speed: int) -> str:
    rows = [
        f"bus{b},21.2,72.8,2024-03-05 08:{10 + k:02d}:00,{speed}"
        for b in range(4)
        for k in range(b + 1)
    ]
    return "user_id,lat,lon,timestamp,speed\n" + "\n".join(rows) + "\n"


def _free_pair() -> int:
    """A port whose next port is free too (the two processes')."""
    for _ in range(50):
        port = free_port()
        try:
            with contextlib.closing(__import__("socket").socket()) as sock:
                sock.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


@contextlib.contextmanager
def _class(n: int) -> Iterator[str]:
    """``deploy/class.sh n`` on free loopback ports; yields nginx's URL; stops it all."""
    if not Path(NGINX).exists():
        unavailable("nginx not found (apt-get install nginx-light)")
    run = ARTIFACTS / "class-run"
    run.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = os.environ | {
        "PYTHON": sys.executable,
        "HEXPLORER_CLASS_DIR": str(run),
        "HEXPLORER_CLASS_ADDRESS": "127.0.0.1",
        "HEXPLORER_CLASS_BASE_PORT": str(_free_pair()),
    }
    env.pop("HEXPLORER_DATA_DIR", None)
    with open(run / "class.log", "w") as log:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "deploy" / "class.sh"), str(n), str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        up: set[str] = set()
        while len(up) < n:  # every process answers through nginx
            assert proc.poll() is None, (run / "class.log").read_text()
            assert time.monotonic() < deadline, "deploy/class.sh did not start"
            for node in range(1, n + 1):
                request = urllib.request.Request(
                    f"{url}/_stcore/health", headers={"Cookie": f"hexplorer_node={node}"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=2) as resp:
                        up.add(resp.headers["X-Hexplorer-Upstream"])
                except OSError:
                    time.sleep(0.5)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _own_mean(
    browser, url: str, name: str, speed: int, node: int | None, folder: Path, statics: list
):
    """Upload ``name`` (every record at ``speed``) as a new visitor (on process ``node``, or
    wherever nginx sends it); (the process that answered, the cookie's process, the mean
    shown on One hexagon). The upload's request reached the process that served the page; each
    response to a ``/static/`` request is added to ``statics`` (status, upstream, cache header)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        if node is not None:
            context.add_cookies([{"name": "hexplorer_node", "value": str(node), "url": url}])
        page = context.new_page()
        page.set_default_timeout(120_000)
        uploads: list[str] = []  # the process each upload request reached
        page.on(
            "response",
            lambda r: (
                "/_stcore/upload_file/" in r.url
                and uploads.append(f"{r.status} {r.headers.get('x-hexplorer-upstream')}")
            ),
        )
        page.on(
            "response",
            lambda r: (
                "/static/" in r.url
                and statics.append(
                    (
                        r.status,
                        r.headers.get("x-hexplorer-upstream"),
                        r.headers.get("cache-control"),
                    )
                )
            ),
        )
        response = page.goto(f"{url}/data", wait_until="domcontentloaded")
        upstream = response.headers.get("x-hexplorer-upstream") if response else None
        path = folder / name
        path.write_text(_records(speed))
        sidebar = page.get_by_test_id("stSidebar")
        sidebar.get_by_text("Upload a file").click()
        sidebar.locator('input[type="file"]').set_input_files(str(path))
        expect(page.get_by_text(f"Report for {name}")).to_be_visible(timeout=180_000)
        page.get_by_role("link", name="One hexagon").click()
        expect(page.locator(CHART).filter(has_text="Where releases")).to_be_visible(timeout=180_000)
        shown = page.get_by_text(re.compile(r"true mean \d+\.\d{3}")).first.inner_text()
        assert page.get_by_test_id("stException").count() == 0
        cookie = {c["name"]: c["value"] for c in context.cookies(url)}.get("hexplorer_node")
        assert uploads and set(uploads) <= {f"200 {upstream}", f"204 {upstream}"}, (
            uploads,
            upstream,
        )
        return upstream, cookie, re.search(r"true mean (\d+\.\d{3})", shown).group(1)
    finally:
        context.close()


def test_two_visitors_on_two_processes_each_see_their_own_upload(tmp_path):
    if not CHROMIUM.exists():
        unavailable(f"Chromium not found at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    with _class(2) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            statics: list = []
            one = _own_mean(browser, url, "one.csv", 31, 1, tmp_path, statics)
            two = _own_mean(browser, url, "two.csv", 47, 2, tmp_path, statics)
            new = _own_mean(browser, url, "new.csv", 23, None, tmp_path, statics)
        finally:
            browser.close()
        _statics_from_nginx(url)
    assert len(statics) > 50  # Streamlit's front end: ~140 files per new browser
    assert {s[:2] for s in statics} == {(200, None)}, set(statics)  # nginx's, not a process's
    assert {s[2] for s in statics} == {"public, immutable, max-age=31536000"}
    assert (one[1], one[2]) == ("1", "31.000")
    assert (two[1], two[2]) == ("2", "47.000")
    assert one[0] != two[0] and one[0] and two[0]  # two processes
    assert new[1] in ("1", "2") and new[2] == "23.000"  # a cookie given, and kept to


def _statics_from_nginx(url: str) -> None:
    """Streamlit's entry module through nginx: the package's bytes (raw, or gzipped when asked),
    with no process in the way; a missing file under /static/ still reaches Streamlit."""
    with urllib.request.urlopen(f"{url}/one_hexagon", timeout=30) as resp:
        entry = re.search(r'src="\./(static/js/index\.[\w-]+\.js)"', resp.read().decode()).group(1)
    disk = (streamlit_static().parent / entry).read_bytes()
    for accept in ("identity", "gzip"):
        request = urllib.request.Request(f"{url}/{entry}", headers={"Accept-Encoding": accept})
        with urllib.request.urlopen(request, timeout=30) as resp:
            body, headers = resp.read(), resp.headers
        assert headers.get("X-Hexplorer-Upstream") is None, accept
        assert headers["Cache-Control"] == "public, immutable, max-age=31536000"
        assert headers["Content-Type"].startswith("application/javascript")
        if accept == "gzip":
            assert headers["Content-Encoding"] == "gzip"
            body = gzip.decompress(body)
        assert body == disk, accept
    with urllib.request.urlopen(f"{url}/static/js/no-such-file.js", timeout=30) as resp:
        assert resp.headers["X-Hexplorer-Upstream"]  # Streamlit answers it, as without nginx
