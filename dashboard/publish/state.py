"""Session-state keys and defaults of the Publish page (all prefixed ``publish_``).

Session state holds parameters, never results: after publishing, only the release ids are kept
(``LAST``) and the recorded release is read back from the ledger. As on the Whole-city page,
every widget value is also kept under a shadow key so that visiting another page does not reset
it (:func:`init`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.common.session import state

MODE = "publish_mode"  # "hats" | "slot" | "day": what is published
HATS = "publish_hats"  # list of HAT labels, in "hats" mode
SLOT = "publish_slot"  # in "slot" mode
DAY = "publish_day"  # in "day" mode
MECHANISM = "publish_mechanism"  # "grid-laplace" or a single-HAT mechanism name
EPSILON = "publish_epsilon"
ACCOUNTING = "publish_accounting"  # for grid-laplace: "per-user" | "max" | "chop"
SEED = "publish_seed"  # seed of the preview's simulated noise
CONFIRM = "publish_confirm"  # the confirmation checkbox
LAST = "publish_last"  # release ids of the last publication (not a widget)
LAST_REUSED = "publish_last_reused"  # it gave back an earlier record of the same request

MODES = ("slot", "day", "hats")
GRID_MECHANISM = "grid-laplace"
EPSILON_OPTIONS = state.EPSILON_OPTIONS
MAX_HATS = 50  # HATs picked by hand (a slot or a day publishes all of its HATs)

DEFAULTS: dict[str, Any] = {
    MODE: "slot",
    HATS: [],
    MECHANISM: None,  # None: the plan's recommendation for the chosen HATs (the page sets it)
    EPSILON: 1.0,
    ACCOUNTING: "per-user",
    SEED: 0,
    CONFIRM: False,
}

WIDGETS: tuple[str, ...] = (
    MODE, HATS, SLOT, DAY, MECHANISM, EPSILON, ACCOUNTING, SEED,
)  # fmt: skip


def init() -> None:
    """The shared :func:`dashboard.common.session.state.init`, then this page's defaults and kept
    values."""
    state.init()
    state.keep_widgets(WIDGETS, DEFAULTS)
    ss = st.session_state
    ss.setdefault(CONFIRM, False)
    ss.setdefault(LAST, [])
    ss.setdefault(LAST_REUSED, False)


remember = state.remember  # set a widget's value and its kept copy
