"""The error map's colours: fixed colour scales, and the trust classes drawn apart (no st.*).

Colour scales are **fixed** while ε moves, so a change of colour is a change of error: the error
scale is anchored on the planning target X (bins 0, X/4, X/2, X, 2X, 4X, above), the relative
error on fixed percentages, a noisy release on [0, U]; :func:`auto_scale` (quantile bins of the
values shown, the other maps' scale) is the toggle's alternative. Hexagons over target, and those
with no useful release (error ≥ U/2: too few users for this ε), are drawn apart: faded fill (the
colour mixed with white) and a coloured outline, each named in the legend with its count
(:func:`style`, :func:`trust_legend`). The layers and decks that carry these colours are
:mod:`dashboard.map.layers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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
