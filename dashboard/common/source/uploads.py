"""Uploaded files kept on the server: one store for every session, under one memory budget.

Each file's memory is bounded by :func:`limits.memory_budget_mb`; this bounds their sum: the
uploads all sessions keep are counted by the memory reading them would need
(``core.data.io.estimate_memory``), and an upload that would take the total past
:func:`limits.uploads_budget_mb` is refused with one line. A session's upload unused for
:data:`limits.UPLOAD_IDLE_S` is released (at the next upload or read of any session), together
with Streamlit's own copy of that session's uploader files, so a visitor who walks away does
not hold the server's memory; coming back, they are asked to upload it again.

The store is process-wide (a dict under a lock): Streamlit runs every session in one process.
Session state keeps only the file's name, digest and size (``state.UPLOADED``); pages read the
bytes here through :func:`payload`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from core.data.io import _format_from, estimate_memory
from core.errors import HexplorerError
from dashboard.common.source import limits

UPLOAD_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".parq")
"""What the uploader accepts (checked here, so another name is one line, not an exception)."""


@dataclass
class _Entry:
    name: str
    digest: str
    payload: bytes
    need: int  # estimated bytes of memory once read
    last: float  # time.monotonic() of the last use


_lock = threading.Lock()
_store: dict[tuple[str, str], _Entry] = {}  # (session, digest): the uploader's and the applied


def check_name(name: str) -> None:
    """Refuse, in one line, a file name the app does not read (``.csv.gz``, no extension).

    >>> check_name("ships.csv")
    >>> check_name("ships")
    Traceback (most recent call last):
    ...
    core.errors.HexplorerError: 'ships' has no file extension: upload a .csv, .tsv, .txt, .parquet, .pq or .parq file.
    """
    lowered = name.strip().lower()
    if lowered.endswith(UPLOAD_SUFFIXES):
        return
    from core.data.io import _check_not_compressed

    _check_not_compressed(name)  # '.csv.gz is compressed: decompress it first'
    shown = ", ".join(UPLOAD_SUFFIXES[:-1]) + " or " + UPLOAD_SUFFIXES[-1]
    if "." not in lowered.rsplit("/", 1)[-1]:
        raise HexplorerError(f"'{name}' has no file extension: upload a {shown} file.")
    raise HexplorerError(
        f"'{name}' is not a CSV or Parquet file by its name: upload a {shown} file."
    )


def need_of(name: str, payload: bytes) -> int:
    """Estimated bytes of memory reading the file needs (its size if the estimate fails)."""
    chosen = _format_from(name) or ("parquet" if payload[:4] == b"PAR1" else "csv")
    try:
        return max(estimate_memory(payload, chosen), len(payload))
    except Exception:  # noqa: BLE001 - an unreadable footer: reading it reports why
        return len(payload)


def put(
    token: str,
    name: str,
    digest: str,
    payload: bytes,
    *,
    keep: tuple[str, ...] = (),
    now: float | None = None,
) -> None:
    """Keep ``payload`` as an upload of session ``token``, dropping the session's others but
    those whose digest is in ``keep`` (the data in use), or raise :class:`HexplorerError` if
    the uploads of all sessions would pass the budget."""
    now = time.monotonic() if now is None else now
    need = need_of(name, payload)
    budget = limits.uploads_budget_mb() * 2**20
    with _lock:
        _release_idle(now)
        kept = {(token, d) for d in keep}
        others = sum(
            e.need
            for key, e in _store.items()
            if key != (token, digest) and (key[0] != token or key in kept)
        )
        if others + need > budget:
            raise HexplorerError(
                f"The server is busy: its visitors' uploads already take about "
                f"{_mb(others)} of the {_mb(budget)} it keeps for uploads, and '{name}' would "
                f"need about {_mb(need)} once read. Try again later (uploads unused for "
                f"{limits.UPLOAD_IDLE_S // 60} minutes are released) or use a smaller file."
            )
        for key in [k for k in _store if k[0] == token and k not in kept]:
            del _store[key]
        _store[(token, digest)] = _Entry(
            name=name, digest=digest, payload=payload, need=need, last=now
        )


def payload(token: str, digest: str, *, now: float | None = None) -> bytes | None:
    """The bytes session ``token`` uploaded with this digest, or None once released."""
    now = time.monotonic() if now is None else now
    with _lock:
        _release_idle(now)
        entry = _store.get((token, digest))
        if entry is None:
            return None
        entry.last = now
        return entry.payload


def by_digest(digest: str, *, now: float | None = None) -> bytes | None:
    """The bytes of any kept upload with this content digest (what cached functions read:
    the same content whichever session uploaded it), or None once released."""
    now = time.monotonic() if now is None else now
    with _lock:
        _release_idle(now)
        for entry in _store.values():
            if entry.digest == digest:
                entry.last = now
                return entry.payload
    return None


def released_message(name: str) -> str:
    """What a visitor whose upload was released reads."""
    return (
        f"The upload '{name}' was released after {limits.UPLOAD_IDLE_S // 60} minutes unused "
        "(the server's memory is shared by its visitors): upload it again."
    )


def drop(token: str, *, keep: tuple[str, ...] = ()) -> None:
    """Forget session ``token``'s uploads but those whose digest is in ``keep``."""
    with _lock:
        for key in [k for k in _store if k[0] == token and k[1] not in keep]:
            del _store[key]


def held_bytes() -> int:
    """Estimated memory of every upload kept now."""
    with _lock:
        return sum(e.need for e in _store.values())


def _release_idle(now: float) -> None:
    """Drop uploads unused for :data:`limits.UPLOAD_IDLE_S` (call with the lock held)."""
    idle = [key for key, e in _store.items() if now - e.last > limits.UPLOAD_IDLE_S]
    for key in idle:
        del _store[key]
    for session in {key[0] for key in idle} - {key[0] for key in _store}:
        _release_streamlit_copy(session)


def _release_streamlit_copy(session_id: str) -> None:
    """Streamlit keeps the uploader's files of a session until it ends: drop them too."""
    try:
        from streamlit import runtime

        if runtime.exists():
            runtime.get_instance().uploaded_file_mgr.remove_session_files(session_id)
    except Exception as exc:  # noqa: BLE001 - an internal API: the store's copy is gone anyway
        logging.getLogger(__name__).warning("could not release uploader files: %s", exc)


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def session_token() -> str:
    """This session's key in the server's upload store (Streamlit's session id, whose
    uploader files the store releases with it)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"
