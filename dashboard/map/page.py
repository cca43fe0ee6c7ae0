"""Map page: every hexagon of one timeslot, coloured by records, users, true mean — or by its
error at ε, within target, one noisy release; two settings side by side; a derived mean's cost.

The slot is the selected HAT's slot (:mod:`dashboard.common.session.selection`), so the Map, One
hexagon and Whole city open on the same hexagon-hour; ε, the mechanism and the target are the
shared ones (:mod:`dashboard.map.state`). The views live in :mod:`dashboard.map.panels`.
"""

from __future__ import annotations

import streamlit as st

from dashboard.common.report.build import Report
from dashboard.common.report.panel import report_button
from dashboard.common.session import state
from dashboard.common.session.selection import (
    current_hat,
    current_slot,
    note_change,
    select_hat,
    select_slot,
)
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute, units
from dashboard.common.view import downloads, ui
from dashboard.map import panels as map_panels
from dashboard.map import state as ms


def _report(*, title, parameters, figure, texts, file_name) -> None:
    """The handout report of the error map: built when the button is clicked."""

    def make() -> Report:
        return Report(
            title=title,
            parameters=parameters,
            figures=[("The error map and its legend", figure())],
            texts=texts,
            summary={},
            version=downloads.VERSION,
        )

    report_button(make, file_name=file_name, key="map_report")


st.title("Map")
spec = require_data()
ms.init()
ss = st.session_state
u = units.current()
metric_labels = map_panels.metric_labels(u)
with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    note_change(spec, "Map")
    hat = current_hat(spec)
    table = compute.hats(spec)
    slots = sorted(set(table["slot"]))
    ss[state.MAP_SLOT] = current_slot(spec)  # one source of truth: the HAT's slot
    fingerprint = downloads.fingerprint(spec)

    def _on_slot_change() -> None:
        select_slot(spec, str(ss[state.MAP_SLOT]))

    def _on_cell_change(key: str) -> None:
        cells = compute.slot_cells(spec, ss[state.MAP_SLOT])
        row = cells[cells["cell"] == ss[key]]
        if len(row):
            select_hat(str(row["hat"].iloc[0]))

    left, mid, right = st.columns([3, 3, 1])
    left.selectbox(
        "Timeslot",
        options=slots,
        key=state.MAP_SLOT,
        on_change=_on_slot_change,
        help="A HAT is one hexagon in one timeslot; the map shows all hexagons of this slot.",
    )
    mid.radio(
        "Colour by",
        options=list(state.MAP_METRICS),
        format_func=metric_labels.__getitem__,
        key=state.MAP_METRIC,
        horizontal=True,
    )
    right.toggle(
        "Basemap",
        key=state.MAP_BASEMAP,
        help="Street-map tiles from Carto under the hexagons (needs the internet; off, the map "
        "shows the data's own record density as a faint grey layer for context).",
    )
    slot = str(ss[state.MAP_SLOT])
    hat = current_hat(spec)
    cells = compute.slot_cells(spec, slot)
    cell_options = cells["cell"].astype(str).tolist()
    selected_cell = (
        str(cells.loc[cells["hat"] == hat, "cell"].iloc[0]) if hat in set(cells["hat"]) else None
    )

    metric = str(ss[state.MAP_METRIC])
    map_panels.map_view(
        spec,
        slot,
        metric,
        selected_cell=selected_cell,
        basemap=bool(ss[state.MAP_BASEMAP]),
        report=_report,
    )
    map_panels.split_view(spec, slot)

    # The select box is keyed by data and slot: new data or a new slot gets a new widget, so
    # its labels (record and user counts) are never the previous data's.
    cell_key = state.map_cell_key(f"{fingerprint}_{slot}")
    ss[cell_key] = selected_cell if selected_cell is not None else cell_options[0]
    counts = cells.set_index("cell")[["records", "users"]].to_dict("index")
    st.selectbox(
        "Hexagon (most records first) — or click one on the map",
        options=cell_options,
        key=cell_key,
        on_change=_on_cell_change,
        args=(cell_key,),
        format_func=lambda c: (
            f"{c} — {int(counts[c]['records']):,} records, {u.count(int(counts[c]['users']))}"
        ),
    )
    if selected_cell is None:
        st.caption(
            f"The selected HAT {hat} is not in this slot; pick a hexagon to select one here."
        )
    else:
        row = counts[selected_cell]
        st.success(
            f"Selected HAT: **{hat}** — {int(row['records']):,} records from "
            f"{u.count(int(row['users']))}. The One hexagon page analyses it.",
            icon=":material/hexagon:",
        )
    map_panels.derived_view(spec, slot)
    ui.learn_link("What is a HAT, and why are true values shown?")
    st.caption(ui.workbench_note(u))
    # The table is shown on request: its grid is the largest module a browser loads for this
    # page (about 1.2 MB of JavaScript), and with it the first map took about 0.3 s longer.
    if st.toggle(
        "Table of this slot's hexagons",
        key=ms.TABLE_SHOWN,
        help="Every hexagon of the slot: records, users, m, the true mean; downloadable as CSV.",
    ):
        ui.table(
            downloads.with_units(cells, u, values=["true_mean"]),
            name=f"hexagons_{slot}".replace(":", ""),
            key="map_cells",
            provenance=downloads.provenance(spec, u, hat=f"slot {slot}"),
        )
