"""Our components' scripts, served by the app under names made from their content.

Streamlit's component host hashes a component's inline script, character by character, every
time the component's data changes: for a chart, every new figure; for the ε slider, every rerun.
With the chart's 36 kB script that was 13.5 ms of a first ε step's main thread in Chromium
(``docs/benchmarks.md``, wave 18). A component made with :func:`loader` has a two-line script
instead, which imports the real one from :func:`route`: a name made from the script's content,
cached by the browser for good, compiled once. ``app.py`` serves every script registered here
(:func:`static_files` for its static cache, :func:`routes` for its ``st.App``), so a module that
registers one must be imported before the app is made.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

CACHE_CONTROL = "public, immutable, max-age=31536000"
"""A script or a library's file is named by its content: cached a year, never asked again."""

_SCRIPTS: dict[str, Callable[[], str]] = {}
_FILES: dict[str, Callable[[], Path]] = {}


def register(name: str, script: Callable[[], str]) -> None:
    """Serve ``script()`` (an ES module with a default export) as component ``name``'s script."""
    _SCRIPTS[name] = script


def register_file(name: str, file: Callable[[], Path]) -> None:
    """Serve the JavaScript file ``file()`` (a library's bundle a component loads) at
    :func:`file_route` ``(name)``."""
    _FILES[name] = file


@functools.cache
def file_route(name: str) -> str:
    """Where the file registered as ``name`` is served:
    ``/_hexplorer/<digest of its content>/<its file name>``. A new version of the library (an
    upgraded plotly package, a bundle replaced here) is a new address, so it is cached a year
    as the scripts are and a browser never runs an old bundle against a new app."""
    path = _FILES[name]()
    return f"/_hexplorer/{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}/{path.name}"


@functools.cache
def body(name: str) -> bytes:
    """The script of ``name`` as served."""
    return _SCRIPTS[name]().encode()


@functools.cache
def route(name: str) -> str:
    """Where the script of ``name`` is served: ``/_hexplorer/<name>-<digest of its content>.js``."""
    return f"/_hexplorer/{name}-{hashlib.sha256(body(name)).hexdigest()[:16]}.js"


def loader(name: str) -> str:
    """The component's own script: it imports ``name``'s script and hands it the component.
    A full URL (the host runs this script from a ``blob:`` URL, against which a path resolves
    to nothing), and two lines (Streamlit takes a script of one line for a file's path)."""
    return (
        f"// {name}: the script is served by the app (dashboard/common/view/served.py)\n"
        "export default (component) => "
        f'import(new URL("{route(name)}", document.baseURI).href)'
        ".then((m) => m.default(component));\n"
    )


def static_files() -> dict[str, Callable[[], tuple[Path | bytes, str]]]:
    """Every registered script and file as the server's static cache
    (``dashboard.server.statics``) takes them: route → (bytes or file, Cache-Control)."""

    def entry(name: str) -> Callable[[], tuple[Path | bytes, str]]:
        return lambda: (body(name), CACHE_CONTROL)

    def file_entry(file: Callable[[], Path]) -> Callable[[], tuple[Path | bytes, str]]:
        return lambda: (file(), CACHE_CONTROL)

    scripts = {route(name): entry(name) for name in _SCRIPTS}
    return {**scripts, **{file_route(n): file_entry(file) for n, file in _FILES.items()}}


def routes() -> list[Route]:
    """The routes ``app.py``'s ``st.App`` serves every registered script and file on."""

    def endpoint(name: str) -> Callable[[Request], object]:
        async def serve(request: Request) -> Response:
            return Response(
                body(name), media_type="text/javascript", headers={"Cache-Control": CACHE_CONTROL}
            )

        return serve

    def file_endpoint(file: Callable[[], Path]) -> Callable[[Request], object]:
        async def serve(request: Request) -> Response:
            return FileResponse(
                file(), media_type="text/javascript", headers={"Cache-Control": CACHE_CONTROL}
            )

        return serve

    scripts = [Route(route(name), endpoint(name)) for name in _SCRIPTS]
    return [*scripts, *(Route(file_route(n), file_endpoint(f)) for n, f in _FILES.items())]
