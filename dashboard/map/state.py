"""Session-state keys of the Map page's error views (all prefixed ``map_``).

ε, the mechanism and the planning target are *shared*
(:data:`dashboard.common.session.state.EPSILON`, ``MECHANISM``, ``TARGET``): One hexagon, Whole city
and the Map show one value of each. The Map's widgets for them have their own keys and are bound to
the shared ones (:func:`dashboard.common.session.state.mirror` before drawing,
:func:`~dashboard.common.session.state.push` on change), so no page snaps the shared value to its
own widget's stops.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.mechanisms import analytic_names
from dashboard.common.session import state

EPSILON = "map_epsilon"  # the slider bound to the shared ε (st.select_slider)
EPSILON_RANGE = "map_epsilon_range"  # the browser's slider (dashboard.common.view.slider)
EPSILON_GROUP = "map_epsilon"  # its hexplorer:frame events, heard by the error map
EPSILON_LABEL = "ε per hexagon (log scale)"
LIVE_DECK = "map_live_deck"  # the error map the browser recolours (dashboard.common.view.livemap)
LIVE_SIDE = "map_live_side"  # the panel beside it, whose figures the browser rewrites with it
LIVE_LEGEND = "map_live_legend"  # the legend's counts below it, rewritten with it too
SCALE_LEGEND = "map_legend"  # the colour scale's legend (ui.legend's key)
MECHANISM = "map_mechanism"  # the select box bound to the shared mechanism
TARGET = "map_target"  # the number box bound to the shared target
AUTO_SCALE = "map_auto_scale"  # colour scale from the values shown instead of fixed
SPLIT = "map_split"  # show the split view
SPLIT_MODE = "map_split_mode"  # "epsilon" | "mechanism" | "rule"
EPSILON_B = "map_epsilon_b"  # side B's ε (split by ε)
MECHANISM_B = "map_mechanism_b"  # side B's mechanism (split by mechanism)
RULE_A = "map_rule_a"  # the two m_UB rules (split by rule)
RULE_B = "map_rule_b"
SPLIT_SHOW = "map_split_show"  # "sides" | "difference"
DERIVED_CELLS = "map_derived_cells"  # hexagons of the derived mean (empty: the whole slot)
DERIVED_RUNS = "map_derived_runs"
DERIVED_ASKED = "map_derived_asked"  # the parameters of the last simulation asked for
APP_RERUN = "map_app_rerun"  # a map click changed the HAT: rerun the whole page
TABLE_SHOWN = "map_table_shown"  # the table of the slot's hexagons, shown on request
RESOLUTION_MODE = "map_resolution_mode"  # "fixed" | "adaptive" (core.citywide.adaptive)
ADAPTIVE_LEVELS = "map_adaptive_levels"  # how many resolutions coarser the adaptive map may go


def mechanisms() -> tuple[str, ...]:
    """The mechanisms the error map offers: those whose registry entry has an analytic worst
    case (SPEC sections 3-4), so that moving ε is one vectorised lookup; the others need a
    simulation per hexagon. Read at each run, so a mechanism registered later is offered."""
    return analytic_names()


RULES: dict[str, str] = {
    "opt-arrayavg": "m^(ε), the error-optimal m_UB (opt-arrayavg)",
    "arrayavg-best": "median count (arrayavg-best)",
    "opt-arrayavg-convex": "m_UB^(O,2) (opt-arrayavg-convex)",
}
"""Two m_UB rules compared on the same BestFit arrays: the mechanisms that differ only in it."""
SPLIT_MODES = ("epsilon", "mechanism", "rule", "adaptive")
RESOLUTION_MODES = ("fixed", "adaptive")
ADAPTIVE_LEVEL_OPTIONS = (1, 2, 3, 4)
SPLIT_SHOWS = ("sides", "difference")
EPSILON_STOPS = state.EPSILON_OPTIONS
DERIVED_RUN_OPTIONS = (500, 2_000, 10_000)

DEFAULTS: dict[str, Any] = {
    AUTO_SCALE: False,
    SPLIT: False,
    SPLIT_MODE: "epsilon",
    EPSILON_B: 2.0,
    MECHANISM_B: "opt-bounding",
    RULE_A: "opt-arrayavg",
    RULE_B: "arrayavg-best",
    SPLIT_SHOW: "sides",
    DERIVED_CELLS: [],
    DERIVED_RUNS: 2_000,
    DERIVED_ASKED: None,
    APP_RERUN: False,
    TABLE_SHOWN: False,
    RESOLUTION_MODE: "fixed",
    ADAPTIVE_LEVELS: 2,
}
WIDGETS: tuple[str, ...] = (
    AUTO_SCALE, SPLIT, SPLIT_MODE, EPSILON_B, MECHANISM_B, RULE_A, RULE_B, SPLIT_SHOW,
    DERIVED_RUNS, TABLE_SHOWN, RESOLUTION_MODE, ADAPTIVE_LEVELS,
)  # fmt: skip


def stops_with(epsilon: float, stops=EPSILON_STOPS) -> list[float]:
    """The slider's stops with ``epsilon`` among them (an ε typed on One hexagon stays exact).

    >>> stops_with(0.51)[9:12]
    [0.4, 0.5, 0.51]
    """
    return sorted({*map(float, stops), float(epsilon)})


def init() -> None:
    """Defaults of the Map's keys, kept across pages; the bound widgets set from the shared
    values. Call at the top of the page, after :func:`dashboard.common.session.state.init`."""
    ss = st.session_state
    state.keep_widgets(WIDGETS, DEFAULTS)  # the split view, the scale, … kept across pages
    for key, value in DEFAULTS.items():  # the keys no widget holds
        if key not in WIDGETS and key not in ss:
            ss[key] = list(value) if isinstance(value, list) else value
    if ss.get(state.MECHANISM) not in mechanisms():
        ss[state.MECHANISM] = "opt-arrayavg"
    bind()


def bind() -> None:
    """Set the Map's ε, mechanism and target widgets from the shared values (each only when it
    differs, :func:`dashboard.common.session.state.mirror`: set on every run, every ε step
    re-sent all three and the browser rebuilt them)."""
    state.mirror(EPSILON, state.EPSILON)
    state.mirror(MECHANISM, state.MECHANISM)
    state.mirror(TARGET, state.TARGET)


def on_epsilon() -> None:
    state.push(EPSILON, state.EPSILON)


def set_epsilon(value: float) -> None:
    """The browser's slider moved to ``value`` (one of its stops): the shared ε."""
    st.session_state[state.EPSILON] = float(value)


def on_mechanism() -> None:
    state.push(MECHANISM, state.MECHANISM)


def on_target() -> None:
    value = st.session_state[TARGET]
    if value is not None and value > 0:
        state.push(TARGET, state.TARGET)
