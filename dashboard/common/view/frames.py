"""JSON documents a chart fetches once and computes nothing for on the script run.

A chart that a slider moves on every step can be repainted in the browser, without waiting for
a Streamlit rerun, when the browser already holds the numbers of every step: a *frames
document* (One hexagon's ε slider, :mod:`dashboard.hexagon.frames`). The page asks
:func:`url` for the document's address on each run; that only registers how to compute it
(``compute``, a function of no arguments) under a digest of ``key`` and returns the path, so the
script run pays nothing. The first GET of that path (:func:`routes`, served by ``app.py``'s
``st.App``) computes the document in a worker thread (never on the server's event loop),
encodes it once (compact JSON, gzipped) and keeps the bytes; later GETs, from any session with
the same key, get those bytes. Two GETs at once compute it once.

The store is bounded (:data:`MAX_DOCUMENTS`, least recently used first out), its entries
expire with the dashboard's caches (``limits.CACHE_TTL_S`` after they were registered), and it
lives in this process only: after a restart, an eviction or the expiry the path answers 404 and
the browser simply keeps waiting for reruns. A computed entry drops its ``compute`` (which may
hold an upload's bytes), so only a document nobody fetched keeps its inputs, until it goes. A
compute that fails answers 500 with one line and keeps nothing, so the next GET tries again.

A document's *patches* follow one rule, shared with the browser's code: a patch is a flat dict
of plotly paths to values (``"data[1].x"``, ``"layout.title.text"``,
``"layout.annotations[0].text"``); each value replaces whatever is at its path.
:func:`apply` is that rule in Python (the tests hold the browser to it).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from dashboard.common.source import limits

PREFIX = "/_hexplorer/frames/"
ROUTE = PREFIX + "{digest}.json"
MAX_DOCUMENTS = 32
CACHE_CONTROL = "private, max-age=3600"
"""A document never changes under its digest (the key holds every input), but it may hold a
private upload's numbers: kept by the visitor's browser only, for an hour."""
DIGEST_CHARS = 24
_DIGEST = re.compile(rf"[0-9a-f]{{{DIGEST_CHARS}}}")

log = logging.getLogger(__name__)

BROWSER_FETCH = r"""
// The frames document of ``url``, fetched once for the page: one promise per URL, shared by
// every chart and map (dashboard/common/view/frames.py); null when there is none.
function framesOf(url) {
  const docs = window.__hexplorerFrames || (window.__hexplorerFrames = {});
  if (!docs[url]) {
    docs[url] = fetch(url, {credentials: "same-origin"})
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null);  // no document: the rerun will come
  }
  return docs[url];
}
"""
"""The browser's side of :func:`url`, in the scripts of the components that draw from a frames
document (``liveplot``, ``livemap``)."""


def digest(key: str) -> str:
    """The first :data:`DIGEST_CHARS` hex digits of the SHA-256 of ``key``.

    >>> digest("a")
    'ca978112ca1bbdcafac231b3'
    """
    return hashlib.sha256(key.encode()).hexdigest()[:DIGEST_CHARS]


_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_KEY = json.encoder.encode_basestring  # what that encoder does with a str (ensure_ascii off)
_NESTED = (dict, list)


def encode(document: Any) -> bytes:
    """Compact JSON (no spaces, UTF-8, no NaN: a value JSON cannot hold is an error).

    The bytes of ``json.dumps(document, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)``, with a list that is held several times in the document (the same
    object: the x of every ridge of One hexagon's distribution chart at a stop, the worst-case
    curves of every stop) encoded once: dicts, and lists that begin or end with a dict or a
    list, are walked here; any other list is encoded whole by ``json``'s C encoder (the same
    bytes either way: the walk only decides what can be reused).

    >>> encode({"stops": [0.5, 1.0], "text": "ε"})
    b'{"stops":[0.5,1.0],"text":"\\xce\\xb5"}'
    >>> x = [0.1, 2]
    >>> encode([{"a": x, "b": x}, None, [x, True]])
    b'[{"a":[0.1,2],"b":[0.1,2]},null,[[0.1,2],true]]'
    """
    memo: dict[int, str] = {}

    def text(value: Any) -> str:
        if type(value) is dict and all(type(k) is str for k in value):
            return "{" + ",".join(f"{_KEY(k)}:{text(v)}" for k, v in value.items()) + "}"
        if type(value) is list:
            done = memo.get(id(value))
            if done is None:  # the document holds every list while it is encoded: ids stay
                walk = value and (type(value[0]) in _NESTED or type(value[-1]) in _NESTED)
                done = "[" + ",".join(map(text, value)) + "]" if walk else _DUMPS(value)
                memo[id(value)] = done
            return done
        return _DUMPS(value)

    return text(document).encode()


class _Entry:
    """One registered document: how to compute it, and its gzipped bytes once computed."""

    def __init__(self, compute: Callable[[], Any], made: float) -> None:
        self.compute: Callable[[], Any] | None = compute
        self.made = made
        self.lock = threading.Lock()  # one compute at a time; the second GET waits for it
        self.gzipped: bytes | None = None
        self.size = 0  # bytes before gzip

    def encoded(self) -> bytes:
        """The gzipped document, computed on the first call (in the caller's thread)."""
        with self.lock:
            if self.gzipped is None:
                if self.compute is None:  # dropped only once the bytes are kept
                    raise RuntimeError("frames entry without its compute")
                body = encode(self.compute())
                self.size = len(body)
                self.gzipped = gzip.compress(body, compresslevel=6, mtime=0)
                self.compute = None  # its inputs (an upload's bytes, say) are not kept
            return self.gzipped


class Store:
    """A bounded, thread-safe store of lazily computed documents, least recently used first out.

    >>> store = Store(max_documents=1)
    >>> path = store.url("first", lambda: {"n": 1})
    >>> path.startswith(PREFIX) and path.endswith(".json")
    True
    >>> _ = store.url("second", lambda: {"n": 2})  # the first goes
    >>> store.entry(path.removeprefix(PREFIX).removesuffix(".json")) is None
    True
    """

    def __init__(
        self,
        max_documents: int = MAX_DOCUMENTS,
        *,
        ttl_s: float = limits.CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_documents, bool) or not isinstance(max_documents, int):
            raise ValueError(f"max_documents must be a whole number >= 1; got {max_documents!r}")
        if max_documents < 1:
            raise ValueError(f"max_documents must be a whole number >= 1; got {max_documents!r}")
        self.max_documents = max_documents
        self.ttl_s = float(ttl_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def url(self, key: str, compute: Callable[[], Any]) -> str:
        """Register ``compute`` under :func:`digest` of ``key`` and return its route path.

        Computes nothing. A key already registered keeps its entry (and its bytes, if computed):
        the same key means the same document.
        """
        if not isinstance(key, str) or not callable(compute):
            raise TypeError("frames.url takes a str key and a function of no arguments")
        d = digest(key)
        now = self._clock()
        with self._lock:
            self._expire(now)
            if d in self._entries:
                self._entries.move_to_end(d)
            else:
                self._entries[d] = _Entry(compute, now)
                while len(self._entries) > self.max_documents:
                    self._entries.popitem(last=False)
        return f"{PREFIX}{d}.json"

    def entry(self, d: str) -> _Entry | None:
        """The entry of digest ``d`` (marked as used), or None."""
        with self._lock:
            self._expire(self._clock())
            found = self._entries.get(d)
            if found is not None:
                self._entries.move_to_end(d)
            return found

    def _expire(self, now: float) -> None:
        """Drop the entries registered more than ``ttl_s`` ago (the caller holds the lock)."""
        for d in [d for d, e in self._entries.items() if now - e.made > self.ttl_s]:
            del self._entries[d]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


STORE = Store()
"""The process's store: :func:`url` registers in it, :func:`routes` serves it."""


def url(key: str, compute: Callable[[], Any]) -> str:
    """The path the browser fetches the document ``compute()`` from (:meth:`Store.url`)."""
    return STORE.url(key, compute)


def _accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()


def endpoint(store: Store) -> Callable[[Request], Any]:
    """The route's handler over ``store``."""

    async def serve(request: Request) -> Response:
        d = str(request.path_params.get("digest", ""))
        found = store.entry(d) if _DIGEST.fullmatch(d) else None
        if found is None:
            return PlainTextResponse("No such frames document (the page reruns instead).", 404)
        try:
            body = await run_in_threadpool(found.encoded)
        except Exception as exc:  # any failure is one line; the page still reruns
            log.warning("frames document %s failed: %s", d, exc, exc_info=True)
            line = (
                f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
            )
            return PlainTextResponse(f"Frames document failed: {line}", 500)
        headers = {"Cache-Control": CACHE_CONTROL, "Vary": "Accept-Encoding"}
        if _accepts_gzip(request):
            headers["Content-Encoding"] = "gzip"
        else:
            body = gzip.decompress(body)
        return Response(body, media_type="application/json", headers=headers)

    return serve


def routes(store: Store | None = None) -> list[Route]:
    """The route ``app.py``'s ``st.App`` serves the documents of ``store`` (default
    :data:`STORE`) on: ``GET /_hexplorer/frames/<digest>.json``."""
    return [Route(ROUTE, endpoint(STORE if store is None else store), methods=["GET"])]


# --- The patch rule (the browser applies the same) ------------------------------------------

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?")


def _steps(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        m = _STEP.fullmatch(part)
        if m is None:
            raise ValueError(f"not a patch path: {path!r}")
        out.append(m.group(1))
        if m.group(2) is not None:
            out.append(int(m.group(2)))
    return out


def apply(figure: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the JSON figure ``figure`` with each value of ``patch`` put at its path.

    Paths: ``data[i].<prop>``, ``layout.<a>.<b>``, ``layout.<list>[j].<prop>``; a missing
    object on the way is created (a missing list item is an error: the patch is for another
    figure).

    >>> fig = {"data": [{"x": [0]}, {"x": [1]}], "layout": {"title": {"text": "a"}}}
    >>> apply(fig, {"data[1].x": [2, 3], "layout.title.text": "b", "layout.xaxis.range": [0, 1]})
    {'data': [{'x': [0]}, {'x': [2, 3]}], 'layout': {'title': {'text': 'b'}, 'xaxis': {'range': [0, 1]}}}
    """
    out: dict[str, Any] = json.loads(json.dumps(figure))
    for path, value in patch.items():
        steps = _steps(path)
        node: Any = out
        for step, after in zip(steps[:-1], steps[1:], strict=True):
            if isinstance(step, int):
                if not isinstance(node, list) or step >= len(node):
                    raise KeyError(f"{path}: no item {step}")
                node = node[step]
            else:
                if step not in node or node[step] is None:
                    node[step] = [] if isinstance(after, int) else {}
                node = node[step]
        last = steps[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise KeyError(f"{path}: no item {last}")
        node[last] = value
    return out
