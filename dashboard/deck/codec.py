"""A demo deck as data: views (a page, its settings, a title, a note) and their two forms.

- the link form: compact JSON, zlib-compressed, base64url without padding (``?deck=…``);
- the file form: indented JSON (``dp-hexplorer-deck.json``).

No Streamlit here: both forms are tested as data. Bad input (broken base64 or JSON, an unknown
page, a missing title, too many views) raises :class:`~core.errors.HexplorerError` with one line.
A view's settings are the page's query parameters (``dashboard.common.session.url``), kept as strings;
the page checks them when the view opens, as it checks any link.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.errors import HexplorerError

FORMAT = 1
MAX_VIEWS = 40
MAX_TITLE = 120
MAX_NOTE = 300
MAX_PARAM = 400
MAX_LINK = 16_000  # characters of a deck code
MAX_JSON = 1 << 20  # bytes of a deck's JSON once inflated


@dataclass(frozen=True, kw_only=True)
class View:
    """One view of a deck: ``page`` (the page's name, e.g. ``one_hexagon``), its query
    parameters, a title and a one-line note."""

    page: str
    params: Mapping[str, str] = field(default_factory=dict)
    title: str = ""
    note: str = ""

    def key(self) -> str:
        """What identifies the view's content: the page and its settings (not the words)."""
        text = json.dumps([self.page, sorted(self.params.items())], ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def as_dict(self) -> dict:
        return {"page": self.page, "params": dict(self.params), "title": self.title,
                "note": self.note}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Deck:
    """The views, in order."""

    views: tuple[View, ...] = ()

    def as_dict(self) -> dict:
        return {"format": FORMAT, "views": [v.as_dict() for v in self.views]}


def _text(value, name: str, limit: int, i: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HexplorerError(f"View {i}: '{name}' must be text. Got {type(value).__name__}.")
    value = " ".join(value.split())  # one line
    if len(value) > limit:
        raise HexplorerError(f"View {i}: '{name}' is longer than {limit} characters.")
    return value


def from_dict(data, pages: Iterable[str]) -> Deck:
    """A deck from its plain form, checked against the app's ``pages`` (their names)."""
    known = set(pages)
    if not isinstance(data, dict) or not isinstance(data.get("views"), list):
        raise HexplorerError("This is not a dp-hexplorer deck: no list of 'views'.")
    if data.get("format", FORMAT) != FORMAT:
        raise HexplorerError(
            f"Deck format {data.get('format')!r} is not supported (only {FORMAT})."
        )
    raw = data["views"]
    if len(raw) > MAX_VIEWS:
        raise HexplorerError(f"A deck holds at most {MAX_VIEWS} views. Got {len(raw)}.")
    views = []
    for i, v in enumerate(raw, start=1):
        if not isinstance(v, dict):
            raise HexplorerError(f"View {i} is not an object with page, params, title and note.")
        page = v.get("page")
        if page not in known:
            raise HexplorerError(
                f"View {i}: unknown page {page!r} (pages: {', '.join(sorted(known))})."
            )
        params = v.get("params") or {}
        if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(x, str) and len(x) <= MAX_PARAM
            for k, x in params.items()
        ):
            raise HexplorerError(f"View {i}: 'params' must map names to short texts.")
        title = _text(v.get("title"), "title", MAX_TITLE, i) or str(page)
        views.append(View(page=page, params=dict(params), title=title,
                          note=_text(v.get("note"), "note", MAX_NOTE, i)))  # fmt: skip
    return Deck(views=tuple(views))


def to_json(deck: Deck) -> str:
    """The file form (indented JSON)."""
    return json.dumps(deck.as_dict(), ensure_ascii=False, indent=2)


def from_json(text: str | bytes, pages: Iterable[str]) -> Deck:
    """A deck from its file form."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HexplorerError(f"The deck file is not valid JSON ({exc}).") from None
    return from_dict(data, pages)


def encode(deck: Deck) -> str:
    """The link form: compact JSON, zlib, base64url without padding.

    >>> d = Deck(views=(View(page="one_hexagon", params={"eps": "0.5"}, title="T"),))
    >>> decode(encode(d), ["one_hexagon"]) == d
    True
    """
    text = json.dumps(deck.as_dict(), ensure_ascii=False, separators=(",", ":"))
    packed = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode(code: str, pages: Iterable[str]) -> Deck:
    """A deck from its link form (or a whole link holding ``deck=…``)."""
    code = str(code).strip()
    if "deck=" in code:
        code = code.split("deck=", 1)[1].split("&", 1)[0]
    if not code or len(code) > MAX_LINK:
        raise HexplorerError("The deck link is empty or too long.")
    inflate = zlib.decompressobj()
    try:
        packed = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        text = inflate.decompress(packed, MAX_JSON).decode("utf-8")
    except (binascii.Error, ValueError, zlib.error, UnicodeDecodeError):
        raise HexplorerError(
            "The deck link is broken (it does not decode): copy it again."
        ) from None
    if inflate.unconsumed_tail:
        raise HexplorerError("The deck link holds more than a deck can (too large).")
    try:
        data = json.loads(text)
    except ValueError:
        raise HexplorerError("The deck link is broken (its content is not JSON).") from None
    return from_dict(data, pages)
