"""pydeck builders: a DataFrame of H3 cells and values in, a ``pdk.Deck`` out (no st.* calls).

The map has **no basemap**: ``map_provider=None`` with pydeck's default style sentinel makes the
Deck JSON carry ``"mapStyle": "__MAP_STYLE__"``, which Streamlit (1.67) reads as "no basemap",
so no token, no tile server and no network are needed. (``map_style=None`` would *not* do: the
Streamlit front end then picks a Carto basemap that it fetches from the internet.)
Layer data is passed as a list of plain dicts, which serialises with pandas 3 as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd
import pydeck as pdk

HEX_LAYER_ID = "hexagons"
SELECTED_LAYER_ID = "selected-hexagon"

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


@dataclass(frozen=True, kw_only=True)
class LegendEntry:
    """One colour of the legend and the value range it stands for."""

    label: str
    color: tuple[int, int, int]
    low: float
    high: float


@dataclass(frozen=True, kw_only=True)
class HexMap:
    """A ready-to-draw map: the Deck, its legend (low to high) and the pickable layer's id."""

    deck: pdk.Deck
    legend: tuple[LegendEntry, ...]
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


def view_for_cells(cells: list[str]) -> pdk.ViewState:
    """A view centred on the cells' bounding box, zoomed so that all of them fit (roughly)."""
    if not cells:
        return pdk.ViewState(latitude=0.0, longitude=0.0, zoom=1)
    latlng = np.array([h3.cell_to_latlng(c) for c in cells])
    lat_lo, lon_lo = latlng.min(axis=0)
    lat_hi, lon_hi = latlng.max(axis=0)
    extent = max(lat_hi - lat_lo, (lon_hi - lon_lo) * np.cos(np.radians((lat_lo + lat_hi) / 2)))
    extent = max(extent, h3.average_hexagon_edge_length(h3.get_resolution(cells[0]), "km") / 50)
    zoom = float(np.clip(np.log2(360.0 / extent) - 1.0, 1.0, 16.0))
    return pdk.ViewState(
        latitude=float((lat_lo + lat_hi) / 2),
        longitude=float((lon_lo + lon_hi) / 2),
        zoom=round(zoom, 2),
        pitch=0,
        bearing=0,
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
) -> HexMap:
    """Build the hexagon map: one H3 hexagon per row of ``df``, coloured by ``value_col``.

    Parameters
    ----------
    df : one row per cell; must hold ``cell_col`` (H3 index strings) and ``value_col``.
    value_label : the legend's and tooltip's name for the value ("records", ...).
    tooltip_cols : extra ``{column: label}`` shown in the tooltip.
    selected_cell : drawn with a red outline on a second, non-pickable layer.

    Returns
    -------
    HexMap with a Deck that needs no basemap, whose hexagon layer (id ``HEX_LAYER_ID``) is
    pickable, so ``st.pydeck_chart(..., on_select="rerun")`` reports the clicked row.
    """
    tooltip_cols = dict(tooltip_cols or {})
    for column in (cell_col, value_col, *tooltip_cols):
        if column not in df.columns:
            raise KeyError(f"hexagon_map: column {column!r} is missing")
    values = df[value_col].to_numpy(dtype=float)
    idx, legend = color_bins(values, n_bins=n_bins)
    bin_colors = [e.color for e in legend]
    records = []
    for i, row in enumerate(df.to_dict("records")):
        color = bin_colors[idx[i]] if idx[i] >= 0 else NO_DATA_COLOR
        record = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        record["fill"] = [int(c) for c in color] + [190]
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
    layers = [
        pdk.Layer(
            "H3HexagonLayer",
            data=records,
            id=HEX_LAYER_ID,
            get_hexagon=cell_col,
            get_fill_color="fill",
            get_line_color=[255, 255, 255, 200],
            line_width_min_pixels=1,
            stroked=True,
            filled=True,
            extruded=False,
            pickable=True,
            auto_highlight=True,
        )
    ]
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
    deck = pdk.Deck(
        layers=layers,
        initial_view_state=view_for_cells(df[cell_col].astype(str).tolist()),
        map_provider=None,
        tooltip={"text": "\n".join(lines)},
    )
    return HexMap(deck=deck, legend=legend)
