"""Serve the browser's code from memory: Streamlit's ``/static/`` files and plotly.js.

Every new visitor's browser fetches Streamlit's JavaScript and style sheets (several MB) and
plotly.js (4.6 MB, :mod:`dashboard.common.view.liveplot`). Streamlit serves each with
Starlette's ``FileResponse``: the file opened and read again on every request, 64 kB at a time,
each read handed to a worker thread and back to the event loop, and sent uncompressed. Under a
class joining at once (``bench/bench_many_visitors.py``: 30 browsers on 2 cores) that was about
a third of the server's CPU per first view, on the thread that also carries every session's
websocket.

:class:`StaticCache` (a middleware of ``app.py``'s ``st.App``) answers those requests itself: a
file is read once, gzipped once (when its type compresses), and kept; each request is then two
ASGI messages, the gzipped body when the browser accepts it (a fifth of the bytes to write).
The headers are Streamlit's (its content hashed file names are cached a year, ``immutable``) or
the route's own. Memory: at most the files browsers asked for, each raw and gzipped, bounded by
the size of Streamlit's static folder (about 26 MB) plus plotly.js (4.6 MB and 1.4 MB gzipped).
A request with a ``Range`` header, another method, or a path that is not a file of those
folders passes through to Streamlit unchanged.

Behind nginx (``deploy/class.sh``), nginx serves Streamlit's ``/static/`` files itself, from
:func:`mirror`'s folder (``python -m dashboard.server.statics DEST``: a link to each file and
its gzipped copy beside it), so a visitor's ~140 requests for them never reach a Streamlit
process. Only those files: they are the package's files, byte for byte. The HTML page (which
:mod:`dashboard.server.prefetch` rewrites) and the app's own routes stay Streamlit's.
"""

from __future__ import annotations

import asyncio
import gzip
import mimetypes
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

STATIC_CACHE_CONTROL = "public, immutable, max-age=31536000"
"""Streamlit's header for its content-hashed static files (a year, never revalidated)."""
STATIC_PATH = re.compile(r"^/static/(?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_.-]+$")
"""A file under Streamlit's ``/static/`` route: plain names only (no ``..``, no ``//``)."""
COMPRESSIBLE = (".js", ".css", ".json", ".svg", ".html", ".txt", ".map", ".mjs")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Entry:
    """One file as served: its bytes, gzipped bytes (None when its type does not compress),
    content type and cache header."""

    raw: bytes
    gzipped: bytes | None
    content_type: str
    cache_control: str


def entry(path: Path, cache_control: str) -> Entry:
    """``path`` read (and gzipped, when its type compresses) for :class:`StaticCache`."""
    return entry_of(path.read_bytes(), path.name, cache_control)


def entry_of(raw: bytes, name: str, cache_control: str) -> Entry:
    """``raw``, served under the file name ``name`` (its type and whether it compresses)."""
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if kind.startswith("text/") or kind == "application/javascript":
        kind += "; charset=utf-8"
    squeezed = (
        gzip.compress(raw, compresslevel=6, mtime=0) if Path(name).suffix in COMPRESSIBLE else None
    )
    return Entry(
        raw, squeezed if squeezed and len(squeezed) < len(raw) else None, kind, cache_control
    )


def streamlit_static() -> Path:
    """The folder Streamlit serves under ``/static/`` (``static/static`` in its package)."""
    return Path(st.__file__).parent / "static" / "static"


def mirror(dest: Path, static: Path | None = None) -> int:
    """Make ``dest/static/`` nginx's copy of Streamlit's ``/static/`` folder; the number of files.

    Each file is a symbolic link to the package's file (the same bytes as Streamlit serves) and,
    when its type compresses and gzip makes it smaller, ``<name>.gz`` beside it (gzip level 6,
    as :func:`entry`), for nginx's ``gzip_static``. A folder already made from the same package
    folder (its ``.source`` file names it) is kept as it is: a restart costs nothing.
    """
    source = (static or streamlit_static()).resolve()
    root = dest / "static"
    stamp = dest / ".source"
    if stamp.is_file() and stamp.read_text() == str(source) and root.is_dir():
        return sum(1 for p in root.rglob("*") if p.is_symlink())
    if root.exists():
        import shutil

        shutil.rmtree(root)
    count = 0
    for file in sorted(source.rglob("*")):
        if not file.is_file():
            continue
        there = root / file.relative_to(source)
        there.parent.mkdir(parents=True, exist_ok=True)
        there.symlink_to(file)
        if file.suffix in COMPRESSIBLE:
            raw = file.read_bytes()
            squeezed = gzip.compress(raw, compresslevel=6, mtime=0)
            if len(squeezed) < len(raw):
                there.with_name(there.name + ".gz").write_bytes(squeezed)
        count += 1
    stamp.write_text(str(source))
    return count


class StaticCache:
    """ASGI middleware: ``GET``/``HEAD`` of Streamlit's ``/static/`` files and of ``routes``
    (URL path → a function giving the file, or the bytes, and its ``Cache-Control``) answered
    from memory."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Mapping[str, Callable[[], tuple[Path | bytes, str]]] | None = None,
        static: Path | None = None,
    ) -> None:
        self.app = app
        self.routes = dict(routes or {})
        self.static = (static or streamlit_static()).resolve()
        self.base = "/" + str(st.get_option("server.baseUrlPath") or "").strip("/")
        self.kept: dict[str, Entry] = {}  # only files found: at most one entry per file
        self.reading: dict[str, asyncio.Future[Entry | None]] = {}  # one read per file at once

    def find(self, path: str) -> Entry | None:
        """The entry of the file at URL ``path``, or None when it is not one of ours."""
        if path in self.routes:
            source, cache_control = self.routes[path]()
            if isinstance(source, bytes):  # made by the app (a component's script)
                return entry_of(source, path, cache_control)
            return entry(source, cache_control) if source.is_file() else None
        if not STATIC_PATH.match(path):
            return None
        file = (self.static / path.removeprefix("/static/")).resolve()
        if not file.is_relative_to(self.static) or not file.is_file():
            return None
        return entry(file, STATIC_CACHE_CONTROL)

    async def _read(self, path: str) -> Entry | None:
        """:meth:`find` off the event loop, once for every request that wants it meanwhile (a
        class joining at once asks for the same files together: one read and gzip, not 30)."""
        pending = self.reading.get(path)
        if pending is None:
            pending = asyncio.ensure_future(asyncio.to_thread(self.find, path))
            self.reading[path] = pending

            def done(future: asyncio.Future[Entry | None]) -> None:
                del self.reading[path]
                if not future.cancelled() and future.exception() is None:
                    if (found := future.result()) is not None:
                        self.kept[path] = found

            pending.add_done_callback(done)
        return await asyncio.shield(pending)  # a visitor who leaves cancels only its own wait

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", "")) if scope["type"] == "http" else ""
        if self.base != "/" and path.startswith(self.base + "/"):
            path = path[len(self.base) :]
        headers = dict(scope.get("headers", [])) if path else {}
        mine = path and scope.get("method") in ("GET", "HEAD") and b"range" not in headers
        found = self.kept.get(path) if mine else None
        if mine and found is None:
            found = await self._read(path)
        if found is None:
            await self.app(scope, receive, send)
            return
        zipped = found.gzipped is not None and b"gzip" in headers.get(b"accept-encoding", b"")
        body = found.gzipped if zipped and found.gzipped is not None else found.raw
        out = [
            (b"content-type", found.content_type.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", found.cache_control.encode()),
        ]
        if found.gzipped is not None:
            out.append((b"vary", b"Accept-Encoding"))
        if zipped:
            out.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": out})
        await send(
            {"type": "http.response.body", "body": body if scope["method"] == "GET" else b""}
        )


if __name__ == "__main__":  # deploy/class.sh: python -m dashboard.server.statics DEST
    import sys

    made = mirror(Path(sys.argv[1]))
    print(f"{made} of Streamlit's static files for nginx in {Path(sys.argv[1]) / 'static'}")
