"""Session-state keys of the Course page.

The step is bound to the URL's ``?step=`` (``bind="query-params"``: the key is the parameter's
name), so a class can open the course at step 3. Each step's control has its own key, kept
across pages (:func:`dashboard.common.state.keep_widgets`); the learner's tries are parameters
too (the value checked and whether it was right), never results.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.common import state

STEP = "step"  # 1 … 6, the URL's ?step=
STEPS = (1, 2, 3, 4, 5, 6)
EPSILON = {1: "course_eps_1", 4: "course_eps_4", 5: "course_eps_5", 6: "course_eps_6"}
USER = "course_user"
M_UB = "course_m_ub"
TRIES = "course_tries"  # {step: (value checked, right?)}

DEFAULTS: dict[str, Any] = {key: 1.0 for key in EPSILON.values()}
WIDGETS: tuple[str, ...] = (*EPSILON.values(), USER, M_UB)


def init() -> None:
    """The shared defaults, then this page's kept values."""
    state.init()
    state.keep_widgets(WIDGETS, DEFAULTS, none_is_unset=True)


def go(step: int) -> None:
    """Move to a step (a button's callback; the bound widget then writes the URL)."""
    st.session_state[STEP] = min(max(int(step), STEPS[0]), STEPS[-1])


def record(step: int, value: Any, right: bool) -> None:
    """Note a checked answer."""
    tries = dict(st.session_state.get(TRIES) or {})
    tries[int(step)] = (value, bool(right))
    st.session_state[TRIES] = tries


def last_try(step: int) -> tuple[Any, bool] | None:
    """The last checked value of a step and whether it was right (None before any)."""
    return (st.session_state.get(TRIES) or {}).get(int(step))
