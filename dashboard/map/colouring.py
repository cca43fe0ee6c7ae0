"""The error map's colouring at one ε: values, trust classes, colours and hover texts.

One function, :func:`drawn_at`, for the page (the map of the current ε) and for the frames
document (the map of every stop of the ε slider, :mod:`dashboard.map.frames`), so a stop the
browser drew from the document is the map the rerun then brings. No st.* calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from core.citywide.derived import TRUST_LABELS
from core.citywide.errors import ErrorsAt
from dashboard.common.source import units
from dashboard.common.source.compute import DataSpec
from dashboard.map import compute as mc
from dashboard.map import scales


def metric_labels(u: units.Units) -> dict[str, str]:
    """'Colour by' options in words, with the data's unit."""
    return {
        "records": "records",
        "users": u.users,
        "true_mean": f"true mean ({u.value})",
        "error": f"error at ε ({u.value})",
        "relative_error": "relative error",
        "within_target": "within target ±X",
        "release": "one noisy release",
    }


@dataclass(frozen=True)
class Look:
    """Everything but ε that the error map's colours and hover texts depend on."""

    metric: str
    mechanism: str
    target: float
    noise_measure: str
    auto_scale: bool
    seed: int
    units: units.Units


class Drawn(NamedTuple):
    """The error map at one ε: the errors, the noisy release (metric "release"), what is
    shown, its colour scale, the hexagons' colours and their ε-dependent hover texts."""

    at: ErrorsAt
    noisy: np.ndarray | None
    shown: mc.Shown
    scale: scales.ColourScale
    styled: scales.Styled
    texts: dict[str, np.ndarray]


def drawn_at(spec: DataSpec, slot: str, look: Look, epsilon: float) -> Drawn:
    """The error map of ``slot`` at ``epsilon`` (the slot's staircase table computed once,
    :func:`dashboard.map.compute.table`)."""
    metric = look.metric
    at = mc.errors_at(spec, slot, look.noise_measure, look.mechanism, epsilon)
    noisy = (
        mc.release(spec, slot, look.mechanism, epsilon, look.seed) if metric == "release" else None
    )
    base = mc.base(spec, slot)
    sh = mc.shown(metric, at, base, target=look.target, upper=spec.upper, noisy=noisy)
    scale = scale_for(metric, sh.values, look.target, spec.upper, look.units, look.auto_scale)
    classes = None if metric == "within_target" else sh.classes
    styled = scales.style(sh.values, scale, classes)
    return Drawn(at, noisy, sh, scale, styled, hover_texts(metric, sh.values, sh, look.units))


def side_texts(drawn: Drawn, look: Look, epsilon: float, upper: float) -> dict[str, list[str]]:
    """What the page says around the error map at ``epsilon``, in the page's order: the
    ``panel`` beside it (the share of hexagons within the target, the share of records in
    them, the caption naming ε) and the ``legend`` below it (the hexagons drawn apart, with
    their counts; none when the colouring is "within target")."""
    w = drawn.shown.within
    legend = (
        []
        if look.metric == "within_target"
        else scales.trust_legend(drawn.shown.classes, look.target, upper, look.units)
    )
    return {
        "panel": [
            f"{w.share_hexagons:.0%}",
            f"{w.share_records:.0%}",
            f"ε = {epsilon:g}, {look.mechanism}, {look.noise_measure} noise measure.",
        ],
        "legend": legend,
    }


def scale_for(metric: str, values: np.ndarray, target: float, upper: float, u, auto: bool):
    """The colour scale of ``metric``: fixed (anchored on the target or U), or ``auto``
    (bins from the values shown)."""
    title = metric_labels(u)[metric]
    if metric == "within_target":
        return scales.trust_scale()
    if auto:
        return scales.auto_scale(values, title=title)
    if metric == "error":
        return scales.error_scale(target, u)
    if metric == "relative_error":
        return scales.relative_scale()
    return scales.value_scale(upper, u)


def hover_texts(metric: str, values, sh: mc.Shown, u) -> dict[str, np.ndarray]:
    """Tooltip texts of every hexagon that depend on ε, formatted array-wise (numpy's
    ``char.mod``)."""
    labels = np.array(TRUST_LABELS)
    values = np.asarray(values, dtype=float)
    if metric == "relative_error":
        value_text = np.where(
            np.isfinite(values), np.char.mod("%.1f %%", 100 * np.nan_to_num(values)), "–"
        )
    elif metric == "within_target":
        value_text = labels[sh.classes]
    else:
        value_text = np.char.mod("%.2f", values)  # the unit is in the tooltip's label
    out = {
        "m": np.where(sh.m_ub >= 0, sh.m_ub.astype(str), "–"),
        "e": np.char.mod("%.2f", sh.error),
        "k": labels[sh.classes],
    }
    if metric != "error":  # the error map's value is the error itself: not sent twice
        out["v"] = value_text
    return out
