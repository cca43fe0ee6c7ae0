"""Send every response at once: ``TCP_NODELAY`` on the server's listening sockets.

Streamlit 1.67 binds its listening socket itself (``socket.socket(family)``, so its protocol
number reads 0) and hands it to uvicorn. asyncio switches Nagle's algorithm off only for
sockets whose protocol reads ``IPPROTO_TCP``, so every connection the server accepted kept it
on. uvicorn writes a response's headers and its body separately; with Nagle on, the body of
every response after the first on a kept-alive connection waited for the browser's delayed
acknowledgement of the headers: about 40 ms each on Linux. A first page loads about a hundred
modules over Chromium's six connections, and a rerun's deltas are websocket messages written
one after another, which wait the same way. (uvicorn's own pre-bound sockets have the same
defect: uvicorn issue #3149.)

An accepted connection inherits ``TCP_NODELAY`` from its listening socket (Linux, and the
BSDs and macOS), so :func:`enable` sets it on every listening TCP socket of this process, found
among its open file descriptors, when the server starts (:func:`lifespan`, ``app.py``'s
``st.App``), before a visitor connects. Elsewhere it finds nothing and changes nothing.

Measured in Chromium on the demo city (``bench/bench_browser.py``): a kept-alive request of a
small module took 43 ms and now takes under 2 ms; the first map came about 0.25 s sooner and an
ε step of One hexagon about 35 ms sooner.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

FD_FOLDERS = ("/proc/self/fd", "/dev/fd")
"""Where this process's open file descriptors are listed (Linux, then macOS and the BSDs)."""

Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]


def _descriptors() -> list[int]:
    for folder in FD_FOLDERS:
        with contextlib.suppress(OSError):
            return sorted(int(name) for name in os.listdir(folder) if name.isdigit())
    return []


def _listening_tcp(fd: int) -> Iterator[socket.socket]:
    """A duplicate of ``fd`` if it is a listening TCP socket (closed after use)."""
    try:
        dup = os.dup(fd)
    except OSError:  # closed meanwhile
        return
    try:
        sock = socket.socket(fileno=dup)
    except OSError:  # not a socket: the duplicate is not the socket's to close
        os.close(dup)
        return
    with sock:
        try:
            listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        except OSError:
            return
        if listening and sock.family in (socket.AF_INET, socket.AF_INET6):
            if sock.type == socket.SOCK_STREAM:
                yield sock


def enable() -> int:
    """Set ``TCP_NODELAY`` on every listening TCP socket of this process; return how many.

    A duplicate descriptor shares its socket, so the option reaches the server's own socket;
    the duplicate is closed again. Connections accepted before the call are not changed.
    """
    done = 0
    for fd in _descriptors():
        for sock in _listening_tcp(fd):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                done += 1
    return done


def lifespan(inner: Lifespan) -> Lifespan:
    """An ``st.App`` lifespan: :func:`enable`, then ``inner`` (``app.py``'s warm-up)."""

    @contextlib.asynccontextmanager
    async def started(app: Any) -> AsyncIterator[None]:
        enable()
        async with inner(app):
            yield

    return started
