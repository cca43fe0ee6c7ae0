"""Figure and map builders of the Whole-city page: data in, figure or deck out; no st.* calls.

Every number drawn was computed by :mod:`core.multigrid` (through
:mod:`dashboard.city_compute`); the builders only lay it out, in the same style as
:mod:`dashboard.charts` (one ``go.Figure(data=..., layout=...)`` call each) and
:mod:`dashboard.maps` (H3 hexagons, no basemap). Tests read them as data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydeck as pdk

from dashboard.common.source.units import Units
from dashboard.common.view import maps
from dashboard.common.view.colours import mechanism_colour
from dashboard.common.view.figures import (
    EPSILON_COLOR,
    epsilon_axis,
    figure,
    label_at,
    log_axis,
    vline,
)
from dashboard.common.view.maps import LegendEntry, MapScale

TRUE_LAYER_ID = "city-true"
NOISY_LAYER_ID = "city-noisy"
BEFORE_COLOR = "#7f7f7f"
AFTER_COLOR = "#1f77b4"
LOSS_LABELS = {
    "basic_loss": "basic composition G·ε",
    "user_loss": "by users ε·max G_ℓ",
    "chop_loss": "after CHOP-USER K·ε",
}
LOSS_COLORS = {"basic_loss": "#d62728", "user_loss": "#ff7f0e", "chop_loss": "#2ca02c"}
STATISTICS = ("mean", "var")


def stat_label(statistic: str, units: Units | None = None) -> str:
    """'mean (km/h)' or 'variance ((km/h)²)' in the value unit in use.

    >>> stat_label("var", Units(value="knots"))
    'variance ((knots)²)'
    """
    u = units if units is not None else Units()
    if statistic not in STATISTICS:
        raise KeyError(f"statistic must be one of {list(STATISTICS)}, got {statistic!r}")
    return f"mean ({u.value})" if statistic == "mean" else f"variance ({u.squared})"


COVERAGE_COLOR = "#7f7f7f"
PLAN_COLOR = "#2ca02c"


def fmt(value: float) -> str:
    """Compact number for legends and tooltips ('12.3', '0.42', '1,234', '–' for NaN)."""
    if not np.isfinite(value):
        return "–"
    if float(value).is_integer() and abs(value) < 1e9:
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


# --------------------------------------------------------------------------------------------
# Maps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PairedMaps:
    """True and noisy values of the same grids on two maps with one colour scale."""

    true_deck: pdk.Deck
    noisy_deck: pdk.Deck
    legend: tuple[LegendEntry, ...]
    scale: MapScale


def shared_bins(
    true_values: np.ndarray, noisy_values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[LegendEntry, ...]]:
    """Colour bins set by the true values (``maps.color_bins``), applied to both maps.

    Noisy values below (above) the true range take the first (last) colour, and the end labels
    say so. Returns (bin of each true value, bin of each noisy value, legend); -1 marks NaN.

    >>> t, n, legend = shared_bins(np.array([0.0, 5.0, 10.0]), np.array([-3.0, 4.0, 30.0]))
    >>> t.tolist(), n.tolist(), [e.label for e in legend][0]
    ([0, 3, 5], [0, 2, 5], 'below 1.67')
    """
    idx_true, legend = maps.color_bins(np.asarray(true_values, dtype=float))
    noisy = np.asarray(noisy_values, dtype=float)
    idx_noisy = np.full(noisy.shape, -1, dtype=np.int64)
    if not legend:
        return idx_true, idx_noisy, legend
    finite = np.isfinite(noisy)
    edges = np.array([e.low for e in legend] + [legend[-1].high])
    idx_noisy[finite] = np.clip(
        np.searchsorted(edges, noisy[finite], side="right") - 1, 0, len(legend) - 1
    )
    if len(legend) > 1:
        first, last = legend[0], legend[-1]
        legend = (
            LegendEntry(
                label=f"below {fmt(first.high)}", color=first.color, low=-np.inf, high=first.high
            ),
            *legend[1:-1],
            LegendEntry(
                label=f"{fmt(last.low)} and above", color=last.color, low=last.low, high=np.inf
            ),
        )
    return idx_true, idx_noisy, legend


def _records(rows: list[dict], idx: np.ndarray, legend: tuple[LegendEntry, ...]) -> list[dict]:
    colors = [e.color for e in legend]
    out = []
    for row, i in zip(rows, idx.tolist(), strict=True):
        color = colors[i] if i >= 0 else maps.NO_DATA_COLOR
        out.append({**row, "fill": [int(c) for c in color] + [maps.FILL_ALPHA]})
    return out


def paired_maps(
    table: pd.DataFrame,
    *,
    statistic: str = "mean",
    units: Units | None = None,
    density: pd.DataFrame | None = None,
    basemap: bool = False,
    width_px: int = 600,
    height_px: int = 380,
) -> PairedMaps:
    """Two hexagon maps of the same grids: true value and noisy release (one cell per row).

    Parameters
    ----------
    table : one row per grid of one slot, with columns cell, hat, users, records, retained,
        ``true_<statistic>``, ``noisy_<statistic>`` (``city_compute.release``).
    statistic : "mean" or "var".
    units : the value unit for the labels.
    density, basemap, width_px, height_px : as :func:`dashboard.common.view.maps.hexagon_map`.

    Returns
    -------
    PairedMaps whose decks are drawn like :mod:`dashboard.common.view.maps` (no basemap unless
    asked, the record-density context, a dot of minimum size per hexagon, the wheel scrolls the
    page), with hexagon layers of ids ``TRUE_LAYER_ID`` and ``NOISY_LAYER_ID``. Every row of both
    layers carries the true and the noisy value, so either tooltip compares them.
    """
    if statistic not in STATISTICS:
        raise KeyError(f"paired_maps: statistic must be one of {list(STATISTICS)}")
    true_col, noisy_col = f"true_{statistic}", f"noisy_{statistic}"
    for column in ("cell", "hat", "users", "records", "retained", true_col, noisy_col):
        if column not in table.columns:
            raise KeyError(f"paired_maps: column {column!r} is missing")
    true_v = table[true_col].to_numpy(dtype=float)
    noisy_v = table[noisy_col].to_numpy(dtype=float)
    idx_true, idx_noisy, legend = shared_bins(true_v, noisy_v)
    rows = [
        {
            "cell": str(cell),
            "pos": maps.centre(str(cell)),
            "hat": str(hat),
            "true": float(t),
            "noisy": float(n),
            "true_text": fmt(float(t)),
            "noisy_text": fmt(float(n)),
            "users_text": fmt(float(u)),
            "records_text": f"{int(r):,}",
            "retained_text": f"{int(k):,}",
        }
        for cell, hat, t, n, u, r, k in zip(
            table["cell"],
            table["hat"],
            true_v,
            noisy_v,
            table["users"],
            table["records"],
            table["retained"],
            strict=True,
        )
    ]
    u = units if units is not None else Units()
    label = stat_label(statistic, u)
    tooltip = {
        "text": "\n".join(
            [
                "{hat}",
                f"true {label}: {{true_text}}",
                f"noisy {label}: {{noisy_text}}",
                f"{u.users}: {{users_text}}",
                "records: {records_text} (kept after CHOP-USER: {retained_text})",
            ]
        )
    }
    view, scale = maps.fit_view(
        table["cell"].astype(str).tolist(), width_px=width_px, height_px=height_px
    )
    dots = maps.needs_dots(scale.hex_px)
    context = (
        maps.density_layers(density, dots=dots, under=table["cell"].astype(str))
        if density is not None
        else []
    )

    def deck(idx: np.ndarray, layer_id: str) -> pdk.Deck:
        layers = context + maps.hexagon_layers(
            _records(rows, idx, legend), layer_id=layer_id, pickable=True, dots=dots
        )
        return maps.deck(layers, view, tooltip=tooltip, basemap=basemap)

    return PairedMaps(
        true_deck=deck(idx_true, TRUE_LAYER_ID),
        noisy_deck=deck(idx_noisy, NOISY_LAYER_ID),
        legend=legend,
        scale=scale,
    )


# --------------------------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------------------------


def grids_per_user_histogram(
    before: np.ndarray, after: np.ndarray, *, k_before: int, k_after: int
) -> go.Figure:
    """Histogram of G_ℓ (grids per user) before and after CHOP-USER, K before/after marked.

    Trace 0: G_ℓ before (``x`` = the values as given), trace 1: after; one bin per integer.
    Layout shapes: the line at K before, then at K after.
    """
    bins = dict(start=0.5, size=1)
    data = [
        go.Histogram(
            x=np.asarray(before),
            name="before CHOP-USER",
            xbins=bins,
            marker_color=BEFORE_COLOR,
            opacity=0.55,
            hovertemplate="G_ℓ = %{x}<br>users %{y}<extra>before</extra>",
        ),
        go.Histogram(
            x=np.asarray(after),
            name="after CHOP-USER",
            xbins=bins,
            marker_color=AFTER_COLOR,
            opacity=0.65,
            hovertemplate="G_ℓ = %{x}<br>users %{y}<extra>after</extra>",
        ),
    ]
    return figure(
        data,
        "Grids per user G_ℓ",
        barmode="overlay",
        shapes=[vline(k_before, BEFORE_COLOR, 2, "dash"), vline(k_after, AFTER_COLOR, 2)],
        annotations=[
            dict(
                x=k_before,
                y=1.0,
                xref="x",
                yref="paper",
                text=f"max G_ℓ = {k_before}",
                showarrow=False,
                xanchor="right",
                yanchor="top",
            ),
            dict(
                x=k_after,
                y=0.9,
                xref="x",
                yref="paper",
                text=f"K = {k_after}",
                showarrow=False,
                xanchor="left",
                yanchor="top",
            ),
        ],  # fmt: skip
        xaxis_title="grids a user contributes to (G_ℓ)",
        yaxis_title="users",
    )


def loss_chart(
    losses: pd.DataFrame,
    *,
    epsilon: float,
    current: dict[str, float] | None = None,
) -> go.Figure:
    """Total privacy loss against the per-grid ε for the three accountings (log-log).

    ``losses`` has columns epsilon, basic_loss, user_loss, chop_loss (``core.multigrid.compose``);
    traces 0–2 are these curves in the order of ``LOSS_LABELS``. ``current`` (same keys) adds
    trace 3: the three losses at the slider's ε. The slider's ε is the first layout shape.
    """
    data: list = [
        go.Scatter(
            x=losses["epsilon"],
            y=losses[column],
            name=label,
            mode="lines+markers",
            line=dict(color=LOSS_COLORS[column], width=3 if column == "chop_loss" else 2),
            hovertemplate=f"ε = %{{x:g}}<br>{label} = %{{y:,.4g}}<extra></extra>",
        )
        for column, label in LOSS_LABELS.items()
    ]
    if current is not None:
        keys = list(LOSS_LABELS)
        data.append(
            go.Scatter(
                x=[epsilon] * len(keys),
                y=[current[k] for k in keys],
                mode="markers",
                name=f"at ε = {epsilon:g}",
                marker=dict(color=[LOSS_COLORS[k] for k in keys], size=12, symbol="x"),
                hovertemplate="%{y:,.4g}<extra></extra>",
            )
        )
    return figure(
        data,
        "Total privacy loss of releasing every grid",
        shapes=[vline(epsilon, EPSILON_COLOR, 1, "dot")],
        xaxis=epsilon_axis("ε per grid"),
        yaxis=log_axis("total privacy loss"),
    )


def error_chart(table: pd.DataFrame, *, threshold: float, epsilon: float) -> go.Figure:
    """Per-grid worst-case error E_g before and after CHOP-USER, with the threshold E_thresh.

    ``table`` has columns hat, error_before, error_bound (E_g after; ``city_compute.release``).
    Grids are drawn in order of decreasing error before (x = rank 1..G); trace 0: before,
    trace 1: after. The threshold is the first layout shape (a horizontal line).
    """
    order = np.argsort(-table["error_before"].to_numpy(dtype=float), kind="stable")
    part = table.iloc[order]
    rank = np.arange(1, len(part) + 1)
    hats = part["hat"].astype(str).to_numpy()
    data = [
        go.Scatter(
            x=rank,
            y=part["error_before"].to_numpy(dtype=float),
            customdata=hats,
            mode="markers",
            name="E_g before",
            marker=dict(color=BEFORE_COLOR, size=7, symbol="circle-open"),
            hovertemplate="%{customdata}<br>E_g before %{y:.3f}<extra></extra>",
        ),
        go.Scatter(
            x=rank,
            y=part["error_bound"].to_numpy(dtype=float),
            customdata=hats,
            mode="markers",
            name="E_g after CHOP-USER",
            marker=dict(color=AFTER_COLOR, size=5),
            hovertemplate="%{customdata}<br>E_g after %{y:.3f}<extra></extra>",
        ),
    ]
    line = dict(
        type="line",
        x0=0,
        x1=1,
        xref="paper",
        y0=threshold,
        y1=threshold,
        yref="y",
        line=dict(color=EPSILON_COLOR, width=2, dash="dash"),
    )
    note = dict(
        x=1,
        y=threshold,
        xref="paper",
        yref="y",
        text=f"E_thresh = {threshold:.3f}",
        showarrow=False,
        xanchor="right",
        yanchor="bottom",
    )
    return figure(
        data,
        f"Worst-case error per grid at ε = {epsilon:g}",
        shapes=[line],
        annotations=[note],
        xaxis_title="grid (by decreasing error before CHOP-USER)",
        yaxis_title="worst-case error E_g",
    )


def coverage_chart(
    curve: pd.DataFrame,
    *,
    coverage: float,
    planned: float | None,
    epsilon: float,
    mechanism: str,
    target_label: str,
) -> go.Figure:
    """Share of HATs whose worst-case error is within the target, against ε (log x).

    ``curve`` has columns epsilon, share (``core.plan.coverage_curve``); trace 0 is the curve in
    the mechanism's colour. Shapes: the wanted share (horizontal, first), the planned ε
    (``core.plan.city_plan``; when there is one) and the slider's ε.
    """
    colour = mechanism_colour(mechanism)
    data = [
        go.Scatter(
            x=curve["epsilon"],
            y=curve["share"],
            name=f"{mechanism}: share within {target_label}",
            mode="lines",
            line=dict(color=colour, width=3, shape="hv"),
            hovertemplate="ε = %{x:.3g}<br>share within target = %{y:.1%}<extra></extra>",
        )
    ]
    shapes = [hline(coverage, COVERAGE_COLOR, 1, "dash")]
    annotations = []
    if planned is not None:
        shapes.append(vline(planned, PLAN_COLOR, 2, "dash"))
        annotations.append(label_at(planned, f" ε = {planned:.3g}", y=0.08))
    shapes.append(vline(epsilon, EPSILON_COLOR, 1, "dot"))
    return figure(
        data,
        f"Share of hexagons within {target_label} (worst case)",
        shapes=shapes,
        annotations=annotations,
        xaxis=epsilon_axis("ε per hexagon"),
        yaxis=dict(title="share of HATs within target", range=[0, 1.02], tickformat=".0%"),
        showlegend=True,
    )


def hline(y: float, color: str, width: float = 1, dash: str = "solid") -> dict:
    """A horizontal line across the plot at ``y`` (a layout shape)."""
    return dict(
        type="line", x0=0, x1=1, y0=y, y1=y, xref="paper", yref="y",
        line=dict(color=color, width=width, dash=dash),
    )  # fmt: skip
