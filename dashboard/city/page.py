"""Whole city: release every grid of a slot or a day, composition and CHOP-USER (SPEC §5).

Read widgets → parameters → cached calls into core.multigrid (dashboard.city_compute) →
figures (dashboard.city_charts). The privacy-loss curve covers a fixed ε grid, so moving the
slider only reruns CHOP-USER at the new ε (cached) and one simulated release.
"""

from __future__ import annotations

import streamlit as st

from core.mechanisms import get_mechanism
from dashboard.city import adaptive as city_adaptive
from dashboard.city import charts as city_charts
from dashboard.city import compute as city_compute
from dashboard.city import state as cs
from dashboard.common.session import state
from dashboard.common.session.selection import (
    current_slot,
    note_change,
    select_slot,
    slot_name,
    slot_options,
)
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute, units
from dashboard.common.view import downloads, figures, maps, ui

MODE_LABELS = {"slot": "all hexagons of one slot", "day": "all HATs of one day"}
STAT_LABELS = {"mean": "means", "var": "variances"}
HELP = {
    "mode": (
        "The set of grids released together (a grid is one HAT). Each grid gets budget ε; how "
        "much a user loses in total depends on how many of them it contributes to (Learn)."
    ),
    "epsilon": (
        "ε per grid, split ε/2 for the mean and ε/2 for the variance. The total loss is shown "
        "below for the three accountings. The slider's stops are evenly spaced on a log scale."
    ),
    "seed": "Seed of the simulated noise (numpy, like `hexplorer compose --simulate --seed`).",
    "target": (
        "The error you can live with, in the data's unit. The curve below shows, for every ε, "
        "the share of hexagons whose worst-case error is within it (`hexplorer plan --all`)."
    ),
    "coverage": "The share of hexagons that should be within the target.",
    "raw": (
        "Off: noisy means are post-processed into [0, U] and noisy variances into [0, U²/4], "
        "as a published release would be (free under DP: it reads only released values and U). "
        "On: the raw noisy values the papers analyse, which can leave that range."
    ),
}


def workbench_note(u: units.Units) -> str:
    """What this page shows that a release would not, with the user noun in use."""
    return (
        "This is the data team's own workbench: it shows **true values** (true means and "
        "variances, who was suppressed where) next to the private ones, which a public release "
        f"would never show. As in the papers, the {u.users} of each grid and their record counts "
        "{m_ℓ} are treated as **public**: the sensitivities, the error bounds and CHOP-USER's "
        "choices read only counts."
    )


def _headed(table, u):
    """The table with the unit of each amount in its header ('chop_loss [ε]', E_g's columns in
    the value unit plus its square, as SPEC §5 adds the mean's and the variance's errors)."""
    e_g = f"[{u.value} + {u.squared}]"
    names = {
        "worst_case_error": f"[{u.value}]",
        "basic_loss": "[ε]",
        "user_loss": "[ε]",
        "chop_loss": "[ε]",
        "threshold": e_g,
        "max_error_after": e_g,
        "error_before": e_g,
        "error_after": e_g,
    }
    return table.rename(columns={c: f"{c} {names[c]}" for c in table.columns if c in names})


st.title("Whole city")
cs.init()  # before any widget: the sidebar's and this page's kept values
spec = require_data()
ss = st.session_state
u = units.current()
st.caption(workbench_note(u))

with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    note_change(spec, "Whole city")  # "HAT changed on the Map page: …"
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
            # one source of truth: the selected HAT's slot (the Map's), changed here as there
            cs.remember(cs.SLOT, current_slot(spec))

            def _on_slot_change() -> None:
                select_slot(spec, str(ss[cs.SLOT]))
                cs.remember(cs.SLOT, str(ss[cs.SLOT]))

            st.selectbox(
                "Slot (the selected HAT's first, then most records first)",
                options=slot_options(list(rows), str(ss[cs.SLOT])),
                key=cs.SLOT,
                on_change=_on_slot_change,
                format_func=lambda s: (
                    f"{s} — {rows[s]['hexagons']:,} hexagons, {rows[s]['records']:,} records"
                    + slot_name(spec, s)
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
                "Day (most records first)",
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

    # ε, the plan's mechanism and target are the shared values (One hexagon, Map): the widgets
    # show them and write them back; an ε typed elsewhere joins the slider's stops.
    cs.remember(cs.EPSILON, float(ss[state.EPSILON]))
    st.select_slider(
        "ε per grid (log scale)",
        options=sorted({*cs.EPSILON_OPTIONS, float(ss[state.EPSILON])}),
        key=cs.EPSILON,
        on_change=state.push,
        args=(cs.EPSILON, state.EPSILON),
        format_func=lambda e: f"{e:g}",
        help=HELP["epsilon"],
    )
    epsilon = float(ss[cs.EPSILON])
    ui.learn_link("Composition and CHOP-USER explained")

    # --- CHOP-USER and the losses at this ε -----------------------------------------------------
    grids = city_compute.grid_set(spec, slot, day)
    with st.spinner(f"CHOP-USER on {grids.n_grids:,} grids and {u.count(grids.n_users)}…"):
        chop = city_compute.chop(spec, slot, day, epsilon)
    loss = city_compute.privacy_loss(spec, slot, day, epsilon)

    what = f"All hexagons of slot {slot}" if slot is not None else f"All HATs of {day}"
    st.subheader(f"{what}, ε = {epsilon:g} per grid")
    cols = st.columns(5)
    cols[0].metric("Grids G", f"{grids.n_grids:,}")
    cols[1].metric(f"{u.users.capitalize()} L", f"{grids.n_users:,}")
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
        help=f"The same release after suppressing the chosen ({u.user}, grid) pairs.",
    )
    e_units = f"{u.value} + {u.squared}"
    cols[3].metric(
        f"E_thresh ({e_units})",
        f"{chop.threshold:,.1f}",
        help="The worst grid's worst-case error with nothing suppressed (max_g E_g); CHOP-USER "
        f"never goes above it. E_g adds a grid's mean error ({u.value}) and its variance error "
        f"({u.squared}), as SPEC §5 does: the variance part is why it runs into thousands.",
    )
    mean_after = city_compute.mean_error_after(spec, slot, day, epsilon)
    cols[4].metric(
        f"max E_g after ({e_units})",
        f"{float(chop.errors_after.max()):,.1f}",
        help="The worst grid's worst-case error after CHOP-USER (mean and variance errors "
        f"added). Its mean alone: worst-case error of a grid's mean at most {mean_after:,.2f} "
        f"{u.value}.",
    )
    st.caption(
        f"Worst-case error of a grid's mean after CHOP-USER: at most **{mean_after:,.2f} "
        f"{u.value}** (E_μ + 2Δ_μ/ε of the worst grid); the E columns add the variance's error "
        f"in {u.squared}."
    )
    if grids.n_grids == 1:
        st.info(
            "A single grid: every composition gives the same loss and CHOP-USER has nothing to "
            "trade off.",
            icon=":material/info:",
        )
    elif grids.max_grids_per_user == 1:
        st.info(
            f"Every {u.user} is in one grid only (G_ℓ = 1): the loss by users is ε and CHOP-USER "
            "has nothing to suppress.",
            icon=":material/info:",
        )

    # --- Maps of true and noisy values ----------------------------------------------------------
    st.subheader("True and noisy values per grid")
    ctl = st.columns([2, 2, 1, 1])
    ctl[0].radio(
        "Show", options=list(cs.STATISTICS), format_func=STAT_LABELS.__getitem__, key=cs.STATISTIC,
        horizontal=True,
    )  # fmt: skip
    ctl[3].toggle("Raw noisy values", key=cs.RAW, help=HELP["raw"])
    ctl[1].number_input(
        "Seed", min_value=0, max_value=2**31 - 1, step=1, key=cs.SEED, help=HELP["seed"]
    )

    def _new_noise() -> None:
        cs.remember(cs.SEED, int(ss[cs.SEED]) + 1)

    ctl[2].button("New noise", key="city_new_noise", on_click=_new_noise, icon=":material/casino:")
    statistic = str(ss[cs.STATISTIC])
    seed = int(ss[cs.SEED])
    raw = bool(ss[cs.RAW])
    table = city_compute.clamped(city_compute.release(spec, slot, day, epsilon, seed), spec.upper)
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
    if raw:
        shown = shown.assign(noisy_mean=shown["noisy_mean_raw"], noisy_var=shown["noisy_var_raw"])
    pm = city_charts.paired_maps(
        shown,
        statistic=statistic,
        units=u,
        density=compute.cell_density(spec),
        basemap=bool(ss.get(state.MAP_BASEMAP)),
    )
    label = city_charts.stat_label(statistic, u)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**True {label}** (all records)")
        st.pydeck_chart(pm.true_deck, height=380, key="city_true_map")
    with c2:
        kind = "raw, as the papers analyse" if raw else "post-processed into range"
        st.markdown(f"**Noisy {label}** (after CHOP-USER, seed {seed}; {kind})")
        st.pydeck_chart(pm.noisy_deck, height=380, key="city_noisy_map")
    st.caption(f"{pm.scale.caption()} {maps.ZOOM_HELP}")
    ui.chart(figures.legend_bar(pm.legend, title=label), key="city_legend")
    column = "noisy_mean" if statistic == "mean" else "noisy_var"
    out_of_range = int((table[column] != table[f"{column}_raw"]).sum())
    st.caption(
        "One simulated release: each grid's mean and variance of the records kept after "
        "CHOP-USER, plus Laplace noise of scale 2Δ_μ/ε and 2Δ_Var/ε. It releases nothing. "
        "Colours follow the true values; noisy values beyond their range take the end colours. "
        f"{out_of_range:,} of {len(table):,} noisy {STAT_LABELS[statistic]} left "
        + (f"[0, {spec.upper:g}]" if statistic == "mean" else f"[0, {spec.upper**2 / 4:g}]")
        + (
            " and are shown raw."
            if raw
            else " and were clamped into it (post-processing, free under DP; Learn)."
        )
    )
    release_prov = downloads.provenance(
        spec, u, hat=f"slot {slot}" if slot is not None else f"day {day}", epsilon=epsilon,
        seed=seed, mechanism="per-grid Laplace after CHOP-USER",
    )  # fmt: skip
    with st.expander("Table: the release, one row per grid (true, noisy, Δ, E_g)"):
        ui.table(
            downloads.with_units(
                table,
                u,
                values=[
                    "true_mean",
                    "noisy_mean",
                    "noisy_mean_raw",
                    "delta_mean",
                    "retained_mean",
                    "bias_mean",
                ],
                squared=[
                    "true_var",
                    "noisy_var",
                    "noisy_var_raw",
                    "delta_var",
                    "retained_var",
                    "bias_var",
                ],
            ).rename(
                columns={
                    "retained": "retained [records]",
                    "retained_users": f"retained_users [{u.users}]",
                    "error_bound": f"error_bound [{u.value} + {u.squared}]",
                    "error_before": f"error_before [{u.value} + {u.squared}]",
                }
            ),
            name=f"city_release_{slot or day}".replace(":", ""),
            key="city_release",
            provenance=release_prov,
        )

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

    # --- Plan from a target error: the coverage curve ------------------------------------------
    st.subheader("Plan from a target error")
    noise_measure = str(ss.get(state.NOISE_MEASURE) or "mean")
    pc = st.columns([1, 1, 2])
    cs.remember(cs.TARGET, float(ss[state.TARGET]))
    if ss[state.MECHANISM] in cs.plan_mechanisms():
        cs.remember(cs.PLAN_MECHANISM, str(ss[state.MECHANISM]))
    pc[0].number_input(
        f"Target error (±{u.value})",
        min_value=0.0,
        step=0.5,
        format="%.2f",
        key=cs.TARGET,
        on_change=state.push,
        args=(cs.TARGET, state.TARGET),
        help=HELP["target"],
    )
    pc[1].slider(
        "Share of hexagons within target",
        min_value=0.5,
        max_value=1.0,
        step=0.05,
        key=cs.COVERAGE,
        format="%.2f",
        help=HELP["coverage"],
    )
    pc[2].selectbox(
        "Mechanism (its worst-case error per hexagon)",
        options=list(cs.plan_mechanisms()),
        format_func=lambda name: f"{name} — {get_mechanism(name).title}",
        key=cs.PLAN_MECHANISM,
        on_change=state.push,
        args=(cs.PLAN_MECHANISM, state.MECHANISM),
    )
    target = float(ss[cs.TARGET])
    coverage = float(ss[cs.COVERAGE])
    plan_mechanism = str(ss[cs.PLAN_MECHANISM])
    with st.spinner("Every hexagon's error staircase (once per set of grids)…"):
        planned = city_compute.city_plan(
            spec, slot, day, noise_measure, plan_mechanism, target, coverage
        )
        cover = city_compute.coverage_curve(
            spec, slot, day, noise_measure, plan_mechanism, target, cs.COVERAGE_EPSILONS
        )
    loss_at = planned.user_loss
    plan_cols = st.columns(4)
    plan_cols[0].metric(
        f"ε for {coverage:.0%} within ±{target:g} {u.value}",
        "–" if planned.epsilon is None else f"{planned.epsilon:.4g}",
        help="The smallest ε per hexagon at which that share of hexagons has worst-case "
        "error within the target (core.plan.city_plan; `hexplorer plan --all`).",
    )
    plan_cols[1].metric(
        "Hexagons within target at it",
        f"{planned.hats_reaching:,} of {planned.hats_total:,}",
    )
    plan_cols[2].metric(
        f"Per-{u.user} loss ε·max G_ℓ",
        "–" if loss_at is None else f"{loss_at.by_users:,.3g}",
        help="Basic composition would charge G·ε "
        + ("" if loss_at is None else f"= {loss_at.basic:,.3g}")
        + " ([2], Theorem II.3).",
    )
    plan_cols[3].metric(
        f"Per-{u.user} loss after CHOP-USER K·ε",
        "–" if loss_at is None or loss_at.after_chop is None else f"{loss_at.after_chop:,.3g}",
        help="K after CHOP-USER's suppression run at the planned ε (SPEC section 5).",
    )
    if planned.status == "unreachable":
        st.warning(
            f"No ε puts {coverage:.0%} of the hexagons within ±{target:g} {u.value}: "
            f"{len(planned.unreachable):,} of them can never reach it with {plan_mechanism} "
            "(their clipping error stays above the target), or the target is 0.",
            icon=":material/warning:",
        )
    elif planned.status == "any":
        st.info(
            f"Every ε, however small, keeps {coverage:.0%} of the hexagons within the target.",
            icon=":material/info:",
        )
    ui.chart(
        city_charts.coverage_chart(
            cover,
            coverage=coverage,
            planned=planned.epsilon,
            epsilon=epsilon,
            mechanism=plan_mechanism,
            target_label=f"±{target:g} {u.value}",
        ),
        key="city_coverage",
    )
    st.caption(
        f"Each hexagon's worst-case error of {plan_mechanism} at its m_UB rule "
        f"({noise_measure} noise measure, chosen on One hexagon), exact per ε: a hexagon counts "
        f"once its error is at most ±{target:g} {u.value}. The dashed line is the wanted "
        "share, the green line the ε that reaches it, the dotted line the slider's ε. The "
        f"per-{u.user} losses are those of releasing every hexagon of the set at the "
        "planned ε."
    )
    with st.expander(
        f"Table: ε each hexagon needs ({len(planned.unreachable):,} can never reach the target)"
    ):
        ui.table(_headed(planned.hats, u), name="city_plan", key="city_plan", height=260)

    if slot is not None:  # the adaptive hexagons' note (a slot's cover)
        city_adaptive.note(spec, slot, noise_measure, plan_mechanism, epsilon, target, u)

    # --- What CHOP-USER suppressed and the errors ---------------------------------------------
    st.subheader("What CHOP-USER suppressed")
    ui.chart(
        city_charts.error_chart(table, threshold=chop.threshold, epsilon=epsilon, units=u),
        key="city_err",
    )
    stop_note = (
        f" It stopped at {u.user} {chop.stopped_by}, which could not leave any of its grids "
        "without pushing an error above the threshold."
        if chop.stopped_by is not None
        else ""
    )
    st.caption(
        f"K went {' → '.join(str(k) for k in chop.k_history)}; {chop.n_suppressed:,} "
        f"({u.user}, grid) "
        f"pairs suppressed ({chop.wasted:,} of them in the last round, which did not lower K)."
        + stop_note
    )
    ui.table(
        _headed(city_compute.suppressed(spec, slot, day, epsilon), u),
        name=f"city_suppressed_{slot or day}".replace(":", ""),
        key="city_suppressed",
        height=260,
        provenance=downloads.provenance(
            spec, u, hat=release_prov.hat, epsilon=epsilon, mechanism="CHOP-USER"
        ),
    )
    with st.expander("Table: privacy loss and CHOP-USER against ε"):
        ui.table(
            _headed(curve, u),
            name="city_privacy_loss",
            key="city_loss",
            provenance=downloads.provenance(spec, u, hat=release_prov.hat, mechanism="CHOP-USER"),
        )
