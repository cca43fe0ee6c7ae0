"""Plotly figures of the error map (no st.*): its legend, and the map itself for the handout.

The handout report is one offline HTML file with plotly.js inside and no tiles, so the map goes in
as plain plotly polygons: each hexagon's boundary (h3, longitude/latitude) filled with its colour,
one trace per legend entry (the plotly legend *is* the map's legend), the faded hexagons over
target and without a useful release as their own traces with their outline colours, and
longitude/latitude at equal scale at the map's latitude.
"""

from __future__ import annotations

import math

import h3
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.common.view import figures
from dashboard.map import scales
from dashboard.map.scales import ColourScale, Styled


def legend_title(scale: ColourScale, title: str | None = None) -> str:
    """The legend's title: ``title`` (else the scale's), saying when the scale is automatic."""
    suffix = "" if scale.fixed else " — automatic scale (changes with the values)"
    return (title or scale.title) + suffix


def legend(scale: ColourScale, *, title: str | None = None) -> go.Figure:
    """The colour scale as a strip of labelled boxes, low to high (fixed or automatic): the
    report's figure of the legend the page draws as HTML (``dashboard.common.view.ui.legend``)."""
    return figures.legend_bar(scale.legend(), title=legend_title(scale, title))


def _rgba(color) -> str:
    r, g, b, *a = (int(c) for c in color)
    alpha = (a[0] if a else 255) / 255
    return f"rgba({r},{g},{b},{alpha:.2f})"


def _rings(cells: list[str]) -> tuple[list[float | None], list[float | None]]:
    xs: list[float | None] = []
    ys: list[float | None] = []
    for cell in cells:
        ring = h3.cell_to_boundary(cell)
        xs += [float(lng) for _, lng in ring] + [float(ring[0][1]), None]
        ys += [float(lat) for lat, _ in ring] + [float(ring[0][0]), None]
    return xs, ys


def handout_map(
    base: pd.DataFrame,
    styled: Styled,
    scale: ColourScale,
    *,
    classes: np.ndarray | None,
    title: str,
    trust_words: list[str] | None = None,
) -> go.Figure:
    """The error map as a plotly figure: one filled-polygon trace per colour bin, plus the faded
    hexagons (over target, no useful release) as traces named after the legend's words.

    ``base`` has ``cell``; ``styled`` and ``classes`` are aligned with it.
    """
    cells = base["cell"].astype(str).tolist()
    classes = np.zeros(len(cells), dtype=int) if classes is None else np.asarray(classes)
    names = list(scale.labels) + ["no value"]
    colours = [*scale.colors, (160, 160, 160)]
    data = []
    for b, (name, colour) in enumerate(zip(names, colours, strict=True)):
        idx = np.flatnonzero((styled.bins == (b if b < len(scale.labels) else -1)) & (classes == 0))
        if idx.size == 0:
            continue
        xs, ys = _rings([cells[i] for i in idx])
        data.append(
            go.Scatter(
                x=xs, y=ys, mode="lines", fill="toself", name=name,
                fillcolor=_rgba(colour), line=dict(color="rgba(255,255,255,0.6)", width=0.5),
                hoverinfo="name",
            )
        )  # fmt: skip
    words = trust_words or ["over target", "no useful release"]
    for cls, word, outline in (
        (1, words[0], scales.OVER_OUTLINE),
        (2, words[1], scales.NO_USE_OUTLINE),
    ):
        idx = np.flatnonzero(classes == cls)
        if idx.size == 0:
            continue
        xs, ys = _rings([cells[i] for i in idx])
        data.append(
            go.Scatter(
                x=xs, y=ys, mode="lines", fill="toself", name=word.split(" — ")[0],
                fillcolor=_rgba(styled.fill[idx[0]]), line=dict(color=_rgba(outline), width=1.5),
                hoverinfo="name",
            )
        )  # fmt: skip
    lat = float(np.mean([h3.cell_to_latlng(c)[0] for c in cells])) if cells else 0.0
    return go.Figure(
        data=data,
        layout=dict(
            title=dict(text=title, x=0, font=dict(size=15)),
            height=560,
            margin=dict(l=10, r=10, t=40, b=10),
            plot_bgcolor="white",
            legend=dict(title=dict(text=scale.title)),
            xaxis=dict(title="longitude", showgrid=False),
            yaxis=dict(
                title="latitude",
                showgrid=False,
                scaleanchor="x",
                scaleratio=1 / max(math.cos(math.radians(lat)), 0.05),
            ),
        ),
    )
