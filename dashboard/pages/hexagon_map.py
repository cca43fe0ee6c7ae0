"""Map page: every hexagon of one timeslot, coloured by records, buses or true mean; pick a HAT."""

from __future__ import annotations

import streamlit as st

from dashboard.common import compute, figures, maps, state, ui
from dashboard.common.selection import current_hat, picked_row, select_hat
from dashboard.common.sidebar import require_data

METRIC_LABELS = {"records": "records", "users": "buses", "true_mean": "true mean speed (km/h)"}

st.title("Map")
spec = require_data()
ss = st.session_state
with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    hat = current_hat(spec)
    table = compute.hats(spec)
    slots = sorted(set(table["slot"]))
    hat_slot = str(table.loc[table["hat"] == hat, "slot"].iloc[0])
    if ss.get(state.MAP_SLOT) not in slots or ss.get(state.MAP_HAT_SEEN) != hat:
        ss[state.MAP_SLOT] = hat_slot  # follow a HAT chosen on another page
    ss[state.MAP_HAT_SEEN] = hat

    def _on_slot_change() -> None:
        cells = compute.slot_cells(spec, ss[state.MAP_SLOT])
        select_hat(str(cells["hat"].iloc[0]))
        ss[state.MAP_CELL] = str(cells["cell"].iloc[0])

    def _on_cell_change() -> None:
        cells = compute.slot_cells(spec, ss[state.MAP_SLOT])
        row = cells[cells["cell"] == ss[state.MAP_CELL]]
        if len(row):
            select_hat(str(row["hat"].iloc[0]))

    def _on_map_select() -> None:
        row = picked_row(ss.get(state.MAP_DECK), maps.HEX_LAYER_ID)
        if row is not None and "hat" in row:
            select_hat(str(row["hat"]))
            ss[state.MAP_CELL] = str(row["cell"])

    left, right = st.columns([3, 2])
    left.selectbox(
        "Timeslot",
        options=slots,
        key=state.MAP_SLOT,
        on_change=_on_slot_change,
        help="A HAT is one hexagon in one timeslot; the map shows all hexagons of this slot.",
    )
    right.radio(
        "Colour by",
        options=list(state.MAP_METRICS),
        format_func=METRIC_LABELS.__getitem__,
        key=state.MAP_METRIC,
        horizontal=True,
    )
    slot = str(ss[state.MAP_SLOT])
    cells = compute.slot_cells(spec, slot)
    cell_options = cells["cell"].astype(str).tolist()
    selected_cell = (
        str(cells.loc[cells["hat"] == hat, "cell"].iloc[0]) if hat in set(cells["hat"]) else None
    )
    if ss.get(state.MAP_CELL) not in cell_options or (
        selected_cell is not None and ss[state.MAP_CELL] != selected_cell
    ):
        ss[state.MAP_CELL] = selected_cell if selected_cell is not None else cell_options[0]

    metric = str(ss[state.MAP_METRIC])
    hexmap = maps.hexagon_map(
        cells,
        value_col=metric,
        value_label=METRIC_LABELS[metric],
        tooltip_cols={"records": "records", "users": "buses", "true_mean": "true mean (km/h)"},
        selected_cell=selected_cell,
    )
    st.pydeck_chart(
        hexmap.deck,
        on_select=_on_map_select,
        selection_mode="single-object",
        key=state.MAP_DECK,
        height=480,
        alt=f"Map of {len(cells)} hexagons in slot {slot}, coloured by {METRIC_LABELS[metric]}",
    )
    ui.chart(figures.legend_bar(hexmap.legend, title=METRIC_LABELS[metric]), key="map_legend")
    st.selectbox(
        "Hexagon (busiest first) — or click one on the map",
        options=cell_options,
        key=state.MAP_CELL,
        on_change=_on_cell_change,
        format_func=lambda c: (
            f"{c} — {int(cells.loc[cells['cell'] == c, 'records'].iloc[0]):,} records, "
            f"{int(cells.loc[cells['cell'] == c, 'users'].iloc[0]):,} buses"
        ),
    )
    if selected_cell is None:
        st.caption(
            f"The selected HAT {hat} is not in this slot; pick a hexagon to select one here."
        )
    else:
        st.success(
            f"Selected HAT: **{hat}**. The One hexagon page analyses it.", icon=":material/hexagon:"
        )
    ui.learn_link("What is a HAT, and why are true values shown?")
    st.caption(ui.WORKBENCH_NOTE)
    ui.table(cells, name=f"hexagons_{slot}".replace(":", ""), key="map_cells")
