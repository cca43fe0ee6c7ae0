"""The deck's two forms (link code and JSON file): round trips and one clear line on bad input;
the handout holds every view, in order, with plotly.js once."""

from __future__ import annotations

import base64
import json
import zlib

import plotly.graph_objects as go
import pytest

from core.errors import HexplorerError
from dashboard.deck import codec, handout, store

PAGES = ["hexagon_map", "one_hexagon", "course", "deck"]


def _deck() -> codec.Deck:
    return codec.Deck(
        views=(
            codec.View(page="one_hexagon", params={"eps": "0.5", "hat": "a/b"}, title="ε = ½",
                       note="Noise & clipping <b>"),
            codec.View(page="course", params={"step": "3"}, title="Step 3", note=""),
            codec.View(page="hexagon_map", params={}, title="Map", note="Where"),
        )
    )  # fmt: skip


def test_link_round_trip_is_compact():
    d = _deck()
    code = codec.encode(d)
    assert codec.decode(code, PAGES) == d
    assert codec.decode(f"http://host/deck?x=1&deck={code}&y=2", PAGES) == d
    assert set(code) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(code) < len(json.dumps(d.as_dict()))


def test_json_round_trip():
    d = _deck()
    assert codec.from_json(codec.to_json(d), PAGES) == d
    assert codec.from_json(codec.to_json(d).encode(), PAGES) == d


def _code(data) -> str:
    raw = zlib.compress(json.dumps(data).encode())
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("", "empty"),
        ("%%%not-base64%%%", "broken"),
        (base64.urlsafe_b64encode(b"plain text").decode(), "broken"),
        (base64.urlsafe_b64encode(zlib.compress(b"{not json")).decode(), "not JSON"),
        (_code({"views": [{"page": "nowhere"}]}), "unknown page 'nowhere'"),
        (_code({"views": "x"}), "not a dp-hexplorer deck"),
        (_code({"format": 9, "views": []}), "format 9"),
        (_code({"views": [{"page": "course", "params": {"a": 1}}]}), "params"),
        (_code({"views": [{"page": "course"}] * (codec.MAX_VIEWS + 1)}), "at most"),
        (_code({"views": [{"page": "course", "title": "x" * 500}]}), "longer than"),
        (base64.urlsafe_b64encode(zlib.compress(b" " * (codec.MAX_JSON + 10))).decode(), "large"),
    ],
)
def test_bad_links_are_one_clear_line(code, message):
    with pytest.raises(HexplorerError, match=message) as info:
        codec.decode(code, PAGES)
    assert "\n" not in str(info.value)


def test_bad_files_are_one_clear_line():
    with pytest.raises(HexplorerError, match="not valid JSON"):
        codec.from_json("{", PAGES)
    with pytest.raises(HexplorerError, match="unknown page"):
        codec.from_json(json.dumps({"views": [{"page": "x"}]}), PAGES)


def test_view_key_is_page_and_settings_not_words():
    a, b = _deck().views[0], codec.View(page="one_hexagon", params={"hat": "a/b", "eps": "0.5"})
    assert a.key() == b.key()
    assert a.key() != codec.View(page="one_hexagon", params={"eps": "1"}).key()


def test_handout_has_every_view_in_order_with_plotly_once():
    store.clear()
    d = _deck()
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    store.put(d.views[0].key(), [("error_curve", fig), ("histogram", lambda: fig)], ["read-out"])
    store.put(d.views[1].key(), [("course_error", fig)], [])
    page = handout.build(d, version="9.9")
    starts = [page.index(f"<h2>{i}. ") for i in (1, 2, 3)]
    assert starts == sorted(starts)
    assert "Noise &amp; clipping &lt;b&gt;" in page and "read-out" in page
    assert page.count('id="figure-') == 3 and 'id="figure-2"' in page
    assert page.count("plotly.js v") == 1  # the library once
    assert handout.MISSING in page  # the third view was never shown on this server
    store.clear()
