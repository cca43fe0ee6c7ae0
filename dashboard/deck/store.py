"""The charts of the deck's views, kept on this server for the handout.

A deck is parameters (a link); its charts are results, so they are not in session state nor in
the link: when a view is added, or shown in presenter mode, the figures its page drew in that
run (:mod:`dashboard.common.session.shown`) are kept here under the view's key (page and settings),
for every session, at most :data:`MAX_VIEWS` views (least recently used dropped). A builder of
a chart not drawn (a closed tab) is kept as such and built when the handout is written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

MAX_VIEWS = 64
_LOCK = threading.Lock()
_VIEWS: OrderedDict[str, tuple[list[tuple[str, Any]], list[str]]] = OrderedDict()


def put(key: str, figures: list[tuple[str, Any]], texts: list[str]) -> None:
    """Keep a view's figures ((key, figure or builder) pairs) and read-outs."""
    with _LOCK:
        _VIEWS[key] = (list(figures), list(texts))
        _VIEWS.move_to_end(key)
        while len(_VIEWS) > MAX_VIEWS:
            _VIEWS.popitem(last=False)


def get(key: str) -> tuple[list[tuple[str, Any]], list[str]] | None:
    """A view's figures and read-outs, or None when this server has not shown it."""
    with _LOCK:
        if key not in _VIEWS:
            return None
        _VIEWS.move_to_end(key)
        figures, texts = _VIEWS[key]
        return list(figures), list(texts)


def clear() -> None:
    """Forget every view (tests)."""
    with _LOCK:
        _VIEWS.clear()
