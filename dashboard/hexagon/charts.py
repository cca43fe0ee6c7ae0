"""One hexagon's plotly figures: where releases land, records per user, E(m), the staircase,
worst-case error and Monte-Carlo MAE against ε. Data in, ``go.Figure`` out; no st.* calls.

Every builder takes the data's :class:`~dashboard.common.source.units.Units` (value unit, user noun)
and writes them into its titles; labels read plain name first, symbol second (the glossary); each
mechanism has its fixed colour (:func:`~dashboard.common.view.colours.mechanism_colour`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.mechanisms import MECHANISMS
from dashboard.common.source.units import Units
from dashboard.common.view.colours import mechanism_colour, rule_colour
from dashboard.common.view.figures import (
    EPSILON_COLOR,
    M_UB_COLOR,
    epsilon_axis,
    figure,
    label_at,
    log_axis,
    vline,
)
from dashboard.hexagon.ridges import ReleaseSet, Ridges, ridges, ridges_each

# The page's ε range is 0.01–10 (to 100 when a target needs it); complete tick labels (plotly
# abbreviates minor log labels).
EPSILON_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)
E1_COLOR, E2_COLOR = "#E69F00", "#56B4E9"
DEFAULT_UNITS = Units()


def eps_axis(title: str = "privacy loss ε") -> dict:
    """A log x-axis for ε from 0.01 with complete tick labels."""
    return {
        **epsilon_axis(title),
        "tickvals": list(EPSILON_TICKS),
        "ticktext": [f"{v:g}" for v in EPSILON_TICKS],
    }


def _font(font_size: int | None) -> dict:
    return {} if font_size is None else {"font": dict(size=font_size)}


def _legend_line(name: str, color: str, dash: str = "solid", width: float = 2) -> go.Scatter:
    """A legend entry for a layout line (a trace with no points: the label never overlaps)."""
    return go.Scatter(
        x=[None],
        y=[None],
        mode="lines",
        name=name,
        line=dict(color=color, dash=dash, width=width),
        hoverinfo="skip",
    )


# --- Where releases land -------------------------------------------------------------------


def distribution_height(n: int) -> int:
    """Pixel height of the distribution chart for ``n`` mechanisms."""
    return max(330, 110 + 45 * n)


def distribution_title(epsilon: float, *, raw: bool) -> str:
    """The distribution chart's title at ``epsilon``."""
    kind = "raw releases (not clamped)" if raw else "releases (clamped into [0, U])"
    return f"Where {kind} land at ε = {epsilon:g}"


def share_note(s: ReleaseSet, *, within: float, units: Units = DEFAULT_UNITS) -> str:
    """The text above a set's ridge: its name and its share of releases within ±``within``."""
    return f"{s.title} · {s.share_within:.0%} within ±{within:g} {units.value}"


def releases_distribution(
    sets: Sequence[ReleaseSet],
    *,
    true_mean: float,
    within: float,
    epsilon: float,
    units: Units = DEFAULT_UNITS,
    raw: bool = False,
    bins: int = 60,
    font_size: int | None = None,
) -> go.Figure:
    """Where the simulated releases land: one density ridge per mechanism on a shared x axis.

    Traces: 0 the ±``within`` band around the true mean (a filled rectangle), then one filled
    ridge per entry of ``sets`` (its fixed colour; first set on top), then the true mean (a
    vertical line). The x axis is the data's unit and spans 99 % of every set's releases and
    the band; each ridge is the histogram of ``bins`` equal bins scaled to its own peak
    (:func:`ridges`). The mechanism's name and the share of its releases inside the band are
    printed above its ridge (one annotation per set, in order).
    """
    n = len(sets)
    r = ridges(sets, true_mean=true_mean, within=within, bins=bins)
    top = n - 1 + 0.95
    band = go.Scatter(
        x=[true_mean - within, true_mean + within, true_mean + within, true_mean - within],
        y=[-0.1, -0.1, top, top],
        fill="toself",
        fillcolor="rgba(0,0,0,0.08)",
        mode="lines",
        line=dict(width=0),
        name=f"±{within:g} {units.value} around the true mean",
        hoverinfo="skip",
    )
    data: list = [band]
    notes: list[dict] = []
    for i, s in enumerate(sets):
        offset = float(n - 1 - i)
        data.append(
            go.Scatter(
                x=r.x,
                y=r.ys[i],
                fill="toself",
                mode="lines",
                line=dict(color=mechanism_colour(s.mechanism), width=1.5),
                fillcolor=mechanism_colour(s.mechanism),
                opacity=0.75,
                name=s.title,
                showlegend=False,
                customdata=r.shares[i],
                hovertemplate=(
                    f"{s.title}<br>%{{x:.2f}} {units.value}: "
                    "%{customdata:.1%} of releases<extra></extra>"
                ),
            )
        )
        notes.append(
            dict(
                x=0.0,
                xref="paper",
                y=offset + 0.55,
                yref="y",
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                text=share_note(s, within=within, units=units),
                font=dict(color=mechanism_colour(s.mechanism)),
                bgcolor="rgba(255,255,255,0.75)",
            )
        )
    data.append(
        go.Scatter(
            x=[true_mean, true_mean],
            y=[-0.1, top],
            mode="lines",
            line=dict(color="#000000", width=2),
            name=f"true mean {true_mean:.2f} {units.value}",
            hoverinfo="skip",
        )
    )
    return figure(
        data,
        distribution_title(epsilon, raw=raw),
        xaxis=dict(title=f"released mean ({units.value})", range=[r.lo, r.hi]),
        yaxis=dict(showticklabels=False, showgrid=False, range=[-0.15, n + 0.05], fixedrange=True),
        annotations=notes,
        height=distribution_height(n),
        showlegend=True,
        **_font(font_size),
    )


# --- The worst case --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Mark:
    """A vertical mark on the records-per-user histogram: an m_UB rule's value."""

    label: str
    m: int
    colour: str


def counts_histogram(
    counts: Sequence[int] | np.ndarray,
    *,
    m_ub: int,
    marks: Sequence[Mark] = (),
    units: Units = DEFAULT_UNITS,
    font_size: int | None = None,
) -> go.Figure:
    """Histogram of records per user with m_UB and each m_UB rule's value marked.

    Trace 0 is the histogram (``x`` = the counts as given). The vertical lines are layout
    shapes: first m_UB, then one per mark, in order. Their labels are legend entries (traces
    1, 2, … with no points, same order and colours), so they never overlap each other or the bars.
    """
    counts = np.asarray(counts)
    shapes = [vline(m_ub, M_UB_COLOR, 3)]
    legend = [_legend_line(f"records kept per {units.user} m_UB = {m_ub}", M_UB_COLOR, width=3)]
    for mark in marks:
        shapes.append(vline(mark.m, mark.colour, 1.5, "dash"))
        legend.append(_legend_line(mark.label, mark.colour, "dash"))
    trace = go.Histogram(
        x=counts,
        name=units.users,
        marker_color="#9ab6d3",
        showlegend=False,
        hovertemplate=f"records %{{x}}<br>{units.users} %{{y}}<extra></extra>",
    )
    return figure(
        [trace, *legend],
        f"Records per {units.user} in this hexagon-hour",
        shapes=shapes,
        xaxis_title=f"records per {units.user} (m)",
        yaxis_title=units.users,
        bargap=0.05,
        **_font(font_size),
    )


def error_curve(
    curve: pd.DataFrame,
    *,
    m_ub: int,
    m_opt: int,
    bestfit_bias: float | None = None,
    epsilon: float,
    units: Units = DEFAULT_UNITS,
    font_size: int | None = None,
) -> go.Figure:
    """Worst-case error E(m) = E1 (clipping) + E2 (noise) against m, with its minimiser.

    ``curve`` has columns ``m``, ``clipping``, ``noise``, ``total``. Traces: 0 E1, 1 E2, 2 E,
    3 the minimiser m^(ε) (one marker), then, when given, the exact worst-case bias of the arrays
    BestFit builds at m_UB (one marker, beside E1 which assumes full arrays), then the m_UB line's
    legend entry. The m_UB line is the first layout shape.
    """
    m = curve["m"].to_numpy()
    at_opt = curve.loc[curve["m"] == m_opt, "total"]
    data = [
        go.Scatter(
            x=m,
            y=curve["clipping"],
            name="clipping error E1 (full arrays)",
            line=dict(color=E1_COLOR),
        ),
        go.Scatter(x=m, y=curve["noise"], name="noise error E2", line=dict(color=E2_COLOR)),
        go.Scatter(
            x=m,
            y=curve["total"],
            name="worst-case error E = E1 + E2",
            line=dict(color="#000000", width=3),
        ),
        go.Scatter(
            x=[m_opt],
            y=[float(at_opt.iloc[0]) if len(at_opt) else np.nan],
            mode="markers",
            name=f"lowest E: m^(ε) = {m_opt}",
            marker=dict(color=rule_colour("opt"), size=12, symbol="star"),
        ),
    ]
    if bestfit_bias is not None:
        data.append(
            go.Scatter(
                x=[m_ub],
                y=[bestfit_bias],
                mode="markers",
                name="exact clipping bias of BestFit's arrays",
                marker=dict(color=E1_COLOR, size=11, symbol="diamond-open", line=dict(width=2)),
            )
        )
    data.append(_legend_line(f"your m_UB = {m_ub}", M_UB_COLOR))
    return figure(
        data,
        f"Worst-case error against records kept per {units.user}, ε = {epsilon:g}",
        shapes=[vline(m_ub, M_UB_COLOR)],
        xaxis_title=f"records kept per {units.user} (m_UB)",
        yaxis_title=f"worst-case error ({units.value})",
        **_font(font_size),
    )


def staircase_chart(
    steps: pd.DataFrame,
    *,
    epsilon: float,
    m_current: int,
    eps_range: tuple[float, float] = (0.01, 10.0),
    units: Units = DEFAULT_UNITS,
    font_size: int | None = None,
) -> go.Figure:
    """The m^(ε) staircase: m^(ε) against ε (log axis), breakpoints marked, current ε drawn.

    ``steps`` has columns ``epsilon_from``, ``epsilon_to``, ``m`` (one row per step, ε
    increasing; the first may start at 0 and the last end at infinity). Trace 0 is the staircase
    clipped to ``eps_range``; trace 1 the breakpoints inside the range; trace 2 the current point.
    The current ε is also the first layout shape (plotly 6+ places shapes on a log axis in data
    coordinates).
    """
    lo, hi = eps_range
    xs: list[float] = []
    ys: list[float] = []
    bx: list[float] = []
    by: list[float] = []
    for row in steps.itertuples(index=False):
        a, b = max(float(row.epsilon_from), lo), min(float(row.epsilon_to), hi)
        if a > b:
            continue
        xs += [a, b]
        ys += [row.m, row.m]
        if lo < float(row.epsilon_from) <= hi:
            bx.append(float(row.epsilon_from))
            by.append(row.m)
    data = [
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            name="best records kept m^(ε)",
            line=dict(color=rule_colour("opt"), width=3, shape="hv"),
        ),
        go.Scatter(
            x=bx,
            y=by,
            mode="markers",
            name="breakpoints",
            marker=dict(color=rule_colour("opt"), size=8),
            hovertemplate="from ε = %{x:.4g}: m = %{y}<extra></extra>",
        ),
        go.Scatter(
            x=[epsilon],
            y=[m_current],
            mode="markers",
            name=f"ε = {epsilon:g}: m^(ε) = {m_current}",
            marker=dict(color=EPSILON_COLOR, size=12, symbol="x"),
        ),
    ]
    return figure(
        data,
        f"Best records kept per {units.user} as ε grows (the m^(ε) staircase)",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=eps_axis(),
        yaxis_title=f"records kept per {units.user} m^(ε)",
        **_font(font_size),
    )


def worst_case_vs_epsilon(
    curves: pd.DataFrame,
    *,
    epsilon: float,
    target: float | None = None,
    target_epsilon: float | None = None,
    units: Units = DEFAULT_UNITS,
    height: int = 400,
    font_size: int | None = None,
) -> go.Figure:
    """Worst-case error against ε (log-log), one trace per mechanism.

    ``curves`` has column ``epsilon`` and one column per mechanism (its registry name, as
    ``dashboard.hexagon.compute.worst_case_vs_epsilon`` builds it); one trace per such column,
    in that order, named by its title, in its colour. With a ``target`` error: a
    horizontal line at it (the next trace) and, with ``target_epsilon``, a marker where it meets
    the curve (the trace after). The current ε is the first layout shape.
    """
    data = [
        go.Scatter(
            x=curves["epsilon"],
            y=curves[column],
            name=MECHANISMS[column].title,
            mode="lines",
            line=dict(color=mechanism_colour(column)),
        )
        for column in curves.columns
        if column in MECHANISMS
    ]
    if target is not None:
        eps = curves["epsilon"]
        data.append(
            go.Scatter(
                x=[float(eps.min()), float(eps.max())],
                y=[target, target],
                mode="lines",
                name=f"target {target:g} {units.value}",
                line=dict(color="#555555", dash="dash", width=2),
            )
        )
        if target_epsilon is not None:
            data.append(
                go.Scatter(
                    x=[target_epsilon],
                    y=[target],
                    mode="markers",
                    name=f"meets it at ε = {target_epsilon:.3g}",
                    marker=dict(color="#555555", size=12, symbol="circle-open", line=dict(width=3)),
                )
            )
    return figure(
        data,
        "Worst-case error against ε",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=eps_axis(),
        yaxis=log_axis(f"worst-case error ({units.value})"),
        height=height,
        **_font(font_size),
    )


def mae_vs_epsilon(
    results: pd.DataFrame,
    *,
    epsilon: float,
    n_runs: int,
    titles: Mapping[str, str] | None = None,
    units: Units = DEFAULT_UNITS,
    font_size: int | None = None,
) -> go.Figure:
    """Monte-Carlo MAE against ε (log-log), one trace per mechanism in order of appearance.

    ``results`` has columns ``mechanism``, ``epsilon``, ``mae`` (as ``core.evaluation``
    returns them). Each trace has its mechanism's fixed colour and is named by ``titles``.
    """
    titles = titles or {}
    data = [
        go.Scatter(
            x=part["epsilon"],
            y=part["mae"],
            name=titles.get(str(name), str(name)),
            mode="lines+markers",
            line=dict(color=mechanism_colour(str(name))),
        )
        for name, part in results.groupby("mechanism", sort=False)
    ]
    return figure(
        data,
        f"Mean absolute error against ε ({n_runs:,} simulated runs per point)",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=eps_axis(),
        yaxis=log_axis(f"mean absolute error ({units.value})"),
        **_font(font_size),
    )


__all__ = [
    "Mark",
    "ReleaseSet",
    "Ridges",
    "counts_histogram",
    "distribution_title",
    "eps_axis",
    "error_curve",
    "label_at",
    "mae_vs_epsilon",
    "releases_distribution",
    "ridges",
    "ridges_each",
    "share_note",
    "staircase_chart",
    "worst_case_vs_epsilon",
]
