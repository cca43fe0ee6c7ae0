"""Which HAT the pages show: ``state.HAT``, kept valid for the data in use."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.common import compute, state
from dashboard.common.compute import DataSpec


def hat_label(row: pd.Series | dict) -> str:
    """'CELL / SLOT — 210 buses, 17,166 records' for select boxes."""
    users, records = int(row["users"]), int(row["records"])
    return f"{row['cell']} / {row['slot']} — {users:,} buses, {records:,} records"


def current_hat(spec: DataSpec) -> str:
    """The selected HAT label, reset to the busiest HAT when unset or absent from this data."""
    ss = st.session_state
    table = compute.hats(spec)
    if ss.get(state.HAT) is None or ss[state.HAT] not in set(table["hat"]):
        ss[state.HAT] = str(table["hat"].iloc[0])
    return str(ss[state.HAT])


def picked_row(selection_state, layer_id: str) -> dict | None:
    """The data row clicked on layer ``layer_id``, from ``st.pydeck_chart``'s selection state.

    The state looks like ``{"selection": {"indices": {layer: [i]}, "objects": {layer: [row]}}}``;
    None when nothing (or nothing on that layer) is selected.

    >>> picked_row({"selection": {"indices": {"h": [0]}, "objects": {"h": [{"hat": "c/s"}]}}}, "h")
    {'hat': 'c/s'}
    >>> picked_row({"selection": {"indices": {}, "objects": {}}}, "h") is None
    True
    """
    try:
        rows = selection_state["selection"]["objects"].get(layer_id) or []
    except (KeyError, TypeError, AttributeError):
        return None
    return dict(rows[0]) if rows else None


def select_hat(label: str) -> None:
    """Make ``label`` the HAT every page shows (use from callbacks)."""
    st.session_state[state.HAT] = label
