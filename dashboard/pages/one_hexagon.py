"""One hexagon: move ε and m_UB and watch every error figure of one HAT follow.

Read widgets → parameters → cached calls into core (dashboard.compute) → figures. The
Monte-Carlo curve does not depend on the ε slider (it covers a fixed ε grid), so moving ε
only recomputes cheap, exact quantities and one release per mechanism.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.mechanisms import MECHANISMS
from dashboard.common import compute, state, ui
from dashboard.common.selection import current_hat, hat_label, select_hat
from dashboard.common.sidebar import require_data
from dashboard.hexagon import charts
from dashboard.report.panel import one_hexagon_panel

HELP = {
    "epsilon": (
        "ε, the privacy loss of one release of this HAT (user-level: one bus's whole data may "
        "change). Smaller ε = more noise. The slider's stops are evenly spaced on a log scale. "
        "Learn → User-level privacy."
    ),
    "m_ub": (
        "m_UB, the number of records each bus may contribute (more are clipped away). Small m_UB: "
        "much clipping bias, little noise; large m_UB: the reverse. Learn → Pseudo-users."
    ),
    "override": (
        "Off: each mechanism uses its own default m_UB (its rule's button above). On: the "
        "slider's m_UB is used by every mechanism that builds arrays."
    ),
    "noise": (
        "How the noise part E2 of the worst-case error is measured: E|noise| "
        "(c = 1, seeds 002/004) "
        "or the noise's standard deviation (c = √2, seed 003). Learn → Worst-case error."
    ),
    "mechanisms": (
        "The mechanisms to simulate, each with its fixed colour on every chart. Learn → Mechanisms."
    ),
    "many": (
        f"Use {state.MC_RUNS_MANY:,} runs per point instead of {state.MC_RUNS_DEFAULT:,} "
        "(slower, cached)."
    ),
    "seed": "Seed of the simulated noise (part of the cache key). Simulations release nothing.",
}

MAX_HAT_OPTIONS = 500

st.title("One hexagon")
spec = require_data()
ss = st.session_state
hat = current_hat(spec)
table = compute.hats(spec)
# The busiest HATs (and the selected one); any other is reachable from the Map page.
shown = table.head(MAX_HAT_OPTIONS)
if hat not in set(shown["hat"]):
    shown = pd.concat([shown, table[table["hat"] == hat]])
rows = {r["hat"]: r for r in shown.to_dict("records")}

ss[state.HAT_PICK] = hat
st.selectbox(
    f"HAT (hexagon / timeslot): the {MAX_HAT_OPTIONS} busiest — or pick any on the Map page",
    options=list(rows),
    key=state.HAT_PICK,
    format_func=lambda h: hat_label(rows[h]),
    on_change=lambda: select_hat(ss[state.HAT_PICK]),
)
with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
    h = compute.hat(spec, hat)
    cols = st.columns(5)
    cols[0].metric("Buses L", f"{h.n_users:,}")
    cols[1].metric("Records N", f"{h.n_records:,}")
    cols[2].metric("m* (most records)", f"{h.m_max:,}")
    cols[3].metric("m_* (fewest)", f"{h.m_min:,}")
    cols[4].metric("True mean (km/h)", f"{h.true_mean:.3f}")
    st.caption(ui.WORKBENCH_NOTE)

    # --- Controls ---------------------------------------------------------------------------------
    if ss.get(state.EPSILON) not in state.EPSILON_OPTIONS:
        ss[state.EPSILON] = min(
            state.EPSILON_OPTIONS, key=lambda e: abs(e - float(ss.get(state.EPSILON) or 1.0))
        )
    epsilon = float(ss[state.EPSILON])
    noise_measure = str(ss[state.NOISE_MEASURE])
    mk = compute.marks(spec, hat, epsilon, noise_measure)
    if (
        ss.get(state.M_UB_FOR) != hat
        or ss.get(state.M_UB) is None
        or not h.m_min <= int(ss[state.M_UB]) <= h.m_max
    ):
        ss[state.M_UB] = mk.median
        ss[state.M_UB_FOR] = hat

    def _set_m_ub(value: int) -> None:
        ss[state.M_UB] = int(value)

    left, right = st.columns(2)
    with left:
        st.select_slider(
            "ε (privacy loss, log scale)",
            options=list(state.EPSILON_OPTIONS),
            key=state.EPSILON,
            format_func=lambda e: f"{e:g}",
            help=HELP["epsilon"],
        )
        st.radio(
            "Noise part of the worst-case error",
            options=["mean", "std"],
            format_func={"mean": "E|noise| (c = 1)", "std": "std of noise (c = √2)"}.__getitem__,
            key=state.NOISE_MEASURE,
            horizontal=True,
            help=HELP["noise"],
        )
    with right:
        if h.m_min < h.m_max:
            st.slider(
                "m_UB (records kept per bus)",
                min_value=h.m_min,
                max_value=h.m_max,
                key=state.M_UB,
                help=HELP["m_ub"],
            )
        else:
            st.markdown(f"m_UB = {h.m_min} (every bus has the same count).")
        rule_marks = list(mk.as_labels().items())
        for start in range(0, len(rule_marks), 2):  # two buttons a row, one per rule in use
            for col, (label, value) in zip(
                st.columns(2), rule_marks[start : start + 2], strict=False
            ):
                col.button(
                    f"{label} = {value}",
                    key=f"set_m_ub_{label}",
                    on_click=_set_m_ub,
                    args=(value,),
                    help=compute.rule_help(label),
                )
        st.toggle(
            "Use this m_UB for every mechanism", key=state.OVERRIDE_M_UB, help=HELP["override"]
        )
    m_ub = int(ss[state.M_UB])
    override = bool(ss[state.OVERRIDE_M_UB])
    ui.learn_link("How to read these controls and charts")

    # --- Exact worst-case numbers at (ε, m_UB) ----------------------------------------------------
    at = compute.error_at(spec, hat, m_ub, epsilon, noise_measure)
    curve = compute.error_curve(spec, hat, epsilon, noise_measure)
    opt_total = float(curve.loc[curve["m"] == mk.opt, "total"].iloc[0])
    st.subheader(f"Worst-case error at ε = {epsilon:g}, m_UB = {m_ub}")
    cols = st.columns(6)
    cols[0].metric("E1 clipping (full arrays)", f"{at['clipping']:.4f}")
    cols[1].metric(
        "exact BestFit bias",
        f"{at['bestfit_bias']:.4f}",
        help="Worst-case bias of the arrays BestFit actually builds (SPEC §4); E1 assumes full.",
    )
    cols[2].metric("E2 noise", f"{at['noise']:.4f}")
    cols[3].metric("E = E1 + E2", f"{at['total']:.4f}")
    cols[4].metric("m^(ε) (minimiser)", f"{mk.opt}")
    cols[5].metric("E(m^(ε))", f"{opt_total:.4f}")

    c1, c2 = st.columns(2)
    with c1:
        ui.chart(
            charts.counts_histogram(h.counts, m_ub=m_ub, marks=mk.as_labels()), key="histogram"
        )
    with c2:
        ui.chart(
            charts.error_curve(
                curve, m_ub=m_ub, m_opt=mk.opt, bestfit_bias=at["bestfit_bias"], epsilon=epsilon
            ),
            key="error_curve",
        )
    steps = compute.staircase(spec, hat, noise_measure)
    vs_eps = compute.worst_case_vs_epsilon(spec, hat, noise_measure)
    c3, c4 = st.columns(2)
    with c3:
        ui.chart(charts.staircase_chart(steps, epsilon=epsilon, m_current=mk.opt), key="staircase")
    with c4:
        ui.chart(charts.worst_case_vs_epsilon(vs_eps, epsilon=epsilon), key="worst_case_vs_epsilon")
    with st.expander("Tables: E(m), staircase, worst-case error against ε, defaults"):
        ui.table(curve, name="error_curve", key="error_curve", height=240)
        ui.table(steps, name="staircase", key="staircase")
        ui.table(vs_eps, name="worst_case_vs_epsilon", key="worst_case_vs_epsilon", height=240)
        defaults = compute.default_m_ubs(spec, hat, epsilon)
        ui.table(
            pd.DataFrame(
                {
                    "mechanism": list(defaults),
                    "default m_UB": pd.array(list(defaults.values()), dtype="Int64"),
                }
            ),
            name="default_m_ub",
            key="default_m_ub",
        )

    # --- Simulated releases -----------------------------------------------------------------------
    st.subheader("Simulated releases")
    st.multiselect(
        "Mechanisms",
        options=list(MECHANISMS),
        key=state.MECHANISMS,
        format_func=lambda n: f"{n} — {MECHANISMS[n].title}",
        help=HELP["mechanisms"],
    )
    chosen = tuple(n for n in MECHANISMS if n in ss[state.MECHANISMS])
    opts = st.columns(2)
    opts[0].toggle(
        f"{state.MC_RUNS_MANY:,} runs (default {state.MC_RUNS_DEFAULT:,})",
        key=state.MANY_RUNS,
        help=HELP["many"],
    )
    opts[1].number_input(
        "Seed", min_value=0, max_value=2**31 - 1, step=1, key=state.SEED, help=HELP["seed"]
    )
    n_runs = state.MC_RUNS_MANY if ss[state.MANY_RUNS] else state.MC_RUNS_DEFAULT
    seed = int(ss[state.SEED])
    m_ub_arg = m_ub if override else None
    st.caption(
        "Simulated runs with a fixed seed: they show what a release *could* look like and release "
        "nothing (a published release uses OpenDP's sampler and a ledger; see Learn)."
    )
    if not chosen:
        st.info("Choose at least one mechanism.")
    else:
        rel = compute.releases(spec, hat, chosen, epsilon, m_ub_arg, seed, n_runs)
        per_row = 6
        for start in range(0, len(rel), per_row):
            row_cols = st.columns(per_row)
            for col, r in zip(
                row_cols, rel.iloc[start : start + per_row].itertuples(index=False), strict=False
            ):
                if np.isnan(r.estimate):
                    col.metric(r.mechanism, "n/a", help=r.note)
                else:
                    col.metric(
                        r.mechanism,
                        f"{r.estimate:.3f}",
                        delta=f"{r.estimate - h.true_mean:+.3f} vs true",
                        delta_color="off",
                        help=f"One simulated release at ε = {epsilon:g}; true {h.true_mean:.3f}.",
                    )
        ui.chart(
            charts.release_chart(rel.dropna(subset=["estimate"]), true_mean=h.true_mean),
            key="releases",
        )
        for note in rel.loc[rel["note"] != "", ["mechanism", "note"]].itertuples(index=False):
            st.caption(f"{note.mechanism}: {note.note}")
        ui.table(rel, name="releases", key="releases")

        st.subheader("Monte-Carlo MAE against ε")
        bar = st.progress(0.0, text="Monte-Carlo runs…")
        parts = []
        for i, name in enumerate(chosen):
            parts.append(
                compute.mc_curve(spec, hat, name, m_ub_arg, n_runs, seed, state.MC_EPSILONS)
            )
            bar.progress((i + 1) / len(chosen), text=f"Monte-Carlo runs… {name} done")
        bar.empty()
        mc = pd.concat(parts, ignore_index=True)
        ui.chart(
            charts.mae_vs_epsilon(mc.dropna(subset=["mae"]), epsilon=epsilon, n_runs=n_runs),
            key="mae",
        )
        ui.table(mc, name="monte_carlo_mae", key="monte_carlo_mae", height=240)

    one_hexagon_panel(spec, hat)  # code for this view and the HTML report (dashboard/report)
