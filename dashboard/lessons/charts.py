"""Figures of the neighbouring-datasets lesson. Data in, ``go.Figure`` out; no st.* calls."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from core.lessons import LogRatio, Neighbours, NoiseNeeded
from dashboard.common.source.units import Units
from dashboard.common.view.colours import mechanism_colour
from dashboard.common.view.figures import EPSILON_COLOR, figure, label_at, log_axis, vline

CHANGED_COLOUR = "#D55E00"
OTHERS_COLOUR = "#9e9e9e"


def dataset_chart(nb: Neighbours, units: Units) -> go.Figure:
    """Every user of the HAT (records against mean value); the chosen user in D and in D'.

    Trace 0: the other users; trace 1: the chosen user in D; trace 2: the same user in D'.
    Dashed lines: the true mean f(D) and f(D').
    """
    hat = nb.original
    ids = hat.user_ids.astype(str)
    other = ids != nb.user_id
    f0, f1 = hat.true_mean, nb.changed.true_mean
    data = [
        go.Scatter(
            x=hat.counts[other],
            y=hat.user_means[other],
            mode="markers",
            marker=dict(color=OTHERS_COLOUR, size=6, opacity=0.6),
            name=f"other {units.users}",
            text=ids[other],
            hovertemplate=f"%{{text}}: %{{x}} records, mean %{{y:.2f}} {units.value}<extra></extra>",
        ),
        go.Scatter(
            x=[nb.count],
            y=[nb.old_mean],
            mode="markers",
            marker=dict(color="#0072B2", size=13, symbol="circle"),
            name=f"{units.user} {nb.user_id} in D (mean {nb.old_mean:.1f})",
        ),
        go.Scatter(
            x=[nb.count],
            y=[nb.value],
            mode="markers",
            marker=dict(color=CHANGED_COLOUR, size=13, symbol="diamond"),
            name=f"the same {units.user} in D′ (all records {nb.value:g})",
        ),
    ]
    shapes = [
        dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y, line=dict(color=c, dash="dash"))
        for y, c in ((f0, "#0072B2"), (f1, CHANGED_COLOUR))
    ]
    notes = [
        dict(x=1, y=f0, xref="paper", text=f"f(D) = {f0:.3f}", showarrow=False, xanchor="right",
             yanchor="bottom", font=dict(color="#0072B2")),
        dict(x=1, y=f1, xref="paper", text=f"f(D′) = {f1:.3f}", showarrow=False, xanchor="right",
             yanchor="top", font=dict(color=CHANGED_COLOUR)),
        dict(x=math.log10(nb.count), y=nb.value, ax=math.log10(nb.count), ay=nb.old_mean,
             xref="x", yref="y", axref="x", ayref="y", showarrow=True, arrowhead=2, text=""),
    ]  # fmt: skip
    return figure(
        data,
        f"D and its neighbour D′: only {units.user} {nb.user_id}'s values differ",
        xaxis=log_axis(f"records per {units.user} (m_ℓ, public)"),
        yaxis=dict(title=f"mean value ({units.value})", range=[-2, hat.upper * 1.05]),
        shapes=shapes,
        annotations=notes,
    )


def distributions_chart(lr: LogRatio, units: Units) -> go.Figure:
    """The mechanism's output density on D (solid) and D′ (dashed), overlaid.

    Trace 0: D, trace 1: D′ (lines for exact densities, steps for simulated histograms).
    """
    colour = mechanism_colour(lr.mechanism)
    shape = "linear" if lr.exact else "hvh"
    how = "exact" if lr.exact else "simulated"
    data = [
        go.Scatter(x=lr.x, y=lr.density, mode="lines", line=dict(color=colour, width=3,
                   shape=shape), name="output on D"),
        go.Scatter(x=lr.x, y=lr.density_changed, mode="lines", line=dict(color=CHANGED_COLOUR,
                   width=3, dash="dash", shape=shape), name="output on D′"),
    ]  # fmt: skip
    shapes, notes = [], []
    if lr.exact and lr.noiseless is not None and lr.noiseless_changed is not None:
        shapes = [
            vline(lr.noiseless, colour, 1, "dot"),
            vline(lr.noiseless_changed, CHANGED_COLOUR, 1, "dot"),
        ]
        notes = [label_at(lr.noiseless, "before noise (D)", 1.0, "right"),
                 label_at(lr.noiseless_changed, "before noise (D′)", 0.9, "left")]  # fmt: skip
    return figure(
        data,
        f"Where {lr.mechanism}'s releases land (ε = {lr.epsilon:g}, {how})",
        xaxis=dict(title=f"released value ({units.value})"),
        yaxis=dict(title="probability density"),
        shapes=shapes,
        annotations=notes,
    )


def log_ratio_chart(lr: LogRatio, units: Units) -> go.Figure:
    """log(p_D(x) / p_D′(x)) against x with the ±ε band.

    Trace 0: the log-ratio (with ±2 standard errors when simulated); the band is two layout
    shapes at ±ε.
    """
    colour = mechanism_colour(lr.mechanism)
    err = None
    if lr.stderr is not None:
        err = dict(type="data", array=np.nan_to_num(2.0 * lr.stderr), visible=True)
    data = [
        go.Scatter(
            x=lr.x,
            y=lr.log_ratio,
            mode="lines" if lr.exact else "markers",
            line=dict(color=colour, width=3),
            marker=dict(color=colour, size=7),
            error_y=err,
            name="log-ratio" + ("" if lr.exact else " (±2 standard errors)"),
        )
    ]
    eps = lr.epsilon
    shapes = [
        dict(type="rect", xref="paper", x0=0, x1=1, y0=-eps, y1=eps, fillcolor="rgba(0,158,115,0.12)",
             line=dict(width=0), layer="below"),
        *[dict(type="line", xref="paper", x0=0, x1=1, y0=y, y1=y,
               line=dict(color=EPSILON_COLOR, dash="dash")) for y in (-eps, eps)],
    ]  # fmt: skip
    finite = lr.log_ratio[np.isfinite(lr.log_ratio)]
    top = max(eps, float(np.max(np.abs(finite))) if finite.size else 0.0) * 1.25
    notes = [
        dict(x=0, y=eps, xref="paper", text=f"+ε = {eps:g}", showarrow=False, xanchor="left",
             yanchor="bottom", font=dict(color=EPSILON_COLOR)),
        dict(x=0, y=-eps, xref="paper", text=f"−ε = {-eps:g}", showarrow=False, xanchor="left",
             yanchor="top", font=dict(color=EPSILON_COLOR)),
    ]  # fmt: skip
    return figure(
        data,
        "Log-ratio of the two densities, against ±ε",
        xaxis=dict(title=f"released value ({units.value})"),
        yaxis=dict(title="log p_D(x) − log p_D′(x) (privacy loss, ε)", range=[-top, top]),
        shapes=shapes,
        annotations=notes,
    )


def record_user_chart(noise: NoiseNeeded, units: Units) -> go.Figure:
    """The plain mean's noise (90 % half-width) protecting one record vs one user (log axis).

    Trace 0: one bar per protection level.
    """
    labels = ["one record", f"one {units.user} (all its records)"]
    widths = [noise.half_width_record, noise.half_width_user]
    data = [
        go.Bar(
            x=widths,
            y=labels,
            orientation="h",
            marker_color=["#56B4E9", "#0072B2"],
            text=[f"±{w:.3g} {units.value}" for w in widths],
            textposition="outside",
            hovertemplate="%{y}: 90 % of the noise within ±%{x:.4g}<extra></extra>",
            name="noise",
        )
    ]
    low = math.floor(math.log10(min(widths))) - 0.2
    high = math.ceil(math.log10(max(widths))) + 0.8
    return figure(
        data,
        f"Noise the mean needs at ε = {noise.epsilon:g}: {noise.noise_ratio:.0f}× more for a "
        f"{units.user}",
        xaxis={**log_axis(f"noise half-width ({units.value}, log scale)"), "range": [low, high]},
        yaxis=dict(title=""),
        height=260,
        showlegend=False,
    )
