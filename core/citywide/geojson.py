"""Every HAT as a file: a GeoJSON FeatureCollection of hexagons (RFC 7946), one per row."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.errors import HexplorerError

__all__ = ["hexagon_geojson"]


def _json_value(value):
    """A plain JSON value: numpy scalars to Python, NaN/inf/<NA> to None."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def hexagon_geojson(frame: pd.DataFrame) -> dict:
    """A GeoJSON FeatureCollection: one hexagon polygon per row of ``frame`` (column ``cell``, an
    H3 cell), every column as a property.

    Boundaries come from h3's ``cell_to_boundary`` (latitude, longitude pairs), written in
    GeoJSON's longitude, latitude order as a closed ring (RFC 7946).

    >>> import h3
    >>> cell = h3.latlng_to_cell(21.19, 72.83, 7)
    >>> fc = hexagon_geojson(pd.DataFrame({"cell": [cell], "worst_case_error": [1.5]}))
    >>> ring = fc["features"][0]["geometry"]["coordinates"][0]
    >>> len(ring), ring[0] == ring[-1], round(ring[0][0]), fc["features"][0]["properties"]["cell"]
    (7, True, 73, '8742d9d69ffffff')
    """
    import h3

    if "cell" not in frame.columns:
        raise HexplorerError("The table has no 'cell' column to draw hexagons from.")
    features = []
    columns = list(frame.columns)
    for values in frame.itertuples(index=False, name=None):
        props = {col: _json_value(v) for col, v in zip(columns, values, strict=True)}
        cell = str(props["cell"])
        try:
            boundary = h3.cell_to_boundary(cell)
        except (ValueError, TypeError):  # h3 raises H3CellInvalidError (a ValueError)
            raise HexplorerError(f"cell={cell!r} is not an H3 cell.") from None
        ring = [[float(lng), float(lat)] for lat, lng in boundary]
        ring.append(ring[0])
        features.append(
            {
                "type": "Feature",
                "geometry": {"type": "Polygon", "coordinates": [ring]},
                "properties": props,
            }
        )
    return {"type": "FeatureCollection", "features": features}
