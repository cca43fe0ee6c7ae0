"""Session-state keys of the Experiments page.

Streamlit drops a widget's value while another page runs, so each value is also kept under a
shadow key (:func:`dashboard.common.session.state.keep_widgets`).
"""

from __future__ import annotations

from typing import Any

from core.experiments import CATALOGUE
from dashboard.common.session import state

EXPERIMENT = "exp_id"  # id of the chosen experiment
RUNS = "exp_runs"  # Monte-Carlo runs per point
SEED = "exp_seed"
FRESH = "exp_fresh"  # a new dataset on every run (bounding figures)

RUNS_DEFAULT = 2_000
"""Runs per point on the page (the papers use 10,000; ``hexplorer reproduce`` defaults to it)."""
RUNS_MAX = 20_000
FRESH_RUNS_MAX = 2_000
"""A new dataset per run is a Python loop over the runs: capped lower to stay interactive."""

DEFAULTS: dict[str, Any] = {
    EXPERIMENT: CATALOGUE[0].id,
    RUNS: RUNS_DEFAULT,
    SEED: 0,
    FRESH: False,
}
WIDGETS: tuple[str, ...] = (EXPERIMENT, RUNS, SEED, FRESH)


def init() -> None:
    """This page's kept values, else the defaults."""
    state.keep_widgets(WIDGETS, DEFAULTS, none_is_unset=True)
