"""Session-state keys and defaults: every widget's ``key=`` comes from here.

Session state holds *parameters* (what the user chose), never results; results come from the
cached wrappers in :mod:`dashboard.compute`. Streamlit deletes a widget's state when a page that
does not show the widget runs, so :func:`init` re-assigns every known key at the top of each page
(the documented way to keep widget values across pages). A fragment's own reruns do the same
through :func:`fragment`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.mechanisms import default_names
from dashboard.common.source import units

# --- Data (sidebar) -------------------------------------------------------------------------
SOURCE = "data_source"  # "demo" | "upload" | "path"
UPLOAD = "data_upload"  # st.file_uploader (cannot be set through session state)
PATH = "data_path"  # a file of the operator's data directory (a choice, never typed)
UPPER = "data_upper"  # U
RESOLUTION = "data_resolution"  # H3 resolution
SLOT_KIND = "data_slot_kind"  # "window" | "hour-of-day"
SLOT_LENGTH = "data_slot_length"  # "15min", "1h", ...
KEEP_ZEROS = "data_keep_zeros"
COLUMN_ROLES = ("user", "lat", "lon", "time", "value")
UPLOADED = "data_uploaded"  # the last uploaded file: {"name", "digest", "payload"} (bytes kept)
UNITS_FOR = "units_for"  # the (source digest, value column, user column) units were detected for
# Last data set that prepared without error: a plain dict of parameters (source kind, file name,
# digest, raw bytes of an upload or a path, columns, config). A bad file never replaces it.
APPLIED = "data_applied"

# --- Selection of a HAT ----------------------------------------------------------------------
HAT = "hat"  # "CELL/SLOT" label, shared by every page
HAT_PICK = "hat_pick"  # the One-hexagon page's select box
MAP_SLOT = "map_slot"
MAP_METRIC = "map_metric"  # one of MAP_METRICS
MAP_CELL = "map_cell"  # the Map page's select box
MAP_DECK = "map_deck"  # the pydeck selection (read-only widget state)
MAP_HAT_SEEN = "map_hat_seen"  # the HAT the Map page last showed (to follow changes elsewhere)
MAP_BASEMAP = "map_basemap"  # draw tile basemaps under the hexagons (needs the internet)
MAP_CLICKS = "map_clicks"  # clicks on the map so far: part of the pickable layers' ids

# --- One hexagon -----------------------------------------------------------------------------
EPSILON = "epsilon"  # the ε of every view (One hexagon, Map, Whole city)
MECHANISM = "mechanism"  # the mechanism whose worst-case error the Map and the plans read
TARGET = "target_error"  # the planning target ±X (data's unit): Map and Whole city
M_UB = "m_ub"
M_UB_FOR = "m_ub_for_hat"  # the HAT the m_UB slider was last reset for
OVERRIDE_M_UB = "override_m_ub"
MECHANISMS = "mechanisms"
NOISE_MEASURE = "noise_measure"
SEED = "seed"
MANY_RUNS = "mc_many_runs"

# --- Values --------------------------------------------------------------------------------
EPSILON_OPTIONS: tuple[float, ...] = (
    0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8,
    1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0,
)  # fmt: skip
"""The ε slider's stops: roughly evenly spaced on a log scale from 0.05 to 10."""

MC_EPSILONS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
"""ε values of the Monte-Carlo MAE curve (independent of the slider, so moving ε is instant)."""

MC_RUNS_DEFAULT = 2_000
MC_RUNS_MANY = 10_000
SLOT_LENGTHS = ("15min", "30min", "1h", "2h", "3h", "6h", "1d")
MAP_METRICS = (
    "records", "users", "true_mean", "error", "relative_error", "within_target", "release",
)  # fmt: skip
ERROR_METRICS = ("error", "relative_error", "within_target", "release")
"""The Map's colourings that depend on ε and the mechanism."""
DEFAULT_MECHANISMS = default_names()  # the registry entries with default=True

DEFAULTS: dict[str, Any] = {
    SOURCE: "demo",
    PATH: None,
    UPPER: 65.0,
    RESOLUTION: 7,
    SLOT_KIND: "window",
    SLOT_LENGTH: "1h",
    KEEP_ZEROS: False,
    APPLIED: None,
    UPLOADED: None,
    UNITS_FOR: None,
    units.VALUE_UNIT: units.Units().value,
    units.USER_NOUN: units.Units().user,
    HAT: None,
    MAP_BASEMAP: False,
    MAP_CLICKS: 0,
    MAP_METRIC: "records",
    EPSILON: 1.0,
    MECHANISM: "opt-arrayavg",
    TARGET: 5.0,
    M_UB: None,
    M_UB_FOR: None,
    OVERRIDE_M_UB: False,
    MECHANISMS: list(DEFAULT_MECHANISMS),
    NOISE_MEASURE: "mean",
    SEED: 0,
    MANY_RUNS: False,
}
"""Defaults of every key set before widgets are drawn (widgets then take no ``value=``)."""

# Widget keys whose values must survive a page switch. Not the uploader (Streamlit forbids
# setting it), not the deck selection (read-only), not the select boxes whose options depend on
# data (they are re-derived from HAT). Streamlit 1.67's persist_state="session" does not replace
# this here: tried on One hexagon's mechanisms, the choice was still lost after a visit to
# Experiments, as every run writes the defaults of the keys it does not find (init), and a
# persisted widget's value is not in session state while another page runs.
PERSISTENT_WIDGETS: tuple[str, ...] = (
    SOURCE,
    PATH,
    UPPER,
    RESOLUTION,
    SLOT_KIND,
    SLOT_LENGTH,
    KEEP_ZEROS,
    units.VALUE_UNIT,
    units.USER_NOUN,
    MAP_BASEMAP,
    MAP_SLOT,
    MAP_METRIC,
    EPSILON,
    M_UB,
    OVERRIDE_M_UB,
    MECHANISMS,
    NOISE_MEASURE,
    SEED,
    MANY_RUNS,
)


def put(key: str, value: Any) -> None:
    """``session_state[key] = value`` only when it differs (or ``key`` has none): a widget's
    value set from code is a one-shot effect the browser applies by rebuilding that widget
    (Streamlit does not reuse the element), for nothing when it is the value already shown."""
    ss = st.session_state
    if key not in ss or ss[key] != value:
        ss[key] = value


def mirror(widget_key: str, shared_key: str) -> None:
    """Give a widget the value of a shared key (before it is drawn): several widgets on several
    pages show one value, kept under ``shared_key`` (see :func:`push`). Set only when it
    differs (:func:`put`)."""
    put(widget_key, st.session_state[shared_key])


def push(widget_key: str, shared_key: str) -> None:
    """Write a widget's value into the shared key (its ``on_change`` callback)."""
    st.session_state[shared_key] = st.session_state[widget_key]


def map_cell_key(scope: str) -> str:
    """Widget key of the Map page's hexagon select box for one data set and slot (``scope``).

    A new data set or slot gets a new widget, so its labels (record and user counts) are never
    those of the previous data.
    """
    return f"{MAP_CELL}_{scope}"


def column_key(role: str, digest: str) -> str:
    """Widget key of the column select box for ``role`` of the file with this ``digest``.

    A new file gets new widgets, so its auto-detected columns become the defaults.
    """
    return f"data_col_{role}_{digest[:12]}"


COLUMNS_OPEN = "data_columns_open"  # whether the sidebar's "Columns" is open (drawn only then)
COLUMN_KEYS = "_column_keys"  # the column widgets' keys so far (a tuple, replaced, never changed)


def column_widget(role: str, digest: str) -> str:
    """:func:`column_key`, noted under :data:`COLUMN_KEYS` so that :func:`init` keeps the
    widget's value across pages; the sidebar draws the widget with it."""
    key = column_key(role, digest)
    seen = st.session_state.get(COLUMN_KEYS, ())
    if key not in seen:
        st.session_state[COLUMN_KEYS] = (*seen, key)
    return key


def init() -> None:
    """Set missing defaults and keep widget values across pages; call at the top of every page.

    It never walks session state itself (``st.session_state.keys()``): with fast reruns (a burst
    of key presses) a stopped run can still be here when the next run starts beside it and
    resizes the state's dicts ("dictionary changed size during iteration"). The keys it keeps
    are known: :data:`PERSISTENT_WIDGETS` and the column widgets noted by :func:`column_widget` (a
    tuple that is replaced, never changed in place, so the loop walks its own snapshot).
    """
    ss = st.session_state
    for key, value in DEFAULTS.items():
        if key not in ss:
            ss[key] = list(value) if isinstance(value, list) else value
    for key in PERSISTENT_WIDGETS:
        if key in ss:
            ss[key] = ss[key]
    for key in ss.get(COLUMN_KEYS, ()):
        if key in ss:
            ss[key] = ss[key]


PAGE_NOW = "_page_now"  # the page of this full run (app.py), and of the one before
PAGE_TITLE = "_page_title"  # the title of this run's page ("Map", "One hexagon", …)
PAGE_BEFORE = "_page_before"
KEPT_NOW = "_kept_now"  # this page's own widgets ({key: none_is_unset}, keep_widgets)


def page_ran(page: str, title: str | None = None) -> None:
    """Note the page of this full run (``app.py``, before the page runs) and its title."""
    ss = st.session_state
    ss[PAGE_TITLE] = title
    ss[PAGE_BEFORE] = ss.get(PAGE_NOW)
    ss[PAGE_NOW] = page
    ss[KEPT_NOW] = {}


def returning() -> bool:
    """Whether this run opened the page after another page ran (``app.py`` notes each run's
    page: :func:`page_ran`; False for a page run on its own, as in AppTest)."""
    ss = st.session_state
    return PAGE_NOW in ss and ss.get(PAGE_BEFORE) != ss[PAGE_NOW]


def shadow(key: str) -> str:
    """The session key of the kept copy of a page's own widget ``key`` (:func:`keep_widgets`)."""
    return f"_keep_{key}"


def keep_widgets(
    keys: Iterable[str],
    defaults: Mapping[str, Any] | None = None,
    *,
    none_is_unset: bool = False,
) -> None:
    """A page's own widgets, kept across pages; call before drawing them.

    Streamlit drops a widget's value at the end of the first run that does not draw it (a run
    of another page), and a widget of a fragment goes back to its default instead, so a
    setting of the Map's split view or of One hexagon was gone after a visit elsewhere. Each
    value is copied under :func:`shadow` on every run of its page; on the page's return
    (:func:`returning`) the copy gives the widget its value back. A key with neither takes its
    default (if ``defaults`` has one). With ``none_is_unset``, a widget that holds None counts
    as unset.
    """
    ss = st.session_state
    defaults = defaults or {}
    back = returning()
    kept = ss.setdefault(KEPT_NOW, {})  # for the page's fragments (:func:`fragment`)
    for key in keys:
        kept[key] = none_is_unset
        if back and shadow(key) in ss:
            ss[key] = ss[shadow(key)]  # dropped, or reset, while another page ran
        elif key in ss and not (none_is_unset and ss[key] is None):
            ss[key] = ss[key]  # kept across reruns of this page
            ss[shadow(key)] = ss[key]
        elif shadow(key) in ss:
            ss[key] = ss[shadow(key)]  # dropped while another page ran
        elif key in defaults:
            ss[key] = defaults[key]


def _keep_fragment_values() -> None:
    """In a rerun of a fragment alone, copy the page's own widgets (a widget of the fragment
    may have moved) to their kept copies, as :func:`keep_widgets` does in a full run: the split
    view's settings, changed in its fragment, were otherwise lost at the next page switch."""
    ss = st.session_state
    for key, none_is_unset in list(ss.get(KEPT_NOW, {}).items()):  # a snapshot (see init)
        if key in ss and not (none_is_unset and ss[key] is None):
            ss[shadow(key)] = ss[key]


def remember(key: str, value: Any) -> None:
    """Set a page's own widget's value (before it is drawn, or from a callback) and its kept
    copy (:func:`keep_widgets`)."""
    st.session_state[key] = value
    st.session_state[shadow(key)] = value


def fragment(func: Callable) -> Callable:
    """``st.fragment`` for the pages' fragments: a rerun of the fragment alone (a widget inside
    it moved) first re-assigns the known keys (:func:`init`), as every full run does.

    Without that, the widgets outside the fragment (the data source, U, the resolution, …) are
    not drawn in such a run, and Streamlit drops their state at the next page switch: a file
    uploaded, then ε moved on One hexagon, then the Map opened, fell back to the demo city. In a
    full run the page's own :func:`init` has done it, and the widgets outside are drawn by then
    (re-assigning them would be an error)."""

    @functools.wraps(func)
    def body(*args: Any, **kwargs: Any) -> Any:
        ctx = get_script_run_ctx()
        if ctx is not None and ctx.fragment_ids_this_run:
            init()
            _keep_fragment_values()
        return func(*args, **kwargs)

    return st.fragment(body)
