"""A small page for ``test_browser_frames.py``: One hexagon's ε slider
(``dashboard.common.view.slider``) and two charts that follow it (``ui.chart(..., frames=,
group=)``), in a fragment as on One hexagon, the frames document served by the test itself
(Playwright's ``page.route`` on :data:`FRAMES`). The server is slow on purpose once the slider
sends ε (:data:`SLOW_S`), so what the page shows before the rerun is what the browser drew.
"""

from __future__ import annotations

import time
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from dashboard.common.view import liveplot, slider, ui

STOPS = [0.5, 1.0, 2.0, 4.0]
FRAMES = "/_hexplorer/frames/test.json"
GROUP = "hexagon_epsilon"
SLOW_S = 2.0


def distribution(eps: float) -> go.Figure:
    return go.Figure(
        go.Scatter(x=[0, 1, 2], y=[1, 2 * eps, 1], mode="lines", name="ridge"),
        layout={"title": {"text": f"Where releases land at ε = {eps:g}"}, "height": 260},
    )


def worst_case(eps: float) -> go.Figure:
    return go.Figure(
        go.Scatter(x=STOPS, y=[1 / e for e in STOPS], mode="lines", name="bound"),
        layout={
            "title": {"text": "Worst-case error against ε"},
            "height": 260,
            "xaxis": {"type": "log"},
            "shapes": [{"type": "line", "x0": eps, "x1": eps, "y0": 0, "y1": 1, "yref": "paper"}],
        },
    )


def _picked(eps: float) -> None:
    print(f"picked {eps:g}", flush=True)  # the test reads the server's log: the run has begun
    time.sleep(SLOW_S)  # the rerun comes late: the charts must not wait for it
    st.session_state["eps"] = eps


@st.fragment
def view() -> None:
    ss = st.session_state
    ss["fragment_runs"] = ss.get("fragment_runs", 0) + 1
    eps = float(ss.get("eps", 1.0))
    with st.sidebar:
        slider.epsilon_slider(
            "Privacy loss ε (log scale)",
            stops=STOPS,
            value=eps,
            key="frames_test_slider",
            group=GROUP,
            help="Smaller ε = more noise.",
            on_change=_picked,
        )
    st.markdown(f"server ε = {eps:g}; fragment runs {ss['fragment_runs']}")
    ss["drawn"] = [*ss.get("drawn", []), f"{eps:g}"]  # every ε a run drew, in order
    st.markdown(f"server drew {' → '.join(ss['drawn'])}")
    ui.chart(distribution(eps), key="distribution", frames=FRAMES, group=GROUP, stop=eps)
    ui.chart(worst_case(eps), key="worst_case_vs_epsilon", frames=FRAMES, group=GROUP, stop=eps)


if __name__ == "__main__":  # a visitor's run
    st.session_state["full_runs"] = st.session_state.get("full_runs", 0) + 1
    st.markdown(f"full runs {st.session_state['full_runs']}")
    if st.button("Set ε = 4 from the server"):
        st.session_state["eps"] = 4.0
    view()
else:  # `streamlit run` imports the file to find the app: uPlot's route, the charts enabled
    app = st.App(Path(__file__).resolve(), routes=liveplot.routes())
    liveplot.enable()
