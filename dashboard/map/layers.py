"""The error map's layers and decks: small layer rows, the hexagons and their dots, the single
and the split Deck (no st.*). Their colours are :mod:`dashboard.map.scales`.

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
from dataclasses import dataclass
from typing import Any, Literal

import h3
import numpy as np
import pandas as pd
import pydeck as pdk
from pydeck.bindings.json_tools import default_serialize

from dashboard.common.source.units import Units
from dashboard.common.view import maps
from dashboard.map.scales import NO_USE_OUTLINE, OUTLINE_PX, OVER_OUTLINE, Styled

TILE_PX = 512  # deck.gl's Web-Mercator world is 512 px wide at zoom 0


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
    tokens: dict[str, Any] = {
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
