"""What the current run of a page has shown: its figures and read-outs, for the report.

``app.py`` calls :func:`reset` before a page runs; :func:`dashboard.common.view.ui.chart` records
each figure it draws (:func:`add_figure`); a page may record a plain-language read-out with
:func:`add_text`. The report (``dashboard/common/report``) then hands out exactly what was on
screen.

Kept per script thread for one run only (Streamlit runs each session's script on its own thread),
never in session state: these are results, not parameters.
"""

from __future__ import annotations

import threading
from typing import Any

_RUN = threading.local()


def reset() -> None:
    """Forget what the previous run showed (call before the page runs)."""
    _RUN.figures = []
    _RUN.texts = []


def add_figure(key: str, fig: Any) -> None:
    """Record a figure drawn under ``key`` (a later one with the same key replaces it).

    ``fig`` may also be a zero-argument builder of a figure the page did not draw (a closed
    tab's chart): the report calls it when it is written. A builder gets plain values captured
    during the run and never calls ``st.*`` (it runs outside the script thread).
    """
    items = [(k, f) for k, f in getattr(_RUN, "figures", []) if k != key]
    _RUN.figures = [*items, (key, fig)]


def add_text(text: str) -> None:
    """Record a plain-language read-out shown on the page."""
    _RUN.texts = [*getattr(_RUN, "texts", []), str(text)]


def figures() -> list[tuple[str, Any]]:
    """The (key, figure) pairs drawn so far in this run, in order."""
    return list(getattr(_RUN, "figures", []))


def texts() -> list[str]:
    """The read-outs recorded so far in this run."""
    return list(getattr(_RUN, "texts", []))
