"""One hexagon's plotly figures: counts histogram, E(m), the staircase, error against ε,
Monte-Carlo MAE and simulated releases. Data in, ``go.Figure`` out; no st.* calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.common.colours import mechanism_colour
from dashboard.common.figures import (
    EPSILON_COLOR,
    M_UB_COLOR,
    MARK_COLORS,
    epsilon_axis,
    figure,
    label_at,
    log_axis,
    vline,
)


def counts_histogram(
    counts: Sequence[int] | np.ndarray,
    *,
    m_ub: int,
    marks: Mapping[str, int] | None = None,
) -> go.Figure:
    """Histogram of records per user (bus) with m_UB and each mechanism default marked.

    Trace 0 is the histogram (``x`` = the counts as given). The vertical lines are layout
    shapes: first m_UB, then one per entry of ``marks`` (label -> m), in order; the
    annotations follow the same order.
    """
    counts = np.asarray(counts)
    shapes = [vline(m_ub, M_UB_COLOR, 3)]
    notes = [label_at(m_ub, f"m_UB = {m_ub}")]
    for i, (label, m) in enumerate((marks or {}).items()):
        shapes.append(vline(m, MARK_COLORS.get(label, "#444"), 1.5, "dash"))
        notes.append(
            label_at(m, f"{label} = {m}", y=0.92 - 0.09 * i, xanchor="right" if i % 2 else "left")
        )
    trace = go.Histogram(
        x=counts,
        name="buses",
        marker_color="#4c78a8",
        hovertemplate="records %{x}<br>buses %{y}<extra></extra>",
    )
    return figure(
        [trace],
        "Records per bus in this hexagon",
        shapes=shapes,
        annotations=notes,
        xaxis_title="records per bus (m)",
        yaxis_title="buses",
        bargap=0.05,
        showlegend=False,
    )


def error_curve(
    curve: pd.DataFrame,
    *,
    m_ub: int,
    m_opt: int,
    bestfit_bias: float | None = None,
    epsilon: float,
) -> go.Figure:
    """Worst-case error E(m) = E1 (clipping) + E2 (noise) against m, with its minimiser.

    ``curve`` has columns ``m``, ``clipping``, ``noise``, ``total``. Traces: 0 E1, 1 E2, 2 E,
    3 the minimiser m^(ε) (one marker), then, when given, the exact worst-case bias of the arrays
    BestFit builds at m_UB (one marker, beside E1 which assumes full arrays). The m_UB line is
    the first layout shape.
    """
    m = curve["m"].to_numpy()
    at_opt = curve.loc[curve["m"] == m_opt, "total"]
    data = [
        go.Scatter(
            x=m,
            y=curve["clipping"],
            name="E1 clipping (full-array model)",
            line=dict(color="#ff7f0e"),
        ),
        go.Scatter(x=m, y=curve["noise"], name="E2 noise", line=dict(color="#1f77b4")),
        go.Scatter(x=m, y=curve["total"], name="E = E1 + E2", line=dict(color="#000000", width=3)),
        go.Scatter(
            x=[m_opt],
            y=[float(at_opt.iloc[0]) if len(at_opt) else np.nan],
            mode="markers",
            name=f"minimiser m^(ε) = {m_opt}",
            marker=dict(color=MARK_COLORS["m^(ε)"], size=12, symbol="star"),
        ),
    ]
    if bestfit_bias is not None:
        data.append(
            go.Scatter(
                x=[m_ub],
                y=[bestfit_bias],
                mode="markers",
                name="exact BestFit bias at m_UB",
                marker=dict(color="#ff7f0e", size=11, symbol="diamond-open", line=dict(width=2)),
            )
        )
    return figure(
        data,
        f"Worst-case error E(m) at ε = {epsilon:g}",
        shapes=[vline(m_ub, M_UB_COLOR)],
        annotations=[label_at(m_ub, f"m_UB = {m_ub}")],
        xaxis_title="m_UB (m)",
        yaxis_title="worst-case error (km/h)",
    )


def staircase_chart(
    steps: pd.DataFrame,
    *,
    epsilon: float,
    m_current: int,
    eps_range: tuple[float, float] = (0.05, 10.0),
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
            x=xs, y=ys, mode="lines", name="m^(ε)", line=dict(color="#2ca02c", width=3, shape="hv")
        ),
        go.Scatter(
            x=bx,
            y=by,
            mode="markers",
            name="breakpoints",
            marker=dict(color="#2ca02c", size=8),
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
        "The m^(ε) staircase",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=epsilon_axis(),
        yaxis_title="m^(ε)",
    )


WORST_CASE_LABELS = {
    "baseline": "Baseline",
    "opt_arrayavg": "OPT-Array-Averaging E(m^(ε))",
    "opt_bounding": "opt-bounding E^OPT",
}


def worst_case_vs_epsilon(curves: pd.DataFrame, *, epsilon: float) -> go.Figure:
    """Worst-case error against ε (log-log) for Baseline, OPT-Array-Averaging and opt-bounding.

    ``curves`` has column ``epsilon`` and one column per key of ``WORST_CASE_LABELS``; one trace
    per such column, in that order.
    """
    data = [
        go.Scatter(x=curves["epsilon"], y=curves[column], name=label, mode="lines")
        for column, label in WORST_CASE_LABELS.items()
    ]
    return figure(
        data,
        "Worst-case error against ε",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=epsilon_axis(),
        yaxis=log_axis("worst-case error (km/h)"),
    )


def mae_vs_epsilon(results: pd.DataFrame, *, epsilon: float, n_runs: int) -> go.Figure:
    """Monte-Carlo MAE against ε (log-log), one trace per mechanism in order of appearance, each
    in the mechanism's fixed colour (``mechanism_colour``).

    ``results`` has columns ``mechanism``, ``epsilon``, ``mae`` (as ``core.evaluation``
    returns them).
    """
    data = [
        go.Scatter(
            x=part["epsilon"],
            y=part["mae"],
            name=str(name),
            mode="lines+markers",
            line=dict(color=mechanism_colour(str(name))),
            marker=dict(color=mechanism_colour(str(name))),
        )
        for name, part in results.groupby("mechanism", sort=False)
    ]
    return figure(
        data,
        f"Monte-Carlo MAE against ε ({n_runs:,} runs per point)",
        shapes=[vline(epsilon, EPSILON_COLOR, 1.5, "dot")],
        xaxis=epsilon_axis(),
        yaxis=log_axis("mean absolute error (km/h)"),
    )


def release_chart(releases: pd.DataFrame, *, true_mean: float) -> go.Figure:
    """One simulated noisy release per mechanism beside the true mean, with the spread of outputs.

    ``releases`` has columns ``mechanism``, ``estimate``, ``q05``, ``q95``. Trace 0: the
    5–95 % ranges (each bar spans exactly [q05, q95]); trace 1: the single release of each
    mechanism, in its fixed colour. The true mean is a vertical line (the first layout shape).
    """
    names = releases["mechanism"].astype(str).tolist()
    q05 = releases["q05"].to_numpy(dtype=float)
    q95 = releases["q95"].to_numpy(dtype=float)
    spread = go.Scatter(
        x=q05,
        y=names,
        mode="markers",
        name="5–95 % of outputs",
        marker=dict(size=1, color="rgba(0,0,0,0)"),
        error_x=dict(
            type="data",
            symmetric=False,
            array=q95 - q05,
            arrayminus=np.zeros_like(q05),
            thickness=6,
            width=0,
            color="rgba(76,120,168,0.45)",
        ),
        customdata=np.stack([q05, q95], axis=1),
        hovertemplate=(
            "%{y}: 90% of outputs in [%{customdata[0]:.2f}, %{customdata[1]:.2f}]<extra></extra>"
        ),
    )
    single = go.Scatter(
        x=releases["estimate"],
        y=names,
        mode="markers",
        name="one simulated release",
        marker=dict(size=12, color=[mechanism_colour(n) for n in names]),
        hovertemplate="%{y}: %{x:.3f} km/h<extra></extra>",
    )
    return figure(
        [spread, single],
        "Simulated releases beside the true mean",
        shapes=[vline(true_mean, "#000")],
        annotations=[label_at(true_mean, f"true mean {true_mean:.2f}")],
        xaxis_title="average speed (km/h)",
        height=max(240, 120 + 40 * len(names)),
    )
