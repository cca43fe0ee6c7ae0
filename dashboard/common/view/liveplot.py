"""Plotly charts that update in place: for the charts a slider moves on every step.

Streamlit 1.67 names a ``st.plotly_chart`` element by a digest of its figure, so a figure that
changes is a *new* element: the browser throws the old chart away and builds a new one
(``Plotly.newPlot``), about half of the browser's work on an ε step of One hexagon. This module
draws such a chart with a small ``st.components.v2`` component instead: keyed, it stays the same
element across reruns, and each rerun hands it the new figure, which it applies to the chart
already on the page with ``Plotly.react`` (what Plotly recommends for updates).

The component loads plotly.js from the server itself, so it works offline: plotly.js's *basic*
bundle (scatter, bar and pie traces only; 1.2 MB, kept in ``static/`` with its licence) when
every trace of the figure is one of those, else the full file the plotly package ships (4.8 MB).
In Chromium the full bundle costs 1.6–2.2 s of main-thread time to parse and start, the basic
one 0.45–0.5 s: most of a first view's browser cost (``bench/bench_render.py``). Both are served
by ``app.py``'s ``st.App`` (:func:`routes`); a page that needs both loads both. Where that route is not
served — ``AppTest``, or a page run on its own with ``streamlit run dashboard/map/page.py`` —
:func:`chart` falls back to ``st.plotly_chart``; :func:`enable` is what ``app.py`` calls when it
serves the route.

A chart can be drawn without plotly.js at all: ``ui.chart(...)`` (``lite=True``, its default)
sends the same figure to ``static/liteplot.js``, which draws it with uPlot (51 kB,
MIT, kept in ``static/`` with its licence) when :func:`lite_ok` says the figure uses only what
that renderer draws (scatter lines, markers and fills, one bar trace, line and rect shapes, text
annotations, linear or log axes). On One hexagon that removed plotly.js's start from the first
view and its re-layout from every ε step (``bench/bench_render.py``). The report still gets the
plotly figure.

The chart follows the app's theme the way Streamlit's own plotly element does for these charts:
transparent backgrounds, the page's font and text colour, light grid lines.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st
from starlette.routing import Route

from dashboard.common.view import frames, served

if TYPE_CHECKING:
    import plotly.graph_objects as go

PLOTLY, BASIC, UPLOT = "plotly", "plotly-basic", "uplot"
"""The bundles the chart loads, as registered with :func:`dashboard.common.view.served.register_file`
(each served under a name made from its content)."""
BASIC_TRACES = frozenset({"scatter", "bar", "pie"})
"""The trace types of plotly.js's basic bundle (its README: "Contains trace modules bar, pie
and scatter")."""
FRAMES_IDLE_MS = 2500
"""A chart with ``frames=`` fetches its document once the page has been idle this long after
the chart drew (sooner if the user reaches for the slider): the first view settles without it,
and a view left sooner costs the server nothing (``docs/benchmarks.md``, wave 13)."""
_enabled = False

JS = r"""
const SRC = {full: "__ROUTE__", basic: "__BASIC_ROUTE__", lite: "__UPLOT_ROUTE__"};

// One promise per script for the whole page. A plotly.js bundle resolves to its Plotly object
// (a bundle sets window.Plotly: the one loaded first keeps the name); uPlot sets window.uPlot.
function load(bundle) {
  const loaded = window.__hexplorerPlotly || (window.__hexplorerPlotly = {});
  if (!loaded[bundle]) {
    loaded[bundle] = new Promise((resolve, reject) => {
      const before = window.Plotly;
      const script = document.createElement("script");
      script.src = SRC[bundle];
      script.onload = () => {
        const own = window.Plotly;
        if (before) window.Plotly = before;
        resolve(own);
      };
      script.onerror = () => reject(new Error(bundle + " charts: could not load " + SRC[bundle]));
      document.head.appendChild(script);
    });
  }
  return loaded[bundle];
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

// --- Frames: a slider's stop drawn before any rerun (dashboard/common/view/slider.py) -----------
// The document {stops, charts: {<chart key>: [patch per stop]}} is fetched once per URL for the
// page; a patch is {path: value} with paths "data[i].prop", "layout.a.b", "layout.list[j].prop".
// Fetched when wanted: on the first event of the group, when the user reaches for the slider
// (``hexplorer:frames-wanted``: a pointer over it, the focus, a touch), or once the page has
// been idle IDLE_MS after the chart drew this document's figure: not while the first view
// settles, and not at all (no server work) for a view left sooner.
const IDLE_MS = __IDLE_MS__;
__FRAMES_OF__

// ``figure`` with ``patch`` applied (a copy: the figure drawn last is left as it was).
function patched(figure, patch) {
  const out = structuredClone(figure);
  for (const [path, value] of Object.entries(patch)) {
    const keys = path.split(/\.|\[(\d+)\]\.?/).filter((k) => k !== undefined && k !== "");
    let node = out;
    keys.slice(0, -1).forEach((k, i) => {
      const next = keys[i + 1];
      if (node[k] === undefined || node[k] === null || typeof node[k] !== "object") {
        node[k] = /^\d+$/.test(next) ? [] : {};
      }
      node = node[k];
    });
    node[keys[keys.length - 1]] = value;
  }
  return out;
}

// The document of ``url`` once the page is idle (IDLE_MS after the last call for it).
function whenIdle(url) {
  const idle = window.__hexplorerFramesIdle || (window.__hexplorerFramesIdle = {});
  clearTimeout(idle[url]);
  idle[url] = setTimeout(() => {
    const go = () => framesOf(url);
    if (window.requestIdleCallback) requestIdleCallback(go, {timeout: IDLE_MS});
    else go();
  }, IDLE_MS);
}

// The patch of chart ``name`` for stop ``value`` in ``doc`` (null: none, or another structure).
function patchOf(doc, name, value) {
  const k = doc ? (doc.stops || []).indexOf(value) : -1;
  return k < 0 ? null : (((doc.charts || {})[name] || [])[k] || null);
}

// Listen to the ``hexplorer:frame`` events of ``data.group`` (once per chart element; each
// render says which document, group and chart it is, and how to redraw it).
function hearFrames(parentElement, data, redraw) {
  const f = parentElement.__hexplorerFrames || (parentElement.__hexplorerFrames = {seq: 0});
  f.url = data.frames;
  f.group = data.group;
  f.name = data.name;
  f.redraw = redraw;
  if (f.url && !(window.__hexplorerFrames || {})[f.url]) whenIdle(f.url);
  if (f.listener) return;
  f.listener = (event) => {
    const {group, value} = event.detail || {};
    if (!f.url || group !== f.group || !parentElement.isConnected) return;
    const seq = ++f.seq;
    const url = f.url, name = f.name;
    framesOf(url).then((doc) => {
      if (!doc || seq !== f.seq || url !== f.url) return;  // a later event, or another chart
      const patch = patchOf(doc, name, value);
      if (patch && f.figure) f.redraw(patched(f.figure, patch));
    });
  };
  f.wanted = (event) => {
    if (f.url && (event.detail || {}).group === f.group && parentElement.isConnected) {
      framesOf(f.url);
    }
  };
  window.addEventListener("hexplorer:frame", f.listener);
  window.addEventListener("hexplorer:frames-wanted", f.wanted);
}

// The figure a chart last drew, from a rerun or a frame (what the next patch applies to).
function drew(parentElement, figure) {
  const f = parentElement.__hexplorerFrames;
  if (f) f.figure = figure;
}

// Whether two JSON values are equal (objects by their keys, in any order; a numpy array as
// plotly.py sends it, {dtype, bdata}, equals the list of its numbers, as a patch holds it).
const typed = (v) => typeof v === "object" && v !== null && typeof v.bdata === "string";
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (typed(a) || typed(b)) {
    if (typed(a) && typed(b)) return a.dtype === b.dtype && a.bdata === b.bdata;
    return same(typed(a) ? arr(a) : a, typed(b) ? arr(b) : b);  // arr: liteplot.js
  }
  const list = Array.isArray(a);
  if (list !== Array.isArray(b)) return false;
  if (list) {  // item by item, no keys made: a chart's arrays hold thousands of numbers
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !same(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!(k in b) || !same(a[k], b[k])) return false;
  return true;
}

// What a draw depends on besides the figure: the renderer, the config and the page's theme
// (the text colour and font the chart takes from the page).
function look(parentElement, bundle, config) {
  const style = getComputedStyle(parentElement);
  return JSON.stringify([bundle, config, style.color, style.fontFamily]);
}

// Whether the chart already shows ``figure`` as it would be drawn now: the rerun that follows
// a stop the frames document drew brings that same figure (the document's builder checks that
// stop k's patch on any stop's figure is the page's figure of stop k), and redrawing it would
// cost the main thread a second draw and layout of the chart for nothing.
function showing(parentElement, figure, how) {
  const f = parentElement.__hexplorerFrames;
  return !!f && f.figure !== undefined && f.how === how
    && !!parentElement.querySelector("div.hexplorer-liveplot") && same(f.figure, figure);
}

// The stop the group's slider shows while the user moves it and the server has not caught up
// (``dashboard/common/view/slider.py`` keeps ``window.__hexplorerStops``), if ``data``'s figure
// is for another stop (or says not which): a rerun older than the user's last move.
function movedPast(data) {
  const g = data.frames && (window.__hexplorerStops || {})[data.group];
  if (!g || !g.moving || (g.root && !g.root.isConnected)) return null;  // a slider still here
  return data.stop === null || data.stop === undefined || data.stop !== g.value ? g : null;
}

export default function (component) {
  const {data, parentElement} = component;
  const figure = JSON.parse(data.figure);
  const config = {...data.config, responsive: true};
  const how = look(parentElement, data.bundle, config);
  const draw = (fig) => {
    drew(parentElement, fig);
    parentElement.__hexplorerFrames.how = how;
    drawFigure(parentElement, fig, data.bundle, config);
  };
  hearFrames(parentElement, data, draw);
  const drawNew = (fig) => {  // a rerun's figure: not drawn again when already shown
    if (!showing(parentElement, fig, how)) draw(fig);
  };
  const seq = ++parentElement.__hexplorerFrames.seq;  // a frame still being fetched loses
  const moved = movedPast(data);
  if (moved === null) {
    drawNew(figure);
    return;
  }
  // A rerun for a stop the slider no longer shows: drawn at the slider's stop (its patch on
  // this figure), or, without a patch for it, not drawn (the rerun of that stop will come).
  framesOf(data.frames).then((doc) => {
    if (seq !== parentElement.__hexplorerFrames.seq) return;  // a later event or render
    const patch = patchOf(doc, data.name, moved.value);
    if (patch) drawNew(patched(figure, patch));
    else if (data.stop === null || data.stop === undefined || data.stop === moved.value) {
      drawNew(figure);
    }
  });
}

function drawFigure(parentElement, figure, bundle, config) {
  const lite = bundle === "lite";
  const layout = figure.layout || {};
  let div = parentElement.querySelector("div.hexplorer-liveplot");
  if (div && lite !== div.classList.contains("hexplorer-lite")) {
    if (div.__hexplorerPlotly) div.__hexplorerPlotly.purge(div);
    div.remove();  // the same key drawn by the other renderer
    div = null;
  }
  if (lite) {  // renderLite finds (or makes) its own element
    load("lite")
      .then(() => renderLite(parentElement, figure))
      .catch((error) => {
        parentElement.textContent = String(error);
      });
    return;
  }
  if (!div) {
    div = document.createElement("div");
    div.className = "hexplorer-liveplot";
    div.style.width = "100%";
    parentElement.appendChild(div);
  }
  div.style.height = (layout.height || 400) + "px";
  load(bundle === "basic" ? "basic" : "full")
    .then((Plotly) => {
      if (div.__hexplorerPlotly && div.__hexplorerPlotly !== Plotly) div.__hexplorerPlotly.purge(div);
      div.__hexplorerPlotly = Plotly;  // the chart is updated by the bundle that drew it
      return Plotly.react(div, figure.data || [], themed(layout, parentElement), config);
    })
    .catch((error) => {
      div.textContent = String(error);
    });
}
""".replace("__IDLE_MS__", str(FRAMES_IDLE_MS)).replace(
    "__FRAMES_OF__", frames.BROWSER_FETCH.strip()
)


STATIC = Path(__file__).parent / "static"


def script() -> str:
    """The chart's script: the lite renderer (``static/liteplot.js``), then :data:`JS`, served
    by the app (:mod:`dashboard.common.view.served`)."""
    return (STATIC / "liteplot.js").read_text() + (
        JS.replace("__ROUTE__", served.file_route(PLOTLY))
        .replace("__BASIC_ROUTE__", served.file_route(BASIC))
        .replace("__UPLOT_ROUTE__", served.file_route(UPLOT))
    )


served.register("liveplot", script)


@functools.cache
def _component():
    """Registered on first use, inside a run (``app.py``'s launcher imports this module before
    the runtime exists). Its script: :func:`script`, served; its style sheet: uPlot's."""
    return st.components.v2.component(
        "hexplorer_liveplot",
        js=served.loader("liveplot"),
        css="/* uPlot */\n" + (STATIC / "uPlot.min.css").read_text(),  # a newline: inline
        isolate_styles=False,
    )


def plotly_js() -> Path:
    """plotly.min.js of the installed plotly package (found without importing plotly, so the
    launcher stays light)."""
    spec = importlib.util.find_spec("plotly")
    assert spec is not None and spec.origin is not None, "plotly is a dependency"
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


def basic_js() -> Path:
    """plotly.js's basic bundle (the npm package plotly.js-basic-dist-min, the plotly.js
    version the plotly package ships), kept beside this module."""
    return STATIC / "plotly-basic.min.js"


def uplot_js() -> Path:
    """uPlot (the npm package uplot, MIT, its licence beside it), for the lite charts."""
    return STATIC / "uPlot.iife.min.js"


FILES: dict[str, Callable[[], Path]] = {PLOTLY: plotly_js, BASIC: basic_js, UPLOT: uplot_js}
"""What the component's script loads, served as every component's files are:
:func:`dashboard.common.view.served.register_file`."""
for _name, _file in FILES.items():
    served.register_file(_name, _file)


def static_files() -> dict[str, Callable[[], tuple[Path | bytes, str]]]:
    """The bundles and scripts of every component (:mod:`dashboard.common.view.served`) as the
    server's static cache (``dashboard.server.statics``) takes them: each route → (file or
    bytes, Cache-Control)."""
    return served.static_files()


def routes() -> list[Route]:
    """The routes an app that draws these charts (:func:`enable`) serves: the bundles of
    :data:`FILES`, and the files and scripts of every component registered with
    :mod:`dashboard.common.view.served` by then (the ε slider's and the map's: import them
    first)."""
    return served.routes()


LITE_FILLS = frozenset({None, "none", "toself", "tozeroy"})
LITE_SHAPES = frozenset({"line", "rect"})
LITE_LINE_SHAPES = frozenset({None, "linear", "hv", "vh"})


def lite_ok(fig: go.Figure) -> bool:
    """Whether ``static/liteplot.js`` draws ``fig`` as plotly would: one x and one y axis
    (linear or log), scatter traces (lines, markers, the fills it knows) and one vertical bar
    trace, line and rect shapes, text annotations without arrows."""
    layout = fig.layout
    bars = 0
    for trace in fig.data:
        if trace.type not in ("bar", "scatter"):
            return False
        if trace.xaxis not in (None, "x") or trace.yaxis not in (None, "y"):
            return False
        if trace.type == "bar":
            bars += 1
            if trace.orientation not in (None, "v") or bars > 1:
                return False
        elif trace.type == "scatter":
            if trace.fill not in LITE_FILLS or trace.error_y.array is not None:
                return False
            if trace.mode is not None and "text" in trace.mode:
                return False
            if trace.line.shape not in LITE_LINE_SHAPES:
                return False
    if any(s.type not in LITE_SHAPES for s in layout.shapes):
        return False
    if any(a.showarrow is not False for a in layout.annotations):
        return False
    return all(ax.type in (None, "-", "linear", "log") for ax in (layout.xaxis, layout.yaxis))


def bundle(fig: go.Figure, *, lite: bool = False) -> str:
    """How ``fig`` is drawn: ``"lite"`` (uPlot) when asked for and :func:`lite_ok`, else
    ``"basic"`` when every trace is one the basic bundle draws, else ``"full"``."""
    if lite and lite_ok(fig):
        return "lite"
    types = {trace.type for trace in fig.data}
    return "basic" if types <= BASIC_TRACES else "full"


_SENT = "_hexplorer_sent"
"""The attribute of a frozen figure that holds what :func:`sent` made of it (its JSON, its
bundle per ``lite``): it lives and goes with its figure."""


def freeze(fig: go.Figure) -> go.Figure:
    """Say that ``fig`` is never changed again (a figure shared between runs and sessions,
    ``dashboard.hexagon.memo``): :func:`chart` then serialises it once, not on every rerun that
    shows it again (an ε step back to a stop seen, any visitor's: ~5–10 ms of the server's CPU
    per rerun). Returns ``fig``. A figure that is not frozen is serialised on every call, and
    so is anything that takes no attribute (not a figure: left as it is)."""
    if not hasattr(fig, _SENT):
        try:
            setattr(fig, _SENT, {})
        except AttributeError:
            pass
    return fig


def frozen(fig: object) -> bool:
    """Whether ``fig`` was :func:`freeze`-d."""
    return isinstance(getattr(fig, _SENT, None), dict)


def sent(fig: go.Figure, *, lite: bool) -> tuple[str, str]:
    """What :func:`chart` sends of ``fig``: its plotly JSON and its :func:`bundle`; made once
    for a :func:`freeze`-d figure (two threads at once may both make them: the same strings)."""
    import plotly.io as pio

    made = getattr(fig, _SENT, None)
    if not isinstance(made, dict):
        return pio.to_json(fig, validate=False), bundle(fig, lite=lite)
    if "json" not in made:
        made["json"] = pio.to_json(fig, validate=False)
    if lite not in made:
        made[lite] = bundle(fig, lite=lite)
    return made["json"], made[lite]


def enable() -> None:
    """Say that the bundles are served (``app.py``, when it makes its ``st.App``)."""
    global _enabled
    _enabled = True


def enabled() -> bool:
    return _enabled


def chart(
    fig: go.Figure,
    *,
    key: str,
    config: dict,
    lite: bool = False,
    frames: str | None = None,
    group: str | None = None,
    stop: float | None = None,
) -> None:
    """``fig`` as a chart that updates in place across reruns (keyed ``key``); a plain
    ``st.plotly_chart`` where plotly.js is not served (:func:`enabled`). ``lite``: drawn with
    uPlot when :func:`lite_ok` (no plotly.js in the browser at all).

    ``frames``: the URL of a frames document (``{"stops": [...], "charts": {key: [patch per
    stop]}}``, fetched once per URL by the page) and ``group`` the ``hexplorer:frame`` events
    it follows (``dashboard.common.view.slider``): on each event the chart applies its patch for
    the event's stop to the figure it drew last and redraws at once, before the rerun; a
    ``null`` patch, no document or a failed fetch change nothing (the rerun's figure comes).
    ``stop``: the stop ``fig`` was made for. A rerun's figure for another stop than the one the
    slider shows while the user moves it (an older rerun, arriving after a later stop was
    drawn) is drawn with the shown stop's patch, or not at all without one: a chart never goes
    back to a stop the slider left. The document is fetched on the group's first event, when
    the user reaches for the slider, or once the page has been idle :data:`FRAMES_IDLE_MS`.

    A rerun's figure equal to the one the chart shows (the rerun after a stop the document
    drew; numpy arrays compared with the patches' lists by value), drawn with the same
    renderer, config and page theme, is not drawn again."""
    if frames is not None and not group:
        raise ValueError("liveplot.chart: frames= needs the group= of the events it follows")
    if not _enabled:
        st.plotly_chart(fig, config=config, key=key, width="stretch")
        return
    figure, drawn_by = sent(fig, lite=lite)
    _component()(
        key=key,
        data={
            "figure": figure,
            "config": dict(config),
            "bundle": drawn_by,
            "name": key,
            "frames": frames,
            "group": group,
            "stop": None if stop is None else float(stop),
        },
        height=int(fig.layout.height or 400),
    )
