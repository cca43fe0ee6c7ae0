"""The Map's "Resolution: adaptive": hexagons of mixed sizes, each area at the finest resolution
whose worst-case error at ε meets the target (:mod:`core.citywide.adaptive`), coloured by that
error, with the share of records and of area within target beside the fixed resolution's.

The cover spans the data's resolution (the finest) down to ``levels`` coarser; it reads the
per-user record counts, which the papers treat as public (Learn says what a stricter reading
would cost). A click on a coarse hexagon selects it as the HAT: One hexagon then analyses the
records of its finer cells (``core.data.hat_rows``).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import streamlit as st

from core.citywide import derived
from core.citywide.derived import TRUST_LABELS
from dashboard.common.session import state
from dashboard.common.source import units
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import maps, ui
from dashboard.map import charts, layers, scales
from dashboard.map import compute as mc
from dashboard.map import state as ms


def r_min(spec: DataSpec) -> int:
    """The coarsest resolution the adaptive map may use."""
    return max(0, int(spec.resolution) - int(st.session_state[ms.ADAPTIVE_LEVELS]))


def resolution_controls(spec: DataSpec) -> str:
    """The "Resolution" choice (fixed or adaptive) and, adaptive, how far it may coarsen
    beside it. The two columns are laid out only then: the fixed map's ε step used to re-send
    them empty, and every commit of the browser's re-rendered their three blocks."""
    if st.session_state[ms.RESOLUTION_MODE] != "adaptive":  # the radio's value, as it is drawn
        _resolution_radio(st, spec)
        return str(st.session_state[ms.RESOLUTION_MODE])
    left, right = st.columns([3, 2])
    _resolution_radio(left, spec)
    with right:
        levels_slider(spec, "Coarsest resolution")
    return "adaptive"


def _resolution_radio(where, spec: DataSpec) -> None:
    r = int(spec.resolution)
    where.radio(
        "Resolution",
        options=list(ms.RESOLUTION_MODES),
        format_func=lambda m: f"fixed (res {r})" if m == "fixed" else "adaptive",
        key=ms.RESOLUTION_MODE,
        horizontal=True,
        help="Adaptive: each area at the finest resolution whose worst-case error at ε is within "
        "the target, coarser where too few users make the finest one noise (Learn → Adaptive "
        "hexagons).",
    )


def levels_slider(spec: DataSpec, label: str, *, split: bool = False) -> None:
    """How far the adaptive map may coarsen, shown as the coarsest resolution (in the split
    view, only when the map above does not show the same slider)."""
    r = int(spec.resolution)
    if split and st.session_state[ms.RESOLUTION_MODE] == "adaptive":
        st.caption(f"B coarsens down to resolution {r_min(spec)}, as the map above.")
        return
    st.select_slider(
        label,
        options=list(ms.ADAPTIVE_LEVEL_OPTIONS),
        format_func=lambda k: f"{max(0, r - k)}",
        key=ms.ADAPTIVE_LEVELS,
        help="How far the adaptive map may coarsen (an H3 step is 7 times the area).",
    )


def frame(cover) -> pd.DataFrame:
    """The cover's cells as the error map's base rows (hat, cell, users, records, true_mean,
    pos and the tooltip texts), in the cover's order."""
    summ = cover.summaries()
    totals = summ.groupby("cell", sort=False)["s"].sum()
    cells = cover.cells.astype(str).tolist()
    true_mean = totals.reindex(cells).to_numpy(dtype=float) / cover.records
    out = pd.DataFrame(
        {
            "hat": [f"{c}/{cover.slot}" for c in cells],
            "cell": cells,
            "resolution": cover.resolution,
            "users": cover.users,
            "records": cover.records,
            "true_mean": true_mean,
            "pos": [[round(x, 5) for x in maps.centre(c)] for c in cells],
        }
    )
    out["users_text"] = [f"{v:,}" for v in out["users"]]
    out["records_text"] = [
        f"{v:,} (res {r})" for v, r in zip(out["records"], out["resolution"], strict=True)
    ]
    out["true_text"] = [f"{v:,.2f}" for v in true_mean]
    return out


def shown(cover, *, target: float, upper: float) -> mc.Shown:
    """The error colouring of the cover's cells (their worst case at ε)."""
    error = cover.worst_case_error
    return mc.Shown(
        values=error,
        error=error,
        m_ub=np.full(error.size, -1),
        classes=derived.trust_classes(error, target=target, upper=upper),
        within=derived.within_target(error, cover.records, target),
    )


def rows(base: pd.DataFrame, sh: mc.Shown, scale) -> layers.Rows:
    """Layer rows of the mixed cells: always drawn as outlined hexagons (a coarse hexagon is
    wide; the finest set the dots' size elsewhere)."""
    styled = scales.style(sh.values, scale, sh.classes)
    texts = {
        "u": base["users_text"],
        "r": base["records_text"],
        "t": base["true_text"],
        "m": np.full(len(base), "–"),
        "e": np.char.mod("%.2f", sh.error),
        "k": np.array(TRUST_LABELS)[sh.classes],
    }
    return layers.records(base, styled, texts, draw="hexagons")


def mixed(deck):
    """deck.gl's H3 layer draws hexagons of one shape unless told otherwise: mixed resolutions
    need its exact polygons (``highPrecision``)."""
    for layer in deck.layers:
        if getattr(layer, "type", "") == "H3HexagonLayer":
            layer.high_precision = True
    return deck


def comparison(cover, *, target: float, u) -> str:
    """'fixed res 7: 47 % of records within ±3 km/h; adaptive 7–5: 97 %' (and the areas)."""
    p = cover.params
    fixed_r, fixed_a = cover.fixed_share_records(p.r_max), cover.fixed_share_area(p.r_max)
    return (
        f"fixed res {p.r_max}: {fixed_r:.0%} of records within ±{target:g} {u.value}; "
        f"adaptive {p.r_max}–{p.r_min}: {cover.share_records:.0%} "
        f"(area within target: {fixed_a:.0%} fixed, {cover.share_area:.0%} adaptive)"
    )


def adaptive_map(
    spec: DataSpec,
    slot: str,
    epsilon: float,
    mechanism: str,
    target: float,
    noise_measure: str,
    selected_cell: str | None,
    basemap: bool,
    on_select,
    width_px: int,
) -> None:
    """The adaptive map with its read-outs (inside the Map's fragment)."""
    u = units.current()
    cover = mc.adaptive_cover(spec, slot, noise_measure, mechanism, epsilon, target, r_min(spec))
    base = frame(cover)
    sh = shown(cover, target=target, upper=spec.upper)
    scale = scales.error_scale(target, u)
    view, _ = maps.fit_view(base["cell"].tolist(), width_px=width_px)  # coarse cells first
    deck = layers.error_deck(
        rows(base, sh, scale),
        view,
        tooltip_spec=layers.tooltip(None, u),
        selected_cell=selected_cell if selected_cell in set(base["cell"]) else None,
        pick_token=f"adaptive-{int(st.session_state.get(state.MAP_CLICKS, 0))}",
        basemap=basemap,
    )
    per_res = {int(r): int((cover.resolution == r).sum()) for r in np.unique(cover.resolution)}
    left, right = st.columns([4, 1])
    with left:
        st.pydeck_chart(
            mixed(deck),
            on_select=functools.partial(on_select, slot),
            selection_mode="single-object",
            key=state.MAP_DECK,
            height=maps.MAP_HEIGHT_PX,
            alt=f"Adaptive map of {len(base)} hexagons of resolutions "
            f"{', '.join(map(str, per_res))} in slot {slot}, coloured by the error at "
            f"ε = {epsilon:g} ({mechanism})",
        )
    with right:
        st.metric(
            f"Records within ±{target:g} {u.value}",
            f"{cover.share_records:.0%}",
            delta=f"{cover.share_records - cover.fixed_share_records(cover.params.r_max):+.0%} "
            f"vs fixed res {cover.params.r_max}",
            help=f"{cover.records_within:,} of {cover.n_records:,} records lie in adaptive "
            "hexagons whose worst-case error is within the target at this ε.",
        )
        st.metric("Area within target", f"{cover.share_area:.0%}")
        st.caption(
            "Hexagons per resolution: "
            + ", ".join(f"res {r}: {n}" for r, n in per_res.items())
            + f". ε = {epsilon:g} per hexagon, {mechanism}."
        )
    st.markdown(f"**{comparison(cover, target=target, u=u)}**")
    st.caption(
        "Each area is released at the finest resolution whose worst-case error meets the "
        "target; where no finer cover does, at a coarser one. The choice reads the public record "
        "counts, as the papers assume. Click a hexagon to open it on One hexagon."
    )
    show_legend(scale, key="map_adaptive_legend", title="error at ε")


def show_legend(scale: scales.ColourScale, *, key: str, title: str | None = None) -> None:
    """The colour scale's legend as HTML (no plotly.js in the browser for it); the report gets
    it as a plotly strip, built only when the report is downloaded."""
    ui.legend(
        scale.legend(),
        title=charts.legend_title(scale, title),
        key=key,
        figure=functools.partial(charts.legend, scale, title=title),
    )


def split_view(spec, slot, base, sh_a, texts_a, target, noise_measure, width_px) -> None:
    """The split view's "fixed vs adaptive": the fixed resolution (A, its rows' texts
    ``texts_a``) beside the adaptive cover (B) at the same ε and mechanism, linked."""
    ss = st.session_state
    eps, mech = float(ss[state.EPSILON]), str(ss[state.MECHANISM])
    u = units.current()
    scale = scales.error_scale(target, u)
    cover = mc.adaptive_cover(spec, slot, noise_measure, mech, eps, target, r_min(spec))
    rows_b = rows(frame(cover), shown(cover, target=target, upper=spec.upper), scale)
    p = cover.params
    cols = st.columns(2)
    cols[0].metric(
        f"A: fixed res {p.r_max} — records within ±{target:g} {u.value}",
        f"{sh_a.within.share_records:.0%}",
    )
    cols[1].metric(
        f"B: adaptive {p.r_max}–{p.r_min} — records within ±{target:g} {u.value}",
        f"{cover.share_records:.0%}",
    )
    _, half_scale = mc.view(spec, slot, width_px // 2)
    view, _ = maps.fit_view(cover.cells.tolist(), width_px=width_px // 2)  # B's coarse cells
    styled = scales.style(sh_a.values, scale, sh_a.classes)
    rows_a = layers.records(base, styled, texts_a, draw=layers.draw_mode(half_scale.hex_px))
    deck = layers.split_deck(
        rows_a, rows_b, view, width_px=width_px, tooltip_spec=layers.tooltip(None, u)
    )
    st.pydeck_chart(
        mixed(deck),
        key="map_split_deck",
        height=maps.MAP_HEIGHT_PX,
        alt=f"Two linked maps of the error at ε = {eps:g} ({mech}): fixed resolution {p.r_max} "
        f"left, adaptive {p.r_max}–{p.r_min} right",
    )
    st.caption(
        f"Left A, fixed res {p.r_max}; right B, adaptive: "
        f"{comparison(cover, target=target, u=u)}. Drag either to pan both."
    )
    show_legend(scale, key="map_split_legend")
