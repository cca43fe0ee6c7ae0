"""pydeck builders: a DataFrame of H3 cells and values in, a ``pdk.Deck`` out (no st.* calls).

By default the map has **no basemap**: ``map_provider=None`` with pydeck's default style sentinel
makes the Deck JSON carry ``"mapStyle": "__MAP_STYLE__"``, which Streamlit (1.67) reads as "no
basemap", so no token, no tile server and no network are needed. (``map_style=None`` would *not*
do: the Streamlit front end then picks a Carto basemap that it fetches from the internet.)
Geographic context without a network comes from the data itself: the record density of every
hexagon over all slots, a faint grey layer under the coloured hexagons. Carto's light tiles are
an option (``basemap=True``) for when the app is online; offline they are simply missing.

Legible at any extent: the view is fitted to the data for the chart's size; where hexagons are
narrower than ``DOTS_BELOW_PX`` on screen, each is also drawn as a dot at its centre, in its own
colour, of at least ``MIN_POINT_PIXELS`` pixels radius, so a country of resolution-7 hexagons is
a field of dots rather than nothing (wider hexagons show themselves, and dots hidden inside them
would only cost drawing time); :class:`MapScale` gives the extent in km and suggests a coarser
resolution when hexagons would be tiny.

Selection is an outline only. Streamlit repaints every pickable layer of a map with an active
selection (the chosen object in the theme's colour, the others faded); the pickable layers' ids
therefore carry a token that the page changes on every click, so the next run's layers are new
to the front end, which drops the stale selection and keeps the legend's colours.

The mouse wheel scrolls the page, not the map (``scrollZoom`` off); zoom with a double click
(shift for out), the +/- keys after clicking into the map, or two fingers on a touch screen.
Layer data is passed as a list of plain dicts, which serialises with pandas 3 as well.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd
import pydeck as pdk

HEX_LAYER_ID = "hexagons"  # the prefix of the pickable layers' ids
POINTS_SUFFIX = "points"
SELECTED_LAYER_ID = "selected-hexagon"
DENSITY_LAYER_ID = "record-density"
MIN_POINT_PIXELS = 2.5
"""Smallest radius, in pixels, of the dot drawn at every hexagon's centre."""
MIN_HEX_PIXELS = 6.0
"""Below this width on screen a hexagon reads as a dot: a coarser resolution is suggested."""
DOTS_BELOW_PX = 4 * MIN_HEX_PIXELS
"""Hexagons narrower than this on screen also get a dot each (:func:`needs_dots`)."""
MAP_WIDTH_PX = 900
MAP_HEIGHT_PX = 480
EARTH_CIRCUMFERENCE_KM = 40_075.016686
TILE_PX = 512  # deck.gl's world width in pixels at zoom 0
CONTROLLER = {
    "scrollZoom": False,
    "doubleClickZoom": True,
    "dragPan": True,
    "dragRotate": False,
    "touchZoom": True,
    "touchRotate": False,
    "keyboard": True,
}
"""The maps' controller: the mouse wheel scrolls the page over a map (deck.gl Controller options)."""
ZOOM_HELP = (
    "Zoom: double-click (shift + double-click to zoom out), or click into the map and press "
    "+ / −; drag to pan. The mouse wheel scrolls the page."
)
BASEMAP_STYLE = pdk.map_styles.CARTO_LIGHT
DENSITY_COLOR = (110, 110, 110)

# Viridis, sampled at six points (dark blue = low, yellow = high); readable on light and dark.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (68, 1, 84),
    (65, 68, 135),
    (42, 120, 142),
    (34, 168, 132),
    (122, 209, 81),
    (253, 231, 37),
)
NO_DATA_COLOR = (160, 160, 160)
SELECTED_COLOR = (230, 30, 30)
FILL_ALPHA = 255  # opaque: the map shows the legend's colours exactly


@dataclass(frozen=True, kw_only=True)
class LegendEntry:
    """One colour of the legend and the value range it stands for."""

    label: str
    color: tuple[int, int, int]
    low: float
    high: float


@dataclass(frozen=True, kw_only=True)
class MapScale:
    """How the fitted view draws the data: zoom, size on the ground and of one hexagon."""

    zoom: float
    km_per_px: float
    width_km: float
    height_km: float
    hex_px: float  # a hexagon's width on screen at this zoom
    resolution: int
    suggested_resolution: int | None  # a coarser resolution when hexagons would be tiny

    def caption(self) -> str:
        """'Map about 820 × 440 km; a hexagon is about 0.6 px wide ...'."""
        text = (
            f"Map about {_km(self.width_km)} × {_km(self.height_km)} km; a hexagon "
            f"(resolution {self.resolution}) is about {_px(self.hex_px)} px wide at this zoom."
        )
        if self.suggested_resolution is not None:
            text += (
                f" Too small to see: each is shown by a dot of at least "
                f"{2 * MIN_POINT_PIXELS:g} px. Resolution {self.suggested_resolution} (sidebar) "
                "would draw them as hexagons."
            )
        return text


def _km(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:,.1f}"


def _px(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


@dataclass(frozen=True, kw_only=True)
class HexMap:
    """A ready-to-draw map: the Deck, its legend (low to high), the prefix of the pickable layers'
    ids and the scale of its fitted view."""

    deck: pdk.Deck
    legend: tuple[LegendEntry, ...]
    scale: MapScale
    layer_id: str = HEX_LAYER_ID


def _fmt(value: float) -> str:
    if not np.isfinite(value):
        return "–"
    if float(value).is_integer() and abs(value) < 1e9:
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"


def color_bins(
    values: np.ndarray, n_bins: int = len(PALETTE)
) -> tuple[np.ndarray, tuple[LegendEntry, ...]]:
    """Assign each value one of up to ``n_bins`` colour bins with (about) equally many values.

    Bin edges are the values' quantiles (record counts are heavy-tailed, so equal-width bins
    would paint all but the busiest hexagon alike); repeated edges merge bins. Returns the bin
    index of each value (-1 for NaN) and the legend, one entry per bin, low to high.

    >>> idx, legend = color_bins(np.array([0.0, 5.0, 10.0]), n_bins=2)
    >>> idx.tolist(), [e.label for e in legend]
    ([0, 1, 1], ['0 – 5', '5 – 10'])
    """
    if not 1 <= n_bins <= len(PALETTE):
        raise ValueError(f"n_bins must be in [1, {len(PALETTE)}], got {n_bins}")
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    idx = np.full(values.shape, -1, dtype=np.int64)
    if not finite.any():
        return idx, ()
    lo, hi = float(values[finite].min()), float(values[finite].max())
    if hi == lo:
        idx[finite] = 0
        return idx, (LegendEntry(label=_fmt(lo), color=PALETTE[-1], low=lo, high=hi),)
    edges = np.unique(np.quantile(values[finite], np.linspace(0.0, 1.0, n_bins + 1)))
    n_bins = edges.size - 1
    colors = [PALETTE[round(i * (len(PALETTE) - 1) / max(n_bins - 1, 1))] for i in range(n_bins)]
    idx[finite] = np.clip(np.searchsorted(edges, values[finite], side="right") - 1, 0, n_bins - 1)
    legend = tuple(
        LegendEntry(
            label=f"{_fmt(edges[i])} – {_fmt(edges[i + 1])}",
            color=colors[i],
            low=float(edges[i]),
            high=float(edges[i + 1]),
        )
        for i in range(n_bins)
    )
    return idx, legend


def _mercator_y(lat_deg: np.ndarray | float) -> np.ndarray:
    """Web-Mercator y of a latitude, in world pixels at zoom 0 (0 at the equator)."""
    lat = np.radians(np.clip(lat_deg, -85.0, 85.0))
    return TILE_PX / (2 * np.pi) * np.log(np.tan(np.pi / 4 + lat / 2))


def fit_view(
    cells: list[str], *, width_px: int = MAP_WIDTH_PX, height_px: int = MAP_HEIGHT_PX
) -> tuple[pdk.ViewState, MapScale]:
    """The view that shows every cell in a ``width_px`` × ``height_px`` map, and its scale.

    The zoom fits the cells' bounding box (padded by one hexagon) in Web-Mercator pixels, as
    deck.gl draws it; ``MapScale.suggested_resolution`` is the finest coarser resolution whose
    hexagons would be at least ``MIN_HEX_PIXELS`` wide (an H3 step is a factor √7 in size).

    >>> view, scale = fit_view([h3.latlng_to_cell(21.2, 72.8, 7)])
    >>> round(view.latitude, 1), scale.suggested_resolution is None
    (21.2, True)
    """
    if not cells:
        view = pdk.ViewState(latitude=0.0, longitude=0.0, zoom=1)
        scale = MapScale(
            zoom=1.0,
            km_per_px=EARTH_CIRCUMFERENCE_KM / (TILE_PX * 2),
            width_km=0.0,
            height_km=0.0,
            hex_px=0.0,
            resolution=0,
            suggested_resolution=None,
        )
        return view, scale
    resolution = h3.get_resolution(cells[0])
    latlng = np.array([h3.cell_to_latlng(c) for c in cells])
    edge_km = float(h3.average_hexagon_edge_length(resolution, "km"))
    pad_deg = edge_km / 111.32
    lat_lo, lon_lo = latlng.min(axis=0) - pad_deg
    lat_hi, lon_hi = latlng.max(axis=0) + pad_deg
    dx = TILE_PX * (lon_hi - lon_lo) / 360.0
    dy = float(_mercator_y(lat_hi) - _mercator_y(lat_lo))
    zoom = math.log2(min(0.92 * width_px / max(dx, 1e-9), 0.92 * height_px / max(dy, 1e-9)))
    zoom = float(np.clip(zoom, 0.0, 16.0))
    centre_lat = float((lat_lo + lat_hi) / 2)
    km_per_px = EARTH_CIRCUMFERENCE_KM * math.cos(math.radians(centre_lat)) / (TILE_PX * 2.0**zoom)
    hex_px = 2.0 * edge_km / km_per_px
    suggested = None
    if hex_px < MIN_HEX_PIXELS:
        steps = math.ceil(math.log(MIN_HEX_PIXELS / max(hex_px, 1e-9)) / math.log(math.sqrt(7)))
        suggested = max(0, resolution - steps)
        if suggested == resolution:
            suggested = None
    view = pdk.ViewState(
        latitude=centre_lat,
        longitude=float((lon_lo + lon_hi) / 2),
        zoom=round(zoom, 2),
        pitch=0,
        bearing=0,
    )
    scale = MapScale(
        zoom=round(zoom, 2),
        km_per_px=km_per_px,
        width_km=width_px * km_per_px,
        height_km=height_px * km_per_px,
        hex_px=hex_px,
        resolution=resolution,
        suggested_resolution=suggested,
    )
    return view, scale


def view_for_cells(cells: list[str]) -> pdk.ViewState:
    """The view of :func:`fit_view` for a map of the default size."""
    return fit_view(cells)[0]


def centre(cell: str) -> list[float]:
    """The cell's centre as [longitude, latitude] (deck.gl's position order)."""
    lat, lng = h3.cell_to_latlng(cell)
    return [float(lng), float(lat)]


def hexagon_layers(
    records: list[dict],
    *,
    layer_id: str,
    pickable: bool,
    cell_col: str = "cell",
    line_color: tuple[int, ...] | None = (255, 255, 255, 140),
    dots: bool = True,
) -> list[pdk.Layer]:
    """An H3 hexagon layer and, with ``dots``, a dot at each centre in the same colour on top.

    ``records`` carry ``cell_col``, ``fill`` ([r, g, b, a]) and, with ``dots``, ``pos``
    ([lon, lat]). The dot's radius is 0.8 of the hexagon's edge (inside the hexagon) but never
    under ``MIN_POINT_PIXELS``, so hexagons smaller than a pixel still show; where hexagons are
    wide (:func:`needs_dots`) the dots would hide inside them and are left out, as is the
    outline without a ``line_color``: each layer costs a software-rendered frame real time.
    Ids: ``layer_id`` and ``layer_id-points``.
    """
    if not records:
        return []
    hexagons = pdk.Layer(
        "H3HexagonLayer",
        data=records,
        id=layer_id,
        get_hexagon=cell_col,
        get_fill_color="fill",
        get_line_color=list(line_color or ()),
        line_width_min_pixels=1,
        stroked=line_color is not None,
        filled=True,
        extruded=False,
        pickable=pickable,
        auto_highlight=pickable,
    )
    if not dots:
        return [hexagons]
    edge_m = float(h3.average_hexagon_edge_length(h3.get_resolution(records[0][cell_col]), "m"))
    return [
        hexagons,
        pdk.Layer(
            "ScatterplotLayer",
            data=records,
            id=f"{layer_id}-{POINTS_SUFFIX}",
            get_position="pos",
            get_fill_color="fill",
            get_radius=0.8 * edge_m,
            radius_min_pixels=MIN_POINT_PIXELS,
            stroked=False,
            filled=True,
            pickable=pickable,
        ),
    ]


def needs_dots(hex_px: float) -> bool:
    """Whether hexagons ``hex_px`` wide on screen also need a dot each to stay visible: below
    :data:`DOTS_BELOW_PX` (a few dot widths). Wider ones show themselves.

    >>> needs_dots(54.0), needs_dots(12.0), needs_dots(0.3)
    (False, True, True)
    """
    return hex_px < DOTS_BELOW_PX


def density_layers(
    density: pd.DataFrame,
    *,
    cell_col: str = "cell",
    dots: bool = True,
    under: Iterable[str] = (),
) -> list[pdk.Layer]:
    """The data's own record density over all slots: faint grey hexagons (and, with ``dots``,
    dots), darker where there are more records (log scale). Not pickable, not outlined; drawn
    under the coloured hexagons.

    ``density`` has one row per cell with ``cell_col`` and ``records``. The cells of ``under``
    (the map's own hexagons, drawn opaque above, or its dots where those are wider) are left out,
    keeping the others' shades: they would be hidden. No layer is left when every cell is under
    the map's own (the demo city's first map).
    """
    if density.empty:
        return []
    counts = density["records"].to_numpy(dtype=float)
    logs = np.log1p(counts)
    lo, hi = float(logs.min()), float(logs.max())
    share = (logs - lo) / (hi - lo) if hi > lo else np.ones_like(logs)
    alpha = np.rint(45 + 95 * share).astype(int)
    hidden = {str(c) for c in under}
    records = [
        {"cell": str(c), "fill": [*DENSITY_COLOR, int(a)]}
        | ({"pos": centre(str(c))} if dots else {})
        for c, a in zip(density[cell_col], alpha, strict=True)
        if str(c) not in hidden
    ]
    if not records:
        return []
    return hexagon_layers(
        records, layer_id=DENSITY_LAYER_ID, pickable=False, line_color=None, dots=dots
    )


def pick_layer_id(token: str | int = "") -> str:
    """The pickable layer's id for a click token ('hexagons' or 'hexagons-3')."""
    return f"{HEX_LAYER_ID}-{token}" if token != "" else HEX_LAYER_ID


def deck(
    layers: list[pdk.Layer],
    view: pdk.ViewState,
    *,
    tooltip: dict | None,
    basemap: bool = False,
) -> pdk.Deck:
    """A Deck with the page-friendly controller; Carto's light tiles only when ``basemap``."""
    style = {"map_provider": "carto", "map_style": BASEMAP_STYLE} if basemap else {}
    return pdk.Deck(
        layers=layers,
        initial_view_state=view,
        views=[pdk.View(type="MapView", controller=dict(CONTROLLER))],
        tooltip=tooltip,
        **({"map_provider": None} if not basemap else style),
    )


def hexagon_map(
    df: pd.DataFrame,
    *,
    value_col: str,
    value_label: str,
    cell_col: str = "cell",
    tooltip_cols: dict[str, str] | None = None,
    selected_cell: str | None = None,
    n_bins: int = len(PALETTE),
    density: pd.DataFrame | None = None,
    basemap: bool = False,
    pick_token: str | int = "",
    width_px: int = MAP_WIDTH_PX,
    height_px: int = MAP_HEIGHT_PX,
) -> HexMap:
    """Build the hexagon map: one H3 hexagon per row of ``df``, coloured by ``value_col``.

    Parameters
    ----------
    df : one row per cell; must hold ``cell_col`` (H3 index strings) and ``value_col``.
    value_label : the legend's and tooltip's name for the value ("records", ...).
    tooltip_cols : extra ``{column: label}`` shown in the tooltip.
    selected_cell : drawn with a red outline on a separate, non-pickable layer; the fills keep
        the legend's colours.
    density : one row per cell (``cell_col``, ``records``) over all slots: the faint context layer
        (only where ``df`` has no hexagon of its own).
    basemap : Carto's light tiles under everything (needs the internet; off by default).
    pick_token : part of the pickable layers' ids (see the module docstring).
    width_px, height_px : the chart's size, for fitting the view.

    Returns
    -------
    HexMap whose pickable layers' ids start with ``HEX_LAYER_ID``, so
    ``st.pydeck_chart(..., on_select=...)`` reports the clicked row.
    """
    tooltip_cols = dict(tooltip_cols or {})
    for column in (cell_col, value_col, *tooltip_cols):
        if column not in df.columns:
            raise KeyError(f"hexagon_map: column {column!r} is missing")
    view, scale = fit_view(
        df[cell_col].astype(str).tolist(), width_px=width_px, height_px=height_px
    )
    dots = needs_dots(scale.hex_px)
    values = df[value_col].to_numpy(dtype=float)
    idx, legend = color_bins(values, n_bins=n_bins)
    bin_colors = [e.color for e in legend]
    records = []
    for i, row in enumerate(df.to_dict("records")):
        color = bin_colors[idx[i]] if idx[i] >= 0 else NO_DATA_COLOR
        record = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        record["fill"] = [int(c) for c in color] + [FILL_ALPHA]
        if dots:
            record["pos"] = centre(str(row[cell_col]))
        record["value_text"] = _fmt(values[i])
        for column in tooltip_cols:
            v = row[column]
            record[f"{column}_text"] = (
                _fmt(float(v)) if isinstance(v, int | float | np.number) else str(v)
            )
        records.append(record)
    lines = [f"{cell_col}: {{{cell_col}}}", f"{value_label}: {{value_text}}"]
    lines += [
        f"{label}: {{{column}_text}}"
        for column, label in tooltip_cols.items()
        if column != value_col
    ]
    layers = (
        density_layers(density, cell_col=cell_col, dots=dots, under=df[cell_col].astype(str))
        if density is not None
        else []
    )
    layers += hexagon_layers(
        records, layer_id=pick_layer_id(pick_token), pickable=True, cell_col=cell_col, dots=dots
    )
    if selected_cell is not None:
        layers.append(
            pdk.Layer(
                "H3HexagonLayer",
                data=[{"cell": selected_cell}],
                id=SELECTED_LAYER_ID,
                get_hexagon="cell",
                filled=False,
                stroked=True,
                extruded=False,  # H3HexagonLayer extrudes by default, and then draws no outline
                get_line_color=list(SELECTED_COLOR) + [255],
                line_width_min_pixels=4,
                pickable=False,
            )
        )
    return HexMap(
        deck=deck(layers, view, tooltip={"text": "\n".join(lines)}, basemap=basemap),
        legend=legend,
        scale=scale,
    )
