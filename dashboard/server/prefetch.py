"""Load the map's JavaScript and style sheet with the page itself, not after the map's data.

Streamlit's browser side loads each element's code when the first such element arrives. The
map's (``st.pydeck_chart``: deck.gl and luma.gl) is one 3 MB module and about fifteen small ones
it imports, which Chromium then fetches, parses and compiles before it can draw a hexagon, and
a style sheet it waits for: about a second on a small machine, all of it spent *after* the
map's JSON has arrived. :class:`ModulePreload` (a middleware of ``app.py``'s ``st.App``) changes
the HTML page Streamlit serves in two places:

- right after ``<head>``, ``<link rel="modulepreload" fetchpriority="low">`` for the map's
  module and for each module it imports that the page does not link already
  (:func:`chunk_names`), so Chromium fetches and compiles them (off its main thread) while it
  loads Streamlit itself, after Streamlit's own modules (low priority: they are needed later);
- before ``</head>``, the map's style sheet (:func:`style_names`) and a module script that runs
  the map's module right after Streamlit's own (:func:`early_run`). Streamlit otherwise runs it
  only when the map's element arrives, and the map waited about 0.15 s for it, at the end of
  the page; run early, it overlaps with the page waiting for the server.

Only the pages that open with a map (:data:`MAP_PAGES`, told by the request's path:
:func:`page_of`) get them; every other page (a shared link to One hexagon, the course) is
served as Streamlit serves it. There the links cost without helping: Chromium parsed the 3 MB
of modules on a worker thread (0.5-1.2 s of CPU, on a 2-core machine the main thread's
competitor) and spent 15-50 ms of main-thread time requesting them and parsing the style sheet
(a trace of One hexagon's first render, 2026-11-27); a later visit to the Map in the same tab
loads its code when its element arrives, as before this module.

Measured in Chromium on the demo city (``bench/bench_browser.py``; the early run: two A/Bs of
interleaved starts, first map 2.18 s against 2.26 s and 2.18 s against 2.25 s median). Tried and not kept:
preloading every element's module of the Map page made the first map later (they compete with
Streamlit's own start). The early run had made no clear difference while each module took
about 40 ms to arrive (see :mod:`dashboard.server.nodelay`).

The module is Streamlit's, found by name in the installed package (its file name carries a
content hash) and linked relative to the page, as Streamlit links its own entry module, so
both are one module. Where the file is not found (another Streamlit build) the page is served
unchanged and the map loads its code when it arrives, as before.
"""

from __future__ import annotations

import functools
import gzip
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import streamlit as st

CHUNKS = ("DeckGlJsonChart.*.js", "webgl-device.*.js")
"""Streamlit's modules for ``st.pydeck_chart``: the chart, then luma.gl's WebGL device."""
IMPORTS = re.compile(r'(?:\bimport|\bfrom)\s*"\./([\w.-]+\.js)"')
"""A static import of a sibling module in Streamlit's built JavaScript (``from"./x.js"``)."""
STYLES = ("DeckGlJsonChart.*.css",)
"""Streamlit's style sheet of ``st.pydeck_chart``."""
MAP_PAGES = ("", "hexagon_map", "city")
"""The URL paths of the pages that open with a map (:func:`page_of`): the Map (the app's
default page, at its root and at its own path) and Whole city (``dashboard/city/page.py``)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def page_of(scope: Scope) -> str:
    """The page a request's path names, as :data:`MAP_PAGES` spells it: the path without the
    app's prefix (the ASGI ``root_path``, or Streamlit's ``server.baseUrlPath``) and without
    its slashes (``""`` for the root)."""
    segments = [part for part in scope.get("path", "").split("/") if part]
    for prefix in (scope.get("root_path", ""), st.get_option("server.baseUrlPath") or ""):
        parts = [part for part in prefix.split("/") if part]
        if parts and segments[: len(parts)] == parts:
            segments = segments[len(parts) :]
    return "/".join(segments)


@functools.cache
def chunk_names() -> tuple[str, ...]:
    """File names of :data:`CHUNKS` in the installed Streamlit (each must match exactly one),
    then of every module they import, directly or not, that Streamlit's page does not link."""
    static = Path(st.__file__).parent / "static"
    folder = static / "static" / "js"
    names = _one_each(folder, CHUNKS)
    page = static / "index.html"
    linked = (
        set(re.findall(r"static/js/([\w.-]+\.js)", page.read_text())) if page.exists() else set()
    )
    return tuple(_imported(folder, names, linked))


@functools.cache
def style_names() -> tuple[str, ...]:
    """File names of :data:`STYLES` in the installed Streamlit (each must match exactly one)."""
    return tuple(_one_each(Path(st.__file__).parent / "static" / "static" / "css", STYLES))


def _one_each(folder: Path, patterns: tuple[str, ...]) -> list[str]:
    """The file name in ``folder`` matching each pattern, for the patterns matching exactly one
    (a content hash is part of each name)."""
    found = [sorted(p.name for p in folder.glob(pattern)) for pattern in patterns]
    return [names[0] for names in found if len(names) == 1]


def _imported(folder: Path, names: list[str], linked: set[str]) -> list[str]:
    """``names`` and the modules they import, breadth first, leaving out ``linked`` ones."""
    found: list[str] = []
    queue = list(names)
    while queue:
        name = queue.pop(0)
        if name in found or name in linked or not (folder / name).is_file():
            continue
        found.append(name)
        queue += IMPORTS.findall((folder / name).read_text(encoding="utf-8", errors="replace"))
    return found


def links(names: tuple[str, ...]) -> bytes:
    """The ``<link rel="modulepreload">`` tags of ``names``, relative to the page, at low
    priority (after the page's own modules)."""
    return "".join(
        f'<link rel="modulepreload" fetchpriority="low" href="./static/js/{name}" />'
        for name in names
    ).encode()


def early_run(name: str) -> bytes:
    """A module script that runs the module ``name`` (the map's) on the :data:`MAP_PAGES`.

    Module scripts run in the page's order, so this one runs after Streamlit's entry module,
    which the page's head names first; the module is then already fetched and compiled
    (:func:`links`). Only those pages are served with it (:class:`ModulePreload`); the check of
    the page's own path stays as a second guard.
    """
    pages = ",".join(f'"{page}"' for page in MAP_PAGES)
    return (
        f'<script type="module">if([{pages}].includes(location.pathname.split("/").pop()))'
        f'import("./static/js/{name}")</script>'
    ).encode()


def with_links(html: bytes, names: tuple[str, ...], styles: tuple[str, ...] = ()) -> bytes:
    """``html`` with the links right after its ``<head>``, and the ``styles`` and the early run
    of ``names[0]`` (:func:`early_run`) right before its ``</head>`` (unchanged without both)."""
    head, end = html.find(b"<head>"), html.find(b"</head>")
    if not names or head < 0 or end < head:
        return html
    at = head + len(b"<head>")
    sheets = "".join(f'<link rel="stylesheet" href="./static/css/{name}" />' for name in styles)
    tail = sheets.encode() + early_run(names[0])
    return html[:at] + links(names) + html[at:end] + tail + html[end:]


class ModulePreload:
    """ASGI middleware: the HTML page of a :data:`MAP_PAGES` page gets :func:`links` for
    :func:`chunk_names` (:func:`with_links`).

    Only ``GET`` responses whose content type is ``text/html`` to a request for one of the
    :data:`MAP_PAGES` (:func:`page_of`) are read (Streamlit's one HTML page, served for every
    page's URL), never a file under ``/media/`` (a downloaded HTML report or handout, which must
    open offline without the app's modules); a gzipped page (Streamlit compresses what it
    serves) is sent uncompressed, with its ``Content-Length`` corrected. Everything else (the
    other pages, the websocket, assets, uploads) passes through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        names = chunk_names()
        if (
            scope["type"] != "http"
            or scope.get("method") != "GET"
            or not names
            or "/media/" in scope.get("path", "")  # a download (a report, a handout): as it is
            or page_of(scope) not in MAP_PAGES  # a page without a map: as Streamlit serves it
        ):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body = bytearray()

        async def send_html(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if not headers.get(b"content-type", b"").startswith(b"text/html"):
                    start = None
                    await send(message)
                    return
                start = message
                return
            if start is None:  # not HTML: as it comes
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            raw = dict(start.get("headers", [])).get(b"content-encoding", b"identity")
            if raw not in (b"identity", b"gzip"):  # an encoding we do not read: as it came
                await send(start)
                await send({"type": "http.response.body", "body": bytes(body)})
                return
            html = gzip.decompress(bytes(body)) if raw == b"gzip" else bytes(body)
            page = with_links(html, names, style_names())  # sent uncompressed: a few kB
            drop = {b"content-length", b"content-encoding"}
            sent = [(k, v) for k, v in start.get("headers", []) if k not in drop]
            sent.append((b"content-length", str(len(page)).encode()))
            await send({**start, "headers": sent})
            await send({"type": "http.response.body", "body": page, "more_body": False})

        await self.app(scope, receive, send_html)
