"""The error map at every stop of its ε slider: the frames document the browser recolours from.

For each stop (:func:`dashboard.map.state.stops_with`, in order), the hexagons' fills (r, g, b,
flat, in the slot's order: the rows' order on the map), trust codes ``q``, the hover texts that
depend on ε, and the fingerprint of the colours (what ``layers.records`` names them by). All
from :func:`dashboard.map.colouring.drawn_at`, the function the page draws its map with, so the
map a stop shows before the rerun is the map the rerun brings. The page calls :func:`url` on
each run; the document is computed on its first GET, in a worker thread
(:mod:`dashboard.common.view.frames`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.mechanisms import MECHANISMS
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import frames
from dashboard.map import layers
from dashboard.map.colouring import Look, drawn_at


def document(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> dict[str, Any]:
    """``{"stops", "fill", "q", "texts": {key: [per stop]}, "colours"}``, one entry per stop."""
    fills, codes, colours = [], [], []
    texts: dict[str, list] = {}
    for eps in stops:
        drawn = drawn_at(spec, slot, look, float(eps))
        fill = drawn.styled.fill[:, :3]
        fills.append(fill.astype(np.uint8).ravel().tolist())
        codes.append(drawn.styled.code.tolist())
        colours.append(layers.fingerprint(fill.astype(np.uint8), drawn.styled.code.astype(np.int8)))
        for key, values in drawn.texts.items():
            texts.setdefault(key, []).append(np.asarray(values).tolist())
    return {
        "stops": [float(e) for e in stops],
        "fill": fills,
        "q": codes,
        "texts": texts,
        "colours": colours,
    }


def key(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> str:
    """Everything the document depends on (the data by its content key)."""
    return repr(
        ("map-frames-1", tuple(MECHANISMS), spec.key(), slot, look, tuple(map(float, stops)))
    )


def url(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> str:
    """The document's address (registered, not computed: see the module doc)."""
    stops = [float(e) for e in stops]
    return frames.url(key(spec, slot, look, stops), lambda: document(spec, slot, look, stops))
