"""One hexagon's panels: the settings ε does not move, the tabs under the two charts, the
presenter's type. Streamlit code over numbers the page computed (``dashboard.hexagon.compute``);
nothing here computes a formula.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from core.mechanisms import MECHANISMS, analytic_names, get_rule
from dashboard.common.session import shown, state
from dashboard.common.session.selection import current_hat
from dashboard.common.source.compute import DataSpec
from dashboard.common.source.units import Units, current
from dashboard.common.view import downloads, ui
from dashboard.hexagon import charts, labels, readouts
from dashboard.hexagon import compute as hx
from dashboard.hexagon import glossary as g
from dashboard.hexagon import state as hs


def compact_top() -> None:
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


def settings(spec: DataSpec, box) -> None:
    """The view's settings that ε does not move: drawn by the page's full run, below the
    fragment's controls, so an ε step reruns (and repaints) fewer widgets."""
    hs.init_settings()
    units = current()
    ss = st.session_state
    u = units.value
    with box:
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
        if ss.get(state.MECHANISM) in analytic_names():  # one mechanism for every view
            state.mirror(hs.TARGET_MECHANISM, state.MECHANISM)
        st.selectbox(
            "for",
            options=list(analytic_names()),
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
        # Drawn only while open (the expander reruns the page when opened or closed): its five
        # widgets cost a first view ~600 of React's component renders for nothing while closed
        # (docs/benchmarks.md, wave 14). Their values are kept meanwhile: keep_widgets (WITHIN,
        # RAW) and state.init (the shared ones) re-assign them on every run.
        more = st.expander("More settings", key=hs.MORE_SETTINGS, on_change="rerun")
        if more.open:
            with more:
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


def tables_tab(
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


def chart_builders(
    *,
    h,
    marks: dict[str, int],
    curve: pd.DataFrame,
    steps: pd.DataFrame,
    mc,
    at: dict[str, float],
    m_ub: int,
    m_eps: int,
    epsilon: float,
    chosen: tuple[str, ...],
    n_runs: int,
    units: Units,
    font: int | None,
) -> dict:
    """The tabs' figures as zero-argument builders: a tab draws its own, the report calls the
    others (only when it is downloaded). ``mc`` builds the MAE-against-ε table on demand."""
    return {
        "error_curve": partial(
            charts.error_curve,
            curve,
            m_ub=m_ub,
            m_opt=m_eps,
            bestfit_bias=at["bestfit_bias"],
            epsilon=epsilon,
            units=units,
            font_size=font,
        ),
        "histogram": partial(
            charts.counts_histogram,
            h.counts,
            m_ub=m_ub,
            marks=[
                charts.Mark(
                    label=f"{labels.rule_name(name, units)} = {value}",
                    m=value,
                    colour=get_rule(name).colour,
                )
                for name, value in marks.items()
            ],
            units=units,
            font_size=font,
        ),
        "staircase": partial(
            charts.staircase_chart,
            steps,
            epsilon=epsilon,
            m_current=m_eps,
            units=units,
            font_size=font,
        ),
        "mae": lambda: charts.mae_vs_epsilon(
            mc().dropna(subset=["mae"]),
            epsilon=epsilon,
            n_runs=n_runs,
            titles={n: MECHANISMS[n].title for n in chosen},
            units=units,
            font_size=font,
        ),
    }


def readouts_tab(
    tab,
    *,
    head: pd.DataFrame,
    h,
    at: dict[str, float],
    epsilon: float,
    m_ub: int,
    within: float,
    units: Units,
) -> None:
    """The plain-language read-outs (recorded for the report even when the tab is closed)."""
    columns = ("title", "typical", "bound90", "share_within", "worst_case")
    first = [r for r in labels.rows(head, *columns) if not np.isnan(r[1])]  # simulated ones
    lines = []
    for title, _typical, bound90, share, _worst in first:
        lines.append(
            "- "
            + readouts.landing(epsilon=epsilon, title=title, bound90=bound90, units=units)
            + f" ({readouts.share_within(share=share, within=within, units=units)}.)"
        )
    user = str(h.user_ids[0])
    lines.append("- " + readouts.odds(epsilon=epsilon, user=user, units=units))
    worst_rows = [r for r in first if np.isfinite(r[4])]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.array([worst / typical for _t, typical, _b, _s, worst in worst_rows])
    if len(worst_rows) and not np.isnan(ratios).all():
        # the mechanism whose worst case is furthest above its typical (the first of equals)
        title, typical, _b, _s, worst = worst_rows[int(np.nanargmax(ratios))]
        lines.append(
            "- "
            + readouts.worst_vs_simulated(title=title, worst=worst, typical=typical, units=units)
        )
    lines.append(
        "- "
        + readouts.bias_vs_clipping(
            bias=at["bestfit_bias"], clipping=at["clipping"], m_ub=m_ub, units=units
        )
    )
    for line in lines:
        shown.add_text(line.removeprefix("- "))
    if tab.open is not False:
        with st.container(key="hexagon_readouts"):
            st.markdown("\n".join(lines))
        st.caption(ui.workbench_note(units))


def detail_tab(
    *,
    at: dict[str, float],
    epsilon: float,
    m_ub: int,
    m_eps: int,
    opt_total: float,
    units: Units,
    chart,
) -> None:
    """The worst case in detail at the slider's m_UB: its parts, the lowest worst case at this
    ε, and three charts (``chart(key)`` draws one)."""
    u = units.value
    cols = st.columns(4)
    cols[0].metric(
        f"{g.plain('e1', units)} E1 ({u})", f"{at['clipping']:.4g}", help=g.tip("e1", units)
    )
    cols[1].metric(
        f"exact BestFit bias ({u})",
        f"{at['bestfit_bias']:.4g}",
        help=g.tip("bestfit_bias", units),
    )
    cols[2].metric(
        f"{g.plain('e2', units)} E2 ({u})", f"{at['noise']:.4g}", help=g.tip("e2", units)
    )
    cols[3].metric(f"worst case E at your m_UB ({u})", f"{at['total']:.4g}", help=g.tip("e", units))
    st.caption(
        f"At your m_UB = {m_ub}, ε = {epsilon:g}. The lowest worst case at this ε is "
        f"{opt_total:.4g} {u}, at m^(ε) = {m_eps} ({g.plain('opt', units)})."
    )
    c1, c2 = st.columns(2)
    with c1:
        chart("error_curve")
    with c2:
        chart("histogram")
    chart("staircase")
