"""The browser's code served from memory (dashboard.server.statics.StaticCache, app.py's
middleware)."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from dashboard.server import statics


def _get(cache: statics.StaticCache, path: str, **headers: str) -> tuple[list[dict], int]:
    """The messages ``cache`` sends for a request, and how many reached the app behind it."""
    behind = []

    async def app(scope, receive, send):
        behind.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"from the app"})

    cache.app = app
    sent: list[dict] = []

    async def receive():  # pragma: no cover - never read
        return {"type": "http.request"}

    async def send(message):
        sent.append(message)

    method = headers.pop("method", "GET")
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(cache.__call__(scope, receive, send))
    return sent, len(behind)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "index.abc123.js").write_text("console.log('hexplorer');\n" * 200)
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "font.woff2").write_bytes(bytes(range(256)) * 4)
    (tmp_path.parent / "secret.txt").write_text("not served")
    return tmp_path


def test_a_static_file_is_read_once_and_sent_gzipped_when_accepted(folder, monkeypatch):
    cache = statics.StaticCache(lambda *a: None, static=folder)
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    file = folder / "js" / "index.abc123.js"
    sent, behind = _get(cache, "/static/js/index.abc123.js", accept_encoding="gzip, br")
    start, body = sent
    headers = dict(start["headers"])
    assert behind == 0 and start["status"] == 200
    assert headers[b"content-encoding"] == b"gzip"
    assert headers[b"cache-control"] == statics.STATIC_CACHE_CONTROL.encode()
    assert headers[b"content-type"].endswith(b"javascript; charset=utf-8")
    assert gzip.decompress(body["body"]) == real(file)
    assert int(headers[b"content-length"]) == len(body["body"]) < file.stat().st_size
    sent, _ = _get(cache, "/static/js/index.abc123.js")  # no gzip accepted: the file as it is
    assert sent[1]["body"] == real(file) and b"content-encoding" not in dict(sent[0]["headers"])
    sent, _ = _get(cache, "/static/js/index.abc123.js", method="HEAD")
    assert sent[1]["body"] == b""
    assert reads == [file]  # once for all three


def test_a_class_asking_at_once_gets_one_read(folder, monkeypatch):
    cache = statics.StaticCache(lambda *a: None, static=folder)
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    sent: list[list[dict]] = [[] for _ in range(30)]

    async def visit(i: int) -> None:
        async def send(message):
            sent[i].append(message)

        scope = {"type": "http", "method": "GET", "path": "/static/js/index.abc123.js"}
        await cache(scope | {"headers": [(b"accept-encoding", b"gzip")]}, None, send)

    async def class_joins() -> None:
        await asyncio.gather(*(visit(i) for i in range(30)))

    asyncio.run(class_joins())
    assert len(reads) == 1
    assert all(len(s) == 2 and s[1]["body"] == sent[0][1]["body"] for s in sent)


def test_a_font_is_sent_as_it_is(folder):
    cache = statics.StaticCache(lambda *a: None, static=folder)
    sent, _ = _get(cache, "/static/media/font.woff2", accept_encoding="gzip")
    assert sent[1]["body"] == (folder / "media" / "font.woff2").read_bytes()
    assert b"content-encoding" not in dict(sent[0]["headers"])


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/static/js/missing.js", {}),
        ("/static/../secret.txt", {}),
        ("/static/js/../../secret.txt", {}),
        ("/static//js/index.abc123.js", {}),
        ("/static/js/index.abc123.js", {"range": "bytes=0-10"}),
        ("/static/js/index.abc123.js", {"method": "POST"}),
        ("/", {}),
        ("/one_hexagon", {}),
    ],
)
def test_anything_else_goes_to_streamlit(folder, path, headers):
    cache = statics.StaticCache(lambda *a: None, static=folder)
    sent, behind = _get(cache, path, **headers)
    assert behind == 1 and sent[1]["body"] == b"from the app"


def test_a_route_of_its_own_is_served_with_its_header(folder):
    file = folder / "js" / "index.abc123.js"
    cache = statics.StaticCache(
        lambda *a: None, routes={"/_x/plotly.js": lambda: (file, "max-age=5")}, static=folder
    )
    sent, behind = _get(cache, "/_x/plotly.js")
    assert behind == 0 and sent[1]["body"] == file.read_bytes()
    assert dict(sent[0]["headers"])[b"cache-control"] == b"max-age=5"


def test_a_route_of_made_bytes_is_served_gzipped_as_javascript(folder):
    made = b"export default () => 1;\n" * 200
    cache = statics.StaticCache(
        lambda *a: None, routes={"/_x/made-1.js": lambda: (made, "immutable")}, static=folder
    )
    sent, behind = _get(cache, "/_x/made-1.js", **{"accept-encoding": "gzip"})
    headers = dict(sent[0]["headers"])
    assert behind == 0 and gzip.decompress(sent[1]["body"]) == made
    assert headers[b"content-type"].startswith(b"text/javascript")
    assert headers[b"cache-control"] == b"immutable" and headers[b"content-encoding"] == b"gzip"


def test_the_app_serves_streamlits_files_and_plotly_from_memory():
    import ast

    tree = ast.parse((Path(__file__).resolve().parents[3] / "app.py").read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "StaticCache" in names
    assert statics.streamlit_static().is_dir()


def test_the_mirror_for_nginx_is_the_folders_files_and_their_gzipped_copies(
    folder, tmp_path_factory
):
    """``mirror`` (deploy/class.sh's nginx serves it): a link to every file, byte for byte, and a
    gzipped copy of each compressible one beside it; made again only for another folder."""
    dest = tmp_path_factory.mktemp("run") / "www"
    assert statics.mirror(dest, folder) == 2
    js, font = dest / "static" / "js" / "index.abc123.js", dest / "static" / "media" / "font.woff2"
    assert js.read_bytes() == (folder / "js" / "index.abc123.js").read_bytes()
    assert font.read_bytes() == (folder / "media" / "font.woff2").read_bytes()
    assert gzip.decompress(js.with_name(js.name + ".gz").read_bytes()) == js.read_bytes()
    assert not font.with_name(font.name + ".gz").exists()  # fonts do not compress
    assert not (dest / "static" / "secret.txt").exists()
    stamp = (dest / ".source").stat().st_mtime_ns
    assert statics.mirror(dest, folder) == 2 and (dest / ".source").stat().st_mtime_ns == stamp
    other = tmp_path_factory.mktemp("other")
    (other / "css").mkdir(parents=True)
    (other / "css" / "a.css").write_text("body { color: red }\n" * 50)
    assert statics.mirror(dest, other) == 1  # another Streamlit: made again, the old files gone
    assert sorted(p.name for p in (dest / "static").rglob("*") if p.is_file()) == [
        "a.css",
        "a.css.gz",
    ]
