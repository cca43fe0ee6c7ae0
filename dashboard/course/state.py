"""Session-state keys of the Course page.

The step is in the view's link (``?step=``, :mod:`dashboard.common.session.url`), so a class can open
the course at step 3. (Not ``bind="query-params"``: ``st.switch_page``, which the deck's
presenter uses, refuses to leave a page whose widget is bound to the URL.) The step and each
step's control are kept across pages (:func:`dashboard.common.session.state.keep_widgets`); the learner's tries are parameters
too (the value checked and whether it was right), never results.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.common.session import state, url

STEP = url.COURSE_STEP  # 1 … 6, the link's ?step=
STEPS = (1, 2, 3, 4, 5, 6)
EPSILON = {1: "course_eps_1", 4: "course_eps_4", 5: "course_eps_5", 6: "course_eps_6"}
"""Each ε step's ε (the ``st.select_slider``'s key; the browser's slider writes it too)."""
EPSILON_RANGE = {step: f"course_epsilon_range_{step}" for step in EPSILON}
"""The browser's ε slider of each step (:mod:`dashboard.common.view.slider`; its own state)."""
EPSILON_GROUP = {step: f"course_epsilon_{step}" for step in EPSILON}
"""Its ``hexplorer:frame`` events, heard by the step's chart."""
USER = "course_user"
M_UB = "course_m_ub"
TRIES = "course_tries"  # {step: (value checked, right?)}

DEFAULTS: dict[str, Any] = {STEP: 1, **{key: 1.0 for key in EPSILON.values()}}
WIDGETS: tuple[str, ...] = (STEP, *EPSILON.values(), USER, M_UB)


def init() -> None:
    """The shared defaults, then this page's kept values."""
    state.init()
    state.keep_widgets(WIDGETS, DEFAULTS, none_is_unset=True)


def go(step: int) -> None:
    """Move to a step (a button's callback; the link follows after the run)."""
    state.remember(STEP, min(max(int(step), STEPS[0]), STEPS[-1]))


def set_epsilon(step: int, value: float) -> None:
    """The browser's slider's callback: the step's ε, where the answer check reads it."""
    st.session_state[EPSILON[step]] = float(value)


def record(step: int, value: Any, right: bool) -> None:
    """Note a checked answer."""
    tries = dict(st.session_state.get(TRIES) or {})
    tries[int(step)] = (value, bool(right))
    st.session_state[TRIES] = tries


def last_try(step: int) -> tuple[Any, bool] | None:
    """The last checked value of a step and whether it was right (None before any)."""
    return (st.session_state.get(TRIES) or {}).get(int(step))
