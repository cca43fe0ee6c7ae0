"""AppTest: what a link or an upload brings from outside stays text and one line (issue 26, item 7).

A link's values never become markdown (no live link or image in the app's own boxes); an upload
the app does not read (``.csv.gz``, no extension, repeated headers, a summaries file with broken
metadata) is one line, never Streamlit's exception block or a column prompt; uploads share one
server-wide memory budget, stated in the sidebar.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from core.data import load_demo, prepare
from dashboard.common.session import state
from dashboard.common.source import limits, uploads

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
DATA_PAGE = str(ROOT / "dashboard/data/page.py")
HOSTILE = "**[Sign in again](https://evil.example/login)** ![x](https://evil.example/i.png)"
GOOD = (
    "user_id,lat,lon,timestamp,speed\n"
    + "\n".join(
        f"u{i % 3},{21.2 + 1e-4 * i},72.8,2024-03-05 08:{10 + i:02d}:00,30" for i in range(12)
    )
    + "\n"
).encode()


def _live_markdown(text: str) -> bool:
    """Whether markdown source holds an unescaped link or image."""
    return re.search(r"(?<!\\)\]\((?!\\)", text) is not None or "](http" in text


def _plain(text: str) -> str:
    """What markdown shows for backslash-escaped text."""
    return re.sub(r"\\(.)", r"\1", text)


def test_a_links_name_and_values_are_shown_as_text_never_as_links():
    at = AppTest.from_file(APP, default_timeout=180)
    params = {"source": "upload", "file": "0123456789abcdef", "name": HOSTILE, "res": HOSTILE}
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    boxes = (
        [i.value for i in at.info] + [c.value for c in at.caption] + [m.value for m in at.markdown]
    )
    assert any("This link was made with an uploaded file" in b for b in boxes)
    assert any("Some settings of this link were ignored" in b for b in boxes)
    quoted = [b for b in boxes if "Sign in again" in b]
    assert len(quoted) >= 2  # the name and the ignored res value
    for b in quoted:
        assert not _live_markdown(b), b
        assert "Sign in again](https://evil.example/l" in _plain(b)  # shown as it is


@pytest.fixture
def data_page():
    """The Data page with a good upload in use (the store emptied around each test)."""
    uploads._store.clear()
    at = AppTest.from_file(DATA_PAGE, default_timeout=120)
    at.run()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    _upload(at, "good.csv", GOOD)
    assert not at.error, [e.value for e in at.error]
    yield at
    uploads._store.clear()


def _upload(at: AppTest, name: str, content: bytes) -> None:
    at.sidebar.file_uploader(key=state.UPLOAD).set_value((name, content, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]


def _one_error(at: AppTest) -> str:
    assert len(at.error) == 1, [e.value for e in at.error]
    message = _plain(at.error[0].value)
    assert "\n" not in message.strip()
    return message


def _summaries_bytes(metadata: bytes) -> bytes:
    table = pa.Table.from_pandas(prepare(load_demo().head(500)).summaries, preserve_index=False)
    out = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({"hexplorer.summaries": metadata}), out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("records.csv.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 40, "is compressed (.gz): decompress"),
        ("records", GOOD, "has no file extension"),
        ("dup.csv", GOOD.replace(b"speed\n", b"Speed\n", 1).replace(b"lon,", b"speed,", 1), ""),
        ("broken.parquet", _summaries_bytes(b"{not json"), "broken 'hexplorer.summaries'"),
        (
            "wrong.parquet",
            _summaries_bytes(json.dumps({"format": "hexplorer-summaries/1"}).encode()),
            "broken 'hexplorer.summaries' metadata",
        ),
    ],
)
def test_uploads_the_app_does_not_read_are_one_line(data_page, name, content, needle):
    at = data_page
    _upload(at, name, content)
    message = _one_error(at)
    if name == "dup.csv":
        needle = "repeats column names (ignoring case): 'speed', 'Speed'"
    assert needle in message and "still using **good.csv**" in message
    assert not [i.value for i in at.info if "Choose the" in i.value]  # not a column prompt


def test_the_servers_upload_budget_refuses_one_more_and_says_so(data_page, monkeypatch):
    at = data_page
    budget = limits.uploads_budget_mb()
    assert any(f"{budget:,} MB" in c.value for c in at.sidebar.caption)  # stated
    uploads.put("another-session", "big.csv", "d" * 64, b"x" * (3 * 2**20 // 2 - 1_000))
    monkeypatch.setenv(limits.UPLOADS_BUDGET_ENV, "3")  # another visitor holds nearly all of it
    other = GOOD.replace(b"u0", b"u9")
    _upload(at, "other.csv", other)
    message = _one_error(at)
    assert "The server is busy" in message and "'other.csv'" in message
    assert "still using **good.csv**" in message
    uploads.drop("another-session")
    at.run()
    assert not at.error, [e.value for e in at.error]  # room again: the upload goes in


def test_an_idle_upload_is_released_and_the_visitor_told(data_page, monkeypatch):
    at = data_page
    assert uploads.held_bytes() > 0
    monkeypatch.setattr(limits, "UPLOAD_IDLE_S", -1)  # every upload is idle now
    at.run()
    assert uploads.held_bytes() == 0
    assert any("was released after" in _plain(e.value) for e in at.error), [
        e.value for e in at.error
    ]
