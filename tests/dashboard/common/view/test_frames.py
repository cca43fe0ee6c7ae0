"""The frames store and its route: lazily computed, bounded, one compute per document, served
through starlette (``dashboard.common.view.frames``)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from dashboard.common.view import frames

ROOT = Path(__file__).resolve().parents[4]


def _client(store: frames.Store) -> TestClient:
    return TestClient(Starlette(routes=frames.routes(store)))


def test_url_registers_and_computes_nothing():
    store = frames.Store()
    calls = []
    path = store.url("view 1", lambda: calls.append(1) or {"a": 1})
    assert path == f"/_hexplorer/frames/{frames.digest('view 1')}.json"
    assert len(frames.digest("view 1")) == 24
    assert calls == []  # the script run pays nothing
    assert store.url("view 1", lambda: {"other": 1}) == path  # same key, same document


def test_first_get_computes_once_and_keeps_the_bytes():
    store = frames.Store()
    calls = []
    path = store.url("k", lambda: calls.append(1) or {"stops": [0.5, 1.0], "t": "ε = 0.5"})
    with _client(store) as client:
        first = client.get(path)
        second = client.get(path, headers={"Accept-Encoding": "identity"})
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == {"stops": [0.5, 1.0], "t": "ε = 0.5"}
    assert first.headers["cache-control"] == "private, max-age=3600"
    assert first.headers["content-type"] == "application/json"
    assert first.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in second.headers  # a client without gzip gets plain JSON
    assert second.content == b'{"stops":[0.5,1.0],"t":"\xce\xb5 = 0.5"}'  # compact
    assert calls == [1]


def test_unknown_digest_is_404_with_one_line():
    store = frames.Store()
    with _client(store) as client:
        for path in (
            f"/_hexplorer/frames/{frames.digest('never')}.json",
            "/_hexplorer/frames/x.json",
        ):
            r = client.get(path)
            assert r.status_code == 404
            assert r.text.count("\n") == 0 and "reruns" in r.text


def test_the_store_is_bounded_least_recently_used_first_out():
    store = frames.Store(max_documents=2)
    a = store.url("a", lambda: {"n": "a"})
    b = store.url("b", lambda: {"n": "b"})
    with _client(store) as client:
        assert client.get(a).status_code == 200  # a is now the most recently used
        c = store.url("c", lambda: {"n": "c"})  # b goes
        assert len(store) == 2
        assert client.get(b).status_code == 404
        assert client.get(a).json() == {"n": "a"}
        assert client.get(c).json() == {"n": "c"}
    with pytest.raises(ValueError, match="max_documents"):
        frames.Store(max_documents=0)


def test_entries_expire_with_the_caches_and_drop_their_inputs_once_computed():
    now = [0.0]
    store = frames.Store(ttl_s=10, clock=lambda: now[0])
    path = store.url("k", lambda: {"n": 1})
    d = path.removeprefix(frames.PREFIX).removesuffix(".json")
    with _client(store) as client:
        assert client.get(path).status_code == 200
        entry = store.entry(d)
        assert entry is not None and entry.compute is None  # computed: its inputs let go
        now[0] = 10.5
        assert client.get(path).status_code == 404  # expired, as the caches' entries do
    assert len(store) == 0
    assert store.url("k", lambda: {"n": 2}) == path and len(store) == 1  # made anew


def test_a_failed_compute_is_500_in_one_line_and_kept_nowhere(caplog):
    store = frames.Store()
    attempts = []

    def flaky() -> dict:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("no data\nsecond line")
        return {"ok": True}

    def nan() -> dict:
        return {"x": float("nan")}  # JSON cannot hold it: an error, never invalid JSON

    path, bad = store.url("flaky", flaky), store.url("nan", nan)
    with _client(store) as client:
        r = client.get(path)
        assert r.status_code == 500 and r.text == "Frames document failed: RuntimeError: no data"
        assert client.get(path).json() == {"ok": True}  # nothing was cached: tried again
        assert client.get(bad).status_code == 500
    assert attempts == [1, 1]


def test_two_gets_at_once_compute_once():
    store = frames.Store()
    calls = []
    started = threading.Event()

    def slow() -> dict:
        calls.append(1)
        started.set()
        time.sleep(0.3)  # long enough for the second GET to arrive meanwhile
        return {"n": len(calls)}

    path = store.url("slow", slow)
    out: list = []
    with _client(store) as client:

        def get() -> None:
            out.append(client.get(path).json())

        threads = [threading.Thread(target=get) for _ in range(2)]
        threads[0].start()
        started.wait(5)
        threads[1].start()
        for t in threads:
            t.join(10)
    assert out == [{"n": 1}, {"n": 1}]
    assert calls == [1]


def test_the_compute_runs_off_the_event_loop():
    """While one document computes, the server answers other requests (a blocked event loop
    would answer the 404 only after the compute)."""
    store = frames.Store()
    release = threading.Event()
    path = store.url("blocking", lambda: release.wait(10) and {"done": True})
    answered: list[float] = []
    with _client(store) as client:
        t = threading.Thread(target=lambda: answered.append(client.get(path).status_code))
        t.start()
        time.sleep(0.1)
        r = client.get(f"/_hexplorer/frames/{frames.digest('other')}.json")
        assert r.status_code == 404 and not answered  # answered while the compute still waits
        release.set()
        t.join(10)
    assert answered == [200]


def test_gzip_body_is_the_compact_json():
    entry = frames._Entry(lambda: {"a": [1, 2.5], "b": None}, made=0.0)
    assert gzip.decompress(entry.encoded()) == b'{"a":[1,2.5],"b":null}'
    assert entry.size == len(b'{"a":[1,2.5],"b":null}')
    assert json.loads(gzip.decompress(entry.encoded())) == {"a": [1, 2.5], "b": None}


def test_apply_puts_each_value_at_its_path():
    fig = {
        "data": [{"x": [0]}, {"x": {"dtype": "f8", "bdata": "AAAAAAAA8D8="}, "y": [1]}],
        "layout": {"title": {"text": "a"}, "shapes": [{"x0": 1, "x1": 1}]},
    }
    out = frames.apply(
        fig,
        {
            "data[1].x": [2.0],
            "layout.title.text": "b",
            "layout.shapes[0].x0": 3,
            "layout.xaxis.range": [0, 1],
        },
    )
    assert out["data"][1] == {"x": [2.0], "y": [1]}
    assert out["layout"]["title"]["text"] == "b" and out["layout"]["shapes"][0]["x0"] == 3
    assert out["layout"]["xaxis"] == {"range": [0, 1]}
    assert fig["layout"]["title"]["text"] == "a"  # a copy: the figure given is unchanged
    with pytest.raises(KeyError, match="no item 5"):
        frames.apply(fig, {"data[5].x": [1]})  # a patch for a figure with more traces
    with pytest.raises(ValueError, match="not a patch path"):
        frames.apply(fig, {"data[1]..x": [1]})


def test_app_py_serves_the_frames_route():
    """``app.py``'s ``st.App`` has the route (in a fresh interpreter: importing app.py changes
    process-wide state)."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import app; "
        "print([getattr(r, 'path', '') for r in app.app._user_routes])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert frames.ROUTE in done.stdout.splitlines()[-1]


def _dumps(document) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def test_encode_is_json_dumps_with_shared_lists_encoded_once():
    """``encode`` walks dicts and lists of them and encodes a list held several times once:
    the bytes are ``json.dumps``'s whatever the document's shape."""
    x = [0.1, 1e-07, 2.5e16, -0.0, 3, None, True, "ε"]
    patch = {"data[1].x": x, "data[2].x": x, "t": "Where · ±1 km/h", "n": 0.30000000000000004}
    documents = [
        {"stops": [0.01, 1.0], "charts": {"a": [patch, None, patch], "b": [None, {"k": x}]}},
        [[x, [x, {"d": [x]}]], {}, [], [None], {"e": {}}],
        {1: "an int key", "s": x},  # json's own rules for keys that are not str
        {"mixed": [1, {"a": x}, 2], "tuple": (1, 2.0), "big": 10**20},
        "ε",
        None,
    ]
    for document in documents:
        assert frames.encode(document) == _dumps(document), document
    with pytest.raises(ValueError, match="JSON compliant"):
        frames.encode({"a": [x, [float("nan")]]})
    with pytest.raises(ValueError, match="JSON compliant"):
        frames.encode({"a": [{"b": float("inf")}]})


def test_encode_encodes_a_shared_list_once(monkeypatch):
    """One hexagon's document holds each stop's x five times (one per ridge): encoded once."""
    seen = []
    dumps = frames._DUMPS
    monkeypatch.setattr(frames, "_DUMPS", lambda value: seen.append(value) or dumps(value))
    x = [0.5, 1.5]
    document = {"charts": {"a": [{f"data[{i}].x": x, f"data[{i}].y": [i]} for i in range(5)]}}
    assert frames.encode(document) == _dumps(document)
    assert sum(v is x for v in seen) == 1
