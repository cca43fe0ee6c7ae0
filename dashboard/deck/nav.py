"""The deck on every page: "Add this view to the deck", a deck link opened, presenter mode.

``app.py`` calls :func:`register` with the app's pages (name → ``st.Page``) and
:func:`read_link` before the page runs, :func:`presenter_bar` at the top of the page, and
:func:`after_run` once the page and its URL are written: the one place where a view is added
(the sidebar's popover) and where a presented view's charts are kept for the handout.

The deck is a list of plain views in session state (parameters, not results). A view's settings
are the URL's query parameters after the page ran (:mod:`dashboard.common.session.url` writes the
view's, and widgets bound to the URL write theirs): opening a view applies them as a link does,
then switches to its page.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from core.errors import HexplorerError
from dashboard.common.markdown import escape
from dashboard.common.session import shown, state, url
from dashboard.common.view import ui
from dashboard.deck import codec, store

DECK = "deck_views"  # session key: the views, as plain dicts
LINK_PARAM = "deck"
_PAGES: dict[str, st.Page] = {}  # the app's pages by name (the same for every session)
_TITLES: dict[str, str] = {}


def register(pages: Mapping[str, st.Page]) -> None:
    """The app's pages, by name (``app.py``, every run)."""
    _PAGES.update(pages)
    _TITLES.update({name: p.title for name, p in pages.items()})


def page_names() -> list[str]:
    """The names a deck's view may use."""
    return list(_PAGES)


def page_title(name: str) -> str:
    return _TITLES.get(name, name)


def deck() -> codec.Deck:
    """The session's deck."""
    views = st.session_state.get(DECK) or []
    return codec.Deck(views=tuple(codec.View(**v) for v in views))


def set_deck(d: codec.Deck) -> None:
    st.session_state[DECK] = [v.as_dict() for v in d.views]


def link(d: codec.Deck) -> str:
    """A link that opens the deck page with this deck loaded."""
    base = url.current_link().split("?")[0].rstrip("/")
    root = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{root}/deck?{LINK_PARAM}={codec.encode(d)}"


def view_link(page: str, params: dict) -> str:
    """A view's link in the app."""
    base = url.current_link().split("?")[0].rstrip("/")
    root = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return url.link(f"{root}/{page}", params) if params else f"{root}/{page}"


def read_link() -> None:
    """Load a deck from the URL's ``?deck=`` (before the page runs); a bad one is one line."""
    code = st.query_params.get(LINK_PARAM)
    if not code:
        return
    try:
        d = codec.decode(code, page_names())
    except HexplorerError as exc:
        st.error(f"{exc}", icon=":material/slideshow:")
    else:
        set_deck(d)
        st.toast(f"Deck loaded: {len(d.views)} views.", icon=":material/slideshow:")
    del st.query_params[LINK_PARAM]


# --- presenter mode ---------------------------------------------------------------------------


def open_view(i: int) -> None:
    """Apply view ``i``'s settings (as a link would) and switch to its page (never returns)."""
    d = deck()
    if not d.views:
        st.session_state[ui.PRESENTING] = None
        return
    i = min(max(int(i), 0), len(d.views) - 1)
    v = d.views[i]
    st.session_state[ui.PRESENTING] = i
    values, _ = url.parse(v.params)
    for key, value in values.items():
        state.remember(key, value)
    own = {k: x for k, x in v.params.items() if k not in url.NAMES}  # widgets bound to the URL
    st.switch_page(_PAGES[v.page], query_params=own or None)


def stop_presenting() -> None:
    st.session_state[ui.PRESENTING] = None


def presenter_bar() -> None:
    """In presenter mode: the view's title and note in large type, previous / next / exit, the
    sidebar and header hidden (call before the page runs)."""
    i = st.session_state.get(ui.PRESENTING)
    if i is None:
        return
    d = deck()
    if not d.views or i >= len(d.views):
        stop_presenting()
        return
    v = d.views[i]
    ui.presenter_style(full_screen=True)
    with st.container(key="deck_presenter"):
        left, mid, right, end = st.columns([1, 6, 1, 1], vertical_alignment="center")
        prev = left.button("◀ Previous", key="deck_prev", disabled=i == 0, width="stretch")
        mid.markdown(f"### {i + 1} / {len(d.views)} · {escape(v.title)}")
        nxt = right.button(
            "Next ▶", key="deck_next", disabled=i + 1 == len(d.views), width="stretch"
        )
        end.button("Exit", key="deck_exit", on_click=stop_presenting, width="stretch")
        if v.note:
            st.markdown(f"#### {escape(v.note)}")
    if prev:
        open_view(i - 1)
    if nxt:
        open_view(i + 1)


# --- after the page ran -----------------------------------------------------------------------


def _current_params() -> dict[str, str]:
    return {k: v for k, v in st.query_params.to_dict().items() if k != LINK_PARAM}


def after_run(page: str) -> None:
    """Keep a presented view's charts, and draw the sidebar's "Add this view to the deck"."""
    ss = st.session_state
    i = ss.get(ui.PRESENTING)
    d = deck()
    if i is not None and i < len(d.views) and d.views[i].page == page:
        store.put(d.views[i].key(), shown.figures(), shown.texts())
    with st.sidebar:
        label = f"Add this view to the deck ({len(d.views)})"
        with st.popover(label, icon=":material/slideshow:", width="stretch"):
            with st.form("deck_add", clear_on_submit=True, border=False):
                title = st.text_input("Title", key="deck_title", placeholder=page_title(page))
                note = st.text_input("One-line note", key="deck_note")
                added = st.form_submit_button("Add to the deck", width="stretch")
            st.caption("The deck, presenter mode and the handout are on the Deck page.")
    if added:
        add(page, _current_params(), title, note)


def add(page: str, params: dict[str, str], title: str, note: str) -> None:
    """Add the view drawn in this run (its figures go to the store)."""
    view = codec.View(
        page=page,
        params=dict(params),
        title=" ".join(str(title).split())[: codec.MAX_TITLE] or page_title(page),
        note=" ".join(str(note).split())[: codec.MAX_NOTE],
    )
    store.put(view.key(), shown.figures(), shown.texts())
    d = deck()
    if len(d.views) >= codec.MAX_VIEWS:
        st.toast(f"A deck holds at most {codec.MAX_VIEWS} views.", icon=":material/error:")
        return
    set_deck(codec.Deck(views=(*d.views, view)))
    st.toast(f"Added “{view.title}” ({len(d.views) + 1} views).", icon=":material/slideshow:")
