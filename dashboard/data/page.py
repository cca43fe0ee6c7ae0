"""Data page: what was read, what was rejected and why, and the HATs it produced."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.common.markdown import escape
from dashboard.common.sidebar import in_use_caption, require_data
from dashboard.common.source import compute, units
from dashboard.common.view import downloads, ui

st.title("Data")
spec = require_data()
u = units.current()
st.info(ui.workbench_note(u), icon=":material/visibility:")

with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    rep = compute.report(spec)
    prov = downloads.provenance(spec, u)
    st.subheader(f"Report for {escape(spec.source.name)}")
    st.caption(in_use_caption(spec, u))
    cols = st.columns(5)
    cols[0].metric("Rows read", f"{rep.rows_read:,}")
    cols[1].metric("Rejected rows", f"{rep.n_rejected:,}")
    cols[2].metric(f"Clamped into [0, {spec.upper:g}] {u.value}", f"{rep.clamped:,}")
    cols[3].metric(f"{u.users.capitalize()} (users)", f"{rep.users:,}")
    cols[4].metric("HATs", f"{rep.hats:,}")
    for line in rep.lines(warnings=False):  # its warnings head the page (require_data)
        st.markdown(f"- {escape(line)}")  # column names and values from the file

    hats = compute.hats(spec)
    if len(hats) and int(hats["m_max"].max()) == 1:
        st.info(
            f"Every {u.user} has exactly one record in each HAT (m = 1 everywhere): here "
            "user-level privacy is record-level privacy, every m_UB is 1 and the mechanisms "
            "that clip or group records have nothing to clip or group.",
            icon=":material/info:",
        )
    elif len(hats) == 1:
        st.info("The data make a single HAT: the maps have nothing to compare it with.")

    if rep.rejected:
        st.subheader("Rejected rows")
        reasons = pd.DataFrame({"reason": list(rep.rejected), "rows": list(rep.rejected.values())})
        ui.table(reasons, name="rejected_reasons", key="rejected_reasons", provenance=prov)
        if rep.rejected_examples:
            st.caption("A few examples (row is the 0-based position in the file):")
            examples = pd.DataFrame(
                [
                    {
                        "row": e.get("row"),
                        "reason": e.get("reason"),
                        **{str(k): str(v) for k, v in e.get("values", {}).items()},
                    }
                    for e in rep.rejected_examples
                ]
            )
            ui.table(examples, name="rejected_examples", key="rejected_examples", provenance=prov)

    st.subheader("HATs (hexagon and timeslot), most records first")
    ui.table(hats, name="hats", key="hats", height=360, provenance=prov)
