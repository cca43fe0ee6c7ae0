"""Deck: the views collected with "Add this view to the deck", to present and hand out.

The list (reorder, remove), the deck as a link or a JSON file (and loading either back),
presenter mode (full screen, large type, previous / next) and the handout: one offline HTML
file with every view's charts, settings and notes, in order.
"""

from __future__ import annotations

import streamlit as st

from core.errors import HexplorerError
from dashboard.common.markdown import escape
from dashboard.common.session import state
from dashboard.common.view import downloads
from dashboard.deck import codec, handout, nav, store

st.title("Deck")
state.init()
ss = st.session_state
d = nav.deck()


def _move(i: int, j: int) -> None:
    views = list(nav.deck().views)
    views[i], views[j] = views[j], views[i]
    nav.set_deck(codec.Deck(views=tuple(views)))


def _remove(i: int) -> None:
    views = list(nav.deck().views)
    del views[i]
    nav.set_deck(codec.Deck(views=tuple(views)))


def _load_code() -> None:
    text = ss.get("deck_code_in") or ""
    try:
        nav.set_deck(codec.decode(text, nav.page_names()))
        ss["deck_load_error"] = None
    except HexplorerError as exc:
        ss["deck_load_error"] = str(exc)


def _load_file() -> None:
    f = ss.get("deck_file_in")
    if f is None:
        return
    try:
        nav.set_deck(codec.from_json(f.getvalue(), nav.page_names()))
        ss["deck_load_error"] = None
    except HexplorerError as exc:
        ss["deck_load_error"] = str(exc)


if not d.views:
    st.info(
        "The deck is empty. On any page, open **Add this view to the deck** in the sidebar: the "
        "page with its settings, a title and a one-line note become a view.",
        icon=":material/slideshow:",
    )
else:
    st.button(
        f"Present the deck ({len(d.views)} views)",
        key="deck_present",
        type="primary",
        icon=":material/slideshow:",
    )
    for i, v in enumerate(d.views):
        with st.container(border=True, key=f"deck_view_{i}"):
            text, up, down, rm = st.columns([8, 1, 1, 1], vertical_alignment="center")
            text.markdown(f"**{i + 1}. {escape(v.title)}** · {nav.page_title(v.page)}")
            if v.note:
                text.caption(escape(v.note))
            up.button("↑", key=f"deck_up_{i}", on_click=_move, args=(i, i - 1), disabled=i == 0)
            down.button("↓", key=f"deck_down_{i}", on_click=_move, args=(i, i + 1),
                        disabled=i + 1 == len(d.views))  # fmt: skip
            rm.button("✕", key=f"deck_rm_{i}", on_click=_remove, args=(i,), help="Remove")
            if store.get(v.key()) is None:
                text.caption("Its charts join the handout once the view is shown (present it).")

    st.subheader("Share and hand out")
    st.code(nav.link(d), language=None, wrap_lines=True)
    st.caption("This link opens the deck (its views and settings, not the charts) on this app.")
    left, right = st.columns(2)
    left.download_button(
        "Download the deck (JSON)",
        data=codec.to_json(d).encode("utf-8"),
        file_name="dp-hexplorer-deck.json",
        mime="application/json",
        key="deck_json",
        icon=":material/download:",
        on_click="ignore",
        width="stretch",
    )
    right.download_button(
        "Download the handout (HTML, opens offline)",
        data=lambda: handout.build(d, version=downloads.VERSION, link=nav.view_link).encode(),
        file_name="dp-hexplorer-deck.html",
        mime="text/html",
        key="deck_handout",
        icon=":material/description:",
        on_click="ignore",
        width="stretch",
    )

with st.expander("Load a deck", expanded=not d.views, icon=":material/upload:"):
    st.text_input("A deck link (or its code)", key="deck_code_in", on_change=_load_code)
    st.file_uploader("or a deck file (JSON)", type=["json"], key="deck_file_in",
                     on_change=_load_file)  # fmt: skip
    if ss.get("deck_load_error"):
        st.error(ss["deck_load_error"], icon=":material/error:")

if d.views and ss.get("deck_present"):
    nav.open_view(0)
