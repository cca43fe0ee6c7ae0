"""The server's store of uploads kept for their browser (dashboard.common.source.keep)."""

from __future__ import annotations

from dashboard.common.source.keep import Store

DIGEST = "ab" * 32


def test_a_file_is_found_by_its_token_and_digest_until_it_expires():
    s = Store(ttl=60)
    s.put("t" * 40, "a.csv", DIGEST, b"x", now=1000.0)
    assert s.get("t" * 40, DIGEST[:16], now=1059.0).name == "a.csv"
    assert s.get("u" * 40, DIGEST[:16], now=1000.0) is None  # another browser
    assert s.get(None, DIGEST[:16], now=1000.0) is None  # no cookie: the link alone
    assert s.get("t" * 40, "cd" * 8, now=1000.0) is None  # another file's link
    assert s.get("t" * 40, DIGEST[:16], now=1060.0) is None  # expired
    assert len(s) == 0


def test_the_store_is_bounded_oldest_first():
    s = Store(ttl=60, max_files=2, max_bytes=10)
    for i, token in enumerate(("a" * 40, "b" * 40, "c" * 40)):
        s.put(token, f"{i}.csv", DIGEST, b"x", now=1000.0 + i)
    assert s.get("a" * 40, DIGEST, now=1003.0) is None
    assert s.get("c" * 40, DIGEST, now=1003.0) is not None
    s.put("d" * 40, "big.csv", DIGEST, b"x" * 10, now=1004.0)  # 10 bytes: only it fits
    assert len(s) == 1 and s.get("d" * 40, DIGEST, now=1004.0) is not None
