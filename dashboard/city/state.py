"""Session-state keys and defaults of the Whole-city page (all prefixed ``city_``).

Like :mod:`dashboard.state`: session state holds parameters, never results. Streamlit drops a
widget's value when a page that does not draw the widget runs, and the other pages do not know
these keys, so every widget value is also kept under a plain (non-widget) shadow key that no
page removes; :func:`init` restores a dropped widget value from it.
"""

from __future__ import annotations

from typing import Any

from core.mechanisms import analytic_names
from core.params import log_grid
from dashboard.common.session import state

MODE = "city_mode"  # "slot" | "day": all cells of one slot, or all HATs of one day
SLOT = "city_slot"  # the slot, in "slot" mode
DAY = "city_day"  # "YYYY-MM-DD", in "day" mode
MAP_SLOT = "city_map_slot"  # in "day" mode: which slot of the day the maps show
EPSILON = "city_epsilon"  # per-grid budget ε
STATISTIC = "city_statistic"  # "mean" | "var": what the maps show
SEED = "city_seed"  # seed of the simulated noise; "new noise" adds one
RAW = "city_raw"  # show the raw noisy values instead of those post-processed into range
TARGET = "city_target"  # target error (the data's unit) of the coverage curve
COVERAGE = "city_coverage"  # the share of HATs that should be within the target
PLAN_MECHANISM = "city_plan_mechanism"  # the mechanism whose worst case the plan reads

MODES = ("slot", "day")
STATISTICS = ("mean", "var")
EPSILON_OPTIONS = state.EPSILON_OPTIONS
"""The ε slider's stops (shared with the One-hexagon page): log scale from 0.05 to 10."""

LOSS_EPSILONS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
"""ε values of the privacy-loss curve (fixed, so that moving the slider does not rerun it)."""

COVERAGE_EPSILONS: tuple[float, ...] = log_grid(0.01, 100.0, 161)
"""ε values of the coverage curve (40 per decade; fixed, so the slider does not rerun it)."""


def plan_mechanisms() -> tuple[str, ...]:
    """The mechanisms with an analytic worst case (the coverage curve needs one), read from the
    registry at each run."""
    return analytic_names()


DEFAULTS: dict[str, Any] = {
    MODE: "slot",
    EPSILON: 1.0,
    STATISTIC: "mean",
    SEED: 0,
    RAW: False,
    TARGET: 5.0,
    COVERAGE: 0.9,
    PLAN_MECHANISM: "opt-arrayavg",
}

WIDGETS: tuple[str, ...] = (
    MODE, SLOT, DAY, MAP_SLOT, EPSILON, STATISTIC, SEED, RAW, TARGET, COVERAGE, PLAN_MECHANISM,
)  # fmt: skip


def init() -> None:
    """The shared :func:`dashboard.state.init`, then this page's defaults and kept values."""
    state.init()
    state.keep_widgets(WIDGETS, DEFAULTS)


remember = state.remember  # set a widget's value and its kept copy
