"""One fixed colour per mechanism, the same on every chart and page, read from the registry.

Each :class:`core.mechanisms.Mechanism` carries its colour (keyed by its *name*, never by its
position in a selection, so a mechanism keeps its colour whatever else is chosen); the registry
refuses two mechanisms with one colour. The palette is colour-blind-safe (Okabe–Ito first, then
Paul Tol's muted scheme). A name the registry does not know (say, in an old shared view) gets a
stable colour from the palette by hash. Rule marks (median, m^(L), ...) take their rule's colour.
"""

from __future__ import annotations

import zlib

from core.mechanisms import MECHANISMS, PALETTE, RULES

__all__ = ["PALETTE", "mechanism_colour", "rule_colour"]


def mechanism_colour(name: str) -> str:
    """The mechanism's fixed colour (hex), from ``core.mechanisms.MECHANISMS``."""
    mech = MECHANISMS.get(name)
    if mech is not None:
        return mech.colour
    return PALETTE[zlib.crc32(str(name).encode()) % len(PALETTE)]


def rule_colour(label: str, default: str = "#444444") -> str:
    """The colour of an m_UB rule's mark, by the rule's name or label (``"m^(L)"``)."""
    for rule in RULES.values():
        if label in (rule.name, rule.label):
            return rule.colour
    return default
