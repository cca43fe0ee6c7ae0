"""Shared plotly helpers: axes, lines, the figure constructor and the map legend strip.

Every number drawn was computed by :mod:`core`; builders only lay it out (data in, ``go.Figure``
or an HTML string out, no st.* calls). The maps' legend is plain HTML (:func:`legend_html`): a
plotly chart on the Map would make the browser load and start plotly.js (4.7 MB) before the first
map is done, for a strip of coloured boxes. Each figure is built in one ``go.Figure(data=..., layout=...)`` call: plotly's
incremental ``update_layout``/``add_vline`` cost ~30 ms each, which would break the rerun budget.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping, Sequence

import plotly.graph_objects as go

from core.mechanisms import RULES


class _RuleColours(Mapping[str, str]):
    """Rule label (``"m^(L)"``) → its colour, read from ``core.mechanisms.RULES`` at each use."""

    def __getitem__(self, label: str) -> str:
        for rule in RULES.values():
            if label == rule.label:
                return rule.colour
        raise KeyError(label)

    def __iter__(self) -> Iterator[str]:
        return iter([rule.label for rule in RULES.values()])

    def __len__(self) -> int:
        return len(RULES)


MARK_COLORS: Mapping[str, str] = _RuleColours()
M_UB_COLOR = "#d62728"
EPSILON_COLOR = "#d62728"
# Log axes: plotly abbreviates minor log labels (0.05 prints as "5"), so ε axes get explicit
# ticks and other log axes label whole decades only.
EPSILON_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)  # the product's ε range


def epsilon_axis(title: str = "ε") -> dict:
    """A log x-axis for ε with complete tick labels."""
    return dict(
        title=title,
        type="log",
        tickvals=list(EPSILON_TICKS),
        ticktext=[f"{v:g}" for v in EPSILON_TICKS],
    )


def log_axis(title: str) -> dict:
    """A log axis labelled at whole decades (0.1, 1, 10, …), never with abbreviated minors."""
    return dict(title=title, type="log", dtick=1)


LAYOUT = dict(
    height=400,
    margin=dict(l=10, r=10, t=48, b=10),  # the top: the modebar's row above the title's
    legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
)
PNG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
"""Pass as ``config=`` to ``st.plotly_chart``: keeps the modebar's PNG export."""


def vline(x: float, color: str, width: float = 2, dash: str = "solid") -> dict:
    """A vertical line across the plot at ``x`` (a layout shape)."""
    return dict(
        type="line",
        x0=x,
        x1=x,
        y0=0,
        y1=1,
        xref="x",
        yref="paper",
        line=dict(color=color, width=width, dash=dash),
    )


def label_at(x: float, text: str, y: float = 1.0, xanchor: str = "left") -> dict:
    return dict(
        x=x, y=y, xref="x", yref="paper", text=text, showarrow=False, xanchor=xanchor, yanchor="top"
    )


TITLE = dict(x=0, xanchor="left", yref="paper", y=1, yanchor="bottom", pad=dict(b=6))
"""A chart's title just above its plot area, below the row where plotly's modebar (the PNG
export) shows: the modebar never covers the title."""


def figure(data: list, title: str, **layout) -> go.Figure:
    fig = go.Figure(
        data=data,
        layout={**LAYOUT, "title": dict(text=title, font=dict(size=15), **TITLE), **layout},
    )
    fig.update_xaxes(automargin=True)  # tick labels never clipped ("00" for 100)
    fig.update_yaxes(automargin=True)
    return fig


def legend_bar(entries: Sequence, *, title: str) -> go.Figure:
    """The map legend as a strip of coloured boxes, low to high (one bar trace per entry).

    ``entries`` are :class:`dashboard.maps.LegendEntry` (label, color).
    """
    data = [
        go.Bar(
            x=[1],
            y=[""],
            orientation="h",
            name=e.label,
            marker_color="rgb({},{},{})".format(*e.color),
            text=[e.label],
            textposition="inside",
            insidetextanchor="middle",
            hovertemplate=f"{e.label}<extra></extra>",
        )
        for e in entries
    ]
    return go.Figure(
        data=data,
        layout=dict(
            title=dict(text=title, x=0, font=dict(size=13)),
            barmode="stack",
            height=90,
            margin=dict(l=0, r=0, t=30, b=0),
            showlegend=False,
            xaxis=dict(visible=False),
            yaxis=dict(visible=False),
        ),
    )


def _text_colour(rgb: Sequence[int]) -> str:
    """Black or white, whichever reads better on ``rgb`` (WCAG relative luminance)."""

    def channel(c: int) -> float:
        x = c / 255.0
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(c)) for c in rgb[:3])
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 else "#FFFFFF"


def legend_html(entries: Sequence, *, title: str) -> str:
    """The map legend as HTML: the title, then a strip of coloured boxes low to high, each box
    labelled with its value range (the same boxes as :func:`legend_bar`, without plotly).

    ``entries`` are :class:`dashboard.common.view.maps.LegendEntry` (label, color). Text is escaped;
    each label is black or white, whichever reads on its colour.

    >>> from dashboard.common.view.maps import LegendEntry
    >>> out = legend_html([LegendEntry(label="1 – 2", color=(68, 1, 84), low=1, high=2)],
    ...                   title="records <all>")
    >>> "records &lt;all&gt;" in out, "background:rgb(68,1,84)" in out, "color:#FFFFFF" in out
    (True, True, True)
    """
    boxes = "".join(
        '<div class="hexplorer-legend-box" style="flex:1 1 0;min-width:0;'
        "background:rgb({},{},{});color:{};".format(*e.color[:3], _text_colour(e.color))
        + "padding:0.2rem 0.25rem;text-align:center;font-size:0.8rem;white-space:nowrap;"
        f'overflow:hidden;text-overflow:ellipsis" title="{html.escape(e.label)}">'
        f"{html.escape(e.label)}</div>"
        for e in entries
    )
    aria = f"Legend, {title}, low to high: " + "; ".join(e.label for e in entries)
    return (
        f'<div class="hexplorer-legend" role="img" aria-label="{html.escape(aria)}">'
        f'<div class="hexplorer-legend-title" style="font-size:0.85rem;font-weight:600;'
        f'margin-bottom:0.2rem">{html.escape(title)}</div>'
        f'<div style="display:flex;gap:1px">{boxes}</div></div>'
    )


def mechanism_legend(names: Sequence[str], *, title: str = "Mechanism colours") -> go.Figure:
    """Each mechanism's fixed colour, as a column of labelled boxes (one bar trace per name, in
    the order given: the registry's for the Learn page)."""
    from dashboard.common.view.colours import mechanism_colour

    data = [
        go.Bar(
            x=[1],
            y=[name],
            orientation="h",
            name=name,
            marker_color=mechanism_colour(name),
            text=[name],
            textposition="inside",
            insidetextanchor="start",
            textfont=dict(color="#FFFFFF"),
            hovertemplate=f"{name}<extra></extra>",
        )
        for name in names
    ]
    return go.Figure(
        data=data,
        layout=dict(
            title=dict(text=title, x=0, font=dict(size=13)),
            height=60 + 24 * len(names),
            margin=dict(l=0, r=0, t=30, b=0),
            showlegend=False,
            bargap=0.15,
            xaxis=dict(visible=False),
            yaxis=dict(visible=False, autorange="reversed"),
        ),
    )
