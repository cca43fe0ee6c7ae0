"""The page links the map's code (dashboard.server.prefetch.ModulePreload, app.py's middleware)."""

from __future__ import annotations

import ast
import asyncio
import gzip
from pathlib import Path

import pytest
import streamlit as st

from dashboard.server import prefetch

ROOT = Path(__file__).resolve().parents[3]

PAGE = b"<!DOCTYPE html><html><head><title>Streamlit</title></head><body></body></html>"


def _serve(
    scope: dict, content_type: bytes, chunks: list[bytes], encoding: bytes | None = None
) -> list[dict]:
    """Run the middleware around an app that answers with ``chunks``; the messages sent."""

    async def app(scope, receive, send):
        headers = [
            (b"content-type", content_type),
            (b"content-length", str(sum(map(len, chunks))).encode()),
            (b"etag", b'"x"'),
        ]
        if encoding is not None:
            headers.append((b"content-encoding", encoding))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for i, chunk in enumerate(chunks):
            await send(
                {"type": "http.response.body", "body": chunk, "more_body": i < len(chunks) - 1}
            )

    sent: list[dict] = []

    async def receive():  # pragma: no cover - the apps here never read
        return {"type": "http.request"}

    async def send(message):
        sent.append(message)

    asyncio.run(prefetch.ModulePreload(app)(scope, receive, send))
    return sent


def _body(sent: list[dict]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _expected(names: tuple[str, ...]) -> bytes:
    styles = "".join(
        f'<link rel="stylesheet" href="./static/css/{name}" />' for name in prefetch.style_names()
    )
    return PAGE.replace(b"<head>", b"<head>" + prefetch.links(names)).replace(
        b"</head>", styles.encode() + prefetch.early_run(names[0]) + b"</head>"
    )


def _app_pages() -> list[tuple[str, str, str, str]]:
    """app.py's PAGES (page file, URL path, title, icon), read without importing app.py."""
    tree = ast.parse((ROOT / "app.py").read_text())
    (pages,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PAGES"
    ]
    return pages


def test_the_page_gets_the_links_after_its_head_with_its_length():
    names = prefetch.chunk_names()
    assert names[0].startswith("DeckGlJsonChart.") and names[1].startswith("webgl-device.")
    assert len(names) > len(prefetch.CHUNKS)  # and the modules they import
    (style,) = prefetch.style_names()
    assert style.startswith("DeckGlJsonChart.") and style.endswith(".css")
    sent = _serve(
        {"type": "http", "method": "GET"}, b"text/html; charset=utf-8", [PAGE[:30], PAGE[30:]]
    )
    body = _body(sent)
    assert body == _expected(names)
    assert body.index(b'rel="stylesheet" href="./static/css/DeckGlJsonChart.') > body.index(
        b"<title>"
    )  # after the page's own head
    for name in names:
        link = f'<link rel="modulepreload" fetchpriority="low" href="./static/js/{name}" />'
        assert link.encode() in body
    headers = dict(sent[0]["headers"])
    assert int(headers[b"content-length"]) == len(body) and headers[b"etag"] == b'"x"'
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]


def test_a_gzipped_page_is_read_and_sent_uncompressed():
    packed = gzip.compress(PAGE)
    sent = _serve(
        {"type": "http", "method": "GET"}, b"text/html", [packed[:10], packed[10:]], b"gzip"
    )
    body = _body(sent)
    assert body == _expected(prefetch.chunk_names())
    headers = dict(sent[0]["headers"])
    assert b"content-encoding" not in headers and int(headers[b"content-length"]) == len(body)
    brotli = _serve({"type": "http", "method": "GET"}, b"text/html", [b"\x1b\x00"], b"br")
    assert _body(brotli) == b"\x1b\x00"  # an encoding it does not read: untouched


def test_everything_else_passes_untouched():
    script = b"export const x = 1; // <head>"
    for scope, kind in [
        ({"type": "http", "method": "GET"}, b"application/javascript"),
        ({"type": "http", "method": "POST"}, b"text/html"),
    ]:
        sent = _serve(scope, kind, [script])
        assert _body(sent) == script
        assert dict(sent[0]["headers"])[b"content-length"] == str(len(script)).encode()


def test_a_downloaded_html_file_is_untouched():
    """st.download_button's files are served under /media/: a report or a deck's handout must
    not get links to the app's modules (offline they are requests that fail)."""
    if not prefetch.chunk_names():
        pytest.skip("this Streamlit build has no map module to link")
    sent = _serve(
        {"type": "http", "method": "GET", "path": "/media/abc.html"}, b"text/html", [PAGE]
    )
    assert _body(sent) == PAGE


def test_a_page_without_head_or_without_modules_is_unchanged():
    assert prefetch.with_links(b"<html><body></body></html>", ("a.js",)) == (
        b"<html><body></body></html>"
    )
    assert prefetch.with_links(PAGE, ()) == PAGE


def test_the_modules_imported_are_followed_once_leaving_out_those_the_page_links(tmp_path):
    (tmp_path / "a.js").write_text('import{x}from"./b.js";import"./c.js";export const a=1;')
    (tmp_path / "b.js").write_text('import{y}from"./d.js";import{z}from "./a.js";')
    (tmp_path / "c.js").write_text('import"./e.js";')  # linked by the page: not followed
    (tmp_path / "d.js").write_text("export const y=1;")
    assert prefetch._imported(tmp_path, ["a.js", "missing.js"], {"c.js"}) == [
        "a.js",
        "b.js",
        "d.js",
    ]


def test_the_maps_module_runs_early_after_streamlits_entry_module_on_the_map_pages():
    """On Streamlit's own page: the early run is a module script after Streamlit's entry
    module (module scripts run in the page's order), importing the map's module."""
    page = (Path(st.__file__).parent / "static" / "index.html").read_bytes()
    names = prefetch.chunk_names()
    served = prefetch.with_links(page, names, prefetch.style_names())
    early = prefetch.early_run(names[0])
    entry = served.index(b'<script type="module" crossorigin src="./static/js/index.')
    assert served.count(early) == 1 and served.index(early) > entry
    assert served.index(early) < served.index(b"</head>")
    assert f'import("./static/js/{names[0]}")'.encode() in early
    assert early.startswith(b'<script type="module">') and early.endswith(b"</script>")


def test_the_map_pages_are_the_apps_default_page_and_whole_city():
    """:data:`MAP_PAGES` names the URL paths of app.py's Map (its default page, served at the
    root, and at its own path) and Whole city (read from app.py's PAGES without importing it)."""
    paths = {title: url_path for _path, url_path, title, _icon in _app_pages()}
    assert paths["Map"] == "hexagon_map"  # the default page (app.py), served at the root: ""
    assert prefetch.MAP_PAGES == ("", paths["Map"], paths["Whole city"])


def test_only_the_pages_that_open_with_a_map_get_the_links():
    """A shared link to One hexagon (or the course, ...) gets Streamlit's page as it is, still
    gzipped: the map's modules there cost the browser without helping. The Map (at the root
    and at its own path) and Whole city keep them."""
    packed = gzip.compress(PAGE)
    for path in ("/one_hexagon", "/course", "/data", "/lesson", "/deck", "/one_hexagon/"):
        scope = {"type": "http", "method": "GET", "path": path, "query_string": b"eps=1.5"}
        sent = _serve(scope, b"text/html", [packed], b"gzip")
        assert _body(sent) == packed, path
        assert dict(sent[0]["headers"])[b"content-encoding"] == b"gzip"
    for path in ("/", "", "/hexagon_map", "/city", "/city/"):
        sent = _serve(
            {"type": "http", "method": "GET", "path": path}, b"text/html", [packed], b"gzip"
        )
        assert _body(sent) == _expected(prefetch.chunk_names()), path


def test_the_page_is_told_by_its_path_without_the_apps_prefix(monkeypatch):
    assert prefetch.page_of({"path": "/"}) == prefetch.page_of({}) == ""
    assert prefetch.page_of({"path": "/one_hexagon"}) == "one_hexagon"
    mounted = {"path": "/hexplorer/one_hexagon", "root_path": "/hexplorer"}
    assert prefetch.page_of(mounted) == "one_hexagon"
    assert prefetch.page_of({"path": "/hexplorer/", "root_path": "/hexplorer"}) == ""
    monkeypatch.setattr(prefetch.st, "get_option", {"server.baseUrlPath": "/class/app/"}.get)
    assert prefetch.page_of({"path": "/class/app"}) == ""
    assert prefetch.page_of({"path": "/class/app/city"}) == "city"
    assert prefetch.page_of({"path": "/city"}) == "city"  # not under the prefix: as it is


def test_the_map_pages_are_the_apps_pages_that_draw_a_pydeck_map():
    """Every page of app.py whose feature folder calls ``st.pydeck_chart`` is one of the
    :data:`MAP_PAGES` (and no other page is), besides the root (the default page, the Map)."""
    drawing = {
        url_path
        for path, url_path, _title, _icon in _app_pages()
        if any("pydeck_chart(" in f.read_text() for f in (ROOT / path).parent.rglob("*.py"))
    }
    assert drawing >= {"hexagon_map", "city"}
    assert set(prefetch.MAP_PAGES) == {""} | drawing
    assert [p for p in prefetch.MAP_PAGES if p] == [
        url_path for _path, url_path, _t, _i in _app_pages() if url_path in drawing
    ]  # in app.py's order
    early = prefetch.early_run(prefetch.chunk_names()[0]).decode()
    assert all(f'"{page}"' in early for page in prefetch.MAP_PAGES)
