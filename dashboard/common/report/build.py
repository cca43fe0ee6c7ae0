"""A report to hand out: one self-contained HTML file of a view that opens offline.

:func:`build_html` takes figures and texts (no Streamlit), so it is tested as data. The file holds
the parameters, the plain-language read-outs, the charts as interactive plotly figures with
plotly.js embedded inline (``include_plotlyjs=True`` on the first figure: no CDN, no network),
the data's summary, the code that reproduces the numbers, and the version. Every text is
HTML-escaped; the only scripts are plotly.js and the figures' own ``Plotly.newPlot`` calls.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go
import plotly.io as pio

FIGURE_CONFIG = {"displaylogo": False, "responsive": True}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto;
       max-width: 1100px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; } h2 { font-size: 1.2rem; margin-top: 2rem;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; } td, th { padding: 0.2rem 0.8rem;
        border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th { color: #555; font-weight: 600; } .muted { color: #666; font-size: 0.9rem; }
.figure { margin: 1rem 0 2rem; } pre { background: #f6f6f6; padding: 0.8rem; overflow-x: auto;
        font-size: 0.85rem; } ul.readouts li { margin: 0.3rem 0; }
"""


@dataclass(frozen=True, kw_only=True)
class Report:
    """What a report shows.

    Attributes
    ----------
    title : str
        The view's name, e.g. "One hexagon — 8742d9d69ffffff/2024-03-05T15:00".
    parameters : mapping of label to value
        The view's settings (ε, m_UB, mechanisms, seed, …), shown as a table.
    figures : sequence of (caption, plotly Figure)
        The charts, drawn interactive, in order.
    texts : sequence of str
        Plain-language read-outs (plain text; escaped).
    summary : mapping of label to value
        The data's summary (rows read, users, records, …).
    version : str
        dp-hexplorer's version.
    link : str or None
        The link that reopens the view in the app.
    code : str or None
        Code that recomputes the numbers outside the app.
    created : str
        UTC time of writing (ISO 8601); now by default.
    """

    title: str
    parameters: Mapping[str, str]
    figures: Sequence[tuple[str, go.Figure]]
    texts: Sequence[str]
    summary: Mapping[str, str]
    version: str
    link: str | None = None
    code: str | None = None
    created: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    )

    def __post_init__(self) -> None:
        if not str(self.title).strip():
            raise ValueError("The 'title' parameter must not be empty.")
        for caption, fig in self.figures:
            if not isinstance(fig, go.Figure):
                raise TypeError(
                    f"The figure {caption!r} must be a plotly Figure. Got {type(fig).__name__}."
                )


def _table(rows: Mapping[str, str]) -> str:
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in rows.items()
    )
    return f"<table>{body}</table>"


def _figure_html(fig: go.Figure, index: int) -> str:
    fig = go.Figure(fig)  # a copy: the caller's figure is left as it is
    fig.update_xaxes(automargin=True)  # the tick labels get their room (no "00" for 100)
    fig.update_yaxes(automargin=True)
    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=index == 0,  # plotly.js inline once, before the first figure
        include_mathjax=False,
        config=FIGURE_CONFIG,
        div_id=f"figure-{index}",
        validate=False,
    )


def build_html(report: Report) -> str:
    """The report as one HTML document that needs no network.

    >>> r = Report(title="T <1>", parameters={"ε": "1"}, figures=[], texts=["a & b"],
    ...            summary={}, version="0.1.0", created="2026-01-01 00:00 UTC")
    >>> page = build_html(r)
    >>> "T &lt;1&gt;" in page and "a &amp; b" in page and "<script" not in page
    True
    """
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(report.title)} — dp-hexplorer</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
        f'<p class="muted">dp-hexplorer {html.escape(report.version)} · written '
        f"{html.escape(report.created)}. Simulated releases in this report release nothing; "
        "true values are shown because this is the data team's own analysis.</p>",
        "<h2>Settings</h2>",
        _table(report.parameters),
    ]
    if report.link:
        parts.append(
            '<p class="muted">Reopen this view in the app (where it runs): '
            f"<code>{html.escape(report.link)}</code></p>"
        )
    if report.texts:
        items = "".join(f"<li>{html.escape(t)}</li>" for t in report.texts)
        parts += ["<h2>What the numbers say</h2>", f'<ul class="readouts">{items}</ul>']
    if report.figures:
        parts.append("<h2>Charts</h2>")
        parts.append(
            '<p class="muted">Interactive: hover for values, drag to zoom, double-click to '
            "reset.</p>"
        )
        for i, (caption, fig) in enumerate(report.figures):
            parts.append(
                f'<div class="figure"><p><strong>{html.escape(caption)}</strong></p>'
                f"{_figure_html(fig, i)}</div>"
            )
    if report.summary:
        parts += ["<h2>The data</h2>", _table(report.summary)]
    if report.code:
        parts += [
            "<h2>Reproduce outside the app</h2>",
            f"<pre><code>{html.escape(report.code)}</code></pre>",
        ]
    parts.append(
        f'<p class="muted">Made with dp-hexplorer {html.escape(report.version)}.</p></body></html>'
    )
    return "\n".join(parts)


def build_handout(title: str, sections: Sequence[Report], *, version: str) -> str:
    """Several views in one HTML document that needs no network (a deck's handout).

    Each section is a :class:`Report` (its title, note as the first text, settings, charts);
    plotly.js is embedded once, before the first chart of the whole document, and every chart
    has its own ``figure-<n>`` id.

    >>> r = Report(title="A", parameters={"ε": "1"}, figures=[], texts=["n"], summary={},
    ...            version="0", created="2026-01-01 00:00 UTC")
    >>> page = build_handout("Deck", [r, r], version="0")
    >>> page.count("<h2>1. A</h2>"), page.count("<h2>2. A</h2>"), "<script" in page
    (1, 1, False)
    """
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)} — dp-hexplorer</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="muted">dp-hexplorer {html.escape(version)}: {len(sections)} views, in '
        "order. Interactive charts (plotly.js inside the file): hover for values, drag to zoom, "
        "double-click to reset.</p>",
    ]
    n = 0
    for i, r in enumerate(sections, start=1):
        parts.append(f'<section class="view"><h2>{i}. {html.escape(r.title)}</h2>')
        parts += [f"<p>{html.escape(t)}</p>" for t in r.texts]
        parts.append(_table(r.parameters))
        if r.link:
            parts.append(f'<p class="muted">In the app: <code>{html.escape(r.link)}</code></p>')
        for caption, fig in r.figures:
            parts.append(
                f'<div class="figure"><p><strong>{html.escape(caption)}</strong></p>'
                f"{_figure_html(fig, n)}</div>"
            )
            n += 1
        if not r.figures:
            parts.append('<p class="muted">This view has no chart to show here.</p>')
        parts.append("</section>")
    parts.append(
        f'<p class="muted">Made with dp-hexplorer {html.escape(version)}.</p></body></html>'
    )
    return "\n".join(parts)
