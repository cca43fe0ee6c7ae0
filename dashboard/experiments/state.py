"""Session-state keys of the Experiments page.

Streamlit drops a widget's value while another page runs, so each value is also kept under a
shadow key (as :mod:`dashboard.lessons.state` does).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.experiments import CATALOGUE

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


def _shadow(key: str) -> str:
    return f"_keep_{key}"


def init() -> None:
    """This page's kept values, else the defaults."""
    ss = st.session_state
    for key in WIDGETS:
        if key in ss and ss[key] is not None:
            ss[key] = ss[key]
            ss[_shadow(key)] = ss[key]
        elif _shadow(key) in ss:
            ss[key] = ss[_shadow(key)]
        else:
            ss[key] = DEFAULTS[key]
