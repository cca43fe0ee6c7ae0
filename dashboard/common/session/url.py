"""The view in the URL: a link that reproduces what is on screen.

The page is the URL's path (``st.navigation`` routes by each page's ``url_path``); the parameters
a view needs live in the query string (``st.query_params``):

========  ==========================================  =========================================
name      what                                        session-state key
========  ==========================================  =========================================
source    demo | upload | path                        ``state.SOURCE``
file      first 16 hex digits of an upload's sha256   (kept until the same file is loaded)
name      the uploaded file's name (for the message)  (idem)
path      a file of the operator's data directory    ``state.PATH``
U         upper bound on a value                      ``state.UPPER``
res       H3 resolution 0–15                          ``state.RESOLUTION``
slot      window length (1h, 30min, …) or hour-of-day ``state.SLOT_KIND``, ``state.SLOT_LENGTH``
zeros     1 = keep zero values                        ``state.KEEP_ZEROS``
hat       "CELL/SLOT" hexagon-hour                    ``state.HAT``
eps       ε                                           ``state.EPSILON``
m_ub      records kept per user                       ``state.M_UB`` (for ``hat``)
all_m_ub  1 = every mechanism uses that m_ub          ``state.OVERRIDE_M_UB``
mech      mechanisms, comma-separated                 ``state.MECHANISMS``
noise     mean | std (E2's noise measure)             ``state.NOISE_MEASURE``
seed      seed of the simulated noise                 ``state.SEED``
runs      Monte-Carlo runs per point (2000, 10000)    ``state.MANY_RUNS``
user      the lesson's user                           :data:`LESSON_USER`
lmech     the lesson's mechanism                      :data:`LESSON_MECHANISM`
step      the course's step 1–6                       :data:`COURSE_STEP`
========  ==========================================  =========================================

:func:`read_once` copies a link's values into session state on the first run of a session
(before any widget is drawn); a value that does not parse is ignored and named in one
``st.info`` line, never a traceback. :func:`write` puts the current values back after every run
(``app.py`` calls both). :func:`share_control` draws the link with a copy button.

For an uploaded file the link holds its content digest: the parameters are restored once the
same file is uploaded (a different file keeps the link's settings but not its hexagon-hour).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from core.data import HOUR_OF_DAY
from core.mechanisms import MECHANISMS
from core.params import EPSILON_MAX, EPSILON_MIN
from dashboard.common.markdown import escape
from dashboard.common.session import state
from dashboard.common.source import keep

# Session-state keys this module owns.
LOADED = "url_loaded"  # the link was read for this session
LINK_FILE = "url_file"  # digest prefix of the upload the link was made with (until it is loaded)
LINK_NAME = "url_file_name"
LINK_HAT = "url_hat_asked"  # the hexagon-hour the link asked for (checked once data is in use)
# The lesson page's parameters (dashboard/lessons/state.py uses these keys).
LESSON_USER = "lesson_user"
LESSON_MECHANISM = "lesson_mechanism"
COURSE_STEP = "course_step"  # the Course page's step (dashboard/course/state.py)

DIGEST_CHARS = 16
EPSILON_RANGE = (EPSILON_MIN, EPSILON_MAX)  # the product's one range (core.params)
SOURCES = ("demo", "upload", "path")

# Order of the parameters in a link.
NAMES = (
    "source", "file", "name", "path", "U", "res", "slot", "zeros", "hat", "eps", "m_ub",
    "all_m_ub", "mech", "noise", "seed", "runs", "user", "lmech", "step",
)  # fmt: skip


class _Bad(ValueError):
    """A query value that does not parse (its message says what was expected)."""


def _float(text: str, lo: float, hi: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _Bad(f"a number in [{lo:g}, {hi:g}]") from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise _Bad(f"a number in [{lo:g}, {hi:g}]")
    return value


def _int(text: str, lo: int, hi: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _Bad(f"a whole number in [{lo}, {hi}]") from None
    if not lo <= value <= hi:
        raise _Bad(f"a whole number in [{lo}, {hi}]")
    return value


def _choice(text: str, options: tuple[str, ...]) -> str:
    if text not in options:
        raise _Bad("one of " + ", ".join(options))
    return text


def _flag(text: str) -> bool:
    return _choice(text, ("0", "1")) == "1"


def _hat(text: str) -> str:
    import h3

    cell, sep, slot = text.partition("/")
    if not sep or not slot or not h3.is_valid_cell(cell):
        raise _Bad("a hexagon-hour 'CELL/SLOT' with a valid H3 cell")
    return text


def _mechanisms(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in MECHANISMS]
    if unknown:
        raise _Bad("mechanism names among " + ", ".join(MECHANISMS))
    return names


def _digest(text: str) -> str:
    text = text.lower()
    if len(text) != DIGEST_CHARS or any(c not in "0123456789abcdef" for c in text):
        raise _Bad(f"{DIGEST_CHARS} hexadecimal digits")
    return text


def parse(params: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Session-state values from query parameters, and one line per ignored parameter.

    Unknown names are ignored silently (other tools add their own, e.g. ``embed``).

    >>> values, bad = parse({"eps": "0.5", "res": "twenty", "mech": "baseline,levy"})
    >>> values[state.EPSILON], values[state.MECHANISMS], bad
    (0.5, ['baseline', 'levy'], ["res='twenty' (expected a whole number in [0, 15])"])
    """
    out: dict[str, Any] = {}
    bad: list[str] = []
    readers = {
        "source": lambda t: {state.SOURCE: _choice(t, SOURCES)},
        "file": lambda t: {LINK_FILE: _digest(t)},
        "name": lambda t: {LINK_NAME: t[:200]},
        "path": lambda t: {state.PATH: t},
        "U": lambda t: {state.UPPER: _float(t, 1.0, 1000.0)},
        "res": lambda t: {state.RESOLUTION: _int(t, 0, 15)},
        "slot": _slot,
        "zeros": lambda t: {state.KEEP_ZEROS: _flag(t)},
        "hat": lambda t: {state.HAT: _hat(t), LINK_HAT: t},
        "eps": lambda t: {state.EPSILON: _float(t, *EPSILON_RANGE)},
        "m_ub": lambda t: {state.M_UB: _int(t, 1, 10**9)},
        "all_m_ub": lambda t: {state.OVERRIDE_M_UB: _flag(t)},
        "mech": lambda t: {state.MECHANISMS: _mechanisms(t)},
        "noise": lambda t: {state.NOISE_MEASURE: _choice(t, ("mean", "std"))},
        "seed": lambda t: {state.SEED: _int(t, 0, 2**31 - 1)},
        "runs": lambda t: {
            state.MANY_RUNS: _choice(t, (str(state.MC_RUNS_DEFAULT), str(state.MC_RUNS_MANY)))
            == str(state.MC_RUNS_MANY)
        },
        "user": lambda t: {LESSON_USER: t[:200]},
        "lmech": lambda t: {LESSON_MECHANISM: _choice(t, tuple(MECHANISMS))},
        "step": lambda t: {COURSE_STEP: _int(t, 1, 6)},
    }
    for name in NAMES:
        if name not in params:
            continue
        text = str(params[name]).strip()
        try:
            out.update(readers[name](text))
        except _Bad as exc:
            shown = text if len(text) <= 40 else text[:40] + "…"
            bad.append(f"{name}={shown!r} (expected {exc})")
    if state.M_UB in out and state.HAT in out:
        out[state.M_UB_FOR] = out[state.HAT]  # the page keeps an m_UB chosen for this HAT
    elif state.M_UB in out:
        del out[state.M_UB]
        bad.append("m_ub without hat (an m_UB belongs to one hexagon-hour)")
    return out, bad


def _slot(text: str) -> dict[str, Any]:
    if text == HOUR_OF_DAY:
        return {state.SLOT_KIND: HOUR_OF_DAY}
    return {state.SLOT_KIND: "window", state.SLOT_LENGTH: _choice(text, state.SLOT_LENGTHS)}


_ENCODED = (
    COURSE_STEP,
    LESSON_MECHANISM,
    LESSON_USER,
    LINK_FILE,
    LINK_NAME,
    state.APPLIED,
    state.EPSILON,
    state.HAT,
    state.KEEP_ZEROS,
    state.MANY_RUNS,
    state.MECHANISMS,
    state.M_UB,
    state.M_UB_FOR,
    state.NOISE_MEASURE,
    state.OVERRIDE_M_UB,
    state.PATH,
    state.RESOLUTION,
    state.SEED,
    state.SLOT_KIND,
    state.SLOT_LENGTH,
    state.SOURCE,
    state.UPPER,
)
"""The session keys :func:`encode` reads."""


def encode(ss: Mapping[Any, Any]) -> dict[str, str]:
    """The query parameters of the current view (the inverse of :func:`parse`).

    >>> encode({state.SOURCE: "demo", state.EPSILON: 0.5, state.MECHANISMS: ["levy"]})
    {'source': 'demo', 'eps': '0.5', 'mech': 'levy'}
    """
    # each read once: a session-state read is not free
    v: dict[str, Any] = {key: ss.get(key) for key in _ENCODED}
    out: dict[str, str] = {}
    source = v[state.SOURCE]
    if source in SOURCES:
        out["source"] = str(source)
    applied = v[state.APPLIED]
    if source == "upload":
        if applied and applied.get("source", {}).get("kind") == "upload":
            out["file"] = str(applied["source"]["digest"])[:DIGEST_CHARS]
            out["name"] = str(applied["source"]["name"])
        elif v[LINK_FILE]:
            out["file"] = str(v[LINK_FILE])
            if v[LINK_NAME]:
                out["name"] = str(v[LINK_NAME])
    if source == "path" and v[state.PATH]:
        out["path"] = str(v[state.PATH])
    if v[state.UPPER] is not None:
        out["U"] = f"{float(v[state.UPPER]):g}"
    if v[state.RESOLUTION] is not None:
        out["res"] = str(int(v[state.RESOLUTION]))
    if v[state.SLOT_KIND] == HOUR_OF_DAY:
        out["slot"] = HOUR_OF_DAY
    elif v[state.SLOT_LENGTH]:
        out["slot"] = str(v[state.SLOT_LENGTH])
    if v[state.KEEP_ZEROS] is not None:
        out["zeros"] = "1" if v[state.KEEP_ZEROS] else "0"
    if v[state.HAT]:
        out["hat"] = str(v[state.HAT])
    if v[state.EPSILON] is not None:
        out["eps"] = f"{float(v[state.EPSILON]):g}"
    if v[state.HAT] and v[state.M_UB] is not None:
        if v[state.M_UB_FOR] in (None, v[state.HAT]):
            out["m_ub"] = str(int(v[state.M_UB]))
    if v[state.OVERRIDE_M_UB] is not None:
        out["all_m_ub"] = "1" if v[state.OVERRIDE_M_UB] else "0"
    if v[state.MECHANISMS] is not None:
        out["mech"] = ",".join(n for n in MECHANISMS if n in v[state.MECHANISMS])
    if v[state.NOISE_MEASURE]:
        out["noise"] = str(v[state.NOISE_MEASURE])
    if v[state.SEED] is not None:
        out["seed"] = str(int(v[state.SEED]))
    if v[state.MANY_RUNS] is not None:
        runs = state.MC_RUNS_MANY if v[state.MANY_RUNS] else state.MC_RUNS_DEFAULT
        out["runs"] = str(runs)
    if v[LESSON_USER]:
        out["user"] = str(v[LESSON_USER])
    if v[LESSON_MECHANISM]:
        out["lmech"] = str(v[LESSON_MECHANISM])
    if v[COURSE_STEP] is not None:
        out["step"] = str(int(v[COURSE_STEP]))
    return out


def link(base: str, params: Mapping[str, str]) -> str:
    """``base?query`` with the parameters in a fixed order.

    >>> link("http://localhost:8501/one_hexagon", {"eps": "0.5", "source": "demo"})
    'http://localhost:8501/one_hexagon?source=demo&eps=0.5'
    """
    ordered = [(k, params[k]) for k in NAMES if k in params]
    return f"{base}?{urlencode(ordered, safe='/,:')}" if ordered else base


def read_once() -> None:
    """On a session's first run, copy the link's parameters into session state.

    Call before any widget is drawn. Ignored values are named in one ``st.info`` line.
    """
    ss = st.session_state
    if not ss.get(LOADED):
        ss[LOADED] = True
        values, bad = parse(st.query_params.to_dict())
        for key, value in values.items():
            ss[key] = value
        if ss.get(LINK_FILE) and (kept := keep.restore(str(ss[LINK_FILE]))) is not None:
            ss[state.UPLOADED] = kept  # this browser's own upload: a reload keeps it
            ss[state.SOURCE] = "upload"
            ss[LINK_FILE] = None
        if bad:
            st.info(
                "Some settings of this link were ignored: " + escape("; ".join(bad)) + ".",
                icon=":material/link_off:",
            )
    _upload_note()


def _applied_digest() -> str | None:
    applied = st.session_state.get(state.APPLIED)
    if not applied or applied.get("source", {}).get("kind") != "upload":
        return None
    return str(applied["source"]["digest"])[:DIGEST_CHARS]


def _upload_note() -> None:
    """While a link's uploaded file is not loaded, say which file restores the view."""
    ss = st.session_state
    wanted = ss.get(LINK_FILE)
    if not wanted:
        return
    current = _applied_digest()
    if current == wanted:
        ss[LINK_FILE] = None  # restored: the parameters now apply to this file
        return
    name = escape(ss.get(LINK_NAME) or "the same file")  # a link's text: never markdown
    if current is None:
        st.info(
            f"This link was made with an uploaded file, **{name}**. Upload the same file in the "
            "sidebar to restore its view (it is recognised by its content).",
            icon=":material/link:",
        )
    else:
        st.info(
            f"The file in use is not the one this link was made with (**{name}**, fingerprint "
            f"{wanted}); the link's settings apply, its hexagon-hour may not exist here.",
            icon=":material/link:",
        )
        ss[LINK_FILE] = None


WROTE = "_url_wrote"
"""Whether the last run put into the URL parameters other than those its request came with."""


def write() -> None:
    """Put the current view's parameters into the URL: when they differ from the URL the run's
    request came with, and once more in the run after such a write.

    The request's URL can be older than the browser's: a run that changed the URL (ε 1.3 from
    the slider's earlier stop) may reach the browser after the next request left it, carrying
    the URL the slider had already set (ε 1.2). That next run then finds its parameters equal
    to its request's and wrote nothing, and the browser kept 1.3 while showing 1.2: a link or a
    reload gave the other ε. Written again, its message is the last the browser receives.
    """
    ss = st.session_state
    params = encode(ss)
    differs = st.query_params.to_dict() != params
    if differs or ss.get(WROTE):
        st.query_params.from_dict(params)
    ss[WROTE] = differs


def current_link(url_path: str = "") -> str:
    """The link to the current page and view (``st.context.url`` when a browser is attached)."""
    base = None
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001 - no browser context (tests, bare mode)
        base = None
    if not base:
        base = "http://localhost:8501/" + url_path.strip("/")
    return link(base.split("?")[0], encode(st.session_state))


def _hat_note() -> None:
    """Once data is in use: say so when the link's hexagon-hour was not in it."""
    ss = st.session_state
    asked = ss.get(LINK_HAT)
    if not asked or ss.get(LINK_FILE) or ss.get(state.APPLIED) is None:
        return
    ss[LINK_HAT] = None
    if ss.get(state.HAT) not in (None, asked):
        st.info(
            f"The link's hexagon-hour {escape(asked)} is not in this data; showing "
            f"{escape(ss[state.HAT])}.",
            icon=":material/link_off:",
        )


def share_control(url_path: str = "") -> None:
    """The 'Share this view' box in the sidebar: the link with a copy button.

    A popover, not an expander: its content is drawn only when opened, so the code box's
    syntax highlighter (1.5 MB of JavaScript) is not loaded for every page's first view.
    """
    with st.sidebar:
        _hat_note()
        with st.popover("Share this view", icon=":material/link:", width="stretch"):
            st.code(current_link(url_path), language=None, wrap_lines=True)
            st.caption(
                "Copy the link with the button at the box's top right: it opens this page with "
                "these settings. An uploaded file is not in the link; whoever opens it uploads "
                "the same file."
            )
