"""One hexagon: how far off will a release be, and where do releases land?

Read widgets → parameters → cached calls into core (``dashboard.hexagon.compute``) → figures.
The answer comes first: each chosen mechanism's error at its *own* m_UB rule (typical error,
90 % bound, worst case), then where its releases land; the worst-case analysis follows.

Layout for a presenter: the controls sit in the sidebar (above the data settings), the main
area starts with the headline and a grid of two charts, so at 1280×720 ε, m_UB and two charts
they move are on screen together. Everything that depends on ε or m_UB is one ``st.fragment``:
moving a control reruns it alone, not the data sidebar.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from core import plan
from core.mechanisms import MECHANISMS, get_rule
from dashboard.common import compute, downloads, memo, shown, state, ui, url
from dashboard.common import glossary as g
from dashboard.common.compute import DataSpec
from dashboard.common.selection import current_hat, hat_label, select_hat
from dashboard.common.sidebar import require_data
from dashboard.common.units import Units, current
from dashboard.hexagon import charts, readouts
from dashboard.hexagon import compute as hx
from dashboard.hexagon import state as hs
from dashboard.report.panel import one_hexagon_panel

MAX_HAT_OPTIONS = 500
PRESENTER_FONT = 17
TARGET_MECHANISMS = plan.ANALYTIC_MECHANISMS


def _help(key: str, units: Units, extra: str = "") -> str:
    return f"{g.tip(key, units)}{(' ' + extra) if extra else ''}"


def _compact_top() -> None:
    """Less empty space above the title, so the controls and two charts fit one 720-px screen."""
    st.html(
        "<style>[data-testid='stMainBlockContainer'] {padding-top: 3rem;}"
        ".st-key-hexagon_headline table {font-size: 0.85rem; margin-bottom: 0;}"
        ".st-key-hexagon_headline td:first-child {white-space: nowrap;}"
        ".st-key-hexagon_headline th, .st-key-hexagon_headline td {padding: 0.2rem 0.6rem;}</style>"
    )


def _on_target(spec: DataSpec) -> None:
    """Typing a target error moves ε to core's answer (the smallest ε that meets it) for the
    HAT selected now (a change of HAT reruns only the view, not these settings)."""
    ss = st.session_state
    target = ss.get(hs.TARGET)
    if target is None:
        return
    label = current_hat(spec)
    p = hx.target_plan(
        spec, label, float(target), str(ss[hs.TARGET_MECHANISM]), str(ss[state.NOISE_MEASURE])
    )
    if p.status == "ok" and p.epsilon is not None:
        hs.set_epsilon(p.epsilon)


def _on_target_mechanism(spec: DataSpec) -> None:
    """The plan's mechanism is the shared one (the Map's and Whole city's): write it back."""
    state.push(hs.TARGET_MECHANISM, state.MECHANISM)
    _on_target(spec)


def _plan_note(p, units: Units) -> str | None:
    """One line on a plan that did not set ε exactly (out of the page's range, unreachable…)."""
    u = units.value
    title = MECHANISMS[p.mechanism].title
    if p.status == "unreachable":
        return (
            f"No ε brings {title}'s worst case within {p.target:g} {u}: it never gets below "
            f"{p.floor:.3g} {u} (the clipping error of its m_UB rule). ε is unchanged."
        )
    if p.status == "any":
        return f"Every ε meets {p.target:g} {u} for {title}; ε is unchanged."
    if p.epsilon is not None and not hs.EPSILON_MIN <= p.epsilon <= hs.EPSILON_MAX:
        return (
            f"{title} meets {p.target:g} {u} from ε = {p.epsilon:.4g}, outside this page's "
            f"range [{hs.EPSILON_MIN:g}, {hs.EPSILON_MAX:g}]; ε is set to the nearest end."
        )
    return None


def _headline_table(head: pd.DataFrame, rules: dict[str, str], units: Units, m_ub: int) -> str:
    """The headline as a Markdown table: numbers only, units in the column labels (no wrapping
    of numbers, nothing truncated)."""
    u = units.value
    lines = [
        f"| mechanism | records kept per {units.user} | typical error ({u}) "
        f"| 90 % within ± ({u}) | worst case ({u}) | at your m_UB = {m_ub}: worst case ({u}) |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for r in head.itertuples(index=False):
        own = "all" if pd.isna(r.m_ub) else f"{int(r.m_ub)} ({rules.get(r.mechanism, 'rule')})"
        if pd.isna(r.typical):
            lines.append(f"| **{r.title}** | {r.note} | | | | |")
            continue
        lines.append(
            f"| **{r.title}** | {own} | {_num(r.typical)} | ±{_num(r.bound90)} "
            f"| {_num(r.worst_case)} | {_num(r.worst_case_yours)} |"
        )
    return "\n".join(lines)


def _num(value: float) -> str:
    """Three significant digits; "—" where there is no number (no worst case in SPEC, no m_UB)."""
    return "—" if value is None or pd.isna(value) or not np.isfinite(value) else f"{value:.3g}"


def _true_mean(spec: DataSpec, label: str) -> float:
    return compute.hat(spec, label).true_mean


def _hat_option(row: dict, rank: int, units: Units) -> str:
    """A short select-box label that fits the sidebar: '#1 · 03-05 15:00 · 205 buses'."""
    slot = str(row["slot"])
    if len(slot) == 16 and slot[10] == "T":  # absolute window 'YYYY-MM-DDTHH:MM'
        slot = f"{slot[5:10]} {slot[11:]}"
    return f"#{rank} · {slot} · {int(row['users']):,} {units.users}"


def _rule_name(name: str, units: Units) -> str:
    """A rule's plain name first, its symbol second ("Levy's rule, m^(L)")."""
    rule = get_rule(name)
    if name not in g.TERMS:
        return rule.label
    text = g.plain(name, units)
    return text if rule.label in text else f"{text}, {rule.label}"


def _rule_help(name: str) -> str:
    rule = get_rule(name)
    users = [m.title for m in MECHANISMS.values() if m.m_ub_rule == name]
    return f"Set m_UB to {rule.label}: {rule.help}. The default of {', '.join(users)}."


def _tables(
    spec: DataSpec,
    units: Units,
    *,
    head: pd.DataFrame,
    sims: list,
    upper: float,
    hat: str,
    epsilon: float,
    seed: int,
    m_ub: int | None,
    within: float,
    n_runs: int,
    curve: pd.DataFrame,
    steps: pd.DataFrame,
    vs_eps: pd.DataFrame,
    mc: pd.DataFrame,
) -> None:
    """The "Tables and downloads" tab: every table with its CSV (built when clicked)."""
    u = units.value
    prov = partial(downloads.provenance, spec, units, hat=hat, epsilon=epsilon, seed=seed)
    simulation = head.rename(
        columns={
            "typical": f"typical error ({u})",
            "bound90": f"90 % of releases within ± ({u})",
            "worst_case": f"worst case ({u})",
            "share_within": f"share within ±{within:g} {u}",
            "m_ub": f"records kept per {units.user} (m_UB)",
            "m_ub_yours": "your m_UB",
            "typical_yours": f"typical error at your m_UB ({u})",
            "worst_case_yours": f"worst case at your m_UB ({u})",
            "n_arrays": "pseudo-users K̄",
            "noise_scale": f"noise scale ({u})",
        }
    )
    ui.table(simulation, name="simulation", key="simulation", provenance=prov())
    releases_prov = prov(m_ub=m_ub)
    ui.download(
        f"Download releases.csv (every simulated release, {n_runs:,} per mechanism)",
        lambda: downloads.csv_bytes(
            downloads.with_units(
                hx.releases_table(sims, upper), units, values=["release", "raw_release"]
            ),
            releases_prov,
        ),
        file_name=downloads.file_name("releases", releases_prov),
        help=f"Saved as {downloads.file_name('releases', releases_prov)}",
        key="download_releases",
    )
    ui.table(curve, name="error_curve", key="error_curve", height=240, provenance=prov(seed=None))
    ui.table(steps, name="staircase", key="staircase", provenance=prov(epsilon=None, seed=None))
    ui.table(
        vs_eps,
        name="worst_case_vs_epsilon",
        key="worst_case_vs_epsilon",
        height=240,
        provenance=prov(epsilon=None, seed=None),
    )
    ui.table(
        mc,
        name="monte_carlo_mae",
        key="monte_carlo_mae",
        height=240,
        provenance=prov(epsilon=None, m_ub=m_ub),
    )


st.title("One hexagon")
controls = st.sidebar.container()  # the page's controls, above the shared data settings
settings_box = st.sidebar.container()  # the settings ε does not move (full runs only)
spec = require_data()
ss = st.session_state


def settings(spec: DataSpec) -> None:
    """The view's settings that ε does not move: drawn by the page's full run, below the
    fragment's controls, so an ε step reruns (and repaints) fewer widgets."""
    hs.init_settings()
    units = current()
    u = units.value
    with settings_box:
        st.toggle(
            "Use my m_UB for every mechanism in the charts",
            key=state.OVERRIDE_M_UB,
            help="Off: each mechanism keeps its own m_UB rule (the headline always does). "
            "On: the distribution and MAE charts use the slider's m_UB.",
        )
        st.number_input(
            f"Target worst-case error ({u})",
            min_value=0.0,
            value=None,
            step=0.1,
            format="%g",
            key=hs.TARGET,
            placeholder="none: type one to set ε",
            on_change=_on_target,
            args=(spec,),
            help="ε is set to the smallest ε whose worst-case error (of the mechanism below) "
            "is at most this target (core.plan); the ±X band follows.",
        )
        if ss.get(state.MECHANISM) in TARGET_MECHANISMS:  # one mechanism for every view
            state.mirror(hs.TARGET_MECHANISM, state.MECHANISM)
        st.selectbox(
            "for",
            options=list(TARGET_MECHANISMS),
            key=hs.TARGET_MECHANISM,
            format_func=lambda n: MECHANISMS[n].title,
            on_change=_on_target_mechanism,
            args=(spec,),
        )
        st.multiselect(
            "Mechanisms",
            options=list(MECHANISMS),
            key=state.MECHANISMS,
            format_func=lambda n: MECHANISMS[n].title,
            help="The mechanisms of the SPEC table to compare. Learn → Mechanisms.",
        )
        with st.expander("More settings"):
            st.number_input(
                f"Band ±X around the true mean ({u})",
                min_value=0.0,
                value=None,
                step=0.1,
                format="%g",
                key=hs.WITHIN,
                placeholder="from the target (else 1)",
                help="The share of releases within ±X of the true mean is printed per "
                "mechanism. Empty: the target error, or 1.",
            )
            st.toggle(
                "Raw releases (not clamped into [0, U])",
                key=hs.RAW,
                help="Releases are post-processed into [0, U] (free under DP). The papers "
                "analyse the raw ones; switch to see them.",
            )
            st.radio(
                "Noise error measured as",
                options=["mean", "std"],
                format_func={"mean": "E|noise| (c = 1)", "std": "std of noise (c = √2)"}.get,
                key=state.NOISE_MEASURE,
                horizontal=True,
                help="E2 as expected |noise| ([3]/[5]) or standard deviation ([4]).",
            )
            st.toggle(
                f"{state.MC_RUNS_MANY:,} simulated runs (default {state.MC_RUNS_DEFAULT:,})",
                key=state.MANY_RUNS,
            )
            st.number_input(
                "Seed", min_value=0, max_value=2**31 - 1, step=1, key=state.SEED,
                help="Seed of the simulated noise. Simulations release nothing.",
            )  # fmt: skip
        st.toggle("Presenter (larger type)", key=hs.PRESENTER)


@state.fragment
def view(spec: DataSpec) -> None:
    """Everything that ε, m_UB, the mechanisms or the HAT move (reruns alone)."""
    shown.reset()  # everything this page draws is in here; the report hands out this run's
    units = current()
    u = units.value
    hat = current_hat(spec)
    rows = hx.hat_options(spec, hat, MAX_HAT_OPTIONS)  # the busiest; any other: Map page
    eps = hs.init_epsilon()
    _compact_top()
    presenter = bool(ss[hs.PRESENTER]) or ui.presenting()  # the toggle, or the deck's
    font = PRESENTER_FONT if presenter else None

    with controls:
        ss[state.HAT_PICK] = hat
        st.selectbox(
            f"{g.plain('hat', units)} (busiest first; any other on the Map page)",
            options=list(rows),
            key=state.HAT_PICK,
            format_func=lambda h_: _hat_option(rows[h_], rows[h_]["rank"], units),
            on_change=lambda: select_hat(ss[state.HAT_PICK]),
            help=g.tip("hat", units),
        )
        st.select_slider(
            "Privacy loss ε (log scale)",
            options=hs.stops_with(eps),
            key=hs.EPSILON_SLIDER,
            format_func=lambda e: f"{e:g}",
            on_change=hs.on_slider,
            help=_help("epsilon", units, "Smaller ε = more noise. Learn → User-level privacy."),
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
                    help=_help(
                        "m_ub",
                        units,
                        "Small: clipping error; large: noise error. Learn → Pseudo-users.",
                    ),
                )
            else:
                st.caption(f"m_UB = {h.m_min}: every {units.user} has the same count.")
            # Exact ε below both sliders, so ε and m_UB stay on a 1280×720 screen together.
            st.number_input(
                "Exact ε",
                min_value=hs.EPSILON_MIN,
                max_value=hs.EPSILON_MAX,
                step=0.01,
                format="%g",
                key=hs.EPSILON_EXACT,
                on_change=hs.on_exact,
                help="Type any ε between 0.01 and 10; the slider and every number follow.",
            )
            for name, value in mk.items():
                st.button(
                    f"{_rule_name(name, units)} = {value}",
                    key=f"set_m_ub_{name}",
                    on_click=_set_m_ub,
                    args=(value,),
                    help=_rule_help(name),
                    width="stretch",
                )
            st.caption(
                f"{hat_label(rows[hat], units.users)}; {g.plain('m_max', units)} m* = {int(rows[hat]['m_max']):,}; "
                f"true mean {_true_mean(spec, hat):.3f} {u} (true values: the data team's workbench)"
            )

        if presenter:
            ui.presenter_style()
        m_ub = int(ss[state.M_UB])
        override = bool(ss[state.OVERRIDE_M_UB])
        chosen = tuple(n for n in MECHANISMS if n in ss[state.MECHANISMS])
        n_runs = state.MC_RUNS_MANY if ss[state.MANY_RUNS] else state.MC_RUNS_DEFAULT
        seed = int(ss[state.SEED])
        raw = bool(ss[hs.RAW])
        target = ss.get(hs.TARGET)
        within = ss.get(hs.WITHIN)
        within = float(within if within is not None else target if target else hs.DEFAULT_WITHIN)

        for note in readouts.degenerate_notes(m_min=h.m_min, m_max=h.m_max, units=units):
            st.info(note, icon=":material/info:")
        # (issue 9: "copy link", "report" and "code for this view" go in this row.)
        actions = st.container(key="hexagon_actions")  # noqa: F841 (kept for those controls)

        if not chosen:
            st.info("Choose at least one mechanism in the sidebar.")
            return
        head = hx.headline(spec, hat, chosen, eps, m_ub, noise_measure, seed, n_runs, within, raw)
        rules = {
            n: get_rule(rule).label for n in chosen if (rule := MECHANISMS[n].m_ub_rule) is not None
        }
        kind = "raw" if raw else "clamped"
        st.markdown(
            f"**How far off will a release be?** ε = {eps:g}, each mechanism at its own m_UB "
            f"rule, {n_runs:,} simulated releases ({kind}), seed {seed}",
            help="Typical error = the median of |release − true mean|; 90 % of releases land "
            "within ± the next column; the worst case is SPEC's bound over every dataset with "
            "these record counts (— where SPEC has none).",
        )
        with st.container(key="hexagon_headline"):
            st.markdown(_headline_table(head, rules, units, m_ub))

        # --- The two charts ε moves most: where releases land, and the worst case against ε --
        sets, sims = [], []
        for name in chosen:
            sim = hx.simulated(spec, hat, name, eps, m_ub if override else None, seed, n_runs)
            sims.append(sim)
            values = hx.releases_of(sim, h.upper, raw=raw)
            if values is None:
                continue
            share = float(np.mean(np.abs(values - h.true_mean) <= within))
            sets.append(
                charts.ReleaseSet(
                    mechanism=name, title=MECHANISMS[name].title, values=values, share_within=share
                )
            )
        vs_eps = hx.worst_case_vs_epsilon(spec, hat, noise_measure)
        target_eps, plan_note = None, None
        if target is not None:
            p = hx.target_plan(
                spec, hat, float(target), str(ss[hs.TARGET_MECHANISM]), noise_measure
            )
            target_eps = p.epsilon
            plan_note = _plan_note(p, units)
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
                    live=True,
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
                live=True,
            )
        if plan_note:
            st.caption(plan_note)

        # --- Read-outs, the worst case in detail, the MAE curve, tables: tabs -------------------
        # Only the open tab is drawn (state-tracked tabs rerun this fragment when switched), so a
        # move of ε repaints the two charts above and the open tab, not six charts and four
        # tables. The figures of the closed tabs still go into the report: recorded as builders
        # over this run's (cached) numbers, drawn only if the report is downloaded.
        at = hx.error_at(spec, hat, m_ub, eps, noise_measure)
        curve = hx.error_curve(spec, hat, eps, noise_measure)
        steps = hx.staircase(spec, hat, noise_measure)
        m_eps = hx.m_opt(spec, hat, eps, noise_measure)
        opt_total = float(curve.loc[curve["m"] == m_eps, "total"].iloc[0])
        m_ub_arg = m_ub if override else None

        def mc() -> pd.DataFrame:  # MAE against ε: for its tab, its table and the report only
            return pd.concat(
                [
                    hx.mc_curve(spec, hat, name, m_ub_arg, n_runs, seed, state.MC_EPSILONS)
                    for name in chosen
                ],
                ignore_index=True,
            )

        figures = {
            "error_curve": partial(
                charts.error_curve,
                curve,
                m_ub=m_ub,
                m_opt=m_eps,
                bestfit_bias=at["bestfit_bias"],
                epsilon=eps,
                units=units,
                font_size=font,
            ),
            "histogram": partial(
                charts.counts_histogram,
                h.counts,
                m_ub=m_ub,
                marks=[
                    charts.Mark(
                        label=f"{_rule_name(name, units)} = {value}",
                        m=value,
                        colour=get_rule(name).colour,
                    )
                    for name, value in mk.items()
                ],
                units=units,
                font_size=font,
            ),
            "staircase": partial(
                charts.staircase_chart,
                steps,
                epsilon=eps,
                m_current=m_eps,
                units=units,
                font_size=font,
            ),
            "mae": lambda: charts.mae_vs_epsilon(
                mc().dropna(subset=["mae"]),
                epsilon=eps,
                n_runs=n_runs,
                titles={n: MECHANISMS[n].title for n in chosen},
                units=units,
                font_size=font,
            ),
        }
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
            first = head.dropna(subset=["typical"])
            lines = []
            for r in first.itertuples(index=False):
                lines.append(
                    "- "
                    + readouts.landing(epsilon=eps, title=r.title, bound90=r.bound90, units=units)
                    + f" ({readouts.share_within(share=r.share_within, within=within, units=units)}.)"
                )
            user = str(h.user_ids[0])
            lines.append("- " + readouts.odds(epsilon=eps, user=user, units=units))
            worst_rows = first[np.isfinite(first["worst_case"])]
            if len(worst_rows):  # the mechanism whose worst case is furthest above its typical
                r = worst_rows.loc[(worst_rows["worst_case"] / worst_rows["typical"]).idxmax()]
                lines.append(
                    "- "
                    + readouts.worst_vs_simulated(
                        title=r["title"], worst=r["worst_case"], typical=r["typical"], units=units
                    )
                )
            lines.append(
                "- "
                + readouts.bias_vs_clipping(
                    bias=at["bestfit_bias"], clipping=at["clipping"], m_ub=m_ub, units=units
                )
            )
            for line in lines:
                shown.add_text(line.removeprefix("- "))
            if tabs[hs.TAB_READOUTS].open is not False:
                with st.container(key="hexagon_readouts"):
                    st.markdown("\n".join(lines))
                st.caption(ui.workbench_note(units))
        with tabs[hs.TAB_DETAIL]:
            if tabs[hs.TAB_DETAIL].open is not False:
                cols = st.columns(4)
                cols[0].metric(
                    f"{g.plain('e1', units)} E1 ({u})",
                    f"{at['clipping']:.4g}",
                    help=g.tip("e1", units),
                )
                cols[1].metric(
                    f"exact BestFit bias ({u})",
                    f"{at['bestfit_bias']:.4g}",
                    help=g.tip("bestfit_bias", units),
                )
                cols[2].metric(
                    f"{g.plain('e2', units)} E2 ({u})",
                    f"{at['noise']:.4g}",
                    help=g.tip("e2", units),
                )
                cols[3].metric(
                    f"worst case E at your m_UB ({u})", f"{at['total']:.4g}", help=g.tip("e", units)
                )
                st.caption(
                    f"At your m_UB = {m_ub}, ε = {eps:g}. The lowest worst case at this ε is "
                    f"{opt_total:.4g} {u}, at m^(ε) = {m_eps} ({g.plain('opt', units)})."
                )
                c1, c2 = st.columns(2)
                with c1:
                    _chart("error_curve")
                with c2:
                    _chart("histogram")
                _chart("staircase")
        with tabs[hs.TAB_MAE]:
            if tabs[hs.TAB_MAE].open is not False:
                _chart("mae")
        with tabs[hs.TAB_TABLES]:
            if tabs[hs.TAB_TABLES].open is not False:
                _tables(
                    spec, units, head=head, sims=sims, upper=h.upper, hat=hat, epsilon=eps,
                    seed=seed, m_ub=m_ub if override else None, within=within, n_runs=n_runs,
                    curve=curve, steps=steps, vs_eps=vs_eps, mc=mc(),
                )  # fmt: skip
        for key, build in figures.items():
            if key not in drawn:
                shown.add_figure(key, build)  # built only if the report is downloaded

        one_hexagon_panel(
            spec, hat, within=within, raw=raw
        )  # code for this view and the HTML report (dashboard/report)
    url.write()  # a fragment rerun skips app.py's write: keep the URL on the view shown


settings(spec)
view(spec)
