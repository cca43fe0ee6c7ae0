"""The course's small charts (plotly, as data): one per step that has one.

The charts an ε move changes (steps 1, 4, 5 and 6) take their changing values from the small
helpers beside them (:func:`odds_marker`, :func:`odds_title`, :func:`histogram`,
:func:`releases_title`, :func:`staircase_title`, :func:`composition_marker`,
:func:`composition_title`): the frames document the browser repaints
them from (:mod:`dashboard.course.frames`) calls the same helpers, stop by stop. Each of these
charts carries its step's ε-dependent numbers in its title, so they move with the chart.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from core import worstcase
from core.course import EPSILON_GRID
from dashboard.common.source.units import Units

HEIGHT = 320
TITLED_TOP = 40  # the top margin of a chart with a title


def _layout(fig: go.Figure, x: str, y: str) -> go.Figure:
    fig.update_layout(
        height=HEIGHT, margin={"l": 50, "r": 20, "t": 30, "b": 45}, xaxis_title=x, yaxis_title=y,
        legend={"orientation": "h", "y": 1.12},
    )  # fmt: skip
    return fig


def odds_marker(epsilon: float) -> tuple[list[float], list[float]]:
    """The learner's point on the e^ε curve (:func:`odds_chart`'s second trace)."""
    return [float(epsilon)], [math.exp(epsilon)]


def odds_title(epsilon: float) -> str:
    """Step 1's number at ε: the factor e^ε."""
    return f"ε = {epsilon:g}: odds change at most ×{math.exp(epsilon):.3f}"


def odds_chart(epsilon: float, factor: float) -> go.Figure:
    """e^ε against ε, the learner's ε marked, the allowed factor as a line."""
    eps = np.asarray(EPSILON_GRID[: EPSILON_GRID.index(3.0) + 1])
    fig = go.Figure(go.Scatter(x=eps, y=np.exp(eps), mode="lines", name="e^ε"))
    x, y = odds_marker(epsilon)
    fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name="your ε", marker={"size": 12}))
    fig.add_hline(y=factor, line_dash="dot", annotation_text=f"×{factor:g}")
    fig = _layout(fig, "ε", "odds change at most (×)")
    return fig.update_layout(title_text=odds_title(epsilon), margin_t=TITLED_TOP)


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


def histogram(values: np.ndarray, bins: int = 60) -> tuple[np.ndarray, np.ndarray, float]:
    """The bars of :func:`releases_chart`: each bin's centre, its count and the bins' width."""
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins)
    return (edges[:-1] + edges[1:]) / 2.0, counts, float(edges[1] - edges[0])


def releases_title(epsilon: float, share: float, within: float, u: Units) -> str:
    """Step 4's number at ε: the share of releases within ±``within``."""
    return f"ε = {epsilon:g}: {share:.1%} of releases within ±{within:g} {u.value}"


def releases_chart(
    values: np.ndarray,
    true_mean: float,
    within: float,
    u: Units,
    bins: int = 60,
    *,
    title: str | None = None,
) -> go.Figure:
    """Simulated releases as a histogram of ``bins`` equal bins (counted here: bars of 60
    counts, not every release, go to the browser, which then needs only plotly.js's basic
    bundle, see ``dashboard.common.view.liveplot``), the ±X band around the true mean shaded;
    ``title``: the page's :func:`releases_title`."""
    x, counts, width = histogram(values, bins)
    fig = go.Figure(
        go.Bar(
            x=x,
            y=counts,
            width=width,
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
    fig = _layout(fig, f"released mean ({u.value})", "releases")
    if title is not None:
        fig.update_layout(title_text=title, margin_t=TITLED_TOP)
    return fig


def staircase_title(epsilon: float, m: int, error: float, u: Units) -> str:
    """Step 5's numbers at ε: m^(ε) and its worst case."""
    return f"ε = {epsilon:g}: m^(ε) = {m:,}, worst case E(m^(ε)) = {error:.4g} {u.value}"


def staircase_chart(
    steps: list[worstcase.Step], epsilon: float, m: int, *, title: str | None = None
) -> go.Figure:
    """m^(ε) against ε over the course's ε stops (0.01 to 5) on a log axis, where the staircase's
    steps (most of them below ε = 0.5) can be told apart; the learner's ε marked (the second
    trace); ``title``: the page's :func:`staircase_title`."""
    lo_eps, hi_eps = EPSILON_GRID[0], EPSILON_GRID[-1]
    xs, ys = [], []
    for s in steps:
        lo, hi = max(s.epsilon_from, lo_eps), min(s.epsilon_to, hi_eps)
        if lo >= hi:
            continue
        xs += [lo, hi]
        ys += [s.m, s.m]
    fig = go.Figure(go.Scatter(x=xs, y=ys, mode="lines", name="m^(ε)", line_shape="hv"))
    fig.add_trace(go.Scatter(x=[float(epsilon)], y=[int(m)], mode="markers", name="your ε",
                             marker={"size": 12}))  # fmt: skip
    fig = _layout(fig, "ε (log scale)", "m^(ε)")
    fig.update_xaxes(type="log", range=[np.log10(lo_eps), np.log10(hi_eps)])
    if title is not None:
        fig.update_layout(title_text=title, margin_t=TITLED_TOP)
    return fig


def composition_marker(epsilon: float, max_grids: int) -> tuple[list[float], list[float]]:
    """The learner's point on the ε·max G_ℓ line (:func:`composition_chart`'s third trace)."""
    return [float(epsilon)], [float(max_grids) * float(epsilon)]


def composition_title(epsilon: float, max_grids: int, budget: float, u: Units) -> str:
    """Step 6's number at ε: what the most travelled user loses in total."""
    total = float(max_grids) * float(epsilon)
    return f"ε = {epsilon:g} per hexagon: a {u.user} loses at most {total:.3g} (budget {budget:g})"


def composition_chart(
    epsilon: float, *, grids: int, max_grids: int, budget: float, u: Units
) -> go.Figure:
    """Step 6: the total privacy loss of releasing every hexagon of the hour with ε each,
    against ε, on log axes (each accounting is a straight line): basic composition G·ε and
    by users ε·max G_ℓ, the budget as a line, the learner's ε on the by-users line."""
    eps = np.asarray(EPSILON_GRID, dtype=float)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=eps, y=float(grids) * eps, mode="lines",
                             name=f"every hexagon counted: G·ε (G = {grids:,})"))  # fmt: skip
    fig.add_trace(go.Scatter(x=eps, y=float(max_grids) * eps, mode="lines",
                             name=f"by {u.users}: ε·max G_ℓ (max G_ℓ = {max_grids:,})"))  # fmt: skip
    x, y = composition_marker(epsilon, max_grids)
    fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name="your ε", marker={"size": 12}))
    fig.add_hline(y=budget, line_dash="dot", annotation_text=f"budget {budget:g}")
    fig = _layout(fig, "ε per hexagon (log scale)", "total privacy loss (log scale)")
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig.update_layout(
        title_text=composition_title(epsilon, max_grids, budget, u), margin_t=TITLED_TOP
    )
