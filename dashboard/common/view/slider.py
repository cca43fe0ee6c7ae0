"""An ε slider drawn by the browser (One hexagon's): the charts ε moves repaint at once.

Every Streamlit rerun costs the browser two commits of ~1,100 React renders for its status
messages alone (``docs/benchmarks.md``, wave 12), so no rerun can repaint the charts within
100 ms of an ε step. This slider is a native ``<input type="range">`` over the stops'
indices (a ``st.components.v2`` component, its script served by the app: ``served``): on every
``input`` it tells the page at once — ``window.dispatchEvent(new CustomEvent("hexplorer:frame", {detail: {group,
index, value}}))`` — and the charts drawn with ``frames=`` (``dashboard.common.view.liveplot``)
apply that stop's patch from a document fetched once; the stop's ε goes to the server (a rerun
of the fragment, for the tables, the headline and the URL) once the user releases the mouse
button, or after :data:`PAUSE_MS` without input from the keyboard (so a burst of taps costs
one rerun) or a held mouse button, or at once when the slider loses the focus (a click on
another control, "Add this view", the report's download, finds the stop sent).

Nothing the user does is lost, and nothing goes back: each stop sent carries a token the server
echoes in the rerun that took it; until the rerun with the last token arrives, a rerun (an
older stop's, arriving late) leaves the slider at the user's stop, and the charts that follow
it draw that rerun's figure at the user's stop (``liveplot``: ``window.__hexplorerStops``).

Where the component is not served (``AppTest``, a page run on its own) the page keeps
``st.select_slider``: :func:`available` says which.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import streamlit as st

from dashboard.common.view import liveplot, served

BEHIND_OPACITY = 0.45
"""How far what waits for the rerun is faded while the slider is ahead of the server."""
PAUSE_MS = 300
"""How long the slider waits without input (keys, tapped or held, or the mouse button still
held) before it sends the stop's ε to the server."""

JS = """
const RETRY_MS = 15000;  // a stop sent and not taken by then is sent once more

export default function (component) {
  const {data, parentElement, setTriggerValue} = component;
  let root = parentElement.querySelector("div.hexplorer-slider");
  if (!root) {
    root = document.createElement("div");
    root.className = "hexplorer-slider";
    root.innerHTML = '<div class="hx-head"><label class="hx-label"></label>'
      + '<span class="hx-help" tabindex="0">?<span class="hx-tip" role="tooltip"></span></span>'
      + '</div><input type="range" class="hx-range" min="0" step="1">'
      + '<div class="hx-value" aria-hidden="true"></div>';
    parentElement.appendChild(root);
  }
  const input = root.querySelector("input");
  const label = root.querySelector("label");
  const help = root.querySelector(".hx-help");
  const tip = root.querySelector(".hx-tip");
  const shown = root.querySelector(".hx-value");
  const id = "hexplorer-slider-" + data.group;
  input.id = id;
  label.htmlFor = id;
  label.textContent = data.label;
  input.setAttribute("aria-label", data.label);
  // The help: shown while the "?" is hovered or focused (a keyboard reaches it with Tab), and
  // read with the slider by a screen reader (aria-describedby).
  tip.id = id + "-help";
  tip.textContent = data.help || "";
  help.setAttribute("aria-label", "Help: " + (data.help || ""));
  help.style.display = data.help ? "" : "none";
  if (data.help) input.setAttribute("aria-describedby", tip.id);
  else input.removeAttribute("aria-describedby");
  input.max = String(data.stops.length - 1);

  // What the listeners read: this render's stops (a rerun may bring others, e.g. an exact ε).
  // ``want``: the ε the user moved to; ``token``: the last stop sent, which the server echoes
  // (``data.ack``) in the rerun that took it: until then a rerun is an older one (a stop sent
  // before, or another widget's), and the slider keeps the user's stop, as do the charts.
  const s = root.__slider || (root.__slider = {timer: null, pointer: false, want: null,
    token: null, count: 0, base: Date.now().toString(36)});
  s.data = data;
  s.send = setTriggerValue;
  const stops = window.__hexplorerStops || (window.__hexplorerStops = {});
  const show = (k) => {
    const text = s.data.labels[k];
    shown.textContent = "ε = " + text;
    input.setAttribute("aria-valuetext", text);
    const max = Math.max(1, s.data.stops.length - 1);  // the track filled up to the thumb
    input.style.setProperty("--hx-fill", (100 * k / max).toFixed(2) + "%");
  };
  const caughtUp = () => s.timer === null && !s.pointer
    && (s.token === null || s.data.ack === s.token);
  s.caughtUp = caughtUp;
  s.flush = () => { if (s.timer !== null) send(true); };
  // The URL says the stop shown, once painted (a reload mid-move, a link copied, keep it); the
  // server's own URL follows with the rerun (it reads the URL only on a session's first run).
  const showInUrl = (text) => {
    if (!s.data.param) return;
    const u = new URL(window.location.href);
    if (!u.searchParams.has(s.data.param) || u.searchParams.get(s.data.param) === text) return;
    u.searchParams.set(s.data.param, text);
    history.replaceState(history.state, "", u);
  };
  holdDownloads(root, s);
  // The stop goes to the server once the charts' frame is painted (two animation frames; at
  // most 100 ms, as a hidden tab has none): the rerun's work does not hold that paint back.
  // ``now``: at once (the slider loses the focus: a click elsewhere must find it sent).
  const send = (now) => {
    clearTimeout(s.timer);
    s.timer = null;
    const k = +input.value;
    if (k === s.data.index && s.data.ack === s.token) {  // back where the server is
      stops[s.data.group] = {value: s.data.stops[k], moving: false, root};
      fade(s, false);
      return;
    }
    const value = s.data.stops[k];
    const token = s.base + "." + (++s.count);
    s.token = token;
    let sent = false;
    const go = () => {
      if (sent || s.token !== token) return;
      sent = true;
      s.send("epsilon", {value, token});
      // A stop the server never took (a lost message): sent once more, then given up (the
      // slider then shows the server's ε again), so nothing waits for it for ever.
      setTimeout(() => {
        if (s.token !== token || s.data.ack === token || !root.isConnected) return;
        s.send("epsilon", {value, token});
        setTimeout(() => {
          if (s.token === token && s.data.ack !== token) {
            s.token = null;
            fade(s, false);  // no rerun is coming for it: what waited shows the server's ε
          }
        }, RETRY_MS);
      }, RETRY_MS);
    };
    if (now === true) { go(); return; }
    requestAnimationFrame(() => requestAnimationFrame(go));
    setTimeout(go, 100);
  };
  if (!s.wired) {
    s.wired = true;
    input.addEventListener("input", () => {
      const k = +input.value;
      const value = s.data.stops[k];
      show(k);
      s.want = value;
      stops[s.data.group] = {value, moving: true, root};
      window.dispatchEvent(new CustomEvent("hexplorer:frame",
        {detail: {group: s.data.group, index: k, value}}));
      // The URL once the stop is painted (the latest stop only): changed in the same frame, it
      // held back the Map's repaint (bench_map.py, docs/benchmarks.md, wave 19).
      const text = s.data.labels[k];
      requestAnimationFrame(() => setTimeout(() => { if (s.want === value) showInUrl(text); }, 0));
      clearTimeout(s.timer);
      // A key (tapped or held) and a held mouse button: sent after a pause without input, so
      // a burst of taps costs one rerun; a released mouse button: at once (pointerup).
      s.timer = s.pointer ? null : setTimeout(send, s.data.pause);
      // What waits for the rerun is faded once the charts' frame is painted (in that frame,
      // its repaint made the step slower), unless the slider is back where the server is.
      requestAnimationFrame(() => setTimeout(() => {
        if (s.want === value) fade(s, k !== s.data.index || s.data.ack !== s.token);
      }, 0));
    });
    input.addEventListener("pointerdown", () => { s.pointer = true; });
    const release = () => {
      if (!s.pointer) return;
      s.pointer = false;
      send();
    };
    input.addEventListener("pointerup", release);
    input.addEventListener("pointercancel", release);
    // Leaving the slider sends its stop at once, unless for a link to another page: that
    // stop would reach the server as a rerun of this page's fragment during the next page's
    // run (Streamlit: "Couldn't find fragment", the page left blank). The stop is dropped.
    input.addEventListener("blur", (e) => {
      if (s.timer === null) return;
      const to = e.relatedTarget;
      if (to && to.closest && to.closest("a[href]")) {
        clearTimeout(s.timer);
        s.timer = null;
        return;
      }
      send(true);
    });
    // Wanted soon: the charts fetch their frames document now (else once the page is idle).
    const wanted = () => {
      window.dispatchEvent(new CustomEvent("hexplorer:frames-wanted",
        {detail: {group: s.data.group}}));
      ready(s);
    };
    root.addEventListener("pointerenter", wanted);
    root.addEventListener("focusin", wanted);
    root.addEventListener("touchstart", wanted, {passive: true});
  }
  // The server's ε (a rerun: the exact-ε box, the URL, a lesson link) is shown once the server
  // has the user's last stop; before that, the user's stop stays (a rerun may be an older one).
  if (caughtUp()) {
    input.value = String(data.index);
    show(data.index);
    s.want = null;
    stops[data.group] = {value: data.stops[data.index], moving: false, root};
  } else {
    const k = s.want === null ? -1 : data.stops.indexOf(s.want);
    if (k >= 0) input.value = String(k);
    show(+input.value);
  }
  if (caughtUp()) {
    release();
    unfadeWhenDrawn(s);
  }
}

// What shows the server's ε and waits for the rerun: the containers keyed ``data.behind``
// that are on the page.
const behind = (s) => (s.data.behind || [])
  .map((key) => document.querySelector(".st-key-" + key)).filter(Boolean);

// Those containers faded while the slider shows another stop: the numbers there are the
// previous ε's.
function fade(s, on) {
  for (const element of behind(s)) {
    element.style.transition = "opacity 120ms";
    element.style.opacity = on ? String(s.data.behindOpacity) : "";
    if (on) element.dataset.hexplorerBehind = "1";
    else delete element.dataset.hexplorerBehind;
  }
  s.faded = on;
}

// Before a move (the slider reached for): each container that may fade gets a layer of its
// own, so its fading is composited, not painted again in the frame after the charts'.
function ready(s) {
  for (const element of behind(s)) element.style.willChange = "opacity";
}

// Unfaded once the run that took the stop has drawn its last element (Streamlit's
// "notRunning" mark, as for a held download), or after 10 s whatever happened.
function unfadeWhenDrawn(s) {
  if (!s.faded || s.unfading) return;
  s.unfading = true;
  const until = Date.now() + 10000;
  const poll = () => {
    if (!s.caughtUp()) { s.unfading = false; return; }  // moved again: still faded
    if (runEnded() || Date.now() > until) {
      s.unfading = false;
      fade(s, false);
      return;
    }
    requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}

// A download clicked while a slider's stop is not yet the server's (the page's report would
// be the previous stop's) is held: the stop is sent at once, and the click replayed once the
// server has it and the page is idle (the download button then made by that rerun).
const IDLE = '[data-testid="stStatusWidgetRunningIcon"], '
  + '[data-testid="stStatusWidgetRunningManIcon"], [data-stale="true"]';
// Streamlit marks each change of its run state on the page's timeline (performance.mark of
// "running", "notRunning", "rerunRequested", once the change is rendered). The run that took
// the stop has ended, its last element drawn, when "notRunning" is the latest: the status icon
// and stale elements can lag behind on a loaded machine, and a click replayed then got the
// download button of the run before (the report of the previous ε). No marks at all (another
// Streamlit): the icons alone decide.
const lastMark = (name) => {
  const m = performance.getEntriesByName(name, "mark");
  return m.length ? m[m.length - 1].startTime : -1;
};
const runEnded = () => {
  const end = lastMark("notRunning");
  return end >= lastMark("running") && end >= lastMark("rerunRequested");
};
function holdDownloads(root, s) {
  const h = window.__hexplorerHold || (window.__hexplorerHold = {sliders: new Set(),
    held: null, wired: false});
  h.sliders.add(s);
  s.root = root;
  if (h.wired) return;
  h.wired = true;
  document.addEventListener("click", (event) => {
    const button = event.target.closest
      && event.target.closest('[data-testid="stDownloadButton"] button');
    if (!button || button.__hexplorerReplay) return;  // not a download, or the replay
    const moving = [...h.sliders].filter((t) => t.root.isConnected && !t.caughtUp());
    if (!moving.length) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    moving.forEach((t) => t.flush());
    const host = button.closest('[class*="st-key-"]');
    const key = host && [...host.classList].find((c) => c.startsWith("st-key-"));
    h.held = {button, key, until: Date.now() + 60000};
  }, true);
}
function release() {
  const h = window.__hexplorerHold;
  if (!h || !h.held) return;
  const poll = () => {
    const held = h.held;
    if (!held) return;
    if ([...h.sliders].some((t) => t.root.isConnected && !t.caughtUp())) return;  // next render
    if ((!runEnded() || document.querySelector(IDLE)) && Date.now() < held.until) {
      setTimeout(poll, 100);
      return;
    }
    h.held = null;
    const again = (held.key && document.querySelector("." + held.key + " button")) || held.button;
    if (!again.isConnected) return;
    again.__hexplorerReplay = true;
    again.click();
    again.__hexplorerReplay = false;
  };
  setTimeout(poll, 100);
}
"""

CSS = """
.hexplorer-slider {padding: 0 0 0.25rem 0;}
.hexplorer-slider .hx-head {display: flex; align-items: center; gap: 0.4rem;
  font-size: 0.875rem; margin-bottom: 0.25rem; position: relative;}
.hexplorer-slider .hx-help {display: inline-flex; width: 1rem; height: 1rem;
  align-items: center; justify-content: center; border: 1px solid currentColor;
  border-radius: 50%; font-size: 0.7rem; opacity: 0.6; cursor: help;}
.hexplorer-slider .hx-help:hover, .hexplorer-slider .hx-help:focus {opacity: 1;}
.hexplorer-slider .hx-tip {display: none; position: absolute; left: 0; right: 0; top: 1.5rem;
  z-index: 10; padding: 0.4rem 0.6rem; border-radius: 0.4rem; font-size: 0.8rem;
  line-height: 1.35; white-space: normal; cursor: auto;
  background: var(--st-background-color, #fff); color: var(--st-text-color, inherit);
  border: 1px solid rgba(128, 128, 128, 0.5); box-shadow: 0 2px 8px rgba(0, 0, 0, 0.25);}
.hexplorer-slider .hx-help:hover .hx-tip, .hexplorer-slider .hx-help:focus .hx-tip {
  display: block;}
.hexplorer-slider .hx-range {width: 100%; margin: 0.5rem 0; cursor: pointer;
  -webkit-appearance: none; appearance: none; height: 0.3rem; border-radius: 0.15rem;
  background: linear-gradient(to right, var(--st-primary-color, #ff4b4b) var(--hx-fill, 0%),
    rgba(128, 128, 128, 0.35) var(--hx-fill, 0%));}
.hexplorer-slider .hx-range::-webkit-slider-thumb {-webkit-appearance: none; appearance: none;
  width: 1rem; height: 1rem; border-radius: 50%; border: none;
  background: var(--st-primary-color, #ff4b4b);}
.hexplorer-slider .hx-range::-moz-range-thumb {width: 1rem; height: 1rem; border-radius: 50%;
  border: none; background: var(--st-primary-color, #ff4b4b);}
.hexplorer-slider .hx-range:focus-visible {outline: 2px solid var(--st-primary-color, #ff4b4b);
  outline-offset: 4px;}
.hexplorer-slider .hx-value {font-size: 0.875rem; font-family: var(--st-code-font, monospace);
  color: var(--st-primary-color, #ff4b4b);}
"""


served.register("slider", lambda: JS)  # its script served by the app, not inline


@functools.cache
def _component():
    """Registered on first use, inside a run (as ``liveplot``'s chart)."""
    return st.components.v2.component(
        "hexplorer_epsilon_slider", js=served.loader("slider"), css=CSS, isolate_styles=False
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
    url_param: str | None = None,
    behind: Sequence[str] = (),
) -> None:
    """The slider over ``stops`` at ``value`` (one of them), keyed ``key``; its ``input``
    events are ``hexplorer:frame`` events of ``group``; ``on_change(ε)`` runs (a callback,
    before the fragment reruns) when the user releases the slider, or pauses, on a stop other
    than ``value``. ``url_param``: the query parameter that holds this ε in the page's URL
    (``dashboard.common.session.url``), set by the browser at once on each move (a reload
    mid-move keeps the stop shown), where the URL has it. ``behind``: keys of containers
    that show this ε and are not redrawn by the browser: faded (:data:`BEHIND_OPACITY`)
    from the user's move until the rerun that takes the stop has drawn them."""

    ack = f"_{key}_ack"

    def changed() -> None:
        # A stop sent as the user leaves for another page (a tap, then a page link at once) is
        # handled in that page's run, where Streamlit has already dropped this widget's state:
        # that stop is lost (the page opens at the ε the server had), but the run goes on.
        picked = (st.session_state.get(key) or {}).get("epsilon")
        if isinstance(picked, dict) and picked.get("value") is not None:
            st.session_state[ack] = picked.get("token")  # echoed: the browser knows it is in
            on_change(float(picked["value"]))

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
            "ack": st.session_state.get(ack),
            "param": url_param,
            "behind": list(behind),
            "behindOpacity": BEHIND_OPACITY,
        },
        on_epsilon_change=changed,
    )


def epsilon_control(
    label: str,
    *,
    stops: Sequence[float],
    value: float,
    help: str,
    group: str,
    range_key: str,
    on_change: Callable[[float], None],
    select_key: str,
    on_select: Callable[[], None],
    browser: bool = True,
    behind: Sequence[str] = (),
) -> None:
    """The page's ε: :func:`epsilon_slider` (keyed ``range_key``; what follows ``group`` is
    drawn before any rerun; its stop in the URL's ``eps``; ``behind``: what waits for the
    rerun, faded meanwhile) where it is served
    (:func:`available`), else ``st.select_slider`` over the same stops (keyed ``select_key``,
    ``on_select`` its callback), as it is when ``browser`` is False (nothing on the page is
    drawn from its stops, so the rerun should come at once)."""
    if browser and available():
        epsilon_slider(
            label, stops=stops, value=value, key=range_key, group=group, help=help,
            on_change=on_change, url_param="eps", behind=behind,
        )  # fmt: skip
        return
    st.select_slider(
        label,
        options=list(stops),
        key=select_key,
        format_func=lambda e: f"{e:g}",
        on_change=on_select,
        help=help,
    )
