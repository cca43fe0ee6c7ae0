"""The components' scripts served by the app: under a name made from their content, cached for
good, the same bytes from the static cache and from the route, imported by a short loader."""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

from starlette.requests import Request

from dashboard.common.view import liveplot, served, slider

ROOT = Path(__file__).resolve().parents[4]


def test_the_chart_and_the_slider_scripts_are_served_by_their_content():
    scripts = {"liveplot": liveplot.script(), "slider": slider.JS}
    cached = served.static_files()
    routes = {r.path: r for r in served.routes()}
    for name, text in scripts.items():
        body = text.encode()
        route = served.route(name)
        assert served.body(name) == body and "export default function" in text
        assert route == f"/_hexplorer/{name}-{hashlib.sha256(body).hexdigest()[:16]}.js"
        assert cached[route]() == (body, served.CACHE_CONTROL)
        request = Request({"type": "http", "method": "GET", "path": route, "headers": []})
        response = asyncio.run(routes[route].endpoint(request))
        assert response.body == body and response.media_type == "text/javascript"
        assert response.headers["cache-control"] == served.CACHE_CONTROL == cached[route]()[1]
    assert liveplot.script().startswith((liveplot.STATIC / "liteplot.js").read_text())


def test_a_loader_imports_its_script_by_a_full_url_in_two_lines():
    for name in ("liveplot", "slider"):
        loader = served.loader(name)
        assert f'import(new URL("{served.route(name)}", document.baseURI).href)' in loader
        assert loader.count("\n") == 2 and len(loader) < 300  # one line: taken for a path


def test_an_app_that_serves_the_charts_serves_every_registered_script():
    """``app.py`` and the tests' small app serve ``liveplot``'s routes and cache; both import
    the slider first, so its script is among them."""
    cached = liveplot.static_files()
    paths = {r.path for r in liveplot.routes()}
    for name in ("liveplot", "slider"):
        assert served.route(name) in cached and served.route(name) in paths
    for app in ("app.py", "tests/app/frames_app.py"):
        text = (ROOT / app).read_text()
        assert re.search(r"from dashboard\.common\.view import [^\n]*\bslider\b", text), app
        assert "liveplot.routes()" in text, app


def test_a_library_file_is_served_under_its_content_so_a_new_version_is_a_new_address(tmp_path):
    """An upgraded plotly package, or a bundle replaced in the repository, must not be taken
    from a browser's cache of the old one: the address holds the digest of the file."""
    bundle = tmp_path / "lib.min.js"
    bundle.write_text("// version 1\n")
    served.register_file("test-lib", lambda: bundle)
    try:
        first = served.file_route("test-lib")
        digest = hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]
        assert first == f"/_hexplorer/{digest}/lib.min.js"
        assert served.static_files()[first]() == (bundle, served.CACHE_CONTROL)
        assert first in {r.path for r in served.routes()}
        bundle.write_text("// version 2\n")
        served.file_route.cache_clear()
        assert served.file_route("test-lib") not in (first, None)
    finally:
        served._FILES.pop("test-lib")
        served.file_route.cache_clear()
    for name in liveplot.FILES:  # the chart's bundles: each under its own content
        route = served.file_route(name)
        digest = hashlib.sha256(liveplot.FILES[name]().read_bytes()).hexdigest()[:16]
        assert route == f"/_hexplorer/{digest}/{liveplot.FILES[name]().name}"
        assert route in liveplot.script()
