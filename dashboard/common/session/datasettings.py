"""Settings that belong to their data: U, resolution, slot, keep-zeros, unit and user noun.

They are kept per data set, keyed by its content (``Source.key()``: an upload's sha256, a
server file's path, size and time, the demo city): a new file starts from its own defaults
(U, resolution, slot and zeros of :data:`state.DEFAULTS`; the unit and the noun guessed from its
column names), and going back to a data set brings its settings back. Before, the sidebar's
widgets held one value for whatever data was in use: U = 30 set for a ships file clamped the
next upload's speeds to 30, and then moved the demo city's true means.

The sidebar calls :func:`follow` before it draws the settings and :func:`save` after.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.common.session import state
from dashboard.common.source import units

KEYS: tuple[str, ...] = (
    state.UPPER,
    state.RESOLUTION,
    state.SLOT_KIND,
    state.SLOT_LENGTH,
    state.KEEP_ZEROS,
    units.VALUE_UNIT,
    units.USER_NOUN,
    state.UNITS_FOR,  # the file and columns the unit and noun were guessed for
)
"""The session keys kept per data set."""

STORE = "_data_settings"  # {source key: {session key: value}}
SHOWN_FOR = "_data_settings_for"  # the source key whose settings the sidebar shows
NOTE = "_data_settings_note"  # what the last switch did, said once in the sidebar


def defaults() -> dict[str, Any]:
    """A new data set's settings before its own guesses (the unit and noun are guessed by the
    sidebar when ``UNITS_FOR`` is unset)."""
    return {key: state.DEFAULTS[key] for key in KEYS}


def follow(source_key: str | None, name: str = "", *, adopt: bool = False) -> None:
    """Make the session's settings those of the data set ``source_key`` (call before the
    settings widgets are drawn).

    The first data set of a session adopts the settings in the session (the defaults, or a
    shared link's); so does a data set with ``adopt`` (the file a shared link was made with).
    Another data set gets back its own kept settings, or :func:`defaults`.
    """
    ss = st.session_state
    store: dict[str, dict[str, Any]] = ss.setdefault(STORE, {})
    before = ss.get(SHOWN_FOR)
    if source_key is None or source_key == before:
        return
    ss[SHOWN_FOR] = source_key
    if before is None or adopt:
        return
    kept = store.get(source_key)
    for key, value in (kept or defaults()).items():
        ss[key] = value
    ss[NOTE] = (
        f"Settings of **{name}** brought back (U, resolution, slot, zeros, unit, noun are kept "
        "per data set)."
        if kept
        else f"**{name}** starts from its own defaults (U, resolution, slot, zeros; unit and "
        "noun guessed from its columns): the settings of other data sets stay with them."
    )


def save() -> None:
    """Keep the current settings for the data set shown (call after the widgets are drawn)."""
    ss = st.session_state
    key = ss.get(SHOWN_FOR)
    if key is not None:
        ss.setdefault(STORE, {})[key] = {k: ss.get(k) for k in KEYS}


def note() -> str | None:
    """What the last switch of data set did to the settings, once (then None)."""
    return st.session_state.pop(NOTE, None)
