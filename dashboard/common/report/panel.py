"""The report's and the code's place on a page: a download button and a "code for this view" panel.

Pages call :func:`one_hexagon_panel` (One hexagon) or :func:`report_button` (any page). The
figures are those the page drew in this run (:mod:`dashboard.common.session.shown`); the HTML is
built only when the button is clicked (a deferred download), so a rerun pays nothing for it. The
deferred builder runs outside the script thread: it gets plain values captured during the run
and calls core, never ``st.*``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import streamlit as st

from core import worstcase
from core.data import PrepReport
from core.errors import NotApplicableError
from core.hat import HatData
from core.mechanisms import MECHANISMS, run_mechanism
from dashboard.common.report.build import Report, build_html
from dashboard.common.report.code import View, cli_commands, python_snippet
from dashboard.common.session import shown, state, url
from dashboard.common.source import compute, units
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import downloads

CAPTIONS = {
    "histogram": "Records per user, with m_UB and each mechanism's default marked",
    "error_curve": "Worst-case error E(m) = clipping E1 + noise E2 against m_UB",
    "staircase": "The m^(ε) staircase: the best m_UB for every ε",
    "worst_case_vs_epsilon": "Worst-case error against ε",
    "releases": "Simulated releases",
    "mae": "Monte-Carlo mean absolute error against ε",
}


def _built(figures: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """The figures with every recorded builder (a chart of a closed tab) built now."""
    return [(caption, f() if callable(f) else f) for caption, f in figures]


def report_button(make: Callable[[], Report], *, file_name: str, key: str) -> None:
    """A download button that writes the report when clicked (``make`` runs then)."""
    st.download_button(
        "Download a report of this view (HTML, opens offline)",
        data=lambda: build_html(make()).encode("utf-8"),
        file_name=file_name,
        mime="text/html",
        key=key,
        icon=":material/description:",
        on_click="ignore",
        help="One self-contained HTML file: the settings, the charts (interactive, plotly.js "
        "inside the file), the read-outs, the data's summary, the code and the version. It "
        "needs no network.",
    )


def view_of(spec: DataSpec, hat_label: str, *, within: float = 1.0, raw: bool = False) -> View:
    """The One-hexagon view from session state (the values the page just used); ``within`` and
    ``raw`` are the page's ±X band and raw-releases choice (its own state)."""
    ss = st.session_state
    picked = ss[state.MECHANISMS]  # read once, not once per mechanism
    return View(
        source_kind=spec.source.kind,
        source_name=spec.source.name,
        columns=spec.columns,
        upper=float(spec.upper),
        resolution=int(spec.resolution),
        slot=str(spec.slot),
        keep_zeros=bool(spec.keep_zeros),
        hat=hat_label,
        epsilon=float(ss[state.EPSILON]),
        m_ub=int(ss[state.M_UB]),
        override=bool(ss[state.OVERRIDE_M_UB]),
        mechanisms=tuple(n for n in MECHANISMS if n in picked),
        noise_measure=str(ss[state.NOISE_MEASURE]),
        seed=int(ss[state.SEED]),
        n_runs=state.MC_RUNS_MANY if ss[state.MANY_RUNS] else state.MC_RUNS_DEFAULT,
        within=float(within),
        raw=bool(raw),
    )


CODE_PANEL = "code_for_this_view"  # session key: whether the code expander is open


def code_panel(view: View) -> None:
    """The "code for this view" expander: the commands and the Python snippet, drawn only
    while it is open (a closed expander's code boxes would load and run the syntax highlighter
    on every first view: about 0.5 s of the browser's main thread, bench/bench_render.py)."""
    box = st.expander(
        "Code for this view: the same numbers outside the app",
        icon=":material/code:",
        key=CODE_PANEL,
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        st.markdown(
            "The command line (`hexplorer`, installed with the project) gives the worst-case "
            "numbers and a simulated release per mechanism (its own random stream, so the "
            "releases differ from the page's):"
        )
        st.code(cli_commands(view), language="bash", wrap_lines=True)
        st.markdown(
            "This Python script recomputes the page's numbers, the simulated releases included "
            "(same seed streams), and prints them as JSON:"
        )
        st.code(python_snippet(view), language="python")


def readouts(hat: HatData, view: View, unit: str, user_noun: str, n_runs: int) -> list[str]:
    """Plain-language read-outs of a One-hexagon view, computed with core (for the report)."""
    eps = view.epsilon
    out = [
        f"ε = {eps:g}: whatever one release shows, an observer's odds about any one {user_noun} "
        f"(for example, that its speeds were high) change by at most e^ε = "
        f"{math.exp(min(eps, 700)):.3g}×."
    ]
    for name in view.mechanisms:
        m_ub = view.m_ub if view.override else None
        rng = compute.rng_for(view.seed, "monte_carlo", name)
        try:
            d = run_mechanism(name, hat, eps, m_ub=m_ub, rng=rng, size=n_runs)
        except NotApplicableError as exc:
            out.append(f"{MECHANISMS[name].title}: not applicable here ({exc}).")
            continue
        q90 = float(np.quantile(d.abs_errors, 0.9))
        typical = float(np.median(d.abs_errors))
        at = f" (m_UB = {d.m_ub})" if d.m_ub is not None else ""
        out.append(
            f"At ε = {eps:g} with {MECHANISMS[name].title}{at}, 90 % of {n_runs:,} simulated "
            f"releases land within ±{q90:.3g} {unit} of the true mean; the typical error is "
            f"{typical:.3g} {unit}."
        )
    parts = worstcase.worst_case_error(
        hat.counts, hat.upper, view.m_ub, eps, noise_measure=view.noise_measure
    )
    bias = float(worstcase.bestfit_bias(hat.counts, hat.upper, view.m_ub))
    out.append(
        f"The worst-case error E = {float(parts.total):.3g} {unit} at m_UB = {view.m_ub} is a "
        "bound over every dataset with these record counts (every dropped record at U, every "
        "kept one at 0, and the noise's mean size); the simulated errors above are this "
        "dataset's outcomes, usually far smaller."
    )
    out.append(
        f"The clipping error E1 = {float(parts.clipping):.3g} {unit} assumes every array of "
        f"m_UB records is full (the papers' model); the exact worst-case bias of the arrays "
        f"BestFit builds here is {bias:.3g} {unit}. They differ because BestFit's arrays are "
        "not all full and weigh users differently."
    )
    return out


def _summary(
    spec: DataSpec, rep: PrepReport, hat: HatData, unit: str, user_noun: str
) -> dict[str, str]:
    """The data's summary for the report; ``rep`` is ``compute.report(spec)`` (read during the
    run: the report is written outside it)."""
    return {
        "data": spec.source.name,
        "fingerprint (data and preparation)": downloads.fingerprint(spec),
        "rows read": f"{rep.rows_read:,}",
        "rows rejected": f"{rep.n_rejected:,}",
        "values clamped into [0, U]": f"{rep.clamped:,}",
        f"{user_noun} (users) in the data": f"{rep.users:,}",
        "hexagon-hours": f"{rep.hats:,}",
        "U, resolution, slot": f"{spec.upper:g} {unit}, {spec.resolution}, {spec.slot}",
        "this hexagon-hour": str(hat.hat),
        f"{user_noun} here (L)": f"{hat.n_users:,}",
        "records here (N)": f"{hat.n_records:,}",
        "most / fewest records of one user (m*, m_*)": f"{hat.m_max:,} / {hat.m_min:,}",
        "true mean f": f"{hat.true_mean:.4f} {unit}",
    }


def _parameters(view: View, unit: str, n_runs: int) -> dict[str, str]:
    return {
        "hexagon-hour (HAT)": view.hat,
        "ε (privacy loss)": f"{view.epsilon:g}",
        "m_UB (records kept per user)": str(view.m_ub),
        "every mechanism uses this m_UB": "yes" if view.override else "no (each its own rule)",
        "mechanisms": ", ".join(view.mechanisms) or "none",
        "noise part of the worst case": {"mean": "E|noise| (c = 1)", "std": "std (c = √2)"}[
            view.noise_measure
        ],
        "seed of the simulations": str(view.seed),
        "simulated runs per point": f"{n_runs:,}",
        "value unit": unit,
    }


def one_hexagon_panel(
    spec: DataSpec, hat_label: str, *, within: float = 1.0, raw: bool = False
) -> None:
    """The code panel and the report button for One hexagon (call at the end of the page)."""
    st.subheader("Take this view with you")
    view = view_of(spec, hat_label, within=within, raw=raw)
    code_panel(view)
    hat = compute.hat(spec, hat_label)
    u = units.current()
    n_runs = state.MC_RUNS_MANY if st.session_state[state.MANY_RUNS] else state.MC_RUNS_DEFAULT
    figures = [(CAPTIONS.get(k, k.replace("_", " ")), f) for k, f in shown.figures()]
    page_texts = shown.texts()
    rep = compute.report(spec)
    link = url.current_link("one_hexagon")

    def make() -> Report:  # runs when the report is downloaded: everything else is made here
        return Report(
            title=f"One hexagon — {hat_label}",
            parameters=_parameters(view, u.value, n_runs),
            figures=_built(figures),
            # The page's own read-outs when it recorded them (the numbers on screen), else ours.
            texts=page_texts or readouts(hat, view, u.value, u.user, n_runs),
            summary=_summary(spec, rep, hat, u.value, u.users),
            version=downloads.VERSION,
            link=link,
            code=python_snippet(view),
        )

    prov = downloads.provenance(spec, u, hat=hat_label, epsilon=view.epsilon, seed=view.seed)
    report_button(make, file_name=downloads.file_name("report", prov, ext="html"), key="report")


def page_report_button(
    title: str,
    parameters: Mapping[str, str],
    texts: Sequence[str],
    summary: Mapping[str, str],
    *,
    file_name: str,
    key: str,
    captions: Mapping[str, str] | None = None,
) -> None:
    """A report button for any page: the figures it drew in this run plus the given texts."""
    figures = [((captions or {}).get(k, k.replace("_", " ")), f) for k, f in shown.figures()]
    link = url.current_link()

    def make() -> Report:
        return Report(
            title=title,
            parameters=dict(parameters),
            figures=_built(figures),
            texts=list(texts),
            summary=dict(summary),
            version=downloads.VERSION,
            link=link,
        )

    report_button(make, file_name=file_name, key=key)
