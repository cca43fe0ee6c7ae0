// A plotly figure drawn with uPlot (https://github.com/leeoniya/uPlot, MIT, kept beside this
// file): for the charts a slider moves on every step, where plotly.js's start (≈ 0.45 s of the
// browser's main thread) and its re-layout on each step (≈ 0.25 s) are most of what a visitor
// waits for. uPlot draws the axes, ticks and grid; the figure's traces, shapes and annotations
// are drawn on its canvas by the draw hook below, in the figure's own data coordinates.
//
// The subset (checked on the server by liveplot.lite_ok before a figure is sent here): scatter
// traces (lines, markers, fill "toself" / "tozeroy"), vertical bar traces, line and rect shapes,
// text annotations, linear and log axes with optional range, tickvals/ticktext and hidden tick
// labels, a title, a legend below the plot and a hover read-out of the nearest point.

const DTYPES = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
  i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array};

// plotly.py ≥ 6 sends numpy arrays as {dtype, bdata (base64)}.
function arr(v) {
  if (v == null) return [];
  if (Array.isArray(v)) return v;
  if (v.bdata !== undefined) {
    const bytes = Uint8Array.from(atob(v.bdata), (c) => c.charCodeAt(0));
    const T = DTYPES[v.dtype] || Float64Array;
    return Array.from(new T(bytes.buffer));
  }
  return [];
}

// Streamlit's plotly template names its colours "#000001", "#000002", … for its frontend to
// replace with the theme's categorical palette (its light theme's, here).
const PALETTE = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700",
  "#ffd16a", "#6d3fc0", "#d5dae5"];
const PLOTLY = ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692",
  "#B6E880", "#FF97FF", "#FECB52"];

function colorway(layout) {
  const t = ((layout.template || {}).layout || {}).colorway;
  const way = layout.colorway || t || PLOTLY;
  return way.map((c) => {
    const m = /^#0000(\d\d)$/.exec(String(c));
    return m && +m[1] >= 1 && +m[1] <= PALETTE.length ? PALETTE[+m[1] - 1] : c;
  });
}

// A trace's colour as plotly picks it: its line's, its marker's, else ``fallback``, else the
// figure's colorway in trace order.
function traceColor(t, k, way, fallback) {
  const line = t.line || {}, marker = t.marker || {};
  return line.color || (typeof marker.color === "string" && marker.color) || fallback
    || way[k % way.length];
}

const isPaper = (ref) => ref === "paper" || / domain$/.test(ref || "");

const num = (v) => (v === null || v === undefined || Number.isNaN(+v) ? null : +v);
const DASH = {dot: [2, 3], dash: [6, 4], dashdot: [6, 3, 2, 3], longdash: [10, 4]};

function withAlpha(color, alpha) {
  if (alpha >= 1 || !color) return color;
  const m = color.match(/^#([0-9a-f]{6})$/i);
  if (m) {
    const n = parseInt(m[1], 16);
    return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  }
  return color;
}

function axisTitle(a) {
  if (!a || a.title == null) return "";
  return typeof a.title === "string" ? a.title : a.title.text || "";
}

// The data range of an axis: its layout range, else the traces' extent padded by 5 %.
function extent(values, axis, bars) {
  const log = axis.type === "log";
  if (Array.isArray(axis.range) && axis.range.length === 2) {
    const [a, b] = axis.range.map(Number);
    return log ? [10 ** a, 10 ** b] : [a, b];
  }
  let lo = Infinity, hi = -Infinity;
  for (const v of values) {
    if (v === null || (log && v <= 0)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (bars) { lo = Math.min(lo, 0); hi = Math.max(hi, 0); }
  if (!Number.isFinite(lo)) return log ? [0.1, 10] : [0, 1];
  if (log) {
    if (hi <= lo) { lo /= 2; hi *= 2; }
    const pad = (Math.log10(hi) - Math.log10(lo)) * 0.05;
    return [10 ** (Math.log10(lo) - pad), 10 ** (Math.log10(hi) + pad)];
  }
  if (hi <= lo) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.05;
  return [bars && lo === 0 ? 0 : lo - pad, hi + pad];
}

function ticks(axis, lo, hi) {
  if (Array.isArray(axis.tickvals)) {
    const out = [];
    axis.tickvals.forEach((v, i) => {
      if (v >= lo && v <= hi) out.push([v, axis.ticktext ? String(axis.ticktext[i]) : String(v)]);
    });
    return out;
  }
  return null;
}

const fmt = (v) => (v == null ? "" : Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3)
  ? v.toExponential(2) : +v.toPrecision(4) + "");

// The traces as drawable parts: {kind, x[], y[], color, width, dash, fill, fillcolor, ...}.
function parts(figure) {
  const out = [];
  const way = colorway(figure.layout || {});
  (figure.data || []).forEach((t, k) => {
    if (t.visible === false || t.visible === "legendonly") return;
    const x = arr(t.x).map(num), y = arr(t.y).map(num);
    const line = t.line || {}, marker = t.marker || {};
    const opacity = t.opacity == null ? 1 : +t.opacity;
    const color = traceColor(t, k, way);
    const p = {name: t.name || "", x, y, opacity, hover: t.hoverinfo !== "skip",
      custom: arr(t.customdata)};
    if (t.type === "bar") {
      out.push({...p, kind: "bar", color: typeof marker.color === "string" ? marker.color : color,
        width: t.width == null ? null : Array.isArray(t.width) ? t.width : +t.width,
        base: t.base == null ? 0 : +t.base});
      return;
    }
    const mode = t.mode || "lines";
    out.push({...p, kind: "scatter", color, width: line.width == null ? 2 : +line.width,
      dash: DASH[line.dash] || [], lines: mode.includes("lines"), step: line.shape || "linear",
      markers: mode.includes("markers"), fill: t.fill || "none",
      fillcolor: t.fillcolor || withAlpha(color, 0.5),
      msize: marker.size == null ? 6 : +marker.size,
      mopen: String(marker.symbol || "").includes("open"),
      mcolor: typeof marker.color === "string" ? marker.color : color,
      mline: (marker.line && marker.line.width) || 2});
  });
  return out;
}

function legendEntries(figure) {
  if (figure.layout && figure.layout.showlegend === false) return [];
  const out = [];
  const way = colorway(figure.layout || {});
  for (const [k, t] of (figure.data || []).entries()) {
    if (t.showlegend === false || !t.name) continue;
    const line = t.line || {}, marker = t.marker || {};
    const color = traceColor(t, k, way, t.fillcolor);
    out.push({name: t.name, color, dash: line.dash || "solid",
      box: t.type === "bar" || (t.fill && t.fill !== "none" && !(line.width > 0)),
      marker: (t.mode || "").includes("markers") && !(t.mode || "").includes("lines")});
  }
  return out.length > 1 || (out.length === 1 && figure.layout && figure.layout.showlegend)
    ? out : [];
}

function drawParts(u, state) {
  const {ctx} = u;
  const dpr = devicePixelRatio || 1;
  const {left, top, width, height} = u.bbox;
  const X = (v) => u.valToPos(v, "x", true), Y = (v) => u.valToPos(v, "y", true);
  const px = (v, ref, axis) => (ref === "paper"
    ? (axis === "x" ? left + v * width : top + (1 - v) * height)
    : axis === "x" ? X(v) : Y(v));
  // Everything in save/restore: uPlot caches the context's styles between its own draws.
  ctx.save();
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  const layout = state.figure.layout || {};
  const shapes = layout.shapes || [];
  const defaults = ((layout.template || {}).layout || {}).shapedefaults || {};
  const drawShape = (s) => {
    const x0 = px(+s.x0, isPaper(s.xref) ? "paper" : "x", "x");
    const x1 = px(+s.x1, isPaper(s.xref) ? "paper" : "x", "x");
    const y0 = px(+s.y0, isPaper(s.yref) ? "paper" : "y", "y");
    const y1 = px(+s.y1, isPaper(s.yref) ? "paper" : "y", "y");
    const ln = {...(defaults.line || {}), ...(s.line || {})};
    ctx.globalAlpha = s.opacity == null ? 1 : +s.opacity;
    if (s.type === "rect") {
      if (s.fillcolor) { ctx.fillStyle = s.fillcolor; ctx.fillRect(x0, y1, x1 - x0, y0 - y1); }
      if (ln.width) {
        ctx.strokeStyle = ln.color || "#444"; ctx.lineWidth = ln.width * dpr;
        ctx.strokeRect(x0, y1, x1 - x0, y0 - y1);
      }
    } else {
      ctx.strokeStyle = ln.color || "#444";
      ctx.lineWidth = (ln.width == null ? 2 : ln.width) * dpr;
      ctx.setLineDash((DASH[ln.dash] || []).map((d) => d * dpr * ctx.lineWidth / dpr));
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.globalAlpha = 1;
  };
  shapes.filter((s) => s.layer === "below").forEach(drawShape);
  // What this draw put on the canvas (read by the browser tests): parts, fills, texts.
  const drawn = {parts: 0, fills: 0, texts: [], shapes: shapes.length};
  state.drawn = drawn;
  const yLog = state.yLog;
  const zero = Y(yLog ? state.y[0] : Math.max(state.y[0], Math.min(0, state.y[1])));
  for (const p of state.parts) {
    ctx.globalAlpha = p.opacity;
    if (p.kind === "bar") {
      const widths = p.x.map((_, i) => (Array.isArray(p.width) ? p.width[i] : p.width));
      let gap = Infinity;
      for (let i = 1; i < p.x.length; i++) gap = Math.min(gap, Math.abs(p.x[i] - p.x[i - 1]));
      ctx.fillStyle = p.color;
      p.x.forEach((x, i) => {
        const y = p.y[i];
        if (x === null || y === null) return;
        const w = widths[i] != null ? widths[i] : (Number.isFinite(gap) ? gap * 0.8 : 1);
        const a = X(x - w / 2), b = X(x + w / 2), yy = Y(y + p.base), y0 = Y(p.base);
        ctx.fillRect(a, Math.min(yy, y0), Math.max(b - a, 1), Math.abs(y0 - yy));
      });
      drawn.parts += 1;
      continue;
    }
    const pts = [];
    p.x.forEach((x, i) => { if (x !== null && p.y[i] !== null) pts.push([X(x), Y(p.y[i])]); });
    if (!pts.length) continue;
    drawn.parts += 1;
    if (p.fill === "toself" || p.fill === "tozeroy") {
      drawn.fills += 1;
      ctx.beginPath();
      if (p.fill === "tozeroy") ctx.moveTo(pts[0][0], zero);
      pts.forEach(([a, b], i) => (i || p.fill === "tozeroy" ? ctx.lineTo(a, b) : ctx.moveTo(a, b)));
      if (p.fill === "tozeroy") ctx.lineTo(pts[pts.length - 1][0], zero);
      ctx.closePath();
      ctx.fillStyle = p.fillcolor;
      ctx.fill();
    }
    if (p.lines && p.width > 0) {
      ctx.strokeStyle = p.color;
      ctx.lineWidth = p.width * dpr;
      ctx.setLineDash(p.dash.map((d) => d * p.width * dpr));
      ctx.beginPath();
      // A gap (null) in the trace breaks the line, as plotly draws it.
      // "hv" / "vh": plotly's step lines (across, then up; up, then across).
      let pen = false, px0 = 0, py0 = 0;
      p.x.forEach((x, i) => {
        const y = p.y[i];
        if (x === null || y === null) { pen = false; return; }
        const a = X(x), b = Y(y);
        if (pen && p.step === "hv") ctx.lineTo(a, py0);
        if (pen && p.step === "vh") ctx.lineTo(px0, b);
        if (pen) ctx.lineTo(a, b); else ctx.moveTo(a, b);
        pen = true; px0 = a; py0 = b;
      });
      if (p.fill === "toself") ctx.closePath();
      ctx.stroke();
      ctx.setLineDash([]);
    }
    if (p.markers) {
      const r = (p.msize / 2) * dpr;
      for (const [a, b] of pts) {
        ctx.beginPath();
        ctx.arc(a, b, r, 0, 2 * Math.PI);
        if (p.mopen) { ctx.strokeStyle = p.mcolor; ctx.lineWidth = p.mline * dpr; ctx.stroke(); }
        else { ctx.fillStyle = p.mcolor; ctx.fill(); }
      }
    }
  }
  ctx.globalAlpha = 1;
  shapes.filter((s) => s.layer !== "below").forEach(drawShape);
  ctx.restore();
  // Annotations may sit on the plot's edge: drawn unclipped.
  const font = state.fontFamily;
  for (const a of layout.annotations || []) {
    if (!a.text) continue;
    const x = px(+a.x, isPaper(a.xref) ? "paper" : "x", "x");
    const y = px(+a.y, isPaper(a.yref) ? "paper" : "y", "y");
    const size = ((a.font && a.font.size) || state.fontSize) * dpr;
    ctx.font = `${size}px ${font}`;
    ctx.textAlign = "left";
    const text = String(a.text).replace(/<[^>]+>/g, "");
    const w = ctx.measureText(text).width;
    const xa = a.xanchor === "right" ? x - w : a.xanchor === "center" ? x - w / 2 : x;
    const ya = a.yanchor === "top" ? y : a.yanchor === "middle" ? y - size / 2 : y - size * 1.2;
    if (a.bgcolor) { ctx.fillStyle = a.bgcolor; ctx.fillRect(xa - 2, ya, w + 4, size * 1.2); }
    ctx.fillStyle = (a.font && a.font.color) || state.ink;
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillText(text, xa, ya + size * 0.1);
    drawn.texts.push(text);
  }
  ctx.restore();
}

const measure = document.createElement("canvas").getContext("2d");

function axisOpts(axis, scale, ink, grid, fontSize, fontFamily) {
  const shown = axis.showticklabels !== false;
  const font = `${fontSize}px ${fontFamily}`;
  const label = axisTitle(axis) || undefined;
  const o = {scale, stroke: ink, font, labelFont: font, label,
    labelSize: label ? fontSize + 6 : 0, labelGap: 0, gap: 4,
    grid: {show: axis.showgrid !== false, stroke: grid, width: 1},
    ticks: {show: shown, stroke: grid, width: 1, size: 4}};
  if (!shown) { o.values = () => []; o.size = 8; return o; }
  // As much room as the tick labels need (uPlot's default is a fixed 50 px).
  o.size = scale === "x" ? fontSize + 12 : (u, values) => {
    measure.font = font;
    const w = Math.max(0, ...(values || []).map((v) => measure.measureText(String(v)).width));
    return Math.ceil(w) + 12;
  };
  return o;
}

// The figure's parts, the axes' data ranges and their fixed ticks, into ``state``.
function prepare(state) {
  const {figure} = state;
  const layout = figure.layout || {};
  const xa = layout.xaxis || {}, ya = layout.yaxis || {};
  const ps = parts(figure);
  const bars = ps.some((p) => p.kind === "bar");
  const xs = [], ys = [];
  for (const p of ps) {
    p.x.forEach((v, i) => {
      if (v === null || p.y[i] === null) return;
      xs.push(v); ys.push(p.y[i]);
      const w = p.kind === "bar" ? (Array.isArray(p.width) ? p.width[i] : p.width) : null;
      if (w != null) xs.push(v - w / 2, v + w / 2);
    });
  }
  if (bars && !xa.range && xs.length) {
    // half a bar on each side, as plotly's own range does
    const sorted = [...new Set(xs)].sort((a, b) => a - b);
    let g = Infinity;
    for (let i = 1; i < sorted.length; i++) g = Math.min(g, sorted[i] - sorted[i - 1]);
    if (!Number.isFinite(g)) g = 1;
    xs.push(sorted[0] - g / 2, sorted[sorted.length - 1] + g / 2);
  }
  for (const s of layout.shapes || []) {
    if (!isPaper(s.xref)) xs.push(+s.x0, +s.x1);
    if (!isPaper(s.yref)) ys.push(+s.y0, +s.y1);
  }
  state.parts = ps;
  state.x = extent(xs, xa, false);
  state.y = extent(ys, ya, bars);
  state.yLog = ya.type === "log";
  state.xt = ticks(xa, ...state.x);
  state.yt = ticks(ya, ...state.y);
}

// What needs a new uPlot when it changes (anything else is a redraw of the same one).
function shapeOf(state) {
  const l = state.figure.layout || {};
  const key = (a) => [a.type, axisTitle(a), a.showticklabels, a.showgrid, !!a.tickvals];
  return JSON.stringify([key(l.xaxis || {}), key(l.yaxis || {}), state.fontSize,
    state.plotHeight, state.ink]);
}

function build(state, el) {
  const layout = state.figure.layout || {};
  const xa = layout.xaxis || {}, ya = layout.yaxis || {};
  const xAxis = axisOpts(xa, "x", state.soft, state.grid, state.fontSize, state.fontFamily);
  const yAxis = axisOpts(ya, "y", state.soft, state.grid, state.fontSize, state.fontFamily);
  if (state.xt && xAxis.values === undefined) {
    xAxis.splits = () => state.xt.map((t) => t[0]);
    xAxis.values = () => state.xt.map((t) => t[1]);
  }
  if (state.yt && yAxis.values === undefined) {
    yAxis.splits = () => state.yt.map((t) => t[0]);
    yAxis.values = () => state.yt.map((t) => t[1]);
  }
  if (state.yLog && !state.yt && yAxis.values === undefined) {
    // Whole decades only (plotly's dtick 1): ticks, labels and grid lines.
    yAxis.splits = (u, i, min, max) => {
      const out = [];
      for (let e = Math.ceil(Math.log10(min) - 1e-9); e <= Math.floor(Math.log10(max) + 1e-9); e++) {
        out.push(10 ** e);
      }
      return out.length ? out : [min, max];
    };
    yAxis.values = (u, splits) => splits.map(fmt);
  }
  const opts = {
    width: Math.max(el.clientWidth, 100),
    height: state.plotHeight,
    legend: {show: false},
    cursor: {show: false},
    select: {show: false},
    scales: {
      x: {time: false, distr: xa.type === "log" ? 3 : 1, log: 10, range: () => state.x},
      y: {distr: state.yLog ? 3 : 1, log: 10, range: () => state.y},
    },
    axes: [xAxis, yAxis],
    series: [{}, {show: false, scale: "y"}],
    hooks: {draw: [(u) => drawParts(u, state)]},
  };
  return new uPlot(opts, [[state.x[0], state.x[1]], [null, null]], el);
}

function nearest(state, u, cx, cy) {
  const dpr = devicePixelRatio || 1;
  let best = null, bestD = 24 * 24;
  for (const p of state.parts) {
    if (!p.hover) continue;
    p.x.forEach((x, i) => {
      const y = p.y[i];
      if (x === null || y === null) return;
      const dx = u.valToPos(x, "x") - cx, dy = u.valToPos(y, "y") - cy;
      const d = p.kind === "bar" ? dx * dx : dx * dx + dy * dy;
      if (d < bestD) { bestD = d; best = {p, i}; }
    });
  }
  return best;
}

// The chart as a PNG: its title, uPlot's canvas (axes, traces, annotations) and the legend
// (swatch and name per entry, wrapped to the width) on white, as plotly's modebar export gave it.
function downloadPng(root) {
  const state = root.__lite;
  if (!state || !state.u) return;
  const plot = state.u.ctx.canvas;
  const dpr = devicePixelRatio || 1;
  const title = root.querySelector(".lite-title").textContent;
  const head = Math.round(28 * dpr);
  const font = `${Math.round((state.fontSize + 1) * dpr)}px ${state.fontFamily}`;
  const measure = document.createElement("canvas").getContext("2d");
  measure.font = font;
  const pad = 4 * dpr, sw = 18 * dpr, gap = 14 * dpr, row = Math.round(20 * dpr);
  const rows = [[]];
  let x = pad;
  for (const e of state.legend || []) {
    const w = sw + 5 * dpr + measure.measureText(e.name).width;
    if (x + w > plot.width - pad && rows[rows.length - 1].length) { rows.push([]); x = pad; }
    rows[rows.length - 1].push({e, x});
    x += w + gap;
  }
  const foot = (state.legend || []).length ? rows.length * row + pad : 0;
  const out = document.createElement("canvas");
  out.width = plot.width;
  out.height = plot.height + head + foot;
  const ctx = out.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = state.ink;
  ctx.font = `600 ${Math.round(15 * dpr)}px ${state.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.fillText(title, pad, head / 2);
  ctx.drawImage(plot, 0, head);
  ctx.font = font;
  rows.forEach((items, r) => {
    const y = plot.height + head + r * row + row / 2;
    for (const {e, x: left} of items) {
      ctx.fillStyle = e.color;
      ctx.strokeStyle = e.color;
      if (e.box || e.marker) {
        ctx.fillRect(left + 4 * dpr, y - 5 * dpr, 10 * dpr, 10 * dpr);
      } else {
        ctx.lineWidth = 2 * dpr;
        ctx.setLineDash(e.dash === "solid" ? [] : e.dash === "dot" ? [2 * dpr, 2 * dpr]
          : [6 * dpr, 3 * dpr]);
        ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(left + sw, y); ctx.stroke();
        ctx.setLineDash([]);
      }
      ctx.fillStyle = state.ink;
      ctx.fillText(e.name, left + sw + 5 * dpr, y);
    }
  });
  const link = document.createElement("a");
  link.download = (title || "chart").replace(/[^\w.-]+/g, "_").slice(0, 80) + ".png";
  link.href = out.toDataURL("image/png");
  root.dataset.pngHeight = String(out.height);  // for the browser test: title + plot + legend
  link.click();
}

// Draw ``figure`` in ``parentElement`` (a chart's element): from Streamlit's render call, or
// from a frame (liveplot's hexplorer:frame listener) between reruns.
function renderLite(parentElement, figure) {
  let root = parentElement.querySelector("div.hexplorer-liveplot");
  if (!root) {
    root = document.createElement("div");
    root.className = "hexplorer-liveplot hexplorer-lite";
    root.style.width = "100%";
    root.style.position = "relative";
    root.innerHTML = '<div class="lite-title" style="font-weight:600;margin:0 0 4px 0;'
      + 'white-space:nowrap;overflow:hidden;text-overflow:ellipsis"></div>'
      + '<div class="lite-plot"></div><div class="lite-legend" style="display:flex;'
      + 'flex-wrap:wrap;gap:2px 14px;font-size:13px;margin-top:4px"></div>'
      + '<div class="lite-tip" style="position:absolute;display:none;pointer-events:none;'
      + 'background:rgba(255,255,255,0.95);border:1px solid #ccc;border-radius:4px;'
      + 'padding:2px 6px;font-size:12px;color:#222;white-space:nowrap;z-index:5"></div>'
      + '<button class="lite-png" type="button" title="Download the chart as PNG" style="'
      + 'position:absolute;top:0;right:0;border:0;background:transparent;cursor:pointer;'
      + 'font-size:13px;opacity:0;color:inherit;padding:0 4px">PNG ⤓</button>';
    parentElement.appendChild(root);
    const png = root.querySelector(".lite-png");
    root.addEventListener("mouseenter", () => { png.style.opacity = "0.7"; });
    root.addEventListener("mouseleave", () => { png.style.opacity = "0"; });
    png.addEventListener("click", () => downloadPng(root));
  }
  const layout = figure.layout || {};
  const style = getComputedStyle(parentElement);
  const rgb = ((style.color || "rgb(49, 51, 63)").match(/[0-9.]+/g) || ["49", "51", "63"])
    .slice(0, 3).join(", ");
  const fontSize = (layout.font && layout.font.size) || 12;
  const title = layout.title ? (typeof layout.title === "string" ? layout.title
    : layout.title.text || "") : "";
  const titleEl = root.querySelector(".lite-title");
  titleEl.textContent = title.replace(/<[^>]+>/g, "");
  titleEl.title = titleEl.textContent;  // the whole title on hover when it is cut
  titleEl.style.fontSize = (((layout.title || {}).font || {}).size || 15) * fontSize / 12 + "px";
  const legend = legendEntries(figure);
  const legendEl = root.querySelector(".lite-legend");
  legendEl.innerHTML = "";
  for (const e of legend) {
    const item = document.createElement("span");
    const sw = e.box || e.marker
      ? `<span style="display:inline-block;width:10px;height:10px;${e.marker ? "border-radius:50%;border:2px solid " + e.color : "background:" + e.color};margin-right:5px"></span>`
      : `<span style="display:inline-block;width:18px;height:0;border-top:2px ${e.dash === "solid" ? "solid" : e.dash === "dot" ? "dotted" : "dashed"} ${e.color};vertical-align:middle;margin-right:5px"></span>`;
    item.innerHTML = sw;
    item.appendChild(document.createTextNode(e.name));
    item.style.fontSize = fontSize + 1 + "px";
    legendEl.appendChild(item);
  }
  const height = layout.height || 400;
  root.style.minHeight = height + "px";
  const plotEl = root.querySelector(".lite-plot");
  const state = root.__lite || (root.__lite = {});
  state.figure = figure;
  state.legend = legend;
  state.ink = `rgb(${rgb})`;
  state.soft = `rgba(${rgb}, 0.6)`;
  state.grid = `rgba(${rgb}, 0.1)`;
  state.fontSize = fontSize;
  state.fontFamily = style.fontFamily || "sans-serif";
  // The plot keeps at least 60 % of the figure's height (a long legend makes the chart taller).
  state.plotHeight = Math.round(Math.max(height - titleEl.offsetHeight - legendEl.offsetHeight - 8,
    0.6 * height));
  prepare(state);
  // A new uPlot when the axes' kind changes; otherwise the same one, rescaled and redrawn.
  const shape = shapeOf(state);
  if (state.u && state.shape === shape) {
    state.u.setData([[state.x[0], state.x[1]], [null, null]]);
  } else {
    if (state.u) state.u.destroy();
    state.u = build(state, plotEl);
    state.shape = shape;
  }
  if (!state.observer) {
    state.observer = new ResizeObserver(() => {
      if (state.u && Math.abs(state.u.width - plotEl.clientWidth) > 1) {
        state.u.setSize({width: Math.max(plotEl.clientWidth, 100), height: state.plotHeight});
      }
    });
    state.observer.observe(plotEl);
    const tip = root.querySelector(".lite-tip");
    plotEl.addEventListener("mousemove", (ev) => {
      const u = state.u;
      if (!u) return;
      const r = u.over.getBoundingClientRect();
      const hit = nearest(state, u, ev.clientX - r.left, ev.clientY - r.top);
      if (!hit) { tip.style.display = "none"; return; }
      const {p, i} = hit;
      const c = p.custom[i];
      tip.textContent = `${p.name}: ${fmt(p.x[i])}, ${fmt(p.y[i])}`
        + (typeof c === "number" && c > 0 && c <= 1 ? ` (${(c * 100).toFixed(1)} %)` : "");
      tip.style.display = "block";
      const rr = root.getBoundingClientRect();
      tip.style.left = Math.min(ev.clientX - rr.left + 12, rr.width - tip.offsetWidth) + "px";
      tip.style.top = ev.clientY - rr.top + 12 + "px";
    });
    plotEl.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  }
  root.dataset.title = titleEl.textContent;
  root.dataset.drawn = String((+(root.dataset.drawn || 0)) + 1);
}
