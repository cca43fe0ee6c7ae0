"""An upload kept for the browser that uploaded it, so that a reload does not lose it.

A reload starts a new Streamlit session, and the session held the file. Here the server also
keeps the file, for :data:`TTL_SECONDS` after its upload, under a random token of that browser
(:data:`COOKIE`, a cookie the page sets with ``SameSite=Strict``; 256 random bits from
:mod:`secrets`). A reload of a view made on that upload (its link names the file's digest)
finds the file again through the browser's cookie; the link itself never carries the token,
so whoever only has the link (a colleague) still has to upload the same file. The store is
bounded: at most :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes, oldest dropped first, and
it lives in the server's memory only (a restart of the server forgets every file).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import streamlit as st

from core.errors import HexplorerError

COOKIE = "hexplorer_browser"
TTL_SECONDS = 3600
"""How long the server keeps an upload for its browser after the upload (one hour)."""
MAX_FILES = 16
MAX_BYTES = 1_000_000_000
TOKEN_KEY = "_browser_token"  # the token of this session's browser (cookie, or a new one)
SET_KEY = "_browser_token_set"  # the page was asked to store a new token in its cookie


@dataclass(frozen=True)
class Kept:
    name: str
    digest: str
    payload: bytes
    until: float  # time.time() after which it is gone


class Store:
    """{token: Kept}, bounded in count and bytes, each entry expiring ``ttl`` after it was put."""

    def __init__(
        self, ttl: float = TTL_SECONDS, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES
    ):
        self.ttl, self.max_files, self.max_bytes = ttl, max_files, max_bytes
        self._files: dict[str, Kept] = {}
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        for token in [t for t, k in self._files.items() if k.until <= now]:
            del self._files[token]

    def put(
        self, token: str, name: str, digest: str, payload: bytes, now: float | None = None
    ) -> Kept:
        now = time.time() if now is None else now
        kept = Kept(name=name, digest=digest, payload=payload, until=now + self.ttl)
        with self._lock:
            self._expire(now)
            self._files.pop(token, None)
            self._files[token] = kept  # newest last
            while self._files and (
                len(self._files) > self.max_files
                or sum(len(k.payload) for k in self._files.values()) > self.max_bytes
            ):
                del self._files[next(iter(self._files))]  # the oldest first
        return kept

    def get(self, token: str | None, digest_prefix: str, now: float | None = None) -> Kept | None:
        """The file kept for ``token`` if its digest starts with ``digest_prefix`` and it has
        not expired; else None."""
        if not token or not digest_prefix:
            return None
        now = time.time() if now is None else now
        with self._lock:
            self._expire(now)
            kept = self._files.get(token)
        return kept if kept is not None and kept.digest.startswith(digest_prefix) else None

    def __len__(self) -> int:
        return len(self._files)


_STORE = Store()


def store() -> Store:
    """The server's one store (shared by its sessions; each reads only its browser's token): a
    module-level object, not a cache entry, so that no cache expiry drops a file before its
    own time."""
    return _STORE


def _cookie_token() -> str | None:
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no browser context (AppTest, bare mode)
        return None
    return str(value) if value and len(str(value)) >= 32 else None


def token() -> str:
    """This browser's token: its cookie's, else a new one for :func:`set_cookie` to store."""
    ss = st.session_state
    if not ss.get(TOKEN_KEY):
        ss[TOKEN_KEY] = _cookie_token() or secrets.token_urlsafe(32)
    return str(ss[TOKEN_KEY])


def set_cookie() -> None:
    """Have the page store this session's token in its cookie (once a session, and only when
    the browser did not send it): a small script, the token written into this browser's page
    only, kept as long as the files are (``max-age``)."""
    ss = st.session_state
    if ss.get(SET_KEY) or _cookie_token() == token():
        return
    ss[SET_KEY] = True
    st.html(
        f"<script>document.cookie = '{COOKIE}={token()}; path=/; max-age={TTL_SECONDS}; "
        "SameSite=Strict';</script>",
        unsafe_allow_javascript=True,
    )


def keep(name: str, digest: str, payload: bytes) -> Kept:
    """Keep an upload for this browser (call when a new file arrives)."""
    kept = store().put(token(), name, digest, payload)
    set_cookie()
    return kept


def restore(digest_prefix: str) -> dict[str, Any] | None:
    """The upload this browser kept whose digest starts with ``digest_prefix`` (a reloaded
    link's), as the session's kept-upload dict (``state.UPLOADED``), or None."""
    from dashboard.common.source import uploads

    kept = store().get(_cookie_token(), digest_prefix)
    if kept is None:
        return None
    try:  # the session's copy, under the server's upload budget like a new upload
        uploads.put(uploads.session_token(), kept.name, kept.digest, kept.payload)
    except HexplorerError:
        return None
    return {"name": kept.name, "digest": kept.digest, "size": len(kept.payload),
            "file_id": None, "until": kept.until}  # fmt: skip


def until_text(until: float) -> str:
    """'until 11:42 UTC' for a caption."""
    return "until " + time.strftime("%H:%M UTC", time.gmtime(until))
