"""Publish: release noisy values for real — OpenDP noise, the ledger, the budget (SPEC §7).

Read widgets → a preview (a seeded simulation, labelled as such) → on confirmation, a published
release (``core.publish``: OpenDP noise, recorded once, charged to each user) and its files →
the ledger: releases and every user's cumulative ε against the budget.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.mechanisms import MECHANISMS
from core.publish import BudgetExceeded
from core.publish.city import ACCOUNTINGS
from dashboard.common.session.selection import current_slot
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute as common_compute
from dashboard.common.source import units
from dashboard.common.view import ui
from dashboard.publish import charts, compute
from dashboard.publish import state as ps

MODE_LABELS = {"slot": "all hexagons of one slot", "day": "all HATs of one day", "hats": "HATs"}
ACCOUNTING_LABELS = {
    "per-user": "G_ℓ·ε per user",
    "max": "ε·max G_ℓ for everyone",
    "chop": "K·ε after CHOP-USER",
}
FORMATS = {".csv": "text/csv", ".geojson": "application/geo+json", ".parquet": "application/octet-stream"}  # fmt: skip

st.title("Publish")
ps.init()
spec = require_data()
ss = st.session_state
u = units.current()
book = compute.ledger()
st.caption(
    "A published release leaves the tool: its Laplace noise comes from OpenDP's vetted sampler, "
    f"it is recorded once in the ledger ({book.path}) and charged to every {u.user} whose "
    "records it reads, and asking again returns the recorded values, never fresh noise. It "
    "contains noisy values only."
)

with ui.errors_shown():
    slot_table = compute.slots(spec)
    # --- What to publish -------------------------------------------------------------------
    c1, c2 = st.columns([2, 3])
    c1.radio(
        "Publish", options=list(ps.MODES), format_func=MODE_LABELS.__getitem__, key=ps.MODE,
        horizontal=True,
    )  # fmt: skip
    mode = str(ss[ps.MODE])
    slot = day = None
    hats: tuple[str, ...] = ()
    with c2:
        if mode == "slot":
            options = slot_table["slot"].astype(str).tolist()
            if ss.get(ps.SLOT) not in options:  # the slot every page opens on (busiest HAT's)
                ps.remember(ps.SLOT, current_slot(spec))
            st.selectbox("Slot (most records first)", options=options, key=ps.SLOT)
            slot = str(ss[ps.SLOT])
        elif mode == "day":
            day_options = compute.days(slot_table)
            if not day_options:
                st.warning("Hour-of-day slots belong to no day: choose a slot or HATs.")
                st.stop()
            if ss.get(ps.DAY) not in day_options:
                ps.remember(ps.DAY, day_options[0])
            st.selectbox("Day (busiest first)", options=day_options, key=ps.DAY)
            day = str(ss[ps.DAY])
        else:
            labels = common_compute.hats(spec)["hat"].astype(str).tolist()[:500]
            ps.remember(ps.HATS, [h for h in ss.get(ps.HATS, []) if h in labels])
            st.multiselect(
                "HATs (busiest first)", options=labels, key=ps.HATS, max_selections=ps.MAX_HATS
            )
            hats = tuple(ss[ps.HATS])
            if not hats:
                st.info("Choose one or more HATs.")
                st.stop()
    names = [ps.GRID_MECHANISM, *MECHANISMS]
    c3, c4, c5 = st.columns([2, 2, 2])
    c3.selectbox(
        "Mechanism",
        options=names,
        key=ps.MECHANISM,
        format_func=lambda n: "grid-laplace (mean and variance per HAT)" if n == ps.GRID_MECHANISM
        else f"{n} (mean, one release per HAT)",
        help="grid-laplace: SPEC §5, each HAT's mean and variance plus Laplace noise (ε/2 each). "
        "The others are the single-HAT mechanisms of the One-hexagon page.",
    )  # fmt: skip
    mechanism = str(ss[ps.MECHANISM])
    if ss.get(ps.EPSILON) not in ps.EPSILON_OPTIONS:
        ps.remember(ps.EPSILON, 1.0)
    c4.select_slider(
        "ε per HAT", options=list(ps.EPSILON_OPTIONS), key=ps.EPSILON, format_func=lambda e: f"{e:g}"
    )  # fmt: skip
    epsilon = float(ss[ps.EPSILON])
    accounting = "per-user"
    if mechanism == ps.GRID_MECHANISM:
        c5.radio(
            f"Charge each {u.user}", options=list(ACCOUNTINGS),
            format_func=ACCOUNTING_LABELS.__getitem__, key=ps.ACCOUNTING,
        )  # fmt: skip
        accounting = str(ss[ps.ACCOUNTING])
    else:
        c5.caption(f"Each {u.user} is charged ε for every chosen HAT it is in (G_ℓ·ε).")
    st.text_input(
        f"Namespace of the {u.users} in the ledger",
        key=ps.NAMESPACE,
        help=f"The same {u.user} id within one namespace is one {u.user}: its releases add up.",
    )
    namespace = str(ss[ps.NAMESPACE]).strip() or "default"

    # --- Preview ----------------------------------------------------------------------------
    st.subheader("Preview — a simulation, nothing is published")
    st.number_input("Seed of the simulated noise", min_value=0, max_value=2**31 - 1, key=ps.SEED)
    pv = compute.preview(
        spec, mode, hats, slot, day, mechanism, epsilon, accounting, int(ss[ps.SEED])
    )
    summary = book.summary()
    before = book.user_totals(namespace, list(pv.user_ids))
    after = before + pv.charges
    over = int(np.sum(after > summary.budget * (1 + 1e-9))) if summary.budget else 0
    m = st.columns(4)
    m[0].metric("HATs", f"{len(pv.table):,}")
    m[1].metric(f"{u.users.capitalize()} charged", f"{len(pv.user_ids):,}")
    m[2].metric("Largest charge ε", f"{float(pv.charges.max()):g}")
    m[3].metric(
        "Would pass the budget",
        "no budget set" if summary.budget is None else f"{over:,} {u.users}",
    )
    st.caption(
        f"Simulated with numpy noise (seed {int(ss[ps.SEED])}), values clamped into range as "
        f"the published files are. Means in {u.value}, variances in {u.squared}. error_bound is "
        "the worst-case error from counts only."
    )
    st.dataframe(pv.table, hide_index=True, height=240, key="publish_preview_table")

    # --- Publish ----------------------------------------------------------------------------
    st.subheader("Publish")
    st.checkbox(
        f"I publish this: OpenDP noise, recorded in the ledger, charged to "
        f"{len(pv.user_ids):,} {u.users} (up to ε = {float(pv.charges.max()):g} each). "
        "It cannot be taken back.",
        key=ps.CONFIRM,
    )
    if st.button(
        "Publish", type="primary", disabled=not ss[ps.CONFIRM], icon=":material/publish:",
        key="publish_button",
    ):  # fmt: skip
        try:
            with st.spinner("Publishing (OpenDP noise, ledger)…"):
                ss[ps.LAST] = compute.publish(
                    spec, mode, hats, slot, day, mechanism, epsilon, accounting, namespace
                )
        except BudgetExceeded as exc:
            st.error(str(exc), icon=":material/block:")
        summary = book.summary()
    if ss[ps.LAST]:
        ids = list(ss[ps.LAST])
        table = compute.recorded_table(book, ids)
        st.success(f"Published and recorded: release {', '.join(ids)}.", icon=":material/check:")
        st.dataframe(table, hide_index=True, height=240, key="publish_recorded_table")
        cols = st.columns(len(FORMATS))
        for col, (suffix, mime) in zip(cols, FORMATS.items(), strict=True):
            try:
                data = compute.file_bytes(table, suffix)
            except Exception as exc:  # noqa: BLE001 - e.g. GeoJSON of non-H3 cells: say so
                col.caption(f"{suffix}: {exc}")
                continue
            col.download_button(
                f"Download {suffix}", data=data, file_name=f"release-{ids[0]}{suffix}", mime=mime,
                key=f"publish_download_{suffix}", icon=":material/download:",
            )  # fmt: skip

    # --- The ledger -------------------------------------------------------------------------
    st.subheader("The ledger")
    m = st.columns(5)
    m[0].metric("Releases", f"{summary.releases:,}")
    m[1].metric(u.users.capitalize(), f"{summary.users:,}")
    m[2].metric(f"Largest ε of a {u.user}", f"{summary.max_user_epsilon:g}")
    m[3].metric("Budget", "none" if summary.budget is None else f"{summary.budget:g}")
    m[4].metric("Near the budget (≥ 90%)", f"{summary.users_near_budget:,}")
    ui.chart(
        charts.user_epsilon_histogram(
            book.user_epsilons(), budget=summary.budget, units=u, after=after
        ),
        key="publish_user_epsilon",
    )
    b1, b2 = st.columns([1, 3])
    b1.number_input("Budget ε per user", min_value=0.01, key=ps.BUDGET, step=0.5)
    if b2.button("Set the budget", key="publish_set_budget"):
        book.set_budget(float(ss[ps.BUDGET]))
        st.rerun()
    st.dataframe(compute.releases_table(book), hide_index=True, key="publish_ledger_table")
