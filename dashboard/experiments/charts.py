"""Figures of the catalogue's experiments: a tidy table in, a ``go.Figure`` out.

Pure plotly, no Streamlit: ``hexplorer reproduce`` imports this module to write its HTML, and the
Experiments page draws the same figures. One sub-plot per ``panel`` of the table, one trace per
``series`` (a mechanism in its registry colour and with its title), ±1 standard error bars where
the value is a Monte-Carlo estimate.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.experiments import Experiment
from core.mechanisms import MECHANISMS
from dashboard.common.view.colours import mechanism_colour
from dashboard.common.view.figures import EPSILON_TICKS, LAYOUT

__all__ = ["experiment_figure", "figure_html", "figure_page", "series_label", "write_image"]

# Colours of the series that are not mechanisms, in order of appearance (colour-blind safe).
_OTHER = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999933")


def series_label(series: str) -> str:
    """A mechanism's title (``"levy"`` → ``"Levy (BestFit)"``); other series unchanged."""
    mech = MECHANISMS.get(series)
    return mech.title if mech is not None else series


def _axis(title: str, log: bool, epsilon: bool, values: np.ndarray) -> dict:
    if not log:
        return dict(title=title)
    if epsilon:
        lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
        ticks = [v for v in (0.01, 0.02, *EPSILON_TICKS) if lo / 1.01 <= v <= hi * 1.01]
        return dict(title=title, type="log", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
    return dict(title=title, type="log", dtick=1)


def experiment_figure(experiment: Experiment, table: pd.DataFrame, *, runs: int | None = None):
    """The experiment's figure from its tidy table (panel, series, x, y, y_se).

    Parameters
    ----------
    experiment : core.experiments.Experiment
        Supplies the title, axis titles and log axes.
    table : pandas.DataFrame
        As :func:`core.experiments.run_experiment` returns it (``Outcome.table``).
    runs : int, optional
        Shown in the title for Monte-Carlo experiments.
    """
    panels = list(dict.fromkeys(table["panel"].tolist())) or [""]
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        subplot_titles=[p for p in panels] if any(panels) else None,
        horizontal_spacing=0.08 if len(panels) > 1 else 0.0,
    )
    colours: dict[str, str] = {}
    shown: set[str] = set()
    for col, panel in enumerate(panels, start=1):
        part = table[table["panel"] == panel]
        for series in dict.fromkeys(part["series"].tolist()):
            rows = part[part["series"] == series]
            if series not in colours:
                if series in MECHANISMS:
                    colours[series] = mechanism_colour(series)
                else:
                    used = sum(1 for s in colours if s not in MECHANISMS)
                    colours[series] = _OTHER[used % len(_OTHER)]
            se = rows["y_se"].to_numpy(dtype=np.float64)
            error_y = None
            if np.isfinite(se).any():
                error_y = dict(type="data", array=np.nan_to_num(se).tolist(), visible=True)
            fig.add_trace(
                go.Scatter(
                    x=rows["x"].tolist(),
                    y=rows["y"].tolist(),
                    error_y=error_y,
                    mode="lines+markers" if len(rows) <= 40 else "lines",
                    name=series_label(series),
                    legendgroup=series,
                    showlegend=series not in shown,
                    line=dict(color=colours[series]),
                    marker=dict(size=6),
                ),
                row=1,
                col=col,
            )
            shown.add(series)
        x_is_eps = experiment.x_label.startswith("ε")
        fig.update_xaxes(
            **_axis(experiment.x_label, experiment.log_x, x_is_eps, table["x"].to_numpy()),
            row=1,
            col=col,
        )
        fig.update_yaxes(
            **_axis(experiment.y_label if col == 1 else "", experiment.log_y, False, np.array([])),
            row=1,
            col=col,
        )
    title = f"{experiment.paper_title}: {experiment.figure}"
    if experiment.monte_carlo and runs is not None:
        title += f" ({runs:,} runs per point)"
    fig.update_layout(
        **{**LAYOUT, "height": 460},
        title=dict(text=html.escape(title), x=0, font=dict(size=14)),
    )
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0))
    return fig


def figure_html(experiment: Experiment, fig: go.Figure, *, holds: bool, evidence: str) -> str:
    """A self-contained HTML page: the figure with plotly.js inline (no network), the paper's
    claim, whether it holds here and why, and the setting."""
    import plotly.io as pio

    body = pio.to_html(fig, include_plotlyjs=True, full_html=False, config={"displaylogo": False})
    verdict = "holds" if holds else "does not hold"
    esc = html.escape
    why = (
        f"<p><b>Why not:</b> {esc(experiment.why_not)}</p>"
        if (not holds and experiment.why_not)
        else ""
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{esc(experiment.id)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;"
        "padding:0 1rem;color:#222;line-height:1.45}.muted{color:#666}</style></head><body>"
        f"<h1>{esc(experiment.paper_title)}: {esc(experiment.figure)}</h1>"
        f"<p class='muted'>{esc(experiment.authors)}</p>"
        f"{body}"
        f"<p><b>Claim:</b> {esc(experiment.claim)}</p>"
        f"<p><b>Here it {verdict}:</b> {esc(evidence)}</p>{why}"
        f"<p><b>Plots:</b> {esc(experiment.plots)}</p>"
        f"<p><b>Setting:</b> {esc(experiment.setting)}</p>"
        f"<p class='muted'>Computed by <code>{esc(experiment.function)}</code>.</p>"
        "</body></html>\n"
    )


def figure_page(fig: go.Figure) -> str:
    """The figure alone as a full HTML page, plotly.js inline (for a headless screenshot)."""
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=True, full_html=True)


def write_image(fig: go.Figure, path: str) -> None:
    """PNG through plotly's static exporter (needs kaleido; raises if it is missing)."""
    fig.write_image(path, width=1200, height=520, scale=1)
