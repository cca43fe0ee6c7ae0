"""The browser's share of a page: Chromium main-thread time of its first render and of one step.

Run by hand (not in CI): ``python bench/bench_render.py [--starts 3] [--pages hexagon,map,course]
[--course-step 4] [--react] [--elements] [--timeline]``. Starts the app (``tests/app/browser_server.py``) once, then per
start and page a fresh Chromium (headless, 1280×720, so a fresh session and no code cache) opens the page
and reads the DevTools protocol's ``Performance.getMetrics`` through a CDP session:
``TaskDuration`` (every main-thread task) and ``ScriptDuration`` (JavaScript), in seconds, from
navigation until the page is idle with its charts drawn, then for one step until idle again:

* **One hexagon** (``/one_hexagon``): first render until "Where releases land" is drawn; the
  step is one stop of the ε slider (ArrowRight on the browser's range input,
  ``dashboard.common.view.slider``), measured twice: until both ε charts show the new ε (drawn from
  the frames document, before any rerun, where the page has one) and until the rerun that
  follows the slider's pause is done (the headline shows the new ε, the page idle);
* **the Map** (``/``, the default page): first render until the hexagons are drawn (deck.gl's canvas); then the
  switch to "Colour by: error at ε" until the error map and its read-out are shown; the step is
  one stop of the error map's ε slider;
* **a course step** (``/course?step=N``, step 4 by default: ε and where releases land): first
  render until its chart is drawn; the step is one stop of its ε slider (steps 1, 4, 5, 6: the
  browser's range input, measured until the chart's title shows the new ε — drawn from the
  step's frames document before any rerun — and until the rerun that follows the slider's pause
  is done; step 6 has no chart, only the latter), or of the m_UB slider on step 3; step 2 has
  no slider and reports no step.

* **the floor** (``--pages floor,floor-map``): the same first render and ε step on a bare
  Streamlit page with One hexagon's ε slider and its captions (``bench/floor_app.py``), and the
  first render and ε step of a bare page with one deck.gl map of as many hexagons as the Map's
  error map and the Map's ε slider rerunning a fragment that re-sends the map in new colours
  (``bench/floor_map_app.py``), each on its own server: what Streamlit and deck.gl cost before
  any of this project's code.

``--steps N`` measures N ε steps per fresh browser on One hexagon, the Map and its floor (four
right, four left, …) and takes their median: less noise than one step per browser, and the
steps of a user who keeps moving ε (One hexagon's first step is also given alone: the browser
compiles some of the page's code on it).

``--react`` adds, per measured part, React's commits and component renders (:data:`REACT_HOOK`):
the work Streamlit's page does, counted rather than timed, so comparable under any load.
``--elements`` (implies ``--react``) also lists, per measured part, the page elements whose
components rendered most (:data:`ELEMENT_HOOK`): where a first render or a step goes, element
by element (the counts of the blocks around the elements, the navigation's and the sidebar's,
grow with the number of commits, which depends on how the server's messages arrive).
``--timeline`` (implies ``--react``) prints, per start and measured part, when each websocket
message from the server was handled and each React commit happened (ms from the first event,
``w<ms>:<bytes>``, ``s<ms>:<bytes>`` for what the page sent, and ``c<ms>:<components rendered>``) and into how many bursts the messages fell (gaps over 20 ms),
and when each message arrived from the network (DevTools; bursts likewise): how a rerun's
output reaches the page.

Issue 31's targets: first render ≤ 1 s of main-thread time, a step ≤ 150 ms; for the Map, the
error map's step ≤ 150 ms. Each "idle" wait adds a fixed pause (plotly's and deck.gl's last
frames), which costs no main-thread time. Numbers on a machine shared with other work are noisy:
the load average (``uptime``) is printed with them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "app"))

from browser_server import (  # noqa: E402
    CHART,
    CHROMIUM,
    CHROMIUM_ARGS,
    DECK,
    ERROR_SLIDER,
    slider_thumb,
    streamlit_server,
    wait_idle,
)

METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
PAGES = ("hexagon", "map", "course", "floor", "floor-map")
APPS = {"floor": "bench/floor_app.py", "floor-map": "bench/floor_map_app.py"}  # else app.py
FIRST_TARGET_S, STEP_TARGET_MS = 1.0, 150.0
SLIDER_OF_STEP = {1: "Privacy loss ε", 3: "m_UB", 4: "Privacy loss ε", 5: "Privacy loss ε",
                  6: "Privacy loss ε"}  # fmt: skip


REACT_HOOK = """(() => {
  const count = {commits: 0, renders: 0};
  const seen = new WeakMap();  // a component's props at the last commit (either fiber of it)
  window.__hexplorerReact = count;
  window.__REACT_DEVTOOLS_GLOBAL_HOOK__ = {
    supportsFiber: true, renderers: new Map(), isDisabled: false,
    inject() { return 1; }, checkDCE() {}, onCommitFiberUnmount() {}, onPostCommitFiberRoot() {},
    onCommitFiberRoot(id, root) {
      count.commits++;
      const stack = [root.current];
      while (stack.length) {
        const f = stack.pop();
        if (typeof f.type === "function" || (f.type && typeof f.type === "object")) {
          let prev = seen.get(f);
          if (prev === undefined && f.alternate) prev = seen.get(f.alternate);
          if (prev !== f.memoizedProps) count.renders++;  // rendered again (or mounted)
          seen.set(f, f.memoizedProps);
          if (f.alternate) seen.set(f.alternate, f.memoizedProps);
        }
        if (f.child) stack.push(f.child);
        if (f.sibling) stack.push(f.sibling);
      }
    },
  };
})()"""
"""``--react``: counts React's commits and the components each one rendered (a component whose
props object changed since the last commit), through the hook React offers its developer tools.
Unlike main-thread time these counts do not depend on the machine's load; walking the tree on
every commit costs time, so the times of a ``--react`` run are not comparable to the others."""
_react = False
_elements = False
_timeline = False

TIMELINE_HOOK = """(() => {
  window.__hexplorerTimeline = [];
  const Native = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    ws.addEventListener("message", (e) => window.__hexplorerTimeline.push(
      ["w", performance.now(), e.data.byteLength || e.data.size || e.data.length || 0]));
    const send = ws.send.bind(ws);
    ws.send = (data) => {
      window.__hexplorerTimeline.push(["s", performance.now(), data.byteLength || data.length || 0]);
      return send(data);
    };
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
})();"""
"""``--timeline``: records when each websocket message is handled (its size), when the page sends one
(``s``: a rerun's request) and, with
:data:`REACT_HOOK`, each React commit."""
_arrived: list[float] = []  # --timeline: the websocket frames' arrival times (CDP, seconds)
_sent: list[float] = []  # --timeline: when the page sent its frames (a rerun's request)
TIMELINE_JS = """() => { const t = window.__hexplorerTimeline || [];
  window.__hexplorerTimeline = []; return t; }"""

ELEMENT_HOOK = REACT_HOOK.replace(
    "if (prev !== f.memoizedProps) count.renders++;  // rendered again (or mounted)",
    """if (prev !== f.memoizedProps) {  // rendered again (or mounted)
            count.renders++;
            let a = f.return;  // the element (or page part) the component belongs to
            while (a && !(typeof a.type === "string" && a.stateNode && a.stateNode.nodeType === 1
                          && PARTS.has((a.memoizedProps || {})["data-testid"]))) a = a.return;
            const k = a ? a.stateNode : "(above every element)";
            count.by.set(k, (count.by.get(k) || 0) + 1);
          }""",
).replace(
    "const count = {commits: 0, renders: 0};",
    """const count = {commits: 0, renders: 0, by: new Map()};
  const PARTS = new Set(["stElementContainer", "stExpander", "stTabs", "stSidebarNav",
    "stSidebar", "stMain", "stHeader", "stToolbar", "stStatusWidget"]);""",
)
"""``--elements``: :data:`REACT_HOOK` that also counts each component render against the page
element it belongs to (the nearest element container, expander, tabs, or the sidebar's
navigation, the sidebar or the main area for the blocks around them)."""
ELEMENTS_JS = """() => {
  const out = {};
  for (const [k, n] of (window.__hexplorerReact || {by: new Map()}).by) {
    let label = k;
    if (typeof k !== "string") {
      const inner = k.querySelector("[data-testid]");
      const where = k.closest('[data-testid="stSidebar"]') ? "sidebar" : "main";
      const text = (k.innerText || "").split("\\n").filter((t) => t.trim())[0] || "";
      label = `${where} ${(inner || k).getAttribute("data-testid")} ${text.slice(0, 40)}`;
    }
    out[label] = (out[label] || 0) + n;
  }
  return out;
}"""


def _metrics(cdp, page=None) -> dict:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    out: dict = {k: float(got.get(k, 0.0)) for k in METRICS}
    if _react and page is not None:
        counts = page.evaluate("() => window.__hexplorerReact || {commits: 0, renders: 0}")
        out["commits"], out["renders"] = float(counts["commits"]), float(counts["renders"])
        if _elements:
            out["elements"] = page.evaluate(ELEMENTS_JS)
        if _timeline:
            out["timeline"] = page.evaluate(TIMELINE_JS)  # since the last read: this part's
            out["arrived"] = list(_arrived)
            out["sent"] = list(_sent)
            _arrived.clear()
            _sent.clear()
    return out


def _delta(after: dict, before: dict) -> dict:
    out: dict = {}
    for k, v in after.items():
        if isinstance(v, list):  # the timeline since ``before`` was read
            out[k] = v
        elif isinstance(v, dict):  # renders per element
            out[k] = {e: n - before[k].get(e, 0) for e, n in v.items() if n != before[k].get(e, 0)}
        else:
            out[k] = v - before[k]
    return out


POLL_MS = 50
"""How often a measured part's waits look at the page. Each look runs its query on the page's
main thread, which the metrics count as the page's: Playwright's default, a look every frame,
added about 20 ms to a step with its rerun (wave 18)."""


def _settle(page, ms: int = 1000) -> None:
    wait_idle(page, polling=POLL_MS)
    page.wait_for_timeout(ms)  # plotly's / deck.gl's last frames


def _slider_step(page, label: str, key: str = "ArrowRight") -> None:
    """One stop to the right (or ``key``) of the slider labelled ``label`` (keyboard on its
    thumb)."""
    thumb = slider_thumb(page, label)  # the browser's (the Map's) or Streamlit's (a bare page's)
    thumb.focus()
    thumb.press(key)
    page.wait_for_timeout(300)
    _settle(page, 500)


_steps = 1  # --steps: ε steps measured per fresh browser on One hexagon, the Map and its floor


def _slider_steps(page, cdp, label: str = ERROR_SLIDER) -> dict[str, float]:
    """A step of the slider ``label`` (the error map's ε by default; :func:`_slider_step`),
    ``--steps`` times in this browser, four right and four left in turn: the median of each
    measure (the counts included)."""
    runs = [
        _measured(page, cdp, lambda i=i: _slider_step(
            page, label, "ArrowRight" if (i // 4) % 2 == 0 else "ArrowLeft"))
        for i in range(_steps)
    ]  # fmt: skip
    return _median_of(runs)


def _median_of(runs: list[dict]) -> dict:
    """Measures of several steps as one: each number's median (the last step's other values)."""
    out: dict = {}
    for k, v in runs[0].items():
        numeric = isinstance(v, (int, float))
        out[k] = statistics.median(r[k] for r in runs) if numeric else runs[-1][k]
    return out


CHARTS_AT_JS = """(eps) => {
  const plots = [...document.querySelectorAll('.js-plotly-plot, .hexplorer-lite')];
  const titled = plots.some(g => [...g.querySelectorAll('.gtitle, .lite-title')]
    .some(t => t.textContent.includes(`at ε = ${eps}`)));
  const marked = plots.some(g => ((g._fullLayout || (g.__lite || {}).figure?.layout || {}).shapes || [])
    .some(s => Math.abs(s.x0 - eps) < 1e-9 * eps && Math.abs(s.x1 - eps) < 1e-9 * eps));
  return titled && marked;
}"""
"""True once both of One hexagon's ε charts show ``eps`` (the distribution's title, the
worst-case chart's ε line), whoever drew them: the frames document or the rerun."""
HEADLINE_AT_JS = """(eps) => [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
  .some(e => e.textContent.includes(`release be? ε = ${eps},`))"""
EPSILON_LABEL = "Privacy loss ε (log scale)"


def epsilon_thumb(page):
    """One hexagon's ε slider: the browser's range input, or (an older version, for an A/B)
    Streamlit's slider thumb."""
    return page.get_by_role("slider", name=EPSILON_LABEL, exact=True).or_(
        page.get_by_test_id("stSlider").filter(has_text="Privacy loss ε").get_by_role("slider")
    )


FRAMES_LOADED_JS = """async () => {
  const docs = Object.values(window.__hexplorerFrames || {});
  if (!docs.length) return false;
  await Promise.all(docs);
  return true;
}"""


def _frames_loaded(page) -> None:
    """Wait until the page's frames documents are fetched and parsed (the slider's focus asks
    for them; a user's pointer or focus reaches the slider before a key press), so the step
    measures the step, not the parse of a 3.4 MB document (35–47 ms) that may or may not fall
    in it depending on how soon after the first render the step comes."""
    with contextlib.suppress(Exception):  # a page without frames documents: nothing to wait for
        page.wait_for_function("() => Object.keys(window.__hexplorerFrames || {}).length > 0",
                               timeout=10_000)  # fmt: skip
        page.evaluate(FRAMES_LOADED_JS)
        page.wait_for_timeout(300)


def _hexagon_step(page, cdp) -> dict[str, dict[str, float]]:
    """One stop on One hexagon's ε slider (the browser's range input, keyboard), ``--steps``
    times in this browser (four right, four left, …): the main-thread time until both charts
    show the new ε, and until the rerun that follows the slider's pause is done (the headline
    shows it; the page idle). With several steps, each is the median, and the first step (the
    browser's code not yet compiled for it: what a first move costs) is also given alone."""
    thumb = epsilon_thumb(page)
    thumb.focus()
    _frames_loaded(page)
    runs = []
    for i in range(_steps):
        before = _metrics(cdp, page)
        thumb.press("ArrowRight" if (i // 4) % 2 == 0 else "ArrowLeft")
        value = thumb.get_attribute("aria-valuetext")
        page.wait_for_function(CHARTS_AT_JS, arg=value, polling=POLL_MS)
        drawn = _metrics(cdp, page)
        page.wait_for_function(HEADLINE_AT_JS, arg=value, polling=POLL_MS)
        _settle(page, 500)
        runs.append({
            "ε step until both charts drawn": _delta(drawn, before),
            "ε step with its rerun": _delta(_metrics(cdp, page), before),
        })  # fmt: skip
    out = {what: _median_of([r[what] for r in runs]) for what in runs[0]}
    if _steps > 1:
        out["first ε step with its rerun"] = runs[0]["ε step with its rerun"]
    return out


def _measured(page, cdp, action: Callable[[], None]) -> dict[str, float]:
    before = _metrics(cdp, page)
    action()
    return _delta(_metrics(cdp, page), before)


def _hexagon(page, cdp, url: str) -> dict[str, dict[str, float]]:
    def first() -> None:
        page.goto(f"{url}/one_hexagon", wait_until="domcontentloaded")
        page.locator(CHART).filter(has_text="Where releases").wait_for(state="visible")
        _settle(page)

    out = {"first render": _measured(page, cdp, first)}
    out.update(_hexagon_step(page, cdp))
    return out


def _map(page, cdp, url: str) -> dict[str, dict[str, float]]:
    def first() -> None:
        page.goto(f"{url}/", wait_until="domcontentloaded")  # the default page
        page.locator(f"{DECK} canvas").first.wait_for(state="visible")
        _settle(page)

    def error_map() -> None:
        radio = page.locator('[data-testid="stRadio"]').filter(has_text="Colour by")
        radio.get_by_text("error at ε", exact=False).first.click()
        page.get_by_text(ERROR_SLIDER).wait_for()
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
            ".some(e => e.textContent.startsWith('ε = '))"
        )
        _settle(page)

    out = {"first render": _measured(page, cdp, first)}
    out["error map shown"] = _measured(page, cdp, error_map)
    out["error-map ε step"] = _slider_steps(page, cdp)
    return out


def _floor(page, cdp, url: str) -> dict[str, dict[str, float]]:
    """The bare Streamlit page (``bench/floor_app.py``): One hexagon's ε slider, no charts."""

    def first() -> None:
        page.goto(f"{url}/", wait_until="domcontentloaded")
        page.get_by_text("Worst-case error against ε").wait_for(state="visible")
        _settle(page)

    out = {"first render": _measured(page, cdp, first)}
    out["ε step"] = _slider_steps(page, cdp, "Privacy loss ε")
    return out


def _floor_map(page, cdp, url: str) -> dict[str, dict[str, float]]:
    """The bare Streamlit page with one deck.gl map (``bench/floor_map_app.py``): its first
    render and one stop of its ε slider (a fragment re-sending the map in new colours)."""

    def first() -> None:
        page.goto(f"{url}/", wait_until="domcontentloaded")
        page.locator(f"{DECK} canvas").first.wait_for(state="visible")
        _settle(page)

    out = {"first render": _measured(page, cdp, first)}
    out["error-map ε step"] = _slider_steps(page, cdp)
    return out


def _course(step: int) -> Callable:
    def run(page, cdp, url: str) -> dict[str, dict[str, float]]:
        def first() -> None:
            page.goto(f"{url}/course?step={step}", wait_until="domcontentloaded")
            page.get_by_role("heading", name=f"Step {step}:").first.wait_for(state="visible")
            if step != 2 and step != 6:
                page.locator(f":is({CHART}) .main-svg, .hexplorer-lite canvas").first.wait_for(
                    state="visible"
                )
            _settle(page)

        out = {"first render": _measured(page, cdp, first)}
        if step in EPSILON_STEPS and _course_range(page).count():
            out.update(_course_epsilon_step(page, cdp, chart=step != 6))
        elif step in SLIDER_OF_STEP:
            out["step"] = _measured(page, cdp, lambda: _slider_step(page, SLIDER_OF_STEP[step]))
        return out

    return run


EPSILON_STEPS = (1, 4, 5, 6)
CHART_TITLED_JS = """(eps) => [...document.querySelectorAll('.hexplorer-lite, .js-plotly-plot')]
  .some(g => [...g.querySelectorAll('.lite-title, .gtitle')]
    .some(t => t.textContent.startsWith(`ε = ${eps}:`)))"""
"""True once a course step's ε chart shows ``eps`` in its title, whoever drew it: the frames
document or the rerun."""
SERVER_AT_JS = """(k) => {
  const s = (document.querySelector('div.hexplorer-slider') || {}).__slider;
  return !!s && s.data.index === k;
}"""
"""True once the rerun that follows the slider's pause has drawn the slider at stop ``k``."""


def _course_range(page):
    """A course step's ε slider drawn by the browser (``dashboard.common.view.slider``)."""
    return page.get_by_role("slider", name="Privacy loss ε", exact=True)


def _course_epsilon_step(page, cdp, *, chart: bool) -> dict[str, dict[str, float]]:
    """One stop right on a course step's ε slider (keyboard): the main-thread time until its
    chart's title shows the new ε (``chart``: steps 1, 4, 5), and until the rerun that follows
    the slider's pause is done (the slider redrawn at the new stop by the server; page idle)."""
    thumb = _course_range(page)
    thumb.focus()
    before = _metrics(cdp, page)
    thumb.press("ArrowRight")
    value = thumb.get_attribute("aria-valuetext")
    out = {}
    if chart:
        page.wait_for_function(CHART_TITLED_JS, arg=value, polling=POLL_MS)
        out["ε step until its chart drawn"] = _delta(_metrics(cdp, page), before)
    page.wait_for_function(SERVER_AT_JS, arg=int(thumb.input_value()), polling=POLL_MS)
    _settle(page, 500)
    out["ε step with its rerun"] = _delta(_metrics(cdp, page), before)
    return out


def one_start(url: str, run: Callable) -> dict[str, dict[str, float]]:
    """``run``'s measurements in one fresh browser (a fresh session)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            if _react:
                hook = ELEMENT_HOOK if _elements else REACT_HOOK
                if _timeline:  # each commit: when, and how many components it rendered
                    hook = TIMELINE_HOOK + hook.replace(
                        "count.commits++;", "count.commits++; const r0 = count.renders;"
                    ).replace(
                        "if (f.sibling) stack.push(f.sibling);\n      }\n",
                        "if (f.sibling) stack.push(f.sibling);\n      }\n      window.__hexplorer"
                        "Timeline.push(['c', performance.now(), count.renders - r0]);\n",
                    )
                page.add_init_script(hook)
            page.set_default_timeout(300_000)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
            if _timeline:  # when each server message reached the browser (the network's view)
                _arrived.clear()
                _sent.clear()
                cdp.send("Network.enable")
                cdp.on("Network.webSocketFrameReceived", lambda e: _arrived.append(e["timestamp"]))
                cdp.on("Network.webSocketFrameSent", lambda e: _sent.append(e["timestamp"]))
            return run(page, cdp, url)
        finally:
            browser.close()


def _ms(x: float) -> str:
    return f"{x * 1000:.0f} ms"


def line(name: str, runs: list[dict[str, dict[str, float]]]) -> str:
    """One README-ready line: the medians of every measured part of one page."""
    parts = []
    for what in runs[0]:
        task = statistics.median(r[what]["TaskDuration"] for r in runs)
        script = statistics.median(r[what]["ScriptDuration"] for r in runs)
        target = FIRST_TARGET_S if what == "first render" else STEP_TARGET_MS / 1000
        mark = "" if what == "error map shown" else (" ✓" if task <= target else " ✗")
        react = ""
        if "commits" in runs[0][what]:
            commits = statistics.median(r[what]["commits"] for r in runs)
            renders = statistics.median(r[what]["renders"] for r in runs)
            react = f", {commits:.0f} React commits, {renders:,.0f} component renders"
        parts.append(f"{what} {_ms(task)} (script {_ms(script)}{react}){mark}")
    return f"{name}: " + "; ".join(parts)


def timeline_lines(run: dict[str, dict]) -> list[str]:
    """``--timeline``: per measured part of one start, its messages and commits in time."""
    out = []
    for what, m in run.items():
        events = m.get("timeline") or []
        if not events:
            continue
        t0 = events[0][1]
        times = [t for kind, t, *_ in events if kind == "w"]
        bursts = sum(
            1 for a, b in zip([None, *times], times, strict=False) if a is None or b - a > 20
        )
        text = " ".join(f"{kind}{t - t0:.0f}:{e[0]}" for kind, t, *e in events)
        out.append(f"  {what}: {len(times)} messages in {bursts} bursts, "
                   f"{sum(1 for e in events if e[0] == 'c')} commits: {text}")  # fmt: skip
        if arrived := m.get("arrived"):
            gaps = sum(1 for a, b in zip(arrived, arrived[1:], strict=False) if b - a > 0.02)
            out.append(
                f"    arrived from the network in {gaps + 1} bursts: "
                + " ".join(f"{(t - arrived[0]) * 1000:.0f}" for t in arrived)
            )
        if (sent := m.get("sent")) and arrived:  # the server's share: request → last message
            out.append(
                f"    the page sent {len(sent)} messages; from the first to the last message "
                f"back {(arrived[-1] - sent[0]) * 1000:.0f} ms, to the first "
                f"{(min((t for t in arrived if t >= sent[0]), default=sent[0]) - sent[0]) * 1000:.0f} ms"
            )
    return out


def element_lines(runs: list[dict[str, dict]], top: int = 15) -> list[str]:
    """``--elements``: per measured part, the elements whose components rendered most (median
    over the runs)."""
    out = []
    for what in runs[0]:
        labels = {e for r in runs for e in r[what].get("elements", {})}
        med = {e: statistics.median(r[what].get("elements", {}).get(e, 0) for r in runs)
               for e in labels}  # fmt: skip
        out.append(f"  {what}, component renders by element (median):")
        for e, n in sorted(med.items(), key=lambda kv: -kv[1])[:top]:
            out.append(f"    {n:6,.0f}  {e}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument(
        "--pages",
        default="hexagon,map,course",
        help="any of hexagon,map,course and floor,floor-map (bare Streamlit pages: the floor)",
    )
    parser.add_argument("--course-step", type=int, default=4, choices=range(1, 7))
    parser.add_argument(
        "--steps",
        type=int,
        default=1,
        help="ε steps per fresh browser on One hexagon, the Map and floor-map (their median)",
    )
    parser.add_argument(
        "--react", action="store_true", help="also count React commits and component renders"
    )
    parser.add_argument(
        "--elements",
        action="store_true",
        help="with --react: also the component renders of each page element (the largest)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="with --react: also when each server message arrived and each commit happened",
    )
    args = parser.parse_args(argv)
    global _react, _elements, _timeline, _steps
    _steps = max(1, args.steps)
    _react = args.react or args.elements or args.timeline
    _elements = args.elements
    _timeline = args.timeline
    pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    if unknown := set(pages) - set(PAGES):
        parser.error(f"unknown page(s): {', '.join(sorted(unknown))}")
    if not CHROMIUM.exists():
        print(f"Chromium not found at {CHROMIUM}", file=sys.stderr)
        return 2
    runners = {"hexagon": _hexagon, "map": _map, "course": _course(args.course_step),
               "floor": _floor, "floor-map": _floor_map}  # fmt: skip
    names = {
        "hexagon": "One hexagon",
        "map": "Map",
        "course": f"Course step {args.course_step}",
        "floor": "Floor: a bare Streamlit page with the ε slider",
        "floor-map": "Floor: a bare Streamlit page with one deck.gl map and the ε slider",
    }
    runs: dict[str, list] = {p: [] for p in pages}
    with contextlib.ExitStack() as stack:
        urls = {
            app: stack.enter_context(
                streamlit_server(
                    ROOT / "test-artifacts" / f"bench-render-{Path(app).stem}.log", app=app
                )
            )
            for app in sorted({APPS.get(p, "app.py") for p in pages})
        }
        for i in range(args.starts):
            for p in pages:  # interleaved: the machine's drift falls on every page
                runs[p].append(one_start(urls[APPS.get(p, "app.py")], runners[p]))
                print(f"start {i + 1} {line(names[p], runs[p][-1:])}", flush=True)
                if _timeline:
                    print("\n".join(timeline_lines(runs[p][-1])), flush=True)
    load = os.getloadavg()
    print(
        f"Chromium main-thread time, median of {args.starts} fresh browsers, demo city, "
        f"1280×720 (targets: first render ≤ 1 s, a step ≤ 150 ms); load average "
        f"{load[0]:.1f} / {load[1]:.1f}:"
    )
    for p in pages:
        print("- " + line(names[p], runs[p]))
        if _elements:
            print("\n".join(element_lines(runs[p])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
