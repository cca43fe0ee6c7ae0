"""The course's small charts (plotly, as data): one per step that has one."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from core import worstcase
from core.course import EPSILON_GRID
from dashboard.common.source.units import Units

HEIGHT = 320


def _layout(fig: go.Figure, x: str, y: str) -> go.Figure:
    fig.update_layout(
        height=HEIGHT, margin={"l": 50, "r": 20, "t": 30, "b": 45}, xaxis_title=x, yaxis_title=y,
        legend={"orientation": "h", "y": 1.12},
    )  # fmt: skip
    return fig


def odds_chart(epsilon: float, factor: float) -> go.Figure:
    """e^ε against ε, the learner's ε marked, the allowed factor as a line."""
    eps = np.asarray(EPSILON_GRID[: EPSILON_GRID.index(3.0) + 1])
    fig = go.Figure(go.Scatter(x=eps, y=np.exp(eps), mode="lines", name="e^ε"))
    fig.add_trace(
        go.Scatter(x=[epsilon], y=[np.exp(epsilon)], mode="markers", name="your ε",
                   marker={"size": 12})
    )  # fmt: skip
    fig.add_hline(y=factor, line_dash="dot", annotation_text=f"×{factor:g}")
    return _layout(fig, "ε", "odds change at most (×)")


def error_chart(ms: np.ndarray, parts: worstcase.ErrorParts, m_ub: int, u: Units) -> go.Figure:
    """E1, E2 and E against m_UB, the learner's m_UB marked."""
    fig = go.Figure()
    for name, y in (("clipping E1", parts.clipping), ("noise E2", parts.noise), ("E", parts.total)):
        fig.add_trace(go.Scatter(x=ms, y=y, mode="lines", name=name))
    fig.add_vline(x=m_ub, line_dash="dot", annotation_text=f"m_UB = {m_ub}")
    top = float(np.quantile(np.asarray(parts.total), 0.9))
    fig.update_yaxes(range=[0, top])
    return _layout(fig, "m_UB (records kept per user)", f"worst-case error ({u.value})")


BAND = "rgba(0,158,115,0.18)"  # the ±X band: the lessons' green, light


def releases_chart(
    values: np.ndarray, true_mean: float, within: float, u: Units, bins: int = 60
) -> go.Figure:
    """Simulated releases as a histogram of ``bins`` equal bins (counted here: bars of 60
    counts, not every release, go to the browser, which then needs only plotly.js's basic
    bundle, see ``dashboard.common.view.liveplot``), the ±X band around the true mean shaded."""
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins)
    fig = go.Figure(
        go.Bar(
            x=(edges[:-1] + edges[1:]) / 2.0,
            y=counts,
            width=float(edges[1] - edges[0]),
            name="releases",
            hovertemplate="%{x:.2f}: %{y} releases<extra></extra>",
        )
    )
    fig.add_vrect(
        x0=true_mean - within,
        x1=true_mean + within,
        fillcolor=BAND,  # a shape's default fill is transparent: the band must name its colour
        line_width=0,
        annotation_text=f"±{within:g} {u.value}",
        annotation_position="bottom left",
    )
    fig.add_vline(x=true_mean, line_dash="dot", annotation_text="true mean")
    return _layout(fig, f"released mean ({u.value})", "releases")


def staircase_chart(steps: list[worstcase.Step], epsilon: float, m: int) -> go.Figure:
    """m^(ε) against ε over the course's ε stops (0.01 to 5) on a log axis, where the staircase's
    steps (most of them below ε = 0.5) can be told apart; the learner's ε marked."""
    lo_eps, hi_eps = EPSILON_GRID[0], EPSILON_GRID[-1]
    xs, ys = [], []
    for s in steps:
        lo, hi = max(s.epsilon_from, lo_eps), min(s.epsilon_to, hi_eps)
        if lo >= hi:
            continue
        xs += [lo, hi]
        ys += [s.m, s.m]
    fig = go.Figure(go.Scatter(x=xs, y=ys, mode="lines", name="m^(ε)", line_shape="hv"))
    fig.add_trace(go.Scatter(x=[epsilon], y=[m], mode="markers", name="your ε",
                             marker={"size": 12}))  # fmt: skip
    fig = _layout(fig, "ε (log scale)", "m^(ε)")
    fig.update_xaxes(type="log", range=[np.log10(lo_eps), np.log10(hi_eps)])
    return fig
