"""Experiments: regenerate a figure of the papers, see the paper's claim and whether it holds.

Read widgets → parameters → cached call into core.experiments (dashboard.experiments.compute) →
figure (dashboard.experiments.charts, the same builder ``hexplorer reproduce`` uses).
"""

from __future__ import annotations

import streamlit as st

from core.experiments import CATALOGUE, get_experiment
from dashboard.common.view import ui
from dashboard.experiments import charts
from dashboard.experiments import compute as exp_compute
from dashboard.experiments import state as es

st.title("Experiments: reproduce the papers")
es.init()
ss = st.session_state
st.markdown(
    "Each entry is one figure of the papers behind this tool, recomputed here by the same "
    "library, with the paper's claim checked on the numbers. Where the papers' data is not "
    "public a synthetic stand-in is used, and said so. The whole table is in "
    "`docs/reproduction.md` (`hexplorer reproduce all`)."
)

ids = [e.id for e in CATALOGUE]
if ss.get(es.EXPERIMENT) not in ids:
    ss[es.EXPERIMENT] = ids[0]
st.selectbox(
    "Experiment",
    options=ids,
    key=es.EXPERIMENT,
    format_func=lambda i: f"{get_experiment(i).paper_title}: {get_experiment(i).figure}",
)
exp = get_experiment(str(ss[es.EXPERIMENT]))
st.caption(f"{exp.paper_title} — {exp.authors}")

left, mid, right = st.columns([2, 2, 3])
left.number_input(
    "Runs per point",
    min_value=1,
    max_value=es.FRESH_RUNS_MAX if (exp.supports_fresh and ss[es.FRESH]) else es.RUNS_MAX,
    step=500,
    key=es.RUNS,
    disabled=not exp.monte_carlo,
    help="Monte-Carlo runs per plotted point (the papers use 10,000). Exact experiments "
    "(worst-case curves, staircase, many grids) need none.",
)
mid.number_input(
    "Seed",
    min_value=0,
    max_value=2**31 - 1,
    step=1,
    key=es.SEED,
    disabled=not exp.monte_carlo,
    help="np.random.default_rng(seed) draws the data, then the mechanisms' noise.",
)
right.toggle(
    "A new dataset on every run",
    key=es.FRESH,
    disabled=not exp.supports_fresh,
    help="The bounding paper's protocol: the data is redrawn for every run, so the error "
    "averages over data and noise. Off: one fixed dataset, noise redrawn. Slower (a loop).",
)

runs = int(ss[es.RUNS])
fresh = bool(ss[es.FRESH]) and exp.supports_fresh
if fresh:
    runs = min(runs, es.FRESH_RUNS_MAX)
with ui.errors_shown():
    with st.spinner("Computing the figure…"):
        shown = exp_compute.outcome(exp.id, runs, int(ss[es.SEED]), fresh)
    fig = charts.experiment_figure(exp, shown.table, runs=shown.runs)
    ui.chart(fig, key="experiment")

    st.markdown(f"**The paper's claim.** {exp.claim}")
    if shown.holds:
        st.success(f"**Holds here.** {shown.evidence}", icon=":material/check_circle:")
    else:
        why = f" **Why:** {exp.why_not}" if exp.why_not else ""
        st.warning(f"**Does not hold here.** {shown.evidence}{why}", icon=":material/warning:")
    st.markdown(f"**Plots.** {exp.plots}")
    st.markdown(f"**Data.** {exp.setting}")
    st.caption(
        f"Computed by `{exp.function}`. The same figure from the command line: "
        f"`hexplorer reproduce {exp.id}"
        + (f" --runs {shown.runs} --seed {shown.seed}" if exp.monte_carlo else "")
        + (" --fresh" if shown.fresh else "")
        + " --output DIR`."
    )
    st.download_button(
        f"Download {exp.id}.csv",
        data=exp_compute.csv_bytes(exp.id, shown),
        file_name=f"{exp.id}"
        + (f"_runs{shown.runs}_seed{shown.seed}" if exp.monte_carlo else "")
        + ("_fresh" if shown.fresh else "")
        + ".csv",
        mime="text/csv",
        key="download_experiment",
        icon=":material/download:",
    )
