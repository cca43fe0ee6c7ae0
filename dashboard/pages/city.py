"""Whole city: release every grid of a slot or a day, composition and CHOP-USER (SPEC §5).

Read widgets → parameters → cached calls into core.multigrid (dashboard.city_compute) →
figures (dashboard.city_charts). The privacy-loss curve covers a fixed ε grid, so moving the
slider only reruns CHOP-USER at the new ε (cached) and one simulated release.
"""

from __future__ import annotations

import streamlit as st

from dashboard.city import charts as city_charts
from dashboard.city import compute as city_compute
from dashboard.city import state as cs
from dashboard.common import figures, ui
from dashboard.common.sidebar import require_data

MODE_LABELS = {"slot": "all hexagons of one slot", "day": "all HATs of one day"}
STAT_LABELS = {"mean": "means", "var": "variances"}
HELP = {
    "mode": (
        "The set of grids released together (a grid is one HAT). Each grid gets budget ε; how "
        "much a bus loses in total depends on how many of them it contributes to (Learn)."
    ),
    "epsilon": (
        "ε per grid, split ε/2 for the mean and ε/2 for the variance. The total loss is shown "
        "below for the three accountings. The slider's stops are evenly spaced on a log scale."
    ),
    "seed": "Seed of the simulated noise (numpy, like `hexplorer compose --simulate --seed`).",
}
WORKBENCH_NOTE = (
    "This is the data team's own workbench: it shows **true values** (true means and variances, "
    "who was suppressed where) next to the private ones, which a public release would never show. "
    "As in the papers, the buses of each grid and their record counts {m_ℓ} are treated as "
    "**public**: the sensitivities, the error bounds and CHOP-USER's choices read only counts."
)

st.title("Whole city")
cs.init()  # before any widget: the sidebar's and this page's kept values
spec = require_data()
ss = st.session_state
st.caption(WORKBENCH_NOTE)

with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    slots = city_compute.slot_table(spec)
    days = city_compute.day_table(spec)

    # --- Controls ------------------------------------------------------------------------------
    left, right = st.columns([2, 3])
    with left:
        st.radio(
            "Grids",
            options=list(cs.MODES),
            format_func=MODE_LABELS.__getitem__,
            key=cs.MODE,
            horizontal=True,
            help=HELP["mode"],
        )
    mode = str(ss[cs.MODE])
    slot: str | None = None
    day: str | None = None
    with right:
        if mode == "slot":
            rows = {r["slot"]: r for r in slots.to_dict("records")}
            if ss.get(cs.SLOT) not in rows:
                cs.remember(cs.SLOT, str(slots["slot"].iloc[0]))
            st.selectbox(
                "Slot (busiest first)",
                options=list(rows),
                key=cs.SLOT,
                format_func=lambda s: (
                    f"{s} — {rows[s]['hexagons']:,} hexagons, {rows[s]['records']:,} records"
                ),
            )
            slot = str(ss[cs.SLOT])
        elif days.empty:
            st.warning(
                "These data have hour-of-day slots, which belong to no day: choose "
                f"'{MODE_LABELS['slot']}', or absolute windows in the sidebar.",
                icon=":material/warning:",
            )
        else:
            day_rows = {r["day"]: r for r in days.to_dict("records")}
            if ss.get(cs.DAY) not in day_rows:
                cs.remember(cs.DAY, str(days["day"].iloc[0]))
            st.selectbox(
                "Day (busiest first)",
                options=list(day_rows),
                key=cs.DAY,
                format_func=lambda d: (
                    f"{d} — {day_rows[d]['hats']:,} HATs in {day_rows[d]['slots']} slots, "
                    f"{day_rows[d]['records']:,} records"
                ),
            )
            day = str(ss[cs.DAY])
    if slot is None and day is None:
        st.stop()

    if ss.get(cs.EPSILON) not in cs.EPSILON_OPTIONS:
        cs.remember(
            cs.EPSILON,
            min(cs.EPSILON_OPTIONS, key=lambda e: abs(e - float(ss.get(cs.EPSILON) or 1.0))),
        )
    st.select_slider(
        "ε per grid (log scale)",
        options=list(cs.EPSILON_OPTIONS),
        key=cs.EPSILON,
        format_func=lambda e: f"{e:g}",
        help=HELP["epsilon"],
    )
    epsilon = float(ss[cs.EPSILON])
    ui.learn_link("Composition and CHOP-USER explained")

    # --- CHOP-USER and the losses at this ε -----------------------------------------------------
    grids = city_compute.grid_set(spec, slot, day)
    with st.spinner(f"CHOP-USER on {grids.n_grids:,} grids and {grids.n_users:,} buses…"):
        chop = city_compute.chop(spec, slot, day, epsilon)
    loss = city_compute.privacy_loss(spec, slot, day, epsilon)

    what = f"All hexagons of slot {slot}" if slot is not None else f"All HATs of {day}"
    st.subheader(f"{what}, ε = {epsilon:g} per grid")
    cols = st.columns(5)
    cols[0].metric("Grids G", f"{grids.n_grids:,}")
    cols[1].metric("Buses L", f"{grids.n_users:,}")
    cols[2].metric("max G_ℓ before", f"{chop.k_initial:,}")
    cols[3].metric("K after CHOP-USER", f"{chop.k_final:,}")
    cols[4].metric("Suppressed pairs", f"{chop.n_suppressed:,}")
    cols = st.columns(5)
    cols[0].metric("Basic G·ε", f"{loss.basic:,.2f}", help="Basic composition over every grid.")
    cols[1].metric(
        "By users ε·max G_ℓ",
        f"{loss.by_users:,.2f}",
        help="Each grid's mechanism reads only its own records (Learn, paper [2], Theorem II.3).",
    )
    cols[2].metric(
        "After CHOP-USER K·ε",
        f"{loss.after_chop:,.2f}",
        help="The same release after suppressing the chosen (bus, grid) pairs.",
    )
    cols[3].metric(
        "E_thresh",
        f"{chop.threshold:,.1f}",
        help="max_g E_g with nothing suppressed; CHOP-USER never goes above it.",
    )
    cols[4].metric("max E_g after", f"{float(chop.errors_after.max()):,.1f}")

    # --- Maps of true and noisy values ----------------------------------------------------------
    st.subheader("True and noisy values per grid")
    ctl = st.columns([2, 2, 1])
    ctl[0].radio(
        "Show", options=list(cs.STATISTICS), format_func=STAT_LABELS.__getitem__, key=cs.STATISTIC,
        horizontal=True,
    )  # fmt: skip
    ctl[1].number_input(
        "Seed", min_value=0, max_value=2**31 - 1, step=1, key=cs.SEED, help=HELP["seed"]
    )

    def _new_noise() -> None:
        cs.remember(cs.SEED, int(ss[cs.SEED]) + 1)

    ctl[2].button("New noise", key="city_new_noise", on_click=_new_noise, icon=":material/casino:")
    statistic = str(ss[cs.STATISTIC])
    seed = int(ss[cs.SEED])
    table = city_compute.release(spec, slot, day, epsilon, seed)
    shown = table
    if day is not None:
        day_slots = slots[slots["day"] == day]["slot"].tolist()  # busiest first
        if ss.get(cs.MAP_SLOT) not in day_slots:
            cs.remember(cs.MAP_SLOT, day_slots[0])
        st.selectbox(
            "Slot shown on the maps (the release covers the whole day)",
            options=sorted(day_slots),
            key=cs.MAP_SLOT,
        )
        shown = table[table["slot"] == ss[cs.MAP_SLOT]].reset_index(drop=True)
    pm = city_charts.paired_maps(shown, statistic=statistic)
    label = city_charts.STAT_LABELS[statistic]
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**True {label}** (all records)")
        st.pydeck_chart(pm.true_deck, height=380, key="city_true_map")
    with c2:
        st.markdown(f"**Noisy {label}** (after CHOP-USER, seed {seed})")
        st.pydeck_chart(pm.noisy_deck, height=380, key="city_noisy_map")
    ui.chart(figures.legend_bar(pm.legend, title=label), key="city_legend")
    st.caption(
        "One simulated release: each grid's mean and variance of the records kept after "
        "CHOP-USER, plus Laplace noise of scale 2Δ_μ/ε and 2Δ_Var/ε. It releases nothing. "
        "Colours follow the true values; noisy values beyond their range take the end colours."
    )
    with st.expander("Table: the release, one row per grid (true, noisy, Δ, E_g)"):
        ui.table(table, name=f"city_release_{slot or day}".replace(":", ""), key="city_release")

    # --- G_ℓ, losses against ε -----------------------------------------------------------------
    c3, c4 = st.columns(2)
    with c3:
        ui.chart(
            city_charts.grids_per_user_histogram(
                grids.grids_per_user,
                chop.grids_per_user_after,
                k_before=chop.k_initial,
                k_after=chop.k_final,
            ),
            key="city_gl",
        )
    with c4:
        with st.spinner("Privacy loss against ε (CHOP-USER at each ε)…"):
            curve = city_compute.losses(spec, slot, day, cs.LOSS_EPSILONS)
        ui.chart(
            city_charts.loss_chart(
                curve,
                epsilon=epsilon,
                current={
                    "basic_loss": loss.basic,
                    "user_loss": loss.by_users,
                    "chop_loss": loss.after_chop,
                },
            ),
            key="city_loss",
        )

    # --- What CHOP-USER suppressed and the errors ---------------------------------------------
    st.subheader("What CHOP-USER suppressed")
    ui.chart(
        city_charts.error_chart(table, threshold=chop.threshold, epsilon=epsilon), key="city_err"
    )
    stop_note = (
        f" It stopped at bus {chop.stopped_by}, which could not leave any of its grids without "
        "pushing an error above the threshold."
        if chop.stopped_by is not None
        else ""
    )
    st.caption(
        f"K went {' → '.join(str(k) for k in chop.k_history)}; {chop.n_suppressed:,} (bus, grid) "
        f"pairs suppressed ({chop.wasted:,} of them in the last round, which did not lower K)."
        + stop_note
    )
    ui.table(
        city_compute.suppressed(spec, slot, day, epsilon),
        name=f"city_suppressed_{slot or day}".replace(":", ""),
        key="city_suppressed",
        height=260,
    )
    with st.expander("Table: privacy loss and CHOP-USER against ε"):
        ui.table(curve, name="city_privacy_loss", key="city_loss")
