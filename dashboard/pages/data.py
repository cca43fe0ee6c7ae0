"""Data page: what was read, what was rejected and why, and the HATs it produced."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.common import compute, ui
from dashboard.common.sidebar import require_data

st.title("Data")
spec = require_data()
st.info(ui.WORKBENCH_NOTE, icon=":material/visibility:")

with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    rep = compute.report(spec)
    st.subheader(f"Report for {spec.source.name}")
    cols = st.columns(5)
    cols[0].metric("Rows read", f"{rep.rows_read:,}")
    cols[1].metric("Rejected", f"{rep.n_rejected:,}")
    cols[2].metric("Clamped into [0, U]", f"{rep.clamped:,}")
    cols[3].metric("Buses (users)", f"{rep.users:,}")
    cols[4].metric("HATs", f"{rep.hats:,}")
    for line in rep.lines():
        st.markdown(f"- {line}")

    if rep.rejected:
        st.subheader("Rejected rows")
        reasons = pd.DataFrame({"reason": list(rep.rejected), "rows": list(rep.rejected.values())})
        ui.table(reasons, name="rejected_reasons", key="rejected_reasons")
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
            ui.table(examples, name="rejected_examples", key="rejected_examples")

    st.subheader("HATs (hexagon and timeslot), busiest first")
    ui.table(compute.hats(spec), name="hats", key="hats", height=360)
