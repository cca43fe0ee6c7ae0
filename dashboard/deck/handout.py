"""The deck as one offline HTML handout: every view's title, note, settings and charts, in order
(:func:`dashboard.common.report.build.build_handout`: plotly.js embedded once)."""

from __future__ import annotations

from collections.abc import Callable

from dashboard.common.report.build import Report, build_handout
from dashboard.deck import store
from dashboard.deck.codec import Deck

MISSING = (
    "Its charts are not on this server yet: show the view once (present the deck) and download "
    "the handout again."
)


def build(deck: Deck, *, version: str, link: Callable[[str, dict], str] | None = None) -> str:
    """The handout's HTML; ``link(page, params)`` gives a view's link in the app."""
    sections = []
    for v in deck.views:
        kept = store.get(v.key())
        figures, texts = kept if kept is not None else ([], [])
        built = [(k.replace("_", " "), f() if callable(f) else f) for k, f in figures]
        sections.append(
            Report(
                title=v.title,
                parameters={"page": v.page, **dict(v.params)},
                figures=built,
                texts=[t for t in [v.note, *texts, "" if kept is not None else MISSING] if t],
                summary={},
                version=version,
                link=link(v.page, dict(v.params)) if link else None,
            )
        )
    return build_handout("Demo deck", sections, version=version)
