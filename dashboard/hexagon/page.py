"""One hexagon: how far off will a release be, and where do releases land?

Read widgets → parameters → cached calls into core (``dashboard.hexagon.compute``) → figures.
The answer comes first: each chosen mechanism's error at its *own* m_UB rule (typical error,
90 % bound, worst case), then where its releases land; the worst-case analysis follows.

Layout for a presenter: the controls sit in the sidebar (above the data settings), the main
area starts with a one-line headline and a grid of two charts, then the headline table, so at a
1280×720 window (viewport 1280×633) ε, m_UB and the two charts they move are on screen
together. Everything that depends on ε or m_UB is one ``st.fragment``: moving a control reruns
it alone, not the data sidebar. The hexagon-hour picker, which no control of the fragment
moves, is drawn by the full run (:func:`hat_picker`), so an ε step does not re-send it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.mechanisms import MECHANISMS, get_rule
from dashboard.common.report.panel import one_hexagon_panel
from dashboard.common.session import shown, state, url
from dashboard.common.session.selection import current_hat, hat_label, note_change, select_hat
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec
from dashboard.common.source.units import current
from dashboard.common.view import slider, ui
from dashboard.hexagon import charts, frames, labels, memo, panels, readouts
from dashboard.hexagon import compute as hx
from dashboard.hexagon import glossary as g
from dashboard.hexagon import state as hs

MAX_HAT_OPTIONS = 100  # re-sent with every ε step (formatted, hashed, sent): the busiest only
PRESENTER_FONT = 17


st.title("One hexagon")
controls = st.sidebar.container()  # ε and m_UB (the fragment's), above the data settings
hat_box = st.sidebar.container()  # the hexagon-hour picker (full runs only)
controls_below = st.sidebar.container()  # exact ε, the m_UB rules (the fragment's)
settings_box = st.sidebar.container()  # the settings ε does not move (full runs only)
spec = require_data()
ss = st.session_state
with ui.errors_shown():
    note_change(spec, "One hexagon")  # "HAT changed on the Map page: …"


@state.fragment
def view(spec: DataSpec) -> None:
    """Everything that ε, m_UB, the mechanisms or the HAT move (reruns alone)."""
    shown.reset()  # everything this page draws is in here; the report hands out this run's
    units = current()
    u = units.value
    hat = current_hat(spec)
    rows = hx.hat_options(spec, hat, MAX_HAT_OPTIONS)  # the busiest; any other: Map page
    eps = hs.init_epsilon()
    presenter = bool(ss[hs.PRESENTER]) or ui.presenting()  # the toggle, or the deck's
    font = PRESENTER_FONT if presenter else None

    with controls:
        eps_help = labels.help_text(
            "epsilon", units, "Smaller ε = more noise. Learn → User-level privacy."
        )
        slider.epsilon_control(  # the browser's: the charts follow it before any rerun
            hs.EPSILON_LABEL,
            stops=hs.stops_with(eps),
            value=eps,
            help=eps_help,
            group=hs.EPSILON_GROUP,
            range_key=hs.EPSILON_RANGE,
            on_change=hs.set_epsilon,
            select_key=hs.EPSILON_SLIDER,
            on_select=hs.on_slider,
            behind=hs.BEHIND,  # the heading, the table and the tabs: faded until the rerun
        )

    with ui.errors_shown():  # a HexplorerError becomes a message, not a traceback
        h = compute.hat(spec, hat)
        noise_measure = str(ss[state.NOISE_MEASURE])
        mk = hx.marks(spec, hat, eps, noise_measure)
        if (
            ss.get(state.M_UB_FOR) != hat
            or ss.get(state.M_UB) is None
            or not h.m_min <= int(ss[state.M_UB]) <= h.m_max
        ):
            ss[state.M_UB] = mk.get("median", h.m_min)
            ss[state.M_UB_FOR] = hat

        def _set_m_ub(value: int) -> None:
            ss[state.M_UB] = int(value)

        with controls:
            if h.m_min < h.m_max:
                st.slider(
                    f"{g.plain('m_ub', units).capitalize()} (m_UB)",
                    min_value=h.m_min,
                    max_value=h.m_max,
                    key=state.M_UB,
                    help=labels.help_text(
                        "m_ub",
                        units,
                        "Small: clipping error; large: noise error. Learn → Pseudo-users.",
                    ),
                )
            else:
                st.caption(f"m_UB = {h.m_min}: every {units.user} has the same count.")
        with controls_below:  # under the hexagon-hour picker (hat_picker)
            # Exact ε below both sliders, so ε and m_UB stay on a 1280×720 screen together.
            st.number_input(
                "Exact ε",
                min_value=hs.EPSILON_MIN,
                max_value=hs.EPSILON_MAX,
                step=0.01,
                format="%g",
                key=hs.EPSILON_EXACT,
                on_change=hs.on_exact,
                help=f"Type any ε between {hs.EPSILON_MIN:g} and {hs.EPSILON_MAX:g}; the slider "
                "and every number follow.",
            )
            for name, value in mk.items():
                st.button(
                    f"{labels.rule_name(name, units)} = {value}",
                    key=f"set_m_ub_{name}",
                    on_click=_set_m_ub,
                    args=(value,),
                    help=labels.rule_help(name),
                    width="stretch",
                )
            st.caption(
                f"{hat_label(rows[hat], units.users)}; {g.plain('m_max', units)} m* = {int(rows[hat]['m_max']):,}; "
                f"true mean {h.true_mean:.3f} {u} (true values: the data team's workbench)"
            )

        if presenter:
            ui.presenter_style()
        m_ub = int(ss[state.M_UB])
        override = bool(ss[state.OVERRIDE_M_UB])
        picked = ss[state.MECHANISMS]  # read once: each session-state read goes through locks
        chosen = tuple(n for n in MECHANISMS if n in picked)
        n_runs = state.MC_RUNS_MANY if ss[state.MANY_RUNS] else state.MC_RUNS_DEFAULT
        seed = int(ss[state.SEED])
        raw = bool(ss[hs.RAW])
        target = ss.get(hs.TARGET)
        within = ss.get(hs.WITHIN)
        within = float(within if within is not None else target if target else hs.DEFAULT_WITHIN)

        for note in readouts.degenerate_notes(m_min=h.m_min, m_max=h.m_max, units=units):
            st.info(note, icon=":material/info:")
        if not chosen:
            st.info("Choose at least one mechanism in the sidebar.")
            return
        head = hx.headline(spec, hat, chosen, eps, m_ub, noise_measure, seed, n_runs, within, raw)
        rules = {
            n: get_rule(rule).label for n in chosen if (rule := MECHANISMS[n].m_ub_rule) is not None
        }
        kind = "raw" if raw else "clamped"
        with st.container(key=hs.HEADING):
            st.markdown(
                f"**How far off will a release be?** ε = {eps:g}, each mechanism at its own "
                f"m_UB rule, {n_runs:,} simulated releases ({kind}), seed {seed}",
                help="Typical error = the median of |release − true mean|; 90 % of releases "
                "land within ± the next column; the worst case is SPEC's bound over every "
                "dataset with these record counts (— where SPEC has none).",
            )
        # --- The two charts ε moves most: where releases land, and the worst case against ε --
        sims = [
            hx.simulated(spec, hat, name, eps, m_ub if override else None, seed, n_runs)
            for name in chosen
        ]
        sets = frames.release_sets(  # as the frames document builds them, stop by stop
            sims, upper=h.upper, true_mean=h.true_mean, within=within, raw=raw
        )
        target_eps, plan_note = None, None
        if target is not None:
            p = hx.target_plan(
                spec, hat, float(target), str(ss[hs.TARGET_MECHANISM]), noise_measure
            )
            target_eps = p.epsilon
            plan_note = labels.plan_note(p, units)
        upto = hx.worst_case_range(eps, target_eps)  # on past 10 when a target needs it
        vs_eps = hx.worst_case_vs_epsilon(spec, hat, noise_measure, upto)
        # Each ε stop's patch of both charts, fetched once by the browser (a move of the
        # browser's slider repaints them before the rerun); computed on its first GET, not here.
        frames_url = frames.hexagon_frames_url(
            spec, hat, stops=hs.stops_with(eps), chosen=chosen,
            m_ub=m_ub if override else None, seed=seed, n_runs=n_runs, within=within, raw=raw,
            units=units, noise_measure=noise_measure,
            target=float(target) if target is not None else None,
            target_mechanism=str(ss[hs.TARGET_MECHANISM]),
        )  # fmt: skip
        left, right = st.columns(2)
        with left:
            if sets:
                ui.chart(
                    memo.figure(
                        charts.releases_distribution,
                        sets,
                        true_mean=h.true_mean,
                        within=within,
                        epsilon=eps,
                        units=units,
                        raw=raw,
                        font_size=font,
                    ),
                    key="distribution",
                    frames=frames_url,
                    group=hs.EPSILON_GROUP,
                    stop=eps,
                )
        with right:
            ui.chart(
                memo.figure(
                    charts.worst_case_vs_epsilon,
                    vs_eps,
                    epsilon=eps,
                    target=float(target) if target is not None else None,
                    target_epsilon=target_eps,
                    units=units,
                    height=charts.distribution_height(len(sets)),
                    font_size=font,
                ),
                key="worst_case_vs_epsilon",
                frames=frames_url,
                group=hs.EPSILON_GROUP,
                stop=eps,
            )
        if plan_note:
            st.caption(plan_note)
        # The table under the charts: at a 1280×720 window (viewport 1280×633) ε, m_UB and the
        # two charts they move are on screen together, the table follows on scrolling.
        with st.container(key=hs.HEADLINE):
            st.markdown(labels.headline_table(head, rules, units, m_ub))

        # --- Read-outs, the worst case in detail, the MAE curve, tables: tabs -------------------
        # Only the open tab is drawn (state-tracked tabs rerun this fragment when switched), so a
        # move of ε repaints the two charts above and the open tab, not six charts and four
        # tables. The figures of the closed tabs still go into the report: recorded as builders
        # over this run's (cached) numbers, drawn only if the report is downloaded.
        at = hx.error_at(spec, hat, m_ub, eps, noise_measure)
        curve = hx.error_curve(spec, hat, eps, noise_measure)
        steps = hx.staircase(spec, hat, noise_measure)
        m_eps = hx.m_opt(spec, hat, eps, noise_measure)
        m_ub_arg = m_ub if override else None

        def mc() -> pd.DataFrame:  # MAE against ε: for its tab, its table and the report only
            return pd.concat(
                [
                    hx.mc_curve(spec, hat, name, m_ub_arg, n_runs, seed, state.MC_EPSILONS)
                    for name in chosen
                ],
                ignore_index=True,
            )

        figures = panels.chart_builders(
            h=h, marks=mk, curve=curve, steps=steps, mc=mc, at=at, m_ub=m_ub, m_eps=m_eps,
            epsilon=eps, chosen=chosen, n_runs=n_runs, units=units, font=font,
        )  # fmt: skip
        tabs = dict(
            zip(
                hs.TABS,
                st.tabs(list(hs.TABS), key=hs.TAB, on_change="rerun"),
                strict=True,
            )
        )
        drawn: set[str] = set()

        def _chart(key: str) -> None:
            ui.chart(figures[key](), key=key)
            drawn.add(key)

        with tabs[hs.TAB_READOUTS]:
            panels.readouts_tab(
                tabs[hs.TAB_READOUTS], head=head, h=h, at=at, epsilon=eps, m_ub=m_ub,
                within=within, units=units,
            )  # fmt: skip
        with tabs[hs.TAB_DETAIL]:
            if tabs[hs.TAB_DETAIL].open is not False:
                # E at m^(ε), read off the curve's columns (0.4 ms through .loc, on every rerun)
                opt_total = float(curve["total"].to_numpy()[curve["m"].to_numpy() == m_eps][0])
                panels.detail_tab(
                    at=at, epsilon=eps, m_ub=m_ub, m_eps=m_eps, opt_total=opt_total, units=units,
                    chart=_chart,
                )  # fmt: skip
        with tabs[hs.TAB_MAE]:
            if tabs[hs.TAB_MAE].open is not False:
                _chart("mae")
        with tabs[hs.TAB_TABLES]:
            if tabs[hs.TAB_TABLES].open is not False:
                panels.tables_tab(
                    spec, units, head=head, sims=sims, upper=h.upper, hat=hat, epsilon=eps,
                    seed=seed, m_ub=m_ub if override else None, within=within, n_runs=n_runs,
                    curve=curve, steps=steps, vs_eps=vs_eps, mc=mc(),
                )  # fmt: skip
        for key, build in figures.items():
            if key not in drawn:
                shown.add_figure(key, build)  # built only if the report is downloaded

        one_hexagon_panel(
            spec, hat, within=within, raw=raw
        )  # code for this view and the HTML report (dashboard/common/report)
    url.write()  # a fragment rerun skips app.py's write: keep the URL on the view shown


def hat_picker(spec: DataSpec) -> None:
    """The hexagon-hour below the two sliders (at a 1280×720 window, viewport 1280×633, under
    the ten pages' navigation, ε and m_UB stay on screen with the two charts). Drawn by the
    full run, not the fragment: an ε step does not move it, and the fragment re-sent it on
    every step, which made the browser rebuild it and its 100 options (~400 React component
    renders a step, docs/benchmarks.md wave 14). Picking another one reruns the whole page."""
    units = current()
    hat = current_hat(spec)
    rows = hx.hat_options(spec, hat, MAX_HAT_OPTIONS)  # the busiest; any other: Map page
    if ss.get(state.HAT_PICK) != hat:  # set only on a change: a set value is a one-shot
        ss[state.HAT_PICK] = hat  # effect that makes the browser rebuild the selectbox
    with hat_box:
        st.selectbox(
            f"{g.plain('hat', units)} (busiest first; any other on the Map page)",
            options=list(rows),
            key=state.HAT_PICK,
            format_func=lambda h_: labels.hat_option(rows[h_], rows[h_]["rank"], units),
            on_change=lambda: select_hat(ss[state.HAT_PICK]),
            help=g.tip("hat", units),
        )


panels.compact_top()  # style only: drawn once per full run, not re-sent on every ε step
hat_picker(spec)
panels.settings(spec, settings_box)
view(spec)
