"""One hexagon's two ε charts at every stop of the ε slider: the frames document.

The browser repaints the distribution chart and the worst case against ε on each ε step from
this document, before the rerun (which follows once the user pauses) redraws them from the
page. For every stop of the slider (:func:`dashboard.hexagon.state.stops_with`, in order) and
each chart, a *patch*: the plotly paths whose values differ between stops, with this stop's
values (:func:`dashboard.common.view.frames.apply` is the rule). Applying stop k's patch to the
figure the page drew at any stop gives the figure the page draws at stop k; a stop whose figure
has another shape (a mechanism without releases there: another number of traces) gets ``None``
and the browser waits for the rerun. The numbers come from the functions the page's figures
come from: the same seeded simulations (:func:`dashboard.hexagon.compute.simulate`, which
the page's cached ``simulated`` calls; uncached here so 271 stops do not push the page's entries
out), :func:`release_sets`, :func:`charts.ridges <dashboard.hexagon.charts.ridges>` and the
cached worst case against ε. Only the paths that vary are sent (:func:`varying`): on the
usual stops the worst-case chart's patch is its ε line alone. The stops are taken
:data:`CHUNK` at a time: their releases clamped and counted at once (:func:`release_sets_each`)
and their ridges in one numpy pass (:func:`charts.ridges_each
<dashboard.hexagon.ridges.ridges_each>`), the same numbers as stop by stop.

The page builds its distribution chart's sets with :func:`release_sets` too, and the contract
test compares the page's own figures with the document's patches. :func:`new_visitor` gives the
document's arguments for a new visitor's view (the benchmark's and the pinned test's).

The page calls :func:`hexagon_frames_url` on each run; the document is computed on the first GET
of that path, in a worker thread (:mod:`dashboard.common.view.frames`).
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.hat import HatData
from core.mechanisms import MECHANISMS, RULES
from core.postprocess import clamp_mean
from dashboard.common.session import state
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec
from dashboard.common.source.units import Units
from dashboard.common.view import frames
from dashboard.hexagon import charts
from dashboard.hexagon import compute as hx
from dashboard.hexagon import state as hs

DISTRIBUTION = "chart_distribution"
WORST_CASE = "chart_worst_case_vs_epsilon"
"""The liveplot element keys of the two charts (``"chart_" + ui.chart``'s key)."""

Patch = dict[str, Any]

CHUNK = 32
"""Stops whose releases are held at once for :func:`charts.ridges_each` (one numpy pass for
their ridges): 32 × 5 mechanisms × 2,000 runs is 2.6 MB of doubles."""


def release_sets(
    sims: Sequence[hx.Simulated], *, upper: float, true_mean: float, within: float, raw: bool
) -> list[charts.ReleaseSet]:
    """The distribution chart's sets: each simulation's releases (clamped into [0, U] unless
    ``raw``) and their share within ±``within`` of the true mean; a mechanism that cannot run
    here is left out."""
    sets = []
    for sim in sims:
        values = hx.releases_of(sim, upper, raw=raw)
        if values is None:
            continue
        sets.append(_release_set(sim, values, float(np.mean(np.abs(values - true_mean) <= within))))
    return sets


def _release_set(sim: hx.Simulated, values: np.ndarray, share: float) -> charts.ReleaseSet:
    return charts.ReleaseSet(
        mechanism=sim.mechanism,
        title=MECHANISMS[sim.mechanism].title,
        values=values,
        share_within=share,
    )


def release_sets_each(
    sims: Sequence[Sequence[hx.Simulated]],
    *,
    upper: float,
    true_mean: float,
    within: float,
    raw: bool,
) -> list[list[charts.ReleaseSet]]:
    """``[release_sets(s, ...) for s in sims]``, the same numbers, with the releases of every
    simulation of one length clamped and counted within ±``within`` in one numpy pass (the
    frames document's 32 stops × mechanisms at a time)."""
    runs = [(i, sim) for i, group in enumerate(sims) for sim in group if sim.estimates is not None]
    by_length: dict[int, list[int]] = {}
    for j, (_i, sim) in enumerate(runs):
        by_length.setdefault(len(sim.estimates), []).append(j)  # type: ignore[arg-type]
    values: list[Any] = [None] * len(runs)
    shares: list[float] = [0.0] * len(runs)
    for at in by_length.values():
        stack = np.stack([np.asarray(runs[j][1].estimates) for j in at])
        if not raw:  # np.stack made a copy: raw releases are the simulation's numbers as they are
            stack = clamp_mean(stack, upper)
        within_share = np.mean(np.abs(stack - true_mean) <= within, axis=1).tolist()
        for row, j in enumerate(at):
            values[j], shares[j] = stack[row], within_share[row]
    out: list[list[charts.ReleaseSet]] = [[] for _ in sims]
    for (i, sim), v, share in zip(runs, values, shares, strict=True):
        out[i].append(_release_set(sim, v, share))
    return out


def _floats(a: Any) -> list[float | None]:
    """An array as JSON numbers (NaN and ±inf as null: JSON has neither, plotly draws a gap)."""
    v = np.asarray(a, dtype=float)
    out: list[float | None] = v.tolist()
    if not np.isfinite(v).all():
        out = [x if np.isfinite(x) else None for x in v.tolist()]
    return out


def distribution_patch(
    sets: Sequence[charts.ReleaseSet],
    *,
    true_mean: float,
    within: float,
    epsilon: float,
    raw: bool,
    units: Units,
    ridges: charts.Ridges | None = None,
) -> Patch:
    """What changes in :func:`charts.releases_distribution` from one ε to another: each
    ridge's x, height and shares, the x axis's range, the title and the share above each ridge.
    ``ridges``: :func:`charts.ridges` of ``sets`` if already computed (:func:`frames_of` takes
    them for many stops at once)."""
    r = ridges if ridges is not None else charts.ridges(sets, true_mean=true_mean, within=within)
    x = _floats(r.x)
    patch: Patch = {
        "layout.title.text": charts.distribution_title(epsilon, raw=raw),
        "layout.xaxis.range": [r.lo, r.hi],
    }
    for i, s in enumerate(sets):
        patch[f"data[{i + 1}].x"] = x
        patch[f"data[{i + 1}].y"] = _floats(r.ys[i])
        patch[f"data[{i + 1}].customdata"] = _floats(r.shares[i])
        patch[f"layout.annotations[{i}].text"] = charts.share_note(s, within=within, units=units)
    return patch


def worst_case_curves(curves: pd.DataFrame, *, target: float | None) -> Patch:
    """The curves of :func:`charts.worst_case_vs_epsilon` (and the target line's ends) as
    patch values: their ε range reaches 100 at the stops past 10, so they vary only when some
    stop is past 10. The ε line (``layout.shapes[0]``) and the height (the distribution chart's,
    beside it) are the other values of that chart that may change with ε."""
    names = [c for c in curves.columns if c in MECHANISMS]
    eps = curves["epsilon"]
    parts: Patch = {}
    for i, name in enumerate(names):
        parts[f"data[{i}].x"] = _floats(eps)
        parts[f"data[{i}].y"] = _floats(curves[name])
    if target is not None:
        parts[f"data[{len(names)}].x"] = [float(eps.min()), float(eps.max())]
    return parts


def varying(parts: Sequence[Patch]) -> list[Patch]:
    """Each stop's values of the paths whose value is not the same at every stop.

    >>> varying([{"a": 1, "b": [2]}, {"a": 1, "b": [3]}])
    [{'b': [2]}, {'b': [3]}]
    """
    if not parts:
        return []
    first = parts[0]
    keep = [p for p in first if any(q[p] != first[p] for q in parts[1:])]
    return [{p: q[p] for p in keep} for q in parts]


def _structure(sets: Sequence[charts.ReleaseSet]) -> tuple[str, ...]:
    return tuple(s.mechanism for s in sets)


def document(
    spec: DataSpec,
    hat: str,
    *,
    stops: Sequence[float],
    chosen: Sequence[str],
    m_ub: int | None,
    seed: int,
    n_runs: int,
    within: float,
    raw: bool,
    units: Units,
    noise_measure: str,
    target: float | None,
    target_mechanism: str,
) -> dict[str, Any]:
    """The frames document of One hexagon's two ε charts on the HAT ``hat`` of ``spec``.

    Arguments as the page has them: ``m_ub`` None is each mechanism's own rule (the page's
    override off); ``target`` the target error (None: none) and ``target_mechanism`` the
    mechanism its plan is for. The numbers are the page's: :func:`frames_of` over the HAT's
    data, the target plan's ε and the cached worst case against ε.
    """
    target_eps = None
    if target is not None:
        target_eps = hx.target_plan(
            spec, hat, float(target), target_mechanism, noise_measure
        ).epsilon
    return frames_of(
        compute.hat(spec, hat),
        stops=stops,
        chosen=chosen,
        m_ub=m_ub,
        seed=seed,
        n_runs=n_runs,
        within=within,
        raw=raw,
        units=units,
        target=target,
        target_epsilon=target_eps,
        curves_to=lambda upto: hx.worst_case_vs_epsilon(spec, hat, noise_measure, upto),
    )


def new_visitor(epsilon: float = 1.0) -> dict[str, Any]:
    """:func:`document`'s arguments (all but the data and the HAT) for the view a new visitor
    sees at ``epsilon``: the sidebar's and One hexagon's defaults, the mechanisms in the
    registry's order as the page takes them, no m_UB override, no target."""
    d = state.DEFAULTS
    return dict(
        stops=hs.stops_with(epsilon),
        chosen=tuple(n for n in MECHANISMS if n in d[state.MECHANISMS]),
        m_ub=None,
        seed=int(d[state.SEED]),
        n_runs=state.MC_RUNS_DEFAULT,
        within=hs.DEFAULT_WITHIN,
        raw=False,
        units=Units(),
        noise_measure=str(d[state.NOISE_MEASURE]),
        target=None,
        target_mechanism=str(hs.DEFAULTS[hs.TARGET_MECHANISM]),
    )


def frames_of(
    h: HatData,
    *,
    stops: Sequence[float],
    chosen: Sequence[str],
    m_ub: int | None,
    seed: int,
    n_runs: int,
    within: float,
    raw: bool,
    units: Units,
    target: float | None,
    target_epsilon: float | None,
    curves_to: Callable[[float], pd.DataFrame],
    simulate: Callable[..., hx.Simulated] = hx.simulate,
) -> dict[str, Any]:
    """The frames document (see the module) of the HAT ``h``.

    ``{"stops": [...], "charts": {DISTRIBUTION: [patch or None, ...], WORST_CASE: [...]}}``,
    one patch per stop. ``curves_to(upto)``: the worst case against ε up to ``upto``
    (:func:`dashboard.hexagon.compute.worst_case_range` of the stop and ``target_epsilon``), as
    the page draws it. ``simulate``: the simulation, with
    :func:`dashboard.hexagon.compute.simulate`'s arguments (uncached: 271 stops × mechanisms).
    """
    dist: list[Patch | None] = []
    shapes: list[tuple[str, ...] | None] = []
    worst: list[Patch] = []
    curves: dict[float, Patch] = {}
    arrays: dict = {}  # each grouping once per m_UB, for every stop
    every = [float(e) for e in stops]
    for at in range(0, len(every), CHUNK):
        part = every[at : at + CHUNK]
        sets_of = release_sets_each(
            [
                [simulate(h, name, eps, m_ub, seed, n_runs, arrays) for name in chosen]
                for eps in part
            ],
            upper=h.upper,
            true_mean=h.true_mean,
            within=within,
            raw=raw,
        )
        drawn = iter(
            charts.ridges_each([s for s in sets_of if s], true_mean=h.true_mean, within=within)
        )
        for eps, sets in zip(part, sets_of, strict=True):
            if sets:
                patch = distribution_patch(
                    sets, true_mean=h.true_mean, within=within, epsilon=eps, raw=raw,
                    units=units, ridges=next(drawn),
                )  # fmt: skip
                dist.append(patch)
                shapes.append(_structure(sets))
            else:  # the page draws no distribution chart at all
                dist.append(None)
                shapes.append(None)
    for eps, shape in zip(every, shapes, strict=True):
        upto = hx.worst_case_range(eps, target_epsilon)
        if upto not in curves:  # one or two ranges: their lists made once
            curves[upto] = worst_case_curves(curves_to(upto), target=target)
        worst.append(
            {
                "layout.shapes[0].x0": eps,
                "layout.shapes[0].x1": eps,
                "layout.height": charts.distribution_height(len(shape or ())),
                **curves[upto],
            }
        )
    return {
        "stops": [float(e) for e in stops],
        "charts": {DISTRIBUTION: _one_shape(dist, shapes), WORST_CASE: varying(worst)},
    }


def _one_shape(
    patches: Sequence[Patch | None], shapes: Sequence[tuple[str, ...] | None]
) -> list[Patch | None]:
    """The patches of the stops with the most common set of ridges; ``None`` for the others
    (another number or order of traces: a patch cannot add or remove one)."""
    seen = Counter(s for s in shapes if s is not None)
    if not seen:
        return [None] * len(patches)
    common = seen.most_common(1)[0][0]
    at = [i for i, s in enumerate(shapes) if s == common]
    kept = varying([p for p, s in zip(patches, shapes, strict=True) if s == common and p])
    out: list[Patch | None] = [None] * len(patches)
    for i, p in zip(at, kept, strict=True):
        out[i] = p
    return out


@functools.lru_cache(maxsize=64)
def _stops_key(stops: tuple[float, ...]) -> str:
    """The stops as a key part, made once per distinct list (on every ε step the page passes
    the same 271 stops: their repr cost ~40 µs a step)."""
    return hashlib.sha256(repr(tuple(float(e) for e in stops)).encode()).hexdigest()


def frames_key(
    spec: DataSpec,
    hat: str,
    *,
    stops: Sequence[float],
    chosen: Sequence[str],
    m_ub: int | None,
    seed: int,
    n_runs: int,
    within: float,
    raw: bool,
    units: Units,
    noise_measure: str,
    target: float | None,
    target_mechanism: str,
) -> str:
    """Everything that changes either chart at some stop, as :mod:`dashboard.common.cache`
    keys it: the data by its content key, the registered mechanisms and rules by name."""
    return repr(
        (
            "hexagon-frames-1",
            tuple(MECHANISMS),
            tuple(RULES),
            spec.key(),
            hat,
            _stops_key(tuple(stops)),
            tuple(chosen),
            m_ub,
            seed,
            n_runs,
            float(within),
            bool(raw),
            (units.value, units.user),
            noise_measure,
            None if target is None else float(target),
            target_mechanism if target is not None else None,
        )
    )


def hexagon_frames_url(
    spec: DataSpec,
    hat: str,
    *,
    stops: Sequence[float],
    chosen: Sequence[str],
    m_ub: int | None,
    seed: int,
    n_runs: int,
    within: float,
    raw: bool,
    units: Units,
    noise_measure: str,
    target: float | None,
    target_mechanism: str,
) -> str:
    """The path of this view's frames document (computed on its first GET, not here).

    Arguments as :func:`document` takes them. The font size is not one: no patch holds it (a
    presenter's figures take the same patches)."""
    args: dict[str, Any] = dict(
        stops=tuple(stops),
        chosen=tuple(chosen),
        m_ub=m_ub,
        seed=seed,
        n_runs=n_runs,
        within=float(within),
        raw=bool(raw),
        units=units,
        noise_measure=noise_measure,
        target=None if target is None else float(target),
        target_mechanism=target_mechanism,
    )
    key = frames_key(spec, hat, **args)
    return frames.url(key, lambda: document(spec, hat, **args))
