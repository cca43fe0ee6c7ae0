"""The Map page's error views, each an ``st.fragment`` so moving ε reruns only that view.

- :func:`map_view`: the map of the slot coloured by records, users, true mean — or, once "Colour
  by" is an error colouring, by every hexagon's worst-case error at ε, the relative error, the
  trust class (within target ±X) or one seeded noisy release, with ε, the mechanism and the
  target bound to the shared values, the share within target beside the map, the downloads and
  the handout report.
- :func:`split_view`: two settings side by side in one linked Deck, or their difference.
- :func:`derived_view`: what a mean derived from many noisy hexagons costs.

Reads core through :mod:`dashboard.map.compute`, draws with :mod:`dashboard.map.layers` and
:mod:`dashboard.map.charts`. The report button is passed in by the page (the report is another
feature's).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import numpy as np
import streamlit as st

from core.citywide.derived import TRUST_LABELS
from core.citywide.errors import hexagon_geojson
from core.mechanisms import get_mechanism
from dashboard.common.session import shown, state
from dashboard.common.session.selection import picked_row, select_hat
from dashboard.common.source import compute, units
from dashboard.common.source.compute import DataSpec
from dashboard.common.view import downloads, livemap, maps, slider, ui
from dashboard.map import adaptive, charts, layers, scales
from dashboard.map import compute as mc
from dashboard.map import frames as map_frames
from dashboard.map import state as ms
from dashboard.map.colouring import Look, drawn_at, hover_texts, metric_labels, side_texts

MAP_WIDTH_PX = 760  # the map's column beside the read-outs
ReportHook = Callable[..., None]


def _value_label(metric: str, labels: dict[str, str], u) -> str:
    """The tooltip's name for the coloured value, with its unit."""
    return f"{labels[metric]} ({u.value})" if metric == "release" else labels[metric]


def _mechanism_label(name: str) -> str:
    return f"{name} — {get_mechanism(name).title}"


def _on_map_select(slot: str | None = None) -> None:
    """A click on a hexagon selects its HAT: the row's ``hat``, or (error map rows, which carry
    only the cell) the cell in ``slot``."""
    row = picked_row(st.session_state.get(state.MAP_DECK), maps.HEX_LAYER_ID)
    label = None
    if row is not None and "hat" in row:
        label = str(row["hat"])
    elif row is not None and "cell" in row and slot is not None:
        label = f"{row['cell']}/{slot}"
    if label is not None:
        select_hat(label)
        st.session_state[ms.APP_RERUN] = True  # the rest of the page shows the HAT
    st.session_state[state.MAP_CLICKS] = int(st.session_state.get(state.MAP_CLICKS, 0)) + 1


def _on_live_click(slot: str, row: dict) -> None:
    """A click on a hexagon of the map the browser draws (:mod:`livemap`): its HAT."""
    label = row.get("hat") or (f"{row['cell']}/{slot}" if row.get("cell") else None)
    if label is not None:
        select_hat(str(label))
        st.session_state[ms.APP_RERUN] = True  # the rest of the page shows the HAT


def _controls(metric: str, *, live: bool) -> tuple[float, str, float | None]:
    """ε, mechanism and target widgets (bound to the shared values); returns their values.
    ``live``: the map is the browser's (:mod:`livemap`), so ε is the browser's slider, which
    recolours it before the rerun; otherwise ``st.select_slider``, whose rerun comes at once."""
    ss = st.session_state
    ms.bind()
    c = st.columns([4, 3, 2, 2])
    eps = float(ss[state.EPSILON])
    with c[0]:
        slider.epsilon_control(  # the browser's: the error map follows it before the rerun
            ms.EPSILON_LABEL,
            stops=ms.stops_with(eps),
            value=eps,
            help="The same ε as on One hexagon and Whole city: moving it here moves it there.",
            group=ms.EPSILON_GROUP,
            range_key=ms.EPSILON_RANGE,
            on_change=ms.set_epsilon,
            select_key=ms.EPSILON,
            on_select=ms.on_epsilon,
            browser=live,
            # an automatic scale's legend (its bins move with ε) waits for the rerun: faded
            behind=(ui.legend_key(ms.SCALE_LEGEND),) if ss.get(ms.AUTO_SCALE) else (),
        )
    c[1].selectbox(
        "Mechanism",
        options=list(ms.mechanisms()),
        format_func=_mechanism_label,
        key=ms.MECHANISM,
        on_change=ms.on_mechanism,
        help="Mechanisms with an analytic worst-case error (SPEC sections 3-4): a new ε is one "
        "lookup over all hexagons. The others (Levy, quantile, AKMV, wrap-around) need a "
        "simulation per hexagon: `hexplorer worstcase --all --mechanism levy --trials 2000` "
        "gives their simulated 90 % quantiles.",
    )
    c[2].number_input(
        f"Target ±{units.current().value}",
        min_value=0.0,
        step=0.5,
        format="%.2f",
        key=ms.TARGET,
        on_change=ms.on_target,
        help="The error you can live with (the planning target, shared with Whole city).",
    )
    c[3].toggle(
        "Automatic scale",
        key=ms.AUTO_SCALE,
        help="Off: the colour scale is fixed (anchored on the target), so a change of colour "
        "when ε moves is a change of error. On: bins from the values shown.",
    )
    if metric == "release":
        st.number_input(
            "Seed of the noisy release", min_value=0, max_value=2**31 - 1, step=1, key=state.SEED
        )
    target = float(ss[ms.TARGET] or 0.0)
    return float(ss[state.EPSILON]), str(ss[state.MECHANISM]), (target if target > 0 else None)


def error_frame(base, sh: mc.Shown, at, *, target: float, noisy=None):
    """The table behind the error map: one row per hexagon (the download's rows)."""
    out = base[["hat", "cell", "users", "records", "true_mean"]].copy()
    out.insert(2, "slot", [h.split("/", 1)[1] for h in out["hat"]])
    m_ub = at.m_ub
    out["m_ub"] = np.where(m_ub >= 0, m_ub, 0)
    out["m_ub"] = out["m_ub"].astype("Int64")
    out.loc[m_ub < 0, "m_ub"] = None
    out["worst_case_error"] = sh.error
    with np.errstate(divide="ignore", invalid="ignore"):
        out["relative_error"] = np.where(out["true_mean"] > 0, sh.error / out["true_mean"], np.nan)
    out["target"] = target
    out["within_target"] = sh.classes == 0
    out["trust"] = [TRUST_LABELS[int(k)] for k in sh.classes]
    if noisy is not None:
        out["noisy_release"] = noisy
    out["noise_measure"] = at.noise_measure
    return out


@state.fragment
def map_view(
    spec: DataSpec,
    slot: str,
    metric: str,
    *,
    selected_cell: str | None,
    basemap: bool,
    report: ReportHook | None = None,
) -> None:
    """The map (a fragment: ε, mechanism, target and scale changes rerun only this)."""
    ss = st.session_state
    if ss.get(ms.APP_RERUN):
        ss[ms.APP_RERUN] = False
        st.rerun(scope="app")
    u = units.current()
    labels = metric_labels(u)
    if metric not in state.ERROR_METRICS:
        _plain_map(spec, slot, metric, labels, u, selected_cell=selected_cell, basemap=basemap)
        return
    # the map the browser draws, and recolours as ε moves: not with a basemap, not adaptive
    live = livemap.available() and not basemap and ss[ms.RESOLUTION_MODE] != "adaptive"
    epsilon, mechanism, target = _controls(metric, live=live)
    if target is None:
        st.info("Set a target error above 0 to colour the map by error.", icon=":material/info:")
        return
    noise_measure = str(ss.get(state.NOISE_MEASURE) or "mean")
    if adaptive.resolution_controls(spec) == "adaptive":  # mixed cells: their own map
        mode = (epsilon, mechanism, target, noise_measure, selected_cell, basemap)
        return adaptive.adaptive_map(spec, slot, *mode, _on_map_select, MAP_WIDTH_PX)
    with st.spinner("Every hexagon's error staircase (once per slot)…"):
        mc.table(spec, slot, noise_measure)
    base = mc.base(spec, slot)
    seed = int(ss.get(state.SEED) or 0)
    look = Look(metric, mechanism, target, noise_measure, bool(ss[ms.AUTO_SCALE]), seed, u)
    drawn = drawn_at(spec, slot, look, epsilon)
    at, noisy, sh, scale, styled, texts = drawn
    classes = None if metric == "within_target" else sh.classes
    view, map_scale = mc.view(spec, slot, MAP_WIDTH_PX)
    draw = layers.draw_mode(map_scale.hex_px)
    rows = layers.records(base, styled, {**_base_texts(base), **texts}, draw=draw)
    deck = layers.error_deck(
        rows,
        view,
        tooltip_spec=layers.tooltip(
            None if metric == "error" else _value_label(metric, labels, u), u
        ),
        density=_context(spec, slot, base, draw),
        selected_cell=selected_cell,
        pick_token=int(ss.get(state.MAP_CLICKS, 0)),
        basemap=basemap,
    )
    alt = (
        f"Map of {len(base)} hexagons in slot {slot}, coloured by {labels[metric]} at "
        f"ε = {epsilon:g} ({mechanism})"
    )
    left, right = st.columns([4, 1])
    with left:
        if live:  # recoloured by the ε slider, before the rerun
            livemap.deck_chart(
                deck,
                key=ms.LIVE_DECK,
                height=maps.MAP_HEIGHT_PX,
                alt=alt,
                frames=map_frames.url(spec, slot, look, ms.stops_with(epsilon)),
                group=ms.EPSILON_GROUP,
                stop=epsilon,
                patch=[layer.id for layer in deck.layers if layer.id.startswith(maps.HEX_LAYER_ID)],
                rest=layers.fingerprint(repr((selected_cell, view, draw, rows.geometry))),
                on_click=functools.partial(_on_live_click, slot),
                side={"panel": ms.LIVE_SIDE, "legend": ms.LIVE_LEGEND},
            )
        else:
            st.pydeck_chart(
                deck,
                on_select=functools.partial(_on_map_select, slot),
                selection_mode="single-object",
                key=state.MAP_DECK,
                height=maps.MAP_HEIGHT_PX,
                alt=alt,
            )
    w = sh.within
    around = side_texts(drawn, look, epsilon, spec.upper)
    share, records_share, caption = around["panel"]
    with right, st.container(key=ms.LIVE_SIDE):  # rewritten by the browser with the live map
        st.metric(
            f"Hexagons within ±{target:g} {u.value}",
            share,
            help=f"{w.within:,} of {w.hexagons:,} hexagons have a worst-case error within the "
            "target at this ε (core.citywide.derived.within_target).",
        )
        st.metric(
            "Records within target",
            records_share,
            help=f"{w.records_within:,} of {w.records:,} records lie in those hexagons.",
        )
        st.caption(caption)
    readout = (
        f"At ε = {epsilon:g} with {mechanism}, {w.within:,} of {w.hexagons:,} hexagons "
        f"({w.share_hexagons:.0%}) and {w.share_records:.0%} of records have a worst-case error "
        f"within ±{target:g} {u.value}."
    )
    shown.add_text(readout)
    st.caption(f"{map_scale.caption()} {maps.ZOOM_HELP}")
    adaptive.show_legend(scale, key=ms.SCALE_LEGEND, title=labels[metric])  # names the colouring
    words = around["legend"] or None
    if words:
        with st.container(key=ms.LIVE_LEGEND):  # its counts rewritten with the live map
            st.markdown("\n".join(f"- {w}" for w in words))
    frame = functools.partial(error_frame, base, sh, at, target=target, noisy=noisy)  # on click
    prov = downloads.provenance(
        spec, u, hat=f"slot {slot}", mechanism=mechanism, epsilon=epsilon,
        seed=seed if metric == "release" else None,
    )  # fmt: skip
    _downloads(frame, prov, u)
    if report is not None:
        title = f"Error map — slot {slot}, {labels[metric]}, ε = {epsilon:g} ({mechanism})"

        def figure():
            return charts.handout_map(
                base, styled, scale, classes=classes, title=title, trust_words=words
            )

        report(
            title=title,
            parameters={
                "slot": slot,
                "colour by": labels[metric],
                "ε per hexagon": f"{epsilon:g}",
                "mechanism": mechanism,
                "noise measure": noise_measure,
                "target": f"±{target:g} {u.value}",
                "colour scale": "fixed" if scale.fixed else "automatic",
                "U": f"{spec.upper:g} {u.value}",
            },
            figure=figure,
            texts=[readout, *(words or [])],
            file_name=downloads.file_name("error-map", prov, ext="html"),
        )


def _context(spec: DataSpec, slot: str, base, draw: layers.Draw) -> list | None:
    """The record-density context layers (with dots where the map has dots) where the slot has
    no hexagon, unless the slot's own hexagons are many enough to show where the data are
    (:data:`dashboard.map.layers.DENSITY_MAX_HEXAGONS`)."""
    if len(base) > layers.DENSITY_MAX_HEXAGONS:
        return None
    return mc.density(spec, slot, dots=draw != "hexagons")


def _base_texts(base) -> dict[str, np.ndarray]:
    """The tooltip texts that do not change with ε (users, records, true mean)."""
    return {"u": base["users_text"], "r": base["records_text"], "t": base["true_text"]}


def download_table(frame, u):
    """The error table as downloaded: speed columns say their unit in the header."""
    return downloads.with_units(
        frame, u, values=["true_mean", "worst_case_error", "target", "noisy_release"]
    )


def csv_file(frame, prov, u) -> bytes:
    """The error map as CSV: one row per hexagon and the provenance columns."""
    return downloads.csv_bytes(download_table(frame, u), prov)


def geojson_file(frame, prov, u) -> bytes:
    """The error map as GeoJSON: hexagon polygons with the CSV's columns as properties."""
    table = downloads.with_provenance(download_table(frame, u), prov)
    return json.dumps(hexagon_geojson(table), allow_nan=False).encode("utf-8")


def _downloads(frame: Callable, prov, u) -> None:
    """The CSV and GeoJSON buttons; ``frame()`` makes the table (:func:`error_frame`) when one
    is clicked, not on every ε step."""
    csv_name = downloads.file_name("error-map", prov)
    geo_name = downloads.file_name("error-map", prov, ext="geojson")
    c = st.columns(2)
    ui.download(
        "Download the error map (CSV)",
        lambda: csv_file(frame(), prov, u),
        file_name=csv_name,
        key="download_map_errors_csv",
        help=f"One row per hexagon with the provenance columns; saved as {csv_name}",
        column=c[0],
    )
    ui.download(
        "Download the error map (GeoJSON)",
        lambda: geojson_file(frame(), prov, u),
        file_name=geo_name,
        mime="application/geo+json",
        key="download_map_errors_geojson",
        help=f"Hexagon polygons with the same properties; saved as {geo_name}",
        column=c[1],
    )


def _plain_map(spec, slot, metric, labels, u, *, selected_cell, basemap) -> None:
    """Records, users or true mean: the Map as before (:func:`maps.hexagon_map`)."""
    ss = st.session_state
    cells = compute.slot_cells(spec, slot)
    hexmap = maps.hexagon_map(
        cells,
        value_col=metric,
        value_label=labels[metric],
        tooltip_cols={"records": "records", "users": u.users, "true_mean": labels["true_mean"]},
        selected_cell=selected_cell,
        density=compute.cell_density(spec),
        basemap=basemap,
        pick_token=int(ss.get(state.MAP_CLICKS, 0)),
    )
    st.pydeck_chart(
        hexmap.deck,
        on_select=_on_map_select,
        selection_mode="single-object",
        key=state.MAP_DECK,
        height=maps.MAP_HEIGHT_PX,
        alt=f"Map of {len(cells)} hexagons in slot {slot}, coloured by {labels[metric]}",
    )
    st.caption(f"{hexmap.scale.caption()} {maps.ZOOM_HELP}")
    ui.legend(hexmap.legend, title=labels[metric], key="map")  # HTML: no plotly.js for this
    if len(cells) == 1:
        st.info(
            "Only one hexagon has records in this slot: the map has nothing to compare it with.",
            icon=":material/info:",
        )
    elif cells[metric].nunique(dropna=True) == 1:
        st.info(
            f"Every hexagon of this slot has the same {labels[metric]}, so they share one colour.",
            icon=":material/info:",
        )


# --------------------------------------------------------------------------------------------
# Split view


SPLIT_LABELS = {"epsilon": "ε A vs ε B", "mechanism": "mechanism A vs B", "rule": "two m_UB rules"}
SPLIT_LABELS["adaptive"] = "fixed vs adaptive resolution"
SHOW_LABELS = {"sides": "side by side (linked)", "difference": "difference B − A"}


def sides() -> tuple[tuple[float, str], tuple[float, str]]:
    """(ε, mechanism) of side A and side B from the split mode and the shared values."""
    ss = st.session_state
    eps, mech = float(ss[state.EPSILON]), str(ss[state.MECHANISM])
    mode = str(ss[ms.SPLIT_MODE])
    if mode == "epsilon":
        return (eps, mech), (float(ss[ms.EPSILON_B]), mech)
    if mode == "mechanism":
        return (eps, mech), (eps, str(ss[ms.MECHANISM_B]))
    if mode == "adaptive":
        return (eps, mech), (eps, mech)
    return (eps, str(ss[ms.RULE_A])), (eps, str(ss[ms.RULE_B]))


@state.fragment
def split_view(spec: DataSpec, slot: str) -> None:
    """Two settings side by side: one Deck, two linked views; or their difference map."""
    ss = st.session_state
    u = units.current()
    st.toggle(
        "Two settings side by side",
        key=ms.SPLIT,
        help="What doubling ε buys, or another mechanism or m_UB rule: two maps of the error at "
        "ε that pan and zoom together, and the share within target of each.",
    )
    if not ss[ms.SPLIT]:
        return
    c = st.columns([2, 2, 2])
    c[0].radio(
        "Compare",
        options=list(ms.SPLIT_MODES),
        format_func=SPLIT_LABELS.__getitem__,
        key=ms.SPLIT_MODE,
    )
    mode = str(ss[ms.SPLIT_MODE])
    with c[1]:
        if mode == "epsilon":
            st.select_slider(
                "ε of B (A uses the map's ε)",
                options=ms.stops_with(float(ss[ms.EPSILON_B])),
                key=ms.EPSILON_B,
                format_func=lambda e: f"{e:g}",
            )
        elif mode == "mechanism":
            st.selectbox(
                "Mechanism of B (A uses the map's)",
                options=list(ms.mechanisms()),
                format_func=_mechanism_label,
                key=ms.MECHANISM_B,
            )
        elif mode == "adaptive":
            adaptive.levels_slider(spec, "Coarsest resolution of B", split=True)
        else:
            rules = list(ms.RULES)
            for side, key in (("A", ms.RULE_A), ("B", ms.RULE_B)):
                st.selectbox(
                    f"m_UB rule of {side}", rules, format_func=ms.RULES.__getitem__, key=key
                )
    c[2].radio(
        "Show", options=list(ms.SPLIT_SHOWS), format_func=SHOW_LABELS.__getitem__, key=ms.SPLIT_SHOW
    )
    target = float(ss[state.TARGET] or 0.0)
    if target <= 0:
        st.info("Set a target error above 0 (on the map above).", icon=":material/info:")
        return
    noise_measure = str(ss.get(state.NOISE_MEASURE) or "mean")
    with st.spinner("Every hexagon's error staircase (once per slot)…"):
        mc.table(spec, slot, noise_measure)
    base = mc.base(spec, slot)
    (eps_a, mech_a), (eps_b, mech_b) = sides()
    at_a = mc.errors_at(spec, slot, noise_measure, mech_a, eps_a)
    at_b = mc.errors_at(spec, slot, noise_measure, mech_b, eps_b)
    sh_a = mc.shown("error", at_a, base, target=target, upper=spec.upper)
    sh_b = mc.shown("error", at_b, base, target=target, upper=spec.upper)
    names = {"A": f"ε = {eps_a:g}, {mech_a}", "B": f"ε = {eps_b:g}, {mech_b}"}
    if mode == "adaptive":  # side B: the adaptive cover at A's ε and mechanism
        texts_a = {**_base_texts(base), **hover_texts("error", sh_a.values, sh_a, u)}
        adaptive.split_view(spec, slot, base, sh_a, texts_a, target, noise_measure, MAP_WIDTH_PX)
        return
    cols = st.columns(2)
    for col, side, sh in ((cols[0], "A", sh_a), (cols[1], "B", sh_b)):
        w = sh.within
        col.metric(
            f"{side}: {names[side]} — hexagons within ±{target:g} {u.value}",
            f"{w.share_hexagons:.0%}",
            help=f"{w.within:,} of {w.hexagons:,} hexagons; {w.share_records:.0%} of records.",
        )
    texts = _base_texts(base)
    if ss[ms.SPLIT_SHOW] == "sides":
        scale = scales.error_scale(target, u)
        view, half_scale = mc.view(spec, slot, MAP_WIDTH_PX // 2)
        draw = layers.draw_mode(half_scale.hex_px)
        rows = []
        for sh in (sh_a, sh_b):
            styled = scales.style(sh.values, scale, sh.classes)
            rows.append(
                layers.records(
                    base, styled, {**texts, **hover_texts("error", sh.values, sh, u)}, draw=draw
                )
            )
        deck = layers.split_deck(
            rows[0],
            rows[1],
            view,
            width_px=MAP_WIDTH_PX,
            tooltip_spec=layers.tooltip(None, u),
            density=_context(spec, slot, base, draw),
        )
        st.pydeck_chart(
            deck,
            key="map_split_deck",
            height=maps.MAP_HEIGHT_PX,
            alt=f"Two linked maps of the error at ε: A ({names['A']}) left, B ({names['B']}) right",
        )
        st.caption(f"Left A ({names['A']}), right B ({names['B']}): drag either to pan both.")
        adaptive.show_legend(scale, key="map_split_legend")
    else:
        scale = scales.difference_scale(target, u)
        diff = sh_b.error - sh_a.error
        styled = scales.style(diff, scale, None)
        value_text = np.char.mod("%+.2f", diff)
        view, full_scale = mc.view(spec, slot, MAP_WIDTH_PX)
        draw_d = layers.draw_mode(full_scale.hex_px)
        rows_d = layers.records(
            base,
            styled,
            {**texts, **hover_texts("error", sh_b.values, sh_b, u), "v": value_text},
            draw=draw_d,
        )
        deck = layers.error_deck(
            rows_d,
            view,
            tooltip_spec=layers.tooltip(f"error B − error A ({u.value})", u),
            density=_context(spec, slot, base, draw_d),
        )
        st.pydeck_chart(
            deck,
            key="map_diff_deck",
            height=maps.MAP_HEIGHT_PX,
            alt=f"Difference of the error at ε, B ({names['B']}) minus A ({names['A']})",
        )
        adaptive.show_legend(scale, key="map_diff_legend")
        better = int((diff < 0).sum())
        st.caption(
            f"B ({names['B']}) is more accurate in {better:,} of {diff.size:,} hexagons; the "
            "tooltip shows B's error and the difference."
        )


# --------------------------------------------------------------------------------------------
# Derived number


@state.fragment
def derived_view(spec: DataSpec, slot: str) -> None:
    """The slot's (or chosen hexagons') mean from the released hexagon means, simulated."""
    ss = st.session_state
    u = units.current()
    st.subheader("What a derived number costs")
    base = mc.base(spec, slot)
    order = base.sort_values("records", ascending=False, kind="stable")
    records = dict(zip(order["cell"], order["records"], strict=True))
    c = st.columns([4, 1, 1])
    c[0].multiselect(
        "Hexagons (none: the whole slot)",
        options=list(records),
        key=ms.DERIVED_CELLS,
        format_func=lambda cell: f"{cell} — {int(records[cell]):,} records",
        help="E.g. a corridor: the mean over these hexagons, weighted by their records.",
    )
    c[1].selectbox("Releases simulated", list(ms.DERIVED_RUN_OPTIONS), key=ms.DERIVED_RUNS)
    eps, mech = float(ss[state.EPSILON]), str(ss[state.MECHANISM])
    seed = int(ss.get(state.SEED) or 0)
    chosen = [c for c in ss[ms.DERIVED_CELLS] if c in records]
    hats = tuple(base.loc[base["cell"].isin(chosen), "hat"]) if chosen else None
    params = (slot, mech, eps, int(ss[ms.DERIVED_RUNS]), seed, hats)
    if c[2].button("Simulate", key="map_derived_go", icon=":material/casino:"):
        ss[ms.DERIVED_ASKED] = params
    if ss.get(ms.DERIVED_ASKED) != params:
        st.caption(
            f"Simulate {int(ss[ms.DERIVED_RUNS]):,} releases of every chosen hexagon at ε = "
            f"{eps:g} ({mech}, seed {seed}) and see how far the derived mean lands from the truth."
        )
        return
    n = len(hats) if hats else len(base)
    with st.spinner(f"{int(ss[ms.DERIVED_RUNS]):,} releases of {n:,} hexagons…"):
        d = mc.derived_mean(spec, slot, mech, eps, int(ss[ms.DERIVED_RUNS]), seed, hats)
    what = "mean of the chosen hexagons" if hats else f"city-wide mean of slot {slot}"
    m = st.columns(3)
    m[0].metric(f"True {what} ({u.value})", f"{d.true_value:,.2f}")
    m[1].metric(f"{d.level:.0%} of releases land in", f"{d.low:,.2f} – {d.high:,.2f}")
    m[2].metric(f"{d.level:.0%} of releases within", f"±{d.error_quantile:,.2f} {u.value}")
    sentence = d.sentence(u.value, what)
    st.write(sentence)
    shown.add_text(sentence)
