"""Which HAT the pages show: ``state.HAT``, the one source of truth for the HAT *and* the slot.

Every page reads the HAT from here and the current slot is the HAT's slot, so the Map, One
hexagon and Whole city always show the same hexagon-hour. "Busiest" means one thing, defined in
core (``core.data.busiest_hat`` and ``busiest_slot``, also the CLI's defaults): the HAT
(hexagon-hour) with the most records, and the default slot is the busiest HAT's slot.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.data import busiest_hat
from dashboard.common.session import state
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec


def hat_label(row: pd.Series | dict, users_noun: str = "buses") -> str:
    """'CELL / SLOT — 210 buses, 17,166 records' for select boxes (``users_noun``: the plural
    of the user noun in use, ``units.current().users``)."""
    users, records = int(row["users"]), int(row["records"])
    return f"{row['cell']} / {row['slot']} — {users:,} {users_noun}, {records:,} records"


def current_hat(spec: DataSpec) -> str:
    """The selected HAT label, reset to the busiest HAT when unset or absent from this data."""
    ss = st.session_state
    table = compute.hats(spec)
    if ss.get(state.HAT) is None or not (table["hat"] == ss[state.HAT]).any():
        ss[state.HAT] = busiest_hat(table)
    return str(ss[state.HAT])


def current_slot(spec: DataSpec) -> str:
    """The slot of the selected HAT: the slot every page opens on."""
    label = current_hat(spec)
    table = compute.hats(spec)
    return str(table.loc[table["hat"] == label, "slot"].iloc[0])


def select_slot(spec: DataSpec, slot: str) -> None:
    """Make ``slot`` current: the busiest HAT of that slot becomes the selected HAT (use from
    callbacks); nothing changes when the selected HAT is in that slot already."""
    ss = st.session_state
    table = compute.hats(spec)
    if ss.get(state.HAT) in set(table.loc[table["slot"] == slot, "hat"]):
        return
    in_slot = table[table["slot"] == slot]
    if len(in_slot):
        ss[state.HAT] = busiest_hat(in_slot)


def picked_row(selection_state, layer_id: str) -> dict | None:
    """The data row clicked on a layer whose id is ``layer_id`` or starts with ``layer_id-``,
    from ``st.pydeck_chart``'s selection state.

    The state looks like ``{"selection": {"indices": {layer: [i]}, "objects": {layer: [row]}}}``;
    None when nothing (or nothing on those layers) is selected.

    >>> picked_row({"selection": {"indices": {"h": [0]}, "objects": {"h": [{"hat": "c/s"}]}}}, "h")
    {'hat': 'c/s'}
    >>> picked_row({"selection": {"objects": {"h-3-points": [{"hat": "d/s"}]}}}, "h")
    {'hat': 'd/s'}
    >>> picked_row({"selection": {"indices": {}, "objects": {}}}, "h") is None
    True
    """
    try:
        objects = selection_state["selection"]["objects"]
        items = list(objects.items())
    except (KeyError, TypeError, AttributeError):
        return None
    for layer, rows in items:
        if (layer == layer_id or str(layer).startswith(f"{layer_id}-")) and rows:
            return dict(rows[0])
    return None


def select_hat(label: str) -> None:
    """Make ``label`` the HAT every page shows (use from callbacks)."""
    st.session_state[state.HAT] = label
