"""One fixed colour per mechanism, the same on every chart and page.

Keyed by the mechanism's *name*, never by its position in a selection, so a mechanism keeps its
colour whatever else is chosen. The palette is colour-blind-safe (Okabe–Ito first, then Paul Tol's
muted scheme); a name without an assigned colour gets a stable one from the palette by hash.
"""

from __future__ import annotations

import zlib

PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
    "#000000", "#F0E442", "#332288", "#882255", "#44AA99", "#999933",
    "#AA4499", "#117733", "#88CCEE", "#DDCC77",
)  # fmt: skip

_ASSIGNED: dict[str, str] = {
    "baseline": "#000000",
    "arrayavg-wrap": "#56B4E9",
    "arrayavg-best": "#0072B2",
    "levy-wrap": "#88CCEE",
    "quantile-fixed-wrap": "#DDCC77",
    "levy": "#CC79A7",
    "quantile-fixed": "#E69F00",
    "quantile-eps": "#D55E00",
    "opt-arrayavg": "#009E73",
    "opt-arrayavg-convex": "#44AA99",
    "opt-bounding": "#882255",
    "akmv": "#999933",
}


def mechanism_colour(name: str) -> str:
    """The mechanism's fixed colour (hex)."""
    if name in _ASSIGNED:
        return _ASSIGNED[name]
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]
