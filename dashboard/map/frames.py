"""The error map at every stop of its ε slider: the frames document the browser recolours from.

For each stop (:func:`dashboard.map.state.stops_with`, in order), the hexagons' fills (in the
slot's order: the rows' order on the map), trust codes ``q``, the hover texts that depend on ε
(fills and texts as indices into the document's distinct values), and the fingerprint of the
colours (what ``layers.records`` names them by). All come from
:func:`dashboard.map.colouring.drawn_at`, the function the page draws its map with, so the map
a stop shows before the rerun is the map the rerun brings. The page calls :func:`url` on each
run; the document is computed on its first GET, in a worker thread
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
from dashboard.map.colouring import Look, drawn_at, side_texts


def document(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> dict[str, Any]:
    """``{"stops", "palette", "fill", "q", "texts", "colours", "side"}``: per stop, every
    hexagon's fill and hover texts as indices into the document's ``palette`` and each text's
    ``values`` (a map holds a few colours and, per text, few distinct values: a third of the
    JSON of the fills and texts themselves at 10⁴ hexagons), its trust codes ``q``, its
    colours' fingerprint and what the page says around the map (its panel and its legend,
    :func:`dashboard.map.colouring.side_texts`)."""
    fills, codes, colours, side = [], [], [], []
    texts: dict[str, list[np.ndarray]] = {}
    for eps in stops:
        drawn = drawn_at(spec, slot, look, float(eps))
        side.append(side_texts(drawn, look, float(eps), spec.upper))
        fill = drawn.styled.fill[:, :3].astype(np.uint8)
        fills.append(fill)
        codes.append(drawn.styled.code.tolist())
        colours.append(layers.fingerprint(fill, drawn.styled.code.astype(np.int8)))
        for name, values in drawn.texts.items():
            texts.setdefault(name, []).append(np.asarray(values))
    palette, index = np.unique(np.stack(fills).reshape(-1, 3), axis=0, return_inverse=True)
    return {
        "stops": [float(e) for e in stops],
        "palette": palette.tolist(),
        "fill": index.reshape(len(fills), -1).tolist(),
        "q": codes,
        "texts": {name: _indexed(per_stop) for name, per_stop in texts.items()},
        "colours": colours,
        "side": side,
    }


def _indexed(per_stop: list[np.ndarray]) -> dict[str, list]:
    """One hover text at every stop: its distinct ``values`` and, per stop, each hexagon's
    ``index`` into them.

    >>> _indexed([np.array(["a", "b"]), np.array(["b", "b"])])
    {'values': ['a', 'b'], 'index': [[0, 1], [1, 1]]}
    """
    values, index = np.unique(np.stack(per_stop), return_inverse=True)
    return {"values": values.tolist(), "index": index.reshape(len(per_stop), -1).tolist()}


def key(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> str:
    """Everything the document depends on (the data by its content key)."""
    return repr(
        ("map-frames-3", tuple(MECHANISMS), spec.key(), slot, look, tuple(map(float, stops)))
    )


def url(spec: DataSpec, slot: str, look: Look, stops: Sequence[float]) -> str:
    """The document's address (registered, not computed: see the module doc)."""
    stops = [float(e) for e in stops]
    return frames.url(key(spec, slot, look, stops), lambda: document(spec, slot, look, stops))
