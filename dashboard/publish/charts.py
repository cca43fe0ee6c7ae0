"""Figures of the Publish page (data in, ``go.Figure`` out, no st.* calls)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.common.source.units import Units
from dashboard.common.view.figures import EPSILON_COLOR, figure, label_at, vline

RECORDED_COLOR = "#1f77b4"
AFTER_COLOR = "#ff7f0e"


def ledger_after(totals: np.ndarray, before: np.ndarray | None, after: np.ndarray) -> np.ndarray:
    """Every user's cumulative ε after a release: the recorded ``totals`` less the released
    users' recorded values (``before``, 0 for a user new to the ledger), plus their ``after``.

    >>> ledger_after(np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0]), np.array([3.0, 1.0]))
    array([1., 2., 3., 1.])
    """
    values, counts = np.unique(np.asarray(totals, dtype=float), return_counts=True)
    gone = np.asarray(before if before is not None else [], dtype=float)
    gone_values, gone_counts = np.unique(gone[gone > 0], return_counts=True)
    at = np.searchsorted(values, gone_values)
    found = at < values.size
    found[found] = values[at[found]] == gone_values[found]
    counts[at[found]] -= np.minimum(counts[at[found]], gone_counts[found])
    return np.concatenate([np.repeat(values, counts), np.asarray(after, dtype=float)])


def user_epsilon_histogram(
    totals: np.ndarray,
    *,
    budget: float | None,
    units: Units,
    after: np.ndarray | None = None,
    before: np.ndarray | None = None,
) -> go.Figure:
    """Histogram of every user's cumulative ε in the ledger, against the budget.

    ``after``: the totals of the users of a previewed release if it were published, and
    ``before``: the same users' totals now. The second, overlaid histogram is the whole ledger
    after the release: the users the release leaves alone once, at their recorded totals, and
    its users once, at ``after`` (not their recorded totals and then again at ``after``).
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
                x=ledger_after(totals, before, after),
                name=f"all {units.users} after this release",
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
