"""Nagle's algorithm off for the server's connections (dashboard.server.nodelay, app.py's
lifespan): a connection accepted through asyncio from a socket bound as Streamlit binds it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.server import nodelay

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not any(Path(folder).is_dir() for folder in nodelay.FD_FOLDERS),
    reason="no list of open file descriptors on this platform",
)


@contextlib.contextmanager
def streamlit_like_listener() -> Iterator[socket.socket]:
    """A listening socket made as Streamlit 1.67 makes it: ``socket.socket(family)``, whose
    protocol number reads 0, so asyncio leaves Nagle's algorithm on for its connections."""
    sock = socket.socket(socket.AF_INET)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def accepted_nodelay(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection an asyncio server accepts from ``listener`` (as uvicorn's)."""

    async def serve() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Report(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Report, sock=listener)
        _reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        value = await asyncio.wait_for(seen, 10)
        writer.close()
        server.close()
        return value

    return asyncio.run(serve())


def test_without_it_asyncio_leaves_nagle_on_for_streamlits_socket():
    """The defect itself, so the next test shows a change (on a platform where asyncio fixed
    it, this test fails and the module can go)."""
    with streamlit_like_listener() as listener:
        assert listener.proto == 0
        assert accepted_nodelay(listener) == 0


def test_enable_turns_nagle_off_for_connections_accepted_afterwards():
    with streamlit_like_listener() as listener:
        assert nodelay.enable() >= 1
        # the server's own socket is still open and listening (only a duplicate was closed)
        assert listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        assert accepted_nodelay(listener) != 0


def test_enable_leaves_other_sockets_alone():
    """Only listening TCP sockets: a UDP socket and a connected one keep their options."""
    with streamlit_like_listener() as listener:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client = socket.create_connection(listener.getsockname()[:2])
        try:
            before = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            nodelay.enable()
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == before == 0
            assert udp.fileno() >= 0 and client.fileno() >= 0
        finally:
            udp.close()
            client.close()


def test_enable_leaves_no_descriptor_open():
    """Each duplicate it makes is closed again, sockets or not (a pipe, a file)."""
    read, write = os.pipe()
    try:
        with streamlit_like_listener(), open(__file__, "rb"):
            before = nodelay._descriptors()
            nodelay.enable()
            assert nodelay._descriptors() == before
    finally:
        os.close(read)
        os.close(write)


def test_lifespan_enables_before_the_inner_lifespan_runs():
    order: list[str] = []

    @contextlib.asynccontextmanager
    async def inner(_app):
        order.append("inner")
        yield
        order.append("inner done")

    async def serve(listener: socket.socket) -> None:
        async with nodelay.lifespan(inner)(None):
            order.append("serving")
            nodelay_now = listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            order.append(f"nodelay {bool(nodelay_now)}")

    with streamlit_like_listener() as listener:
        asyncio.run(serve(listener))
    assert order == ["inner", "serving", "nodelay True", "inner done"]


def test_app_py_serves_with_nagle_off():
    """``app.py``'s ``st.App`` lifespan, run in a fresh interpreter (importing app.py changes
    process-wide state): a connection accepted after it starts has TCP_NODELAY."""
    script = textwrap.dedent(
        """
        import asyncio, socket, sys
        sys.path.insert(0, sys.argv[1])
        sys.path.insert(0, sys.argv[2])
        from dashboard.server import warmup
        warmup.warm = lambda: None  # the demo city is not what this checks
        import app
        from test_nodelay import accepted_nodelay, streamlit_like_listener

        async def start():
            async with app.app._user_lifespan(app.app):
                pass

        with streamlit_like_listener() as listener:
            asyncio.run(start())
            print(accepted_nodelay(listener))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT), str(Path(__file__).parent)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] != "0"
