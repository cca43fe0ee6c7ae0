"""Which HAT the pages show: ``state.HAT``, the one source of truth for the HAT *and* the slot.

Every page reads the HAT from here and the current slot is the HAT's slot, so the Map, One
hexagon and Whole city always show the same hexagon-hour. The two "busiest" are defined once, in core (``core.data.busiest``, also the
CLI's defaults) and named by what they are: every page opens on the busiest hexagon-hour (the
HAT with the most records) and its slot; the busiest hour (most records city-wide) heads the
lists of slots.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.data import busiest_hexagon_hour, slot_names
from dashboard.common.session import state
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec


def hat_label(row: pd.Series | dict, users_noun: str = "buses") -> str:
    """'CELL / SLOT — 210 buses, 17,166 records' for select boxes (``users_noun``: the plural
    of the user noun in use, ``units.current().users``)."""
    users, records = int(row["users"]), int(row["records"])
    return f"{row['cell']} / {row['slot']} — {users:,} {users_noun}, {records:,} records"


HAT_CHANGED_ON = "_hat_changed_on"  # the page whose run last changed the HAT (its title)
HAT_SEEN = "_hat_seen"  # {page title: the HAT that page last showed}
COARSE_PICKED = "_coarse_picked"  # a HAT just picked on the Map, maybe an adaptive cover's cell
COARSE_KEPT = "_coarse_kept"  # (data key, label): the coarse HAT opened on that data
HAT_FOUND = "_hat_found"  # (data key, label): the HAT last found in that data (current_hat)


def _changed_here() -> None:
    """Note that this run's page changed the HAT (shown on the other pages: :func:`note_change`)."""
    st.session_state[HAT_CHANGED_ON] = st.session_state.get(state.PAGE_TITLE) or "another page"


def current_hat(spec: DataSpec) -> str:
    """The selected HAT label, reset to the busiest hexagon-hour when unset or absent from this data."""
    ss = st.session_state
    label = ss.get(state.HAT)
    if label is not None and ss.get(HAT_FOUND) == (spec.key(), label):
        return str(label)  # found in this data before: every ε move reran this search
    table = compute.hats(spec)
    if label is None or not ((table["hat"] == label).any() or _coarse(spec, str(label))):
        ss[state.HAT] = busiest_hexagon_hour(table)
        ss[HAT_CHANGED_ON] = None  # new data: nobody's choice
    ss[HAT_FOUND] = (spec.key(), ss[state.HAT])
    return str(ss[state.HAT])


def _coarse(spec: DataSpec, label: str) -> bool:
    """Whether ``label`` is a coarser cell of an adaptive cover (the Map's "Resolution:
    adaptive") holding records of this data (``core.data.hat_rows``), opened from the Map on
    this very data: a HAT of another resolution left over from a change of the data's
    resolution is not one (every page then moves to the busiest hexagon-hour)."""
    from core.errors import HexplorerError

    ss = st.session_state
    kept = (spec.key(), label)
    if ss.get(COARSE_PICKED) != label and ss.get(COARSE_KEPT) != kept:
        return False
    try:
        compute.hat(spec, label)
    except HexplorerError:
        return False
    ss[COARSE_KEPT] = kept
    ss.pop(COARSE_PICKED, None)
    return True


def note_change(spec: DataSpec, page: str) -> None:
    """Say so when the HAT this page showed last was changed on another page ("HAT changed on
    the Map: …"): the pages share one HAT, so a click on the Map moves One hexagon's view."""
    ss = st.session_state
    hat = current_hat(spec)
    seen = ss.setdefault(HAT_SEEN, {})
    before, where = seen.get(page), ss.get(HAT_CHANGED_ON)
    seen[page] = hat
    if before is not None and before != hat and where and where != page:
        st.info(
            f"HAT changed on the {where} page: now **{hat}** (this page showed {before}).",
            icon=":material/sync_alt:",
        )


def current_slot(spec: DataSpec) -> str:
    """The slot of the selected HAT: the slot every page opens on."""
    label = current_hat(spec)
    return label.split("/", 1)[1]  # a coarse cell (adaptive map) is in no table row


def slot_options(slots: list[str], opening: str) -> list[str]:
    """A list of slots sorted most records first, with the slot it opens on (``opening``, the
    selected HAT's) moved to the top, so that the list opens at its top with the selected entry
    in view (a select box opens scrolled to its selected entry)."""
    return [opening, *(s for s in slots if s != opening)] if opening in slots else list(slots)


def slot_name(spec: DataSpec, slot: str) -> str:
    """' — busiest hour (most records city-wide)' or ' — holds the busiest hexagon-hour' for
    the two notable slots (``core.data.slot_names``), '' for the others."""
    name = slot_names(compute.hats(spec)).get(slot)
    return f" — {name}" if name else ""


def select_slot(spec: DataSpec, slot: str) -> None:
    """Make ``slot`` current: the busiest hexagon of that slot becomes the selected HAT (use from
    callbacks); nothing changes when the selected HAT is in that slot already."""
    ss = st.session_state
    table = compute.hats(spec)
    if ss.get(state.HAT) in set(table.loc[table["slot"] == slot, "hat"]):
        return
    in_slot = table[table["slot"] == slot]
    if len(in_slot):
        ss[state.HAT] = busiest_hexagon_hour(in_slot)
        _changed_here()


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
    if st.session_state.get(state.HAT) != label:
        _changed_here()
    st.session_state[state.HAT] = label
    st.session_state[COARSE_PICKED] = label
