"""A pydeck map that the ε slider recolours in the browser, before any rerun.

``st.pydeck_chart`` re-sends the whole Deck on every ε step, and the browser parses it and
rebuilds every layer's props: the Map's ε step cost 172 ms, below which a bare Streamlit page
re-sending one pydeck map cannot go (186 ms, ``docs/benchmarks.md``, wave 18). This component
draws the same Deck JSON (``deck.to_json()``) with deck.gl's own scripting bundle and JSON
converter (:data:`BUNDLES`, served by the app, loaded in a frame of the map's own), and listens
to the ``hexplorer:frame`` events of the ε slider's group (:mod:`dashboard.common.view.slider`):
at each stop it writes that stop's colours, trust codes and tooltip texts, from a frames
document fetched once (:mod:`dashboard.common.view.frames`), into the rows of the layers it was
told to patch, and asks deck.gl to recompute their colours (``updateTriggers``). The rerun that
follows brings the same Deck for that stop, which is not drawn again.

A click on a hexagon sends its row's ``cell`` (and ``hat`` when the row has one) as the
component's ``click`` value, with a count, so two clicks on one hexagon are two events. It draws
no basemap (a map with one stays Streamlit's element).

Where the component is not served (``AppTest``, a page run on its own) :func:`available` is
False and the page keeps ``st.pydeck_chart``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

from dashboard.common.view import frames, liveplot, served

STATIC = Path(__file__).parent / "static"
BUNDLES = {
    "h3-js": STATIC / "h3-js.umd.js",
    "deck.gl": STATIC / "deck.gl.min.js",
    "deck.gl-json": STATIC / "deck.gl-json.min.js",
}
"""h3-js (the npm package, 4.5.0, Apache-2.0, ``static/H3JS-LICENSE``: deck.gl's H3 layers
read it from ``window.h3``), deck.gl's scripting bundle and its JSON converter (the npm packages
``deck.gl`` and ``@deck.gl/json``, 9.3.3: the deck.gl of the pydeck this project pins; MIT,
``static/DECKGL-LICENSE``), in the order the map's frame loads them."""


JS = r"""
const BUNDLES = __BUNDLES__;
const IDLE_MS = __IDLE_MS__;
const COLOURS = ["getFillColor", "getLineColor", "getLineWidth"];

// The map's own document: an iframe of the page's origin that loads deck.gl's scripting
// bundle and its JSON converter (window.deck). Not the page itself: Streamlit's own map element
// brings another deck.gl and luma.gl, and luma.gl refuses a second version in one window.
// Resolves to the iframe's window.
function mapWindow(m, font) {
  if (!m.win) {
    m.win = new Promise((resolve, reject) => {
      const frame = document.createElement("iframe");
      frame.className = "hexplorer-livemap-frame";
      frame.style.cssText = "border: 0; width: 100%; height: 100%; display: block;";
      const scripts = BUNDLES.map((b) => '<script src="' + new URL(b, document.baseURI).href
        + '"></' + "script>").join("");
      frame.srcdoc = '<!doctype html><html><head><meta charset="utf-8"><style>'
        + "html, body {margin: 0; height: 100%; overflow: hidden; background: transparent;"
        + " font-family: " + font + ";} #map {position: relative; width: 100%; height: 100%;}"
        + "</style>" + scripts + '</head><body><div id="map"></div></body></html>';
      frame.addEventListener("load", () => {
        const win = frame.contentWindow;
        if (win && win.deck && win.deck.Deck && win.deck.JSONConverter) resolve(win);
        else reject(new Error("Maps: could not load " + BUNDLES.join(" and ") + "."));
      }, {once: true});
      // The pointer leaving the map ends its hover highlight (deck.gl in a frame keeps the
      // last hexagon highlighted otherwise): no object highlighted until the pointer is back.
      frame.addEventListener("pointerleave", () => hover(m, false));
      frame.addEventListener("pointerenter", () => hover(m, true));
      m.box.appendChild(frame);
      m.frame = frame;
    });
  }
  return m.win;
}

// pydeck's JSON as deck.gl props: "@@type" names a layer or view class of the bundle, "@@="
// an accessor expression (deck.gl's JSON converter, configured as pydeck configures it).
function convert(win, spec) {
  if (!win.__hexplorerConverter) {
    const classes = {};
    for (const [name, value] of Object.entries(win.deck)) {
      if (typeof value === "function" && /(Layer|View)$/.test(name)) classes[name] = value;
    }
    win.__hexplorerConverter = new win.deck.JSONConverter({configuration: {classes}});
  }
  const {mapStyle, mapProvider, ...rest} = spec;  // no basemap here (the page's element has it)
  return win.__hexplorerConverter.convert(rest);
}

// Hover highlights on (the pointer is over the map) or off (every highlight cleared).
function hover(m, on) {
  if (!m.deck || m.hovering === on) return;
  m.hovering = on;
  const layers = (m.deck.props.layers || []).map((layer) => (layer && layer.props.autoHighlight
    ? layer.clone({highlightedObjectIndex: on ? null : -1}) : layer));
  m.deck.setProps({layers});
}

__FRAMES_OF__

// The tooltip of pydeck's {"text": "... {key} ..."}, read from the row under the mouse.
function tooltipOf(spec) {
  if (!spec || !spec.text) return null;
  return ({object}) => object
    ? {text: spec.text.replace(/{([^{}]+)}/g, (all, k) => (k in object ? String(object[k]) : all))}
    : null;
}

// Stop ``k`` of ``doc`` written into the rows of the layers ``ids``: each field the document
// has for the stop (the fill and the tooltip's texts as indices into the document's palette
// and values; q) that the row already has.
function applyStop(m, doc, k) {
  const ids = new Set(m.patch || []);  // the layers of the Deck drawn
  const layers = (m.deck.props.layers || []).map((layer) => {
    if (!layer || !ids.has(layer.id)) return layer;
    const rows = layer.props.data || [];
    const palette = doc.palette, fill = doc.fill[k], q = doc.q[k];
    const texts = Object.entries(doc.texts || {}).map(([key, t]) => [key, t.values, t.index[k]]);
    for (let j = 0; j < rows.length; j++) {
      const row = rows[j];
      if ("fill" in row) row.fill = palette[fill[j]];  // shared: deck.gl only reads it
      if ("q" in row) row.q = q[j];
      for (const [key, values, index] of texts) if (key in row) row[key] = values[index[j]];
    }
    const token = "stop-" + doc.colours[k];
    const triggers = Object.fromEntries(COLOURS.map((a) => [a, token]));
    return layer.clone({updateTriggers: {...(layer.props.updateTriggers || {}), ...triggers}});
  });
  m.deck.setProps({layers});
  m.stop = doc.stops[k];
  m.box.dataset.stop = String(m.stop);
  writeSide(m.data.side, doc.side && doc.side[k]);
}

// What the page says around the map (the containers of ``side``: each name's container key)
// at the stop, as the rerun will write it: the texts of ``texts[name]`` into the container's
// metric values, captions and list items, in the page's order. The text node is changed in
// place: Streamlit's next render of the element writes over it as usual.
function writeSide(side, texts) {
  if (!side || !texts) return;
  for (const [name, key] of Object.entries(side)) {
    const root = document.querySelector(".st-key-" + key), values = texts[name] || [];
    if (!root) continue;
    const shown = root.querySelectorAll(
      '[data-testid="stMetricValue"], [data-testid="stCaptionContainer"], li');
    shown.forEach((element, i) => {
      const node = document.createTreeWalker(element, NodeFilter.SHOW_TEXT).nextNode();
      if (node && i < values.length && node.nodeValue !== values[i]) node.nodeValue = values[i];
    });
  }
}

// The stop the slider of ``group`` shows while the server has not caught up, else null.
function moving(group) {
  const g = group && (window.__hexplorerStops || {})[group];
  return g && g.moving && (!g.root || g.root.isConnected) ? g.value : null;
}

function show(m, value) {
  const url = m.data.frames;
  if (!url || !m.deck) return;
  const seq = ++m.seq;
  framesOf(url).then((doc) => {
    if (!doc || seq !== m.seq || url !== m.data.frames || !m.deck) return;
    const k = (doc.stops || []).indexOf(value);
    if (k >= 0) applyStop(m, doc, k);
  });
}

function draw(m, win) {
  const data = m.data;
  const moved = moving(data.group);
  if (m.deck && m.json === data.deck) {  // the same Deck: at most another stop
    if (moved !== null && moved !== m.stop) show(m, moved);
    return;
  }
  if (m.deck && data.frames && data.frames === m.frames && data.rest === m.rest
      && data.stop === m.stop) {
    m.json = data.deck;  // the rerun of the stop the frames document drew: already shown
    return;
  }
  const props = convert(win, JSON.parse(data.deck));
  m.seq++;  // a frame still being fetched is for the Deck before
  if (!m.deck) {
    m.deck = new win.deck.Deck({
      ...props,
      parent: win.document.getElementById("map"),
      onClick: (info) => {
        if (!info || !info.object) return;
        const o = info.object, picked = {n: ++m.clicks};
        for (const k of ["cell", "hat"]) if (k in o) picked[k] = o[k];
        m.send("click", picked);
      },
    });
  } else {
    m.deck.setProps(props);
  }
  m.deck.setProps({getTooltip: tooltipOf(data.tooltip)});
  m.frame.title = data.alt || "Map";
  if (m.hovering === false) {  // the new layers, too, without the highlight
    m.hovering = null;
    hover(m, false);
  }
  m.json = data.deck;
  m.patch = data.patch;
  m.rest = data.rest;
  m.frames = data.frames;
  m.stop = data.stop;
  m.box.dataset.stop = String(m.stop);
  if (data.frames && !(window.__hexplorerFrames || {})[data.frames]) {
    clearTimeout(m.idle);
    m.idle = setTimeout(() => framesOf(data.frames), IDLE_MS);
  }
  if (moved !== null && moved !== m.stop) show(m, moved);
}

export default function (component) {
  const {data, parentElement, setTriggerValue} = component;
  let m = parentElement.__hexplorerMap;
  if (!m) {
    const box = document.createElement("div");
    box.className = "hexplorer-livemap";
    box.setAttribute("role", "img");
    box.style.position = "relative";
    box.style.width = "100%";
    parentElement.appendChild(box);
    m = parentElement.__hexplorerMap = {box, deck: null, json: null, stop: null, seq: 0,
      clicks: 0};
    // Gone from the page (another colouring, another page): its listeners and its Deck go
    // at the next event, so nothing keeps the map's frame alive.
    const gone = () => {
      if (parentElement.isConnected) return false;
      window.removeEventListener("hexplorer:frame", onFrame);
      window.removeEventListener("hexplorer:frames-wanted", onWanted);
      if (m.deck) m.deck.finalize();
      m.deck = null;
      return true;
    };
    const onFrame = (event) => {
      const {group, value} = event.detail || {};
      if (!gone() && group === m.data.group) show(m, value);
    };
    const onWanted = (event) => {
      const {group} = event.detail || {};
      if (!gone() && m.data.frames && group === m.data.group) framesOf(m.data.frames);
    };
    window.addEventListener("hexplorer:frame", onFrame);
    window.addEventListener("hexplorer:frames-wanted", onWanted);
  }
  m.data = data;
  m.send = setTriggerValue;
  m.box.style.height = data.height + "px";
  m.box.setAttribute("aria-label", data.alt || "Map");
  mapWindow(m, getComputedStyle(parentElement).fontFamily)
    .then((win) => draw(m, win))
    .catch((error) => { m.box.textContent = String(error); });
}
"""


def script() -> str:
    return (
        JS.replace("__BUNDLES__", json.dumps([served.file_route(name) for name in BUNDLES]))
        .replace("__IDLE_MS__", str(liveplot.FRAMES_IDLE_MS))
        .replace("__FRAMES_OF__", frames.BROWSER_FETCH.strip())
    )


served.register("livemap", script)


def _file(path: Path) -> Callable[[], Path]:
    return lambda: path


for _name, _path in BUNDLES.items():
    served.register_file(_name, _file(_path))


@functools.cache
def _component():
    """Registered on first use, inside a run (as ``liveplot``'s chart)."""
    return st.components.v2.component(
        "hexplorer_livemap", js=served.loader("livemap"), isolate_styles=False
    )


def available() -> bool:
    """Whether the browser draws this map (where the app serves the components' scripts)."""
    return liveplot.enabled()


def deck_chart(
    deck,
    *,
    key: str,
    height: int,
    alt: str,
    frames: str | None = None,
    group: str | None = None,
    stop: float | None = None,
    patch: Sequence[str] = (),
    rest: str = "",
    on_click: Callable[[dict], None] | None = None,
    side: dict[str, str] | None = None,
) -> None:
    """Draw ``deck`` (a ``pydeck.Deck``); with ``frames`` (a frames document's URL: ``stops``,
    and per stop ``fill``, ``q``, ``texts`` and ``colours``, :func:`dashboard.map.frames`) the
    slider of ``group`` recolours the rows of the layers ``patch`` at each of its stops.
    ``stop``: the stop ``deck`` is drawn at; ``rest``: a digest of everything else the Deck
    shows (the selection, the view, the basemap…): a rerun with the stop and the rest the map
    already shows is not drawn again. ``on_click(row)``: a hexagon was clicked (its
    ``cell``, and ``hat`` if its row has one). ``side``: names → keys of containers around the
    map whose metric values, captions and list items the document's ``side`` texts of that
    name rewrite at each stop."""

    def clicked() -> None:
        row = (st.session_state.get(key) or {}).get("click")
        if isinstance(row, dict) and on_click is not None:
            on_click(row)

    _component()(
        key=key,
        data={
            "deck": deck.to_json(),
            "tooltip": deck._tooltip if isinstance(deck._tooltip, dict) else None,
            "height": int(height),
            "alt": alt,
            "frames": frames,
            "group": group,
            "stop": None if stop is None else float(stop),
            "patch": list(patch),
            "rest": rest,
            "side": side,
        },
        on_click_change=clicked,
    )
