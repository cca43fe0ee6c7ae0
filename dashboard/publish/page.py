"""Publish: release noisy values for real — OpenDP noise, the ledger, the budget (SPEC §7).

Read widgets → a preview (a seeded simulation, labelled as such) and what it would cost → on
confirmation, if the operator turned publishing on (:mod:`dashboard.publish.operator`), a
published release (``core.publish``: OpenDP noise, one ledger record, all or nothing) and its
files → the ledger: releases and every user's cumulative ε against the operator's budget.
A visitor never sets the budget or the namespace, and never sees a server path.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.mechanisms import MECHANISMS
from core.publish import BudgetExceeded
from core.publish.city import ACCOUNTINGS
from dashboard.common.session.selection import current_slot, slot_name, slot_options
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute as common_compute
from dashboard.common.source import units
from dashboard.common.view import downloads, ui
from dashboard.publish import charts, compute, operator
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
namespace = operator.namespace()
allowed = operator.publishing_enabled()
st.caption(
    "A published release leaves the tool: its Laplace noise comes from OpenDP's vetted sampler, "
    f"it is recorded once in this server's ledger and charged to every {u.user} whose records "
    "it reads, and asking again returns the recorded values, never fresh noise. It contains "
    "noisy values only."
)

with ui.errors_shown(), compute.server_paths_hidden(book):
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
            rows = {r["slot"]: r for r in slot_table.to_dict("records")}
            if ss.get(ps.SLOT) not in rows:  # the slot every page opens on (the selected HAT's)
                ps.remember(ps.SLOT, current_slot(spec))
            st.selectbox(
                "Slot (the selected HAT's first, then most records first)",
                options=slot_options(list(rows), current_slot(spec)),
                key=ps.SLOT,
                format_func=lambda s: (
                    f"{s} — {rows[s]['hexagons']:,} hexagons, {rows[s]['records']:,} records"
                    + slot_name(spec, s)
                ),
            )
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
    if ss.get(ps.MECHANISM) not in names:  # opens on the plan's recommendation for these HATs
        eps0 = float(ss.get(ps.EPSILON) or 1.0)
        ps.remember(ps.MECHANISM, compute.recommended(spec, mode, hats, slot, day, eps0))
    c3, c4, c5 = st.columns([2, 2, 2])
    c3.selectbox(
        "Mechanism",
        options=names,
        key=ps.MECHANISM,
        format_func=lambda n: "grid-laplace (mean and variance per HAT)" if n == ps.GRID_MECHANISM
        else f"{n} (mean, one release per HAT)",
        help="Opens on the mechanism the plan recommends for these HATs (the smallest median "
        "worst-case error at ε). grid-laplace: SPEC §5, each HAT's mean and variance plus "
        "Laplace noise (ε/2 each). The others are the single-HAT mechanisms of One hexagon.",
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

    # --- Preview ----------------------------------------------------------------------------
    st.subheader("Preview — a simulation, nothing is published")
    st.number_input("Seed of the simulated noise", min_value=0, max_value=2**31 - 1, key=ps.SEED)
    pv = compute.preview(
        spec, mode, hats, slot, day, mechanism, epsilon, accounting, int(ss[ps.SEED])
    )
    summary = book.summary(namespace)
    before = book.user_totals(namespace, list(pv.user_ids))
    after = before + pv.charges
    over = int(np.sum(after > summary.budget * (1 + 1e-9))) if summary.budget else 0
    m = st.columns(4)
    m[0].metric("HATs", f"{len(pv.table):,}")
    m[1].metric(f"{u.users.capitalize()} charged", f"{len(pv.user_ids):,}")
    m[2].metric("Largest charge ε", f"{float(pv.charges.max()):g}")
    m[3].metric(
        f"{u.users.capitalize()} that would go over the budget",
        "no budget set" if summary.budget is None else u.count(over),
        help=None
        if summary.budget is None
        else f"Of the {u.count(len(pv.user_ids))} charged, {over:,} would have a cumulative "
        f"ε above the budget {summary.budget:g} after this release (publishing is refused "
        f"then); {len(pv.user_ids) - over:,} would stay within it.",
    )
    st.caption(
        f"Simulated with numpy noise (seed {int(ss[ps.SEED])}), values clamped into range as "
        f"the published files are. Means in {u.value}, variances in {u.squared}. "
        f"error_bound [{u.value}]: the worst-case error of a hexagon's released mean, from its "
        "counts only (how far off the published mean can be, at most)."
    )
    n_useless = compute.useless(pv.table, spec.upper)
    if n_useless:
        st.warning(
            f"{n_useless:,} of {len(pv.table):,} hexagons would get a useless release: too few "
            f"{u.users} for ε = {epsilon:g}, their worst-case error is at least U/2 = "
            f"{spec.upper / 2:g} {u.value}, no better than guessing the middle of [0, "
            f"{spec.upper:g}] {u.value}. A larger ε, or leaving them out, helps.",
            icon=":material/warning:",
        )
    st.dataframe(
        downloads.with_units(
            pv.table, u, values=["noisy_mean", "error_bound"], squared=["noisy_var"]
        ).rename(columns={"E_g": f"E_g [{u.value} + {u.squared}]"}),
        hide_index=True,
        height=240,
        key="publish_preview_table",
    )

    # --- Publish ----------------------------------------------------------------------------
    st.subheader("Publish")
    refused = False  # this run's click was refused: the release kept below is an earlier one
    if not allowed:
        st.info(
            "Publishing is off on this server: the preview above shows what a release would "
            "cost. The operator turns it on with `HEXPLORER_PUBLISH=1` or "
            '`streamlit run app.py -- --publish` (docs/publishing.md, "Host a demo safely").',
            icon=":material/lock:",
        )
    elif summary.budget is None:
        st.warning(
            f"No budget is set for the {u.users} of namespace {namespace!r}: the dashboard "
            "publishes only under the operator's budget (`hexplorer ledger set-budget EPS`).",
            icon=":material/lock:",
        )
    else:
        st.checkbox(
            f"I publish this: OpenDP noise, recorded in the ledger, charged to "
            f"{u.count(len(pv.user_ids))} (up to ε = {float(pv.charges.max()):g} each). "
            "It cannot be taken back.",
            key=ps.CONFIRM,
        )
        if st.button(
            "Publish", type="primary", disabled=not ss[ps.CONFIRM], icon=":material/publish:",
            key="publish_button",
        ):  # fmt: skip
            try:
                with st.spinner("Publishing (OpenDP noise, ledger)…"):
                    out = compute.publish(
                        spec, mode, hats, slot, day, mechanism, epsilon, accounting, namespace
                    )
                ss[ps.LAST], ss[ps.LAST_REUSED] = out.ids, out.reused
            except BudgetExceeded as exc:
                st.error(str(exc), icon=":material/block:")
                refused = True
            summary = book.summary(namespace)
    if ss[ps.LAST]:
        ids = list(ss[ps.LAST])
        table = compute.recorded_table(book, ids)
        named = ", ".join(ids)
        if refused:
            st.info(
                f"Earlier in this session: release {named} was published and recorded (below). "
                "The refused request above recorded nothing.",
                icon=":material/history:",
            )
        elif ss[ps.LAST_REUSED]:
            st.success(
                f"Already recorded: release {named} is the earlier record of this same request, "
                "given back as it was; no one was charged again.",
                icon=":material/check:",
            )
        else:
            st.success(f"Published and recorded: release {named}.", icon=":material/check:")
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
    ledger_cols = st.columns(5)
    ledger_cols[0].metric("Releases", f"{summary.releases:,}")
    ledger_cols[1].metric(u.users.capitalize(), f"{summary.users:,}")
    ledger_cols[2].metric(f"Largest ε of a {u.user}", f"{summary.max_user_epsilon:g}")
    ledger_cols[3].metric(
        f"Budget (ε per {u.user})", "none" if summary.budget is None else f"{summary.budget:g}",
        help=f"The operator's budget for namespace {namespace!r} (hexplorer ledger set-budget): "
        "no one passes it; the dashboard never changes it.",
    )  # fmt: skip
    ledger_cols[4].metric("Near the budget (≥ 90%)", f"{summary.users_near_budget:,}")
    ui.chart(
        charts.user_epsilon_histogram(
            book.user_epsilons(namespace),
            budget=summary.budget,
            units=u,
            after=after,
            before=before,
        ),
        key="publish_user_epsilon",
    )
    st.caption(
        f"{u.users.capitalize()} of namespace {namespace!r}, the operator's (their cumulative ε "
        "in every release of this server). Releases and the largest ε above count every "
        "namespace."
    )
    st.dataframe(compute.releases_table(book), hide_index=True, key="publish_ledger_table")
