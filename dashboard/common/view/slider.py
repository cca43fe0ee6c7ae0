"""An ε slider drawn by the browser (One hexagon's): the charts ε moves repaint at once.

Every Streamlit rerun costs the browser two commits of ~1,100 React renders for its status
messages alone (``docs/benchmarks.md``, wave 12), so no rerun can repaint the charts within
100 ms of an ε step. This slider is a native ``<input type="range">`` over the stops'
indices (a ``st.components.v2`` component, its script inline): on every ``input`` it tells the
page at once — ``window.dispatchEvent(new CustomEvent("hexplorer:frame", {detail: {group,
index, value}}))`` — and the charts drawn with ``frames=`` (``dashboard.common.view.liveplot``)
apply that stop's patch from a document fetched once; the stop's ε goes to the server (a rerun
of the fragment, for the tables, the headline and the URL) only once the user releases the
mouse button or the key, or pauses (:data:`PAUSE_MS` without input) while holding it.

Where the component is not served (``AppTest``, a page run on its own) the page keeps
``st.select_slider``: :func:`available` says which.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import streamlit as st

from dashboard.common.view import liveplot

PAUSE_MS = 300
"""How long the slider waits without input (a key or the mouse button still held) before it
sends the stop's ε to the server."""

JS = """
export default function (component) {
  const {data, parentElement, setTriggerValue} = component;
  let root = parentElement.querySelector("div.hexplorer-slider");
  if (!root) {
    root = document.createElement("div");
    root.className = "hexplorer-slider";
    root.innerHTML = '<div class="hx-head"><label class="hx-label"></label>'
      + '<span class="hx-help" tabindex="0" role="img">?</span></div>'
      + '<input type="range" class="hx-range" min="0" step="1">'
      + '<div class="hx-value" aria-hidden="true"></div>';
    parentElement.appendChild(root);
  }
  const input = root.querySelector("input");
  const label = root.querySelector("label");
  const help = root.querySelector(".hx-help");
  const shown = root.querySelector(".hx-value");
  const id = "hexplorer-slider-" + data.group;
  input.id = id;
  label.htmlFor = id;
  label.textContent = data.label;
  input.setAttribute("aria-label", data.label);
  help.title = data.help || "";
  help.setAttribute("aria-label", data.help || "");
  help.style.display = data.help ? "" : "none";
  input.max = String(data.stops.length - 1);

  // What the listeners read: this render's stops (a rerun may bring others, e.g. an exact ε).
  const s = root.__slider || (root.__slider = {timer: null, pointer: false});
  s.data = data;
  s.send = setTriggerValue;
  const show = (k) => {
    const text = s.data.labels[k];
    shown.textContent = "ε = " + text;
    input.setAttribute("aria-valuetext", text);
  };
  // The stop goes to the server once the charts' frame is painted (two animation frames; at
  // most 100 ms, as a hidden tab has none): the rerun's work does not hold that paint back.
  const send = () => {
    clearTimeout(s.timer);
    s.timer = null;
    const k = +input.value;
    if (k === s.data.index) return;
    const value = s.data.stops[k];
    let sent = false;
    const go = () => {
      if (!sent) { sent = true; s.send("epsilon", value); }
    };
    requestAnimationFrame(() => requestAnimationFrame(go));
    setTimeout(go, 100);
  };
  if (!s.wired) {
    s.wired = true;
    input.addEventListener("input", () => {
      const k = +input.value;
      show(k);
      window.dispatchEvent(new CustomEvent("hexplorer:frame",
        {detail: {group: s.data.group, index: k, value: s.data.stops[k]}}));
      clearTimeout(s.timer);
      s.timer = s.pointer ? null : setTimeout(send, s.data.pause);
    });
    input.addEventListener("pointerdown", () => { s.pointer = true; });
    const release = () => {
      if (!s.pointer) return;
      s.pointer = false;
      send();
    };
    input.addEventListener("pointerup", release);
    input.addEventListener("pointercancel", release);
    // A key released after a move: sent at once (a key held down moves it stop by stop).
    input.addEventListener("keyup", () => { if (s.timer !== null) send(); });
  }
  // The server's ε (a rerun: the exact-ε box, the URL, a lesson link) is shown, unless the
  // user is moving the slider (a stop not yet sent): that one wins, and is sent after the pause.
  if (s.timer === null && !s.pointer) {
    input.value = String(data.index);
    show(data.index);
  } else {
    show(+input.value);
  }
}
"""

CSS = """
.hexplorer-slider {padding: 0 0 0.25rem 0;}
.hexplorer-slider .hx-head {display: flex; align-items: center; gap: 0.4rem;
  font-size: 0.875rem; margin-bottom: 0.25rem;}
.hexplorer-slider .hx-help {display: inline-flex; width: 1rem; height: 1rem;
  align-items: center; justify-content: center; border: 1px solid currentColor;
  border-radius: 50%; font-size: 0.7rem; opacity: 0.6; cursor: help;}
.hexplorer-slider .hx-range {width: 100%; margin: 0.25rem 0;
  accent-color: var(--st-primary-color, #ff4b4b); cursor: pointer;}
.hexplorer-slider .hx-value {font-size: 0.875rem; font-family: var(--st-code-font, monospace);
  color: var(--st-primary-color, #ff4b4b);}
"""


@functools.cache
def _component():
    """Registered on first use, inside a run (as ``liveplot``'s chart)."""
    return st.components.v2.component(
        "hexplorer_epsilon_slider", js=JS, css=CSS, isolate_styles=False
    )


def available() -> bool:
    """Whether the browser draws this slider (where ``liveplot``'s charts are served: the
    charts it moves are there too); else the page keeps ``st.select_slider``."""
    return liveplot.enabled()


def epsilon_slider(
    label: str,
    *,
    stops: Sequence[float],
    value: float,
    key: str,
    group: str,
    help: str,
    on_change: Callable[[float], None],
) -> None:
    """The slider over ``stops`` at ``value`` (one of them), keyed ``key``; its ``input``
    events are ``hexplorer:frame`` events of ``group``; ``on_change(ε)`` runs (a callback,
    before the fragment reruns) when the user releases the slider, or pauses, on a stop other
    than ``value``."""

    def changed() -> None:
        picked = st.session_state[key].get("epsilon")
        if picked is not None:
            on_change(float(picked))

    stops = [float(e) for e in stops]
    _component()(
        key=key,
        data={
            "label": label,
            "help": help,
            "group": group,
            "stops": stops,
            "labels": [f"{e:g}" for e in stops],
            "index": stops.index(float(value)),
            "pause": PAUSE_MS,
        },
        on_epsilon_change=changed,
    )
