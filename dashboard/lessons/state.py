"""Session-state keys of the lesson page (neighbouring datasets).

The user and the mechanism are part of a shared link (:mod:`dashboard.common.session.url` owns their
key names). Streamlit drops a widget's value while another page runs, so each value is also kept
under a shadow key (as :mod:`dashboard.city.state` does).
"""

from __future__ import annotations

from typing import Any

from dashboard.common.session import state
from dashboard.common.session.url import LESSON_MECHANISM, LESSON_USER

USER = LESSON_USER  # user id of the chosen user in the HAT
MECHANISM = LESSON_MECHANISM
VALUE = "lesson_value"  # the chosen user's speed in D'
VALUE_FOR = "lesson_value_for"  # (HAT, user) the value was last reset for
HALF_NOISE = "lesson_half_noise"  # show what half the noise would leak
EPSILON = state.EPSILON  # shared with One hexagon

DEFAULTS: dict[str, Any] = {MECHANISM: "arrayavg-best", HALF_NOISE: False}
WIDGETS: tuple[str, ...] = (USER, MECHANISM, VALUE, HALF_NOISE)
SIMULATED_RUNS = 200_000
"""Runs per dataset of a simulated log-ratio (40 bins: a few thousand runs per bin)."""


def init() -> None:
    """The shared defaults, then this page's kept values."""
    state.init()
    state.keep_widgets(WIDGETS, DEFAULTS, none_is_unset=True)
