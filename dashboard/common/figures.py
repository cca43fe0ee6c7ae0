"""Shared plotly helpers: axes, lines, the figure constructor and the map legend strip.

Every number drawn was computed by :mod:`core`; builders only lay it out (data in, ``go.Figure``
out, no st.* calls). Each figure is built in one ``go.Figure(data=..., layout=...)`` call: plotly's
incremental ``update_layout``/``add_vline`` cost ~30 ms each, which would break the rerun budget.
"""

from __future__ import annotations

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
EPSILON_TICKS = (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10)


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
    margin=dict(l=10, r=10, t=40, b=10),
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


def figure(data: list, title: str, **layout) -> go.Figure:
    return go.Figure(
        data=data, layout={**LAYOUT, "title": dict(text=title, x=0, font=dict(size=15)), **layout}
    )


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


def mechanism_legend(names: Sequence[str], *, title: str = "Mechanism colours") -> go.Figure:
    """Each mechanism's fixed colour, as a column of labelled boxes (one bar trace per name, in
    the order given: the registry's for the Learn page)."""
    from dashboard.common.colours import mechanism_colour

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
