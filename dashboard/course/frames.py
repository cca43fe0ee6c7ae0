"""The course's ε charts at every ε stop: the frames documents of steps 1, 4, 5 and 6.

In the steps with an ε control the browser draws the slider (:mod:`dashboard.common.view.slider`)
and repaints the step's chart on each ε step from a document fetched once
(:mod:`dashboard.common.view.frames`), before the rerun that follows the user's pause. For every
stop of :data:`core.course.EPSILON_GRID` the document holds one *patch* of the step's chart: the
plotly paths whose values change with ε (the learner's point, the histogram's bars, the title
that carries the step's numbers), with that stop's values. Applying stop k's patch to the
figure the step draws at any stop gives the figure it draws at stop k (the contract test,
``tests/dashboard/course/test_course_frames.py``).

The values come from the helpers the step's figure is built from (:mod:`dashboard.course.charts`:
``odds_marker``, ``histogram``, the titles; :mod:`dashboard.course.compute`: ``share_of``,
``optimal_of``, uncached so 180 stops do not push the page's entries out). Step 6's chart moves
its point and title (ε·max G_ℓ); its metrics, CHOP-USER's K·ε among them, follow with the rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core import course
from core.hat import HatData
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec
from dashboard.common.source.units import Units
from dashboard.common.view import frames
from dashboard.course import charts
from dashboard.course import compute as cc

ODDS = "chart_course_odds"
RELEASES = "chart_course_releases"
STAIRCASE = "chart_course_staircase"
COMPOSITION = "chart_course_composition"
"""The liveplot element keys of the four ε charts (``"chart_" + ui.chart``'s key)."""

Patch = dict[str, Any]


def odds_patch(epsilon: float) -> Patch:
    """Step 1's chart at ε: the learner's point and the title (the factor e^ε)."""
    x, y = charts.odds_marker(epsilon)
    return {"data[1].x": x, "data[1].y": y, "layout.title.text": charts.odds_title(epsilon)}


def releases_patch(
    values: np.ndarray, *, epsilon: float, share: float, within: float, u: Units
) -> Patch:
    """Step 4's chart at ε: the histogram's bars and the title (the share within ±X)."""
    x, counts, width = charts.histogram(values)
    return {
        "data[0].x": np.asarray(x, dtype=float).tolist(),
        "data[0].y": np.asarray(counts).tolist(),
        "data[0].width": width,
        "layout.title.text": charts.releases_title(epsilon, share, within, u),
    }


def staircase_patch(epsilon: float, m: int, error: float, u: Units) -> Patch:
    """Step 5's chart at ε: the learner's point on the staircase and the title."""
    return {
        "data[1].x": [float(epsilon)],
        "data[1].y": [int(m)],
        "layout.title.text": charts.staircase_title(epsilon, m, error, u),
    }


def composition_patch(epsilon: float, max_grids: int, budget: float, u: Units) -> Patch:
    """Step 6's chart at ε: the learner's point on the ε·max G_ℓ line and the title."""
    x, y = charts.composition_marker(epsilon, max_grids)
    return {
        "data[2].x": x,
        "data[2].y": y,
        "layout.title.text": charts.composition_title(epsilon, max_grids, budget, u),
    }


def document(chart: str, patches: Sequence[Patch], stops: Sequence[float]) -> dict[str, Any]:
    """``{"stops": [...], "charts": {chart: [patch, ...]}}``."""
    return {"stops": [float(e) for e in stops], "charts": {chart: list(patches)}}


def odds_document(stops: Sequence[float] = course.EPSILON_GRID) -> dict[str, Any]:
    """Step 1's document (no data in it: the same for every learner)."""
    return document(ODDS, [odds_patch(float(e)) for e in stops], stops)


def releases_document(
    h: HatData,
    *,
    within: float,
    seed: int,
    u: Units,
    stops: Sequence[float] = course.EPSILON_GRID,
) -> dict[str, Any]:
    """Step 4's document on the HAT ``h``: the simulated releases of each stop (the runs the
    page draws, :func:`dashboard.course.compute.share_of`)."""
    patches = []
    for e in stops:
        values, s = cc.share_of(h, float(e), within, seed)
        assert s.share_within is not None  # asked for: a share within ±within
        patches.append(
            releases_patch(values, epsilon=float(e), share=s.share_within, within=within, u=u)
        )
    return document(RELEASES, patches, stops)


def staircase_document(
    h: HatData, *, u: Units, stops: Sequence[float] = course.EPSILON_GRID
) -> dict[str, Any]:
    """Step 5's document on the HAT ``h``: m^(ε) and its worst case at each stop."""
    patches = [staircase_patch(float(e), *cc.optimal_of(h, float(e)), u) for e in stops]
    return document(STAIRCASE, patches, stops)


def composition_document(
    max_grids: int, budget: float, *, u: Units, stops: Sequence[float] = course.EPSILON_GRID
) -> dict[str, Any]:
    """Step 6's document for a slot whose most travelled user crossed ``max_grids`` hexagons."""
    patches = [composition_patch(float(e), max_grids, budget, u) for e in stops]
    return document(COMPOSITION, patches, stops)


def _key(*parts: Any) -> str:
    """A document's key: the data by its content key (:mod:`dashboard.common.cache`'s habit),
    the stops, and whatever else changes the chart."""
    return repr(("course-frames-1", tuple(course.EPSILON_GRID), *parts))


def odds_url() -> str:
    """The path of step 1's document (computed on its first GET, not here)."""
    return frames.url(_key("odds"), odds_document)


def releases_url(spec: DataSpec, label: str, *, within: float, seed: int, u: Units) -> str:
    """The path of step 4's document for the HAT ``label`` of ``spec``."""
    key = _key(
        "releases", spec.key(), label, float(within), int(seed), (u.value, u.user),
        course.SHARE_MECHANISM, course.SHARE_RUNS,
    )  # fmt: skip
    return frames.url(
        key,
        lambda: releases_document(compute.hat(spec, label), within=within, seed=seed, u=u),
    )


def staircase_url(spec: DataSpec, label: str, *, u: Units) -> str:
    """The path of step 5's document for the HAT ``label`` of ``spec``."""
    key = _key("staircase", spec.key(), label, (u.value, u.user))
    return frames.url(key, lambda: staircase_document(compute.hat(spec, label), u=u))


def composition_url(spec: DataSpec, slot: str, *, budget: float, u: Units) -> str:
    """The path of step 6's document for the slot ``slot`` of ``spec``."""
    key = _key("composition", spec.key(), slot, float(budget), (u.value, u.user))
    return frames.url(
        key,
        lambda: composition_document(cc.grids(spec, slot).max_grids_per_user, float(budget), u=u),
    )
