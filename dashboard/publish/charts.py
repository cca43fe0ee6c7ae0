"""Figures of the Publish page (data in, ``go.Figure`` out, no st.* calls)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.common.source.units import Units
from dashboard.common.view.figures import EPSILON_COLOR, figure, label_at, vline

RECORDED_COLOR = "#1f77b4"
AFTER_COLOR = "#ff7f0e"


def user_epsilon_histogram(
    totals: np.ndarray,
    *,
    budget: float | None,
    units: Units,
    after: np.ndarray | None = None,
) -> go.Figure:
    """Histogram of every user's cumulative ε in the ledger, against the budget.

    ``after``: the totals of the users of a previewed release if it were published (a second,
    overlaid histogram), so one sees who would come near or past the budget.
    """
    data = [
        go.Histogram(
            x=np.asarray(totals, dtype=float),
            name=f"{units.users} in the ledger",
            marker_color=RECORDED_COLOR,
            opacity=0.75,
            hovertemplate="ε %{x}<br>%{y} " + units.users + "<extra></extra>",
        )
    ]
    if after is not None:
        data.append(
            go.Histogram(
                x=np.asarray(after, dtype=float),
                name=f"its {units.users} after this release",
                marker_color=AFTER_COLOR,
                opacity=0.6,
                hovertemplate="ε %{x}<br>%{y} " + units.users + "<extra></extra>",
            )
        )
    shapes, notes = [], []
    if budget is not None:
        shapes.append(vline(budget, EPSILON_COLOR, dash="dash"))
        notes.append(label_at(budget, f" budget {budget:g}"))
    return figure(
        data,
        f"Cumulative ε per {units.user}",
        barmode="overlay",
        xaxis=dict(title=f"cumulative ε of a {units.user}", rangemode="tozero"),
        yaxis=dict(title=units.users),
        shapes=shapes,
        annotations=notes,
    )
