"""The error map's builders: colour scales, trust classes drawn apart, the pydeck Decks (no st.*).

Colour scales are **fixed** while ε moves, so a change of colour is a change of error: the error
scale is anchored on the planning target X (bins 0, X/4, X/2, X, 2X, 4X, above), the relative
error on fixed percentages, a noisy release on [0, U]; :func:`auto_scale` (quantile bins of the
values shown, the other maps' scale) is the toggle's alternative. Hexagons over target, and those
with no useful release (error ≥ U/2: too few users for this ε), are drawn apart: faded fill (the
colour mixed with white) and a coloured outline, each named in the legend with its count.

The split view is **one** map view: side A where its hexagons are, side B (the same hexagons in
B's colours) half a map further east through deck.gl's ``modelMatrix``, so a pan or a zoom moves
both. (Two deck.gl views with a ``layerFilter`` would be the textbook way, but Streamlit's map
element does not pass ``layerFilter`` on to deck.gl, and both views then showed side B.)

Layer rows are small plain dicts (short keys; outline colour and width are deck.gl expressions of
a trust code), built column-wise, and the Deck's JSON is written without whitespace
(:class:`CompactDeck`): Streamlit sends the whole Deck on every ε step.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Literal

import h3
import numpy as np
import pandas as pd
import pydeck as pdk
from pydeck.bindings.json_tools import default_serialize

from core.citywide.derived import TRUST_LABELS
from dashboard.common.source.units import Units
from dashboard.common.view import maps
from dashboard.common.view.maps import PALETTE, LegendEntry

# Trust classes (core.citywide.derived.trust_classes): fill alpha and outline of each.
WITHIN_COLOR = (42, 120, 142)  # the palette's teal: within target
OVER_OUTLINE = (230, 97, 1)  # orange outline: over target
NO_USE_OUTLINE = (60, 60, 60)  # dark grey outline: no useful release
NO_USE_FILL = (225, 225, 225)
FADE = 0.35  # a faded hexagon keeps this share of its colour, the rest is white (opaque, so
# its centre dot, drawn in the same colour, stays invisible inside it)
OUTLINE_PX = 2.5
CATEGORY_COLORS = (WITHIN_COLOR, OVER_OUTLINE, NO_USE_FILL)
"""Fill of each trust class on the 'within target' map."""

# Difference maps: blue where B's error is smaller, red where larger (ColorBrewer RdBu, 6 classes).
DIVERGING: tuple[tuple[int, int, int], ...] = (
    (33, 102, 172),
    (103, 169, 207),
    (209, 229, 240),
    (253, 219, 199),
    (239, 138, 98),
    (178, 24, 43),
)
TILE_PX = 512  # deck.gl's Web-Mercator world is 512 px wide at zoom 0


def _fmt(value: float) -> str:
    if not np.isfinite(value):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


@dataclass(frozen=True, kw_only=True)
class ColourScale:
    """Bins with fixed edges and one colour each.

    ``edges`` (n + 1,) ascending; the last may be inf. A value v is in bin i when
    ``edges[i] <= v < edges[i + 1]`` (the last bin includes its top). ``fixed`` says whether the
    scale depends on the values shown (False: automatic).
    """

    edges: tuple[float, ...]
    colors: tuple[tuple[int, int, int], ...]
    labels: tuple[str, ...]
    title: str
    fixed: bool = True

    def __post_init__(self) -> None:
        n = len(self.colors)
        if n < 1 or len(self.edges) != n + 1 or len(self.labels) != n:
            raise ValueError("ColourScale: need n colours, n labels and n + 1 edges")
        if any(b < a for a, b in zip(self.edges, self.edges[1:], strict=False)):
            raise ValueError(f"ColourScale: edges must ascend, got {self.edges}")

    def index(self, values: np.ndarray) -> np.ndarray:
        """Bin of each value (-1 for NaN)."""
        values = np.asarray(values, dtype=float)
        idx = np.searchsorted(np.asarray(self.edges[1:-1]), values, side="right")
        return np.where(np.isfinite(values), idx, -1)

    def legend(self) -> tuple[LegendEntry, ...]:
        return tuple(
            LegendEntry(label=lab, color=col, low=float(lo), high=float(hi))
            for lab, col, lo, hi in zip(
                self.labels, self.colors, self.edges[:-1], self.edges[1:], strict=True
            )
        )


def _range_labels(edges: list[float], fmt, unit: str) -> tuple[str, ...]:
    labels = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if math.isinf(hi):
            labels.append(f"≥ {fmt(lo)}{unit}")
        else:
            labels.append(f"{fmt(lo)} – {fmt(hi)}{unit}")
    return tuple(labels)


def error_scale(target: float, units: Units, *, title: str | None = None) -> ColourScale:
    """The fixed scale of errors at ε (the data's unit), anchored on the target X.

    >>> s = error_scale(4.0, Units())
    >>> s.edges[:5], s.labels[3]
    ((0.0, 1.0, 2.0, 4.0, 8.0), '4.00 – 8.00 km/h')
    """
    if not target > 0:
        raise ValueError(f"error_scale: target must be > 0, got {target!r}")
    edges = [0.0, target / 4, target / 2, target, 2 * target, 4 * target, math.inf]
    return ColourScale(
        edges=tuple(edges),
        colors=PALETTE,
        labels=_range_labels(edges, _fmt, f" {units.value}"),
        title=title or f"worst-case error at ε (±{units.value})",
    )


def relative_scale() -> ColourScale:
    """The fixed scale of relative errors (error / true mean), in percent.

    >>> relative_scale().labels[-1]
    '≥ 50%'
    """
    edges = [0.0, 0.025, 0.05, 0.1, 0.2, 0.5, math.inf]
    return ColourScale(
        edges=tuple(edges),
        colors=PALETTE,
        labels=_range_labels(edges, lambda v: f"{100 * v:g}", "%"),
        title="relative error (error / true mean)",
    )


def value_scale(upper: float, units: Units) -> ColourScale:
    """The fixed scale of released means: six equal bins of [0, U]."""
    edges = list(np.linspace(0.0, float(upper), len(PALETTE) + 1))
    return ColourScale(
        edges=tuple(edges),
        colors=PALETTE,
        labels=_range_labels(edges, _fmt, f" {units.value}"),
        title=f"one noisy release ({units.value})",
    )


def difference_scale(target: float, units: Units) -> ColourScale:
    """Fixed diverging scale of error B − error A (negative: B is more accurate).

    >>> difference_scale(2.0, Units()).edges[1:-1]
    (-2.0, -0.5, 0.0, 0.5, 2.0)
    """
    edges = [-math.inf, -target, -target / 4, 0.0, target / 4, target, math.inf]
    labels = (
        f"B better by > {_fmt(target)}",
        f"B better by {_fmt(target / 4)} – {_fmt(target)}",
        f"B better by < {_fmt(target / 4)}",
        f"B worse by < {_fmt(target / 4)}",
        f"B worse by {_fmt(target / 4)} – {_fmt(target)}",
        f"B worse by > {_fmt(target)}",
    )
    return ColourScale(
        edges=tuple(edges),
        colors=DIVERGING,
        labels=tuple(f"{lab} {units.value}" for lab in labels),
        title=f"error B − error A ({units.value})",
    )


def trust_scale() -> ColourScale:
    """The categorical 'within target' colours (values are the trust classes 0, 1, 2)."""
    return ColourScale(
        edges=(0.0, 1.0, 2.0, 3.0),
        colors=CATEGORY_COLORS,
        labels=TRUST_LABELS,
        title="within target",
    )


def auto_scale(values: np.ndarray, *, title: str) -> ColourScale:
    """Quantile bins of the values shown (:func:`dashboard.common.view.maps.color_bins`)."""
    values = np.asarray(values, dtype=float)
    _, legend = maps.color_bins(values)
    if not legend:
        return ColourScale(edges=(0.0, 1.0), colors=(PALETTE[0],), labels=("–",), title=title)
    if len(legend) == 1:
        e = legend[0]
        return ColourScale(
            edges=(e.low, e.high), colors=(e.color,), labels=(e.label,), title=title, fixed=False
        )
    edges = [legend[0].low] + [e.high for e in legend]
    edges[-1] = math.inf  # the top bin includes the maximum
    return ColourScale(
        edges=tuple(edges),
        colors=tuple(e.color for e in legend),
        labels=tuple(e.label for e in legend),
        title=title,
        fixed=False,
    )


@dataclass(frozen=True, kw_only=True)
class Styled:
    """Per-hexagon drawing: fill (H, 4) and outline (H, 4) RGBA, outline width (H,) in px,
    the colour bin (H,) and whether the hexagon is faded (H,)."""

    fill: np.ndarray
    line: np.ndarray
    width: np.ndarray
    bins: np.ndarray
    faded: np.ndarray
    code: np.ndarray  # 0 plain, 1 over target, 2 no useful release (the rows' "q")

    def dimmed(self) -> np.ndarray:
        """Indices of the hexagons drawn faded (over target or no useful release)."""
        return np.flatnonzero(self.faded)


def style(values: np.ndarray, scale: ColourScale, classes: np.ndarray | None) -> Styled:
    """Colours of every hexagon: the scale's colour, faded with an outline by trust class.

    ``classes`` (0 within, 1 over target, 2 no useful release) or None (no trust overlay, as
    on the 'within target' map itself, whose colours are the classes).
    """
    values = np.asarray(values, dtype=float)
    n = values.size
    palette = np.array([*scale.colors, maps.NO_DATA_COLOR], dtype=np.int64)
    bins = scale.index(values)
    fill = np.empty((n, 4), dtype=np.int64)
    fill[:, :3] = palette[bins]  # -1 → the no-data colour (last row)
    fill[:, 3] = maps.FILL_ALPHA
    line = np.tile(np.array([255, 255, 255, 140], dtype=np.int64), (n, 1))
    width = np.ones(n)
    faded = np.zeros(n, dtype=bool)
    code = np.zeros(n, dtype=np.int64)
    if classes is not None:
        classes = np.asarray(classes)
        over, no_use = classes == 1, classes == 2
        fill[over, :3] = np.rint(FADE * fill[over, :3] + (1 - FADE) * 255).astype(np.int64)
        line[over] = [*OVER_OUTLINE, 255]
        fill[no_use, :3] = NO_USE_FILL
        line[no_use] = [*NO_USE_OUTLINE, 255]
        faded = over | no_use
        width[faded] = OUTLINE_PX
        code[over], code[no_use] = 1, 2
    return Styled(fill=fill, line=line, width=width, bins=bins, faded=faded, code=code)


def trust_legend(classes: np.ndarray, target: float, upper: float, units: Units) -> list[str]:
    """The legend's words for the hexagons drawn apart, with their counts.

    >>> trust_legend(np.array([0, 1, 2, 2]), 2.0, 65.0, Units())[1][:61]
    'Pale grey, dark grey outline: no useful release — 2 hexagons '
    """
    classes = np.asarray(classes)
    n_over, n_none = int((classes == 1).sum()), int((classes == 2).sum())
    half = f"{upper / 2:g}"
    return [
        f"Faded, orange outline: over target — {n_over:,} hexagon{'s' * (n_over != 1)} whose "
        f"error exceeds ±{target:g} {units.value}",
        f"Pale grey, dark grey outline: no useful release — {n_none:,} hexagon"
        f"{'s' * (n_none != 1)} with too few {units.users} for this ε (error ≥ U/2 = {half} "
        f"{units.value}, no better than publishing {half} without the data)",
    ]


LINE_COLOR = (
    f"q == 1 ? [{', '.join(map(str, OVER_OUTLINE))}, 255] : "
    f"(q == 2 ? [{', '.join(map(str, NO_USE_OUTLINE))}, 255] : [255, 255, 255, 140])"
)
"""deck.gl JSON expression of the outline colour from the row's trust code ``q`` (no per-row
array: the rows stay small)."""
LINE_WIDTH = f"q > 0 ? {OUTLINE_PX:g} : 1"
DOTS_BELOW_PX = maps.DOTS_BELOW_PX
"""Centre dots are drawn when the fitted view's hexagons are narrower than this (two zoom
levels of headroom before they would be too small to see); wider hexagons show themselves."""
DOTS_ONLY_BELOW_PX = 2 * maps.MIN_POINT_PIXELS
"""Hexagons narrower than a dot's smallest width at the fitted view are drawn as dots only
(:func:`draw_mode`)."""
Draw = Literal["hexagons", "both", "dots"]
DENSITY_MAX_HEXAGONS = 2_000
"""Above this many hexagons in the slot, the slot itself shows where the data are: the record
density context (one more layer of every cell, sent on every ε step) is left out."""


@dataclass(frozen=True, kw_only=True)
class Rows:
    """The rows of one map's layers: the hexagons (pickable, with the tooltip texts) and, when
    drawn, the centre dots (``pos``, ``fill``, ``q`` only) — or, drawn as dots only, no
    hexagons and dots with everything (:func:`records`).

    ``geometry`` and ``colours`` are fingerprints of the hexagons (their cells, in order) and of
    their drawing (fill and trust code) — :func:`fingerprint`; empty: not known (the layers are
    then rebuilt whenever their rows arrive, deck.gl's default)."""

    hexagons: list[dict]
    dots: list[dict] | None = None
    geometry: str = ""
    colours: str = ""


def fingerprint(*arrays) -> str:
    """A short digest of arrays' bytes (and of strings), to name what layers draw.

    >>> fingerprint(np.array([1, 2])) == fingerprint(np.array([1, 2])) != fingerprint(np.array([2, 1]))
    True
    """
    digest = hashlib.blake2b(digest_size=6)
    for a in arrays:
        if isinstance(a, str):
            digest.update(a.encode())
        else:
            a = np.ascontiguousarray(a)
            digest.update(f"{a.dtype}{a.shape}".encode())
            digest.update(a.tobytes())
        digest.update(b"|")
    return digest.hexdigest()


def draw_mode(hex_px: float) -> Draw:
    """How a map whose hexagons are ``hex_px`` wide at the fitted view draws them.

    - ``"hexagons"``: wide enough to show themselves, outlined by trust class;
    - ``"both"`` (narrower than :data:`DOTS_BELOW_PX`): filled hexagons with an outlined dot on
      each, so every hexagon stays visible and keeps its trust outline;
    - ``"dots"`` (narrower than :data:`DOTS_ONLY_BELOW_PX`, a dot's smallest width): the dots
      only. Each dot covers its hexagon at this zoom, so the hexagons' fills would never be seen,
      yet in software WebGL they cost as much to draw as the dots (half of an ε step at 10⁴
      hexagons). The dots then answer the mouse.

    >>> [draw_mode(px) for px in (40.0, 12.0, 4.6)]
    ['hexagons', 'both', 'dots']
    """
    if hex_px < DOTS_ONLY_BELOW_PX:
        return "dots"
    return "both" if maps.needs_dots(hex_px) else "hexagons"


def records(base: pd.DataFrame, styled: Styled, texts: dict, *, draw: Draw = "both") -> Rows:
    """Layer rows, small because Streamlit sends every row on every ε step: ``cell`` (the slot is
    the page's, so a click names the HAT), ``fill`` (RGB), ``q`` (trust code: outline by
    :data:`LINE_COLOR`; drawn by the dots when there are dots) and the tooltip texts (``texts``:
    short keys, see :data:`TOOLTIP_LINES`), on the rows of the layer that answers the mouse.
    ``draw`` (:func:`draw_mode`) says which layers there are: the dots' rows carry ``pos``.
    Built column-wise; the one pass per row is the conversion to the dicts pydeck serialises."""
    fill, code = styled.fill[:, :3].tolist(), styled.code.tolist()
    cells = base["cell"].tolist()
    text_columns = [np.asarray(v).tolist() for v in texts.values()]
    tokens = {
        "geometry": fingerprint("\n".join(cells)),
        "colours": fingerprint(styled.fill[:, :3].astype(np.uint8), styled.code.astype(np.int8)),
    }
    if draw == "dots":  # one layer: the dots, with everything a click or a tooltip reads
        keys = ["cell", "pos", "fill", "q", *texts]
        columns = [cells, base["pos"].tolist(), fill, code, *text_columns]
        dots = [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]
        return Rows(hexagons=[], dots=dots, **tokens)
    outlined = draw == "hexagons"  # otherwise the dots draw the outlines
    keys = ["cell", "fill", *(["q"] if outlined else []), *texts]
    columns = [cells, fill, *([code] if outlined else []), *text_columns]
    hexagons = [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]
    if outlined:
        return Rows(hexagons=hexagons, **tokens)
    points = [
        {"pos": p, "fill": f, "q": q}
        for p, f, q in zip(base["pos"].tolist(), fill, code, strict=True)
    ]
    return Rows(hexagons=hexagons, dots=points, **tokens)


def hexagon_layers(rows: Rows, *, layer_id: str, pickable: bool) -> list[pdk.Layer]:
    """H3 hexagons and, when ``rows`` has them, centre dots (never under
    ``maps.MIN_POINT_PIXELS``), with the outline colour and width of each row's trust code, so
    the faded hexagons keep a visible outline at any zoom. Ids ``layer_id`` and
    ``layer_id-points``.

    With dots (hexagons too small at the fitted view to show an outline), the dots carry the
    outlines and the hexagons are drawn filled only, as polygons (``highPrecision``): in
    software WebGL (Chromium without a GPU, as in ``bench/bench_map.py``) the outlines of 10⁴
    hexagons cost seconds per frame — most of an ε step — and polygon fills cost less than
    deck.gl's instanced hexagon columns. Without dots the hexagons are wide, hence few (a few
    hundred fit the map), and keep their outlines. With dots only (:func:`draw_mode`), the dots
    answer the mouse."""
    if not rows.hexagons and not rows.dots:
        return []
    colours_only: dict = {}
    if rows.geometry:
        layer_id = f"{layer_id}-{rows.geometry}"
        colours_only = {
            "data_comparator": SAME_GEOMETRY,
            "update_triggers": {a: [rows.colours] for a in COLOUR_ACCESSORS},
        }
    out = []
    if rows.hexagons:
        out.append(_hexagons(rows, layer_id=layer_id, pickable=pickable, extra=colours_only))
    if rows.dots:
        dots_pick = pickable and not rows.hexagons  # with hexagons, the hexagons answer
        cell = (rows.hexagons or rows.dots)[0]["cell"]
        edge_m = float(h3.average_hexagon_edge_length(h3.get_resolution(cell), "m"))
        out.append(
            pdk.Layer(
                "ScatterplotLayer",
                data=rows.dots,
                id=f"{layer_id}-{maps.POINTS_SUFFIX}",
                get_position="pos",
                get_fill_color="fill",
                get_line_color=LINE_COLOR,
                get_line_width=LINE_WIDTH,
                get_radius=0.8 * edge_m,
                radius_min_pixels=maps.MIN_POINT_PIXELS,
                stroked=True,
                filled=True,
                pickable=dots_pick,
                auto_highlight=dots_pick,
                **colours_only,
            )
        )
    for layer in out:
        # Set after construction: pydeck turns every string keyword into an accessor
        # ("@@=pixels"), which deck.gl then reads as a function, not as the units.
        layer.line_width_units = "pixels"
    return out


def _hexagons(rows: Rows, *, layer_id: str, pickable: bool, extra: dict) -> pdk.Layer:
    """The H3 hexagon layer of :func:`hexagon_layers` (outlined when there are no dots)."""
    outlined = not rows.dots
    lines = {"get_line_color": LINE_COLOR, "get_line_width": LINE_WIDTH} if outlined else {}
    hexagons = pdk.Layer(
        "H3HexagonLayer",
        data=rows.hexagons,
        id=layer_id,
        get_hexagon="cell",
        get_fill_color="fill",
        stroked=outlined,
        filled=True,
        extruded=False,
        pickable=pickable,
        auto_highlight=pickable,
        **lines,
        **extra,
    )
    if rows.geometry:  # the sublayers deck.gl builds get the same rows: the same comparison
        same = {"dataComparator": f"@@={SAME_GEOMETRY}"}
        hexagons._sub_layer_props = {
            "hexagon-cell-hifi": {**same, "_subLayerProps": {"fill": same, "stroke": same}},
            "hexagon-cell": same,
        }
    if not outlined:
        hexagons.high_precision = True  # polygons: cheaper to fill than instanced columns
    return hexagons


SAME_GEOMETRY = "true"
"""deck.gl ``dataComparator`` (a JSON expression, wrapped by pydeck) of the hexagon and dot
layers: their rows are always "the same data". Streamlit parses the Deck anew on every ε step, so
every row list is a new array and deck.gl would rebuild every hexagon's polygon and every
position (a third of the browser's work at 10⁴ hexagons); the layers' ids carry the fingerprint
of their cells (:attr:`Rows.geometry`), so other hexagons are other layers, built afresh, and
within a layer only the colours change — recomputed from the new rows when their fingerprint
(:attr:`Rows.colours`, the ``updateTriggers`` of :data:`COLOUR_ACCESSORS`) changes. Tooltips
and clicks read the new rows."""
COLOUR_ACCESSORS = ("getFillColor", "getLineColor", "getLineWidth")


class CompactDeck(pdk.Deck):
    """A Deck whose JSON has no indentation and no sorted keys.

    pydeck writes ``json.dumps(..., indent=2, sort_keys=True)``: every number of every row on
    its own line, 17 MB for 10⁴ hexagons, which Streamlit sends and the browser parses on every
    ε step. The same JSON without whitespace is a sixth of that.
    """

    def to_json(self) -> str:
        return json.dumps(self, default=default_serialize, separators=(",", ":"))


def selected_layer(cell: str, layer_id: str = maps.SELECTED_LAYER_ID) -> pdk.Layer:
    """The selected hexagon's outline (not pickable; the fills keep the legend's colours)."""
    return pdk.Layer(
        "H3HexagonLayer",
        data=[{"cell": cell}],
        id=layer_id,
        get_hexagon="cell",
        filled=False,
        stroked=True,
        extruded=False,
        get_line_color=[*maps.SELECTED_COLOR, 255],
        line_width_min_pixels=4,
        pickable=False,
    )


TOOLTIP_LINES = (
    ("cell", "hexagon"),
    ("v", "{value}"),
    ("u", "{users}"),
    ("r", "records"),
    ("m", "m_UB"),
    ("e", "worst-case error (±{unit})"),
    ("t", "true mean ({unit})"),
    ("k", "trust"),
)
"""The tooltip's lines: (row key, label)."""


def tooltip(value_label: str | None, units: Units, *, prefix: str = "") -> dict:
    """The tooltip: users, records, m_UB, error and true mean, units in the labels, and the
    value shown (``value_label``; None when it is the error itself)."""
    names = {"{value}": value_label, "{users}": units.users}
    lines = [
        f"{prefix}{(names.get(label) or label).replace('{unit}', units.value)}: {{{col}}}"
        for col, label in TOOLTIP_LINES
        if not (col == "v" and value_label is None)
    ]
    return {"text": "\n".join(lines)}


def error_deck(
    rows: Rows,
    view: pdk.ViewState,
    *,
    tooltip_spec: dict,
    density: list[pdk.Layer] | None = None,
    selected_cell: str | None = None,
    pick_token: str | int = "",
    basemap: bool = False,
) -> pdk.Deck:
    """One map: the density context, the styled hexagons (pickable), the selection outline."""
    layers = list(density or [])
    layers += hexagon_layers(rows, layer_id=maps.pick_layer_id(pick_token), pickable=True)
    if selected_cell is not None:
        layers.append(selected_layer(selected_cell))
    style = {"map_provider": "carto", "map_style": maps.BASEMAP_STYLE} if basemap else {}
    return CompactDeck(
        layers=layers,
        initial_view_state=view,
        views=[pdk.View(type="MapView", controller=dict(maps.CONTROLLER))],
        tooltip=tooltip_spec,
        **(style if basemap else {"map_provider": None}),
    )


def half_width_degrees(zoom: float, width_px: int) -> float:
    """Degrees of longitude that half of a ``width_px`` map spans at ``zoom`` (Web Mercator)."""
    return (width_px / 2.0) * 360.0 / (TILE_PX * 2.0**zoom)


def shifted(layer: pdk.Layer, degrees: float) -> pdk.Layer:
    """``layer`` drawn ``degrees`` of longitude further east (deck.gl's ``modelMatrix``, a
    translation applied to its positions before projection); the data are untouched."""
    layer.model_matrix = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, degrees, 0, 0, 1]
    return layer


def split_deck(
    rows_a: Rows,
    rows_b: Rows,
    view: pdk.ViewState,
    *,
    width_px: int,
    tooltip_spec: dict,
    density: list[pdk.Layer] | None = None,
) -> pdk.Deck:
    """Two maps side by side in **one** map view, so a pan or a zoom moves both.

    ``view`` fits one side in half of a ``width_px`` map. Side A is drawn where it is; side B,
    the same hexagons in B's colours, half a map further east (:func:`shifted`), and the view
    is centred between them. (Streamlit's map element draws every layer in every view, so two
    views cannot each show their own layers; one view with B moved over can.) No basemap: it
    would put B on the wrong streets.
    """
    shift = half_width_degrees(float(view.zoom), width_px)
    layers: list[pdk.Layer] = []
    for side, rows, degrees in (("a", rows_a, 0.0), ("b", rows_b, shift)):
        side_layers = []
        for layer in density or []:
            twin = copy.deepcopy(layer)
            twin.id = f"{side}-{layer.id}"
            side_layers.append(twin)
        side_layers += hexagon_layers(rows, layer_id=f"{side}-hexagons", pickable=True)
        layers += [shifted(layer, degrees) if degrees else layer for layer in side_layers]
    both = pdk.ViewState(
        latitude=view.latitude, longitude=view.longitude + shift / 2.0, zoom=view.zoom
    )
    return CompactDeck(
        layers=layers,
        initial_view_state=both,
        views=[pdk.View(type="MapView", controller=dict(maps.CONTROLLER))],
        tooltip=tooltip_spec,
        map_provider=None,
    )
