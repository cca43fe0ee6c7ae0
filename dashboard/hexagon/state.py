"""Session-state keys of the One-hexagon page that no other page reads.

ε itself is shared (``dashboard.common.session.state.EPSILON``): it is the one value every view of ε
shows. The slider and the exact-value box are two widgets bound to it through callbacks:
moving the slider writes its stop into ε; typing a number writes exactly that number into ε
and moves the slider to the same value (the typed value is added to the slider's stops, so the
slider shows it too).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.params import EPSILON_MAX, EPSILON_MIN
from dashboard.common.session import state

EPSILON_SLIDER = "hexagon_epsilon_slider"  # st.select_slider, where the browser's is not served
EPSILON_RANGE = "hexagon_epsilon_range"  # the browser's slider (dashboard.common.view.slider)
EPSILON_GROUP = "hexagon_epsilon"  # its hexplorer:frame events, heard by the charts it moves
EPSILON_LABEL = "Privacy loss ε (log scale)"
EPSILON_EXACT = "hexagon_epsilon_exact"
TARGET = "hexagon_target_error"  # worst-case error the user aims at (data's unit), or None
TARGET_MECHANISM = "hexagon_target_mechanism"
WITHIN = "hexagon_within"  # the ±X band of the distribution chart, or None (default from target)
RAW = "hexagon_raw_releases"  # show raw releases instead of post-processed (clamped into [0, U])
PRESENTER = "hexagon_presenter"
TAB = "hexagon_tab"  # the open tab below the two charts (only its content is drawn)
HEADING = "hexagon_heading"  # "How far off will a release be? ε = …", above the two charts
HEADLINE = "hexagon_headline"  # the table under the two charts
BEHIND = (HEADING, HEADLINE, TAB)  # what shows ε and waits for the rerun: faded meanwhile
MORE_SETTINGS = "hexagon_more_settings"  # whether "More settings" is open (drawn only then)
TAB_READOUTS, TAB_DETAIL, TAB_MAE, TAB_TABLES = (
    "Read-outs",
    "Worst case in detail",
    "Mean error against ε",
    "Tables and downloads",
)
TABS: tuple[str, ...] = (TAB_READOUTS, TAB_DETAIL, TAB_MAE, TAB_TABLES)

# ε's range is the product's (core.params.EPSILON_MIN, EPSILON_MAX: the number input reaches it);
# the slider's stops span the usual 0.01 to 10, plus the current value when it lies outside.
EPSILON_STOPS: tuple[float, ...] = tuple(
    [float(f"{k}e{e}") for e in (-3, -2, -1) for k in range(10, 100)] + [10.0]
)
"""Every value with two significant digits from 0.01 to 10 (271 stops): evenly many per decade,
so the slider keeps its log feel while 0.5, 0.51, …, 0.59 are all reachable."""

DEFAULT_WITHIN = 1.0  # in the data's unit, when no target error is set

DEFAULTS: dict[str, Any] = {
    TARGET: None,
    TARGET_MECHANISM: "opt-arrayavg",
    WITHIN: None,
    RAW: False,
    PRESENTER: False,
}
WIDGETS: tuple[str, ...] = (TARGET, TARGET_MECHANISM, WITHIN, RAW, PRESENTER)


def stops_with(epsilon: float) -> list[float]:
    """The slider's stops, with ``epsilon`` among them (so an exact value is shown as it is)."""
    if epsilon in EPSILON_STOPS:
        return list(EPSILON_STOPS)
    return sorted({*EPSILON_STOPS, float(epsilon)})


def clamp_epsilon(value: float) -> float:
    """ε kept inside the product's range [EPSILON_MIN, EPSILON_MAX] (core.params)."""
    return float(min(max(float(value), EPSILON_MIN), EPSILON_MAX))


def set_epsilon(value: float) -> None:
    """Make ``value`` the ε of every view (use from callbacks, before the widgets are drawn)."""
    eps = clamp_epsilon(value)
    for key in (state.EPSILON, EPSILON_SLIDER, EPSILON_EXACT):
        state.put(key, eps)


def on_slider() -> None:
    set_epsilon(st.session_state[EPSILON_SLIDER])


def on_exact() -> None:
    value = st.session_state[EPSILON_EXACT]
    set_epsilon(st.session_state[state.EPSILON] if value is None else value)


def init_settings() -> None:
    """Defaults of this page's settings, kept across pages (call before drawing them)."""
    state.keep_widgets(WIDGETS, DEFAULTS)


def init_epsilon() -> float:
    """Both ε widgets set from the shared ε (call before drawing them). Returns ε."""
    ss = st.session_state
    raw = ss.get(state.EPSILON)
    try:
        eps = clamp_epsilon(float(raw)) if raw is not None else 1.0
    except (TypeError, ValueError):
        eps = 1.0
    for key in (state.EPSILON, EPSILON_SLIDER, EPSILON_EXACT):
        state.put(key, eps)
    return eps
