"""Plotly charts that update in place: for the charts a slider moves on every step.

Streamlit 1.67 names a ``st.plotly_chart`` element by a digest of its figure, so a figure that
changes is a *new* element: the browser throws the old chart away and builds a new one
(``Plotly.newPlot``), about half of the browser's work on an ε step of One hexagon. This module
draws such a chart with a small ``st.components.v2`` component instead: keyed, it stays the same
element across reruns, and each rerun hands it the new figure, which it applies to the chart
already on the page with ``Plotly.react`` (what Plotly recommends for updates).

The component loads plotly.js from the server itself (the file the plotly package ships, served
by ``app.py``'s ``st.App`` at :data:`ROUTE`), so it works offline. Where that route is not
served — ``AppTest``, or a page run on its own with ``streamlit run dashboard/map/page.py`` —
:func:`chart` falls back to ``st.plotly_chart``; :func:`enable` is what ``app.py`` calls when it
serves the route.

The chart follows the app's theme the way Streamlit's own plotly element does for these charts:
transparent backgrounds, the page's font and text colour, light grid lines.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    import plotly.graph_objects as go

ROUTE = "/_hexplorer/plotly.min.js"
_enabled = False

JS = """
const SRC = "__ROUTE__";

function plotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__hexplorerPlotly) {
    window.__hexplorerPlotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = SRC;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("plotly.js could not be loaded from " + SRC));
      document.head.appendChild(script);
    });
  }
  return window.__hexplorerPlotly;
}

function themed(layout, root) {
  const style = getComputedStyle(root);
  const ink = style.color || "rgb(49, 51, 63)";
  const rgb = (ink.match(/[0-9.]+/g) || ["49", "51", "63"]).slice(0, 3).join(", ");
  const soft = `rgba(${rgb}, 0.6)`;  // ticks and axis titles, as Streamlit's theme greys them
  const grid = `rgba(${rgb}, 0.1)`;
  const axis = (a) => ({
    automargin: true,
    gridcolor: grid,
    zerolinecolor: grid,
    linecolor: grid,
    ...a,
    tickfont: {color: soft, ...((a || {}).tickfont || {})},
    title: {...((a || {}).title || {}), font: {color: soft, ...(((a || {}).title || {}).font || {})}},
  });
  const out = {
    ...layout,
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: {family: style.fontFamily, color: ink, ...(layout.font || {})},
    autosize: true,
  };
  if (out.title) {
    const title = typeof out.title === "string" ? {text: out.title} : out.title;
    out.title = {...title, font: {weight: 600, color: ink, ...(title.font || {})}};
  }
  for (const k of Object.keys(out)) {
    if (/^[xy]axis[0-9]*$/.test(k)) out[k] = axis(out[k]);
  }
  if (!out.xaxis) out.xaxis = axis({});
  if (!out.yaxis) out.yaxis = axis({});
  return out;
}

export default function (component) {
  const {data, parentElement} = component;
  let div = parentElement.querySelector("div.hexplorer-liveplot");
  if (!div) {
    div = document.createElement("div");
    div.className = "hexplorer-liveplot";
    div.style.width = "100%";
    parentElement.appendChild(div);
  }
  const figure = JSON.parse(data.figure);
  const layout = figure.layout || {};
  div.style.height = (layout.height || 400) + "px";
  plotly()
    .then((Plotly) =>
      Plotly.react(div, figure.data || [], themed(layout, parentElement), {
        ...data.config,
        responsive: true,
      })
    )
    .catch((error) => {
      div.textContent = String(error);
    });
}
""".replace("__ROUTE__", ROUTE)


@functools.cache
def _component():
    """Registered on first use, inside a run (``app.py``'s launcher imports this module before
    the runtime exists)."""
    return st.components.v2.component("hexplorer_liveplot", js=JS, isolate_styles=False)


def plotly_js() -> Path:
    """plotly.min.js of the installed plotly package (found without importing plotly, so the
    launcher stays light)."""
    spec = importlib.util.find_spec("plotly")
    assert spec is not None and spec.origin is not None, "plotly is a dependency"
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


async def _plotly_js(request: Request) -> Response:
    """plotly.js as the plotly package ships it (cached a day by the browser)."""
    return FileResponse(
        plotly_js(),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )


def routes() -> list[Route]:
    """The route ``app.py``'s ``st.App`` serves plotly.js on."""
    return [Route(ROUTE, _plotly_js)]


def enable() -> None:
    """Say that :data:`ROUTE` is served (``app.py``, when it makes its ``st.App``)."""
    global _enabled
    _enabled = True


def enabled() -> bool:
    return _enabled


def chart(fig: go.Figure, *, key: str, config: dict) -> None:
    """``fig`` as a chart that updates in place across reruns (keyed ``key``); a plain
    ``st.plotly_chart`` where plotly.js is not served (:func:`enabled`)."""
    if not _enabled:
        st.plotly_chart(fig, config=config, key=key, width="stretch")
        return
    import plotly.io as pio

    _component()(
        key=key,
        data={"figure": pio.to_json(fig, validate=False), "config": dict(config)},
        height=int(fig.layout.height or 400),
    )
