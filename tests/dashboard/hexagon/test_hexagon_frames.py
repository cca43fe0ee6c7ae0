"""The contract of One hexagon's frames document (``dashboard.hexagon.frames``): applying stop
k's patch to the figure the page draws at any stop j gives, after the same JSON encoding, the
figure the page draws at stop k, for both ε charts.

On a small synthetic HAT every pair of a handful of stops is checked (a stop past 10, where the
worst-case curves reach 100, a presenter's font, raw releases, a target); on the demo city the
figures are the ones the page itself draws (AppTest, the page's ``ui.chart`` calls recorded).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core import plan, synthetic
from core.mechanisms import MECHANISMS, default_names
from dashboard.common.session import state
from dashboard.common.sidebar import default_spec
from dashboard.common.source.units import Units
from dashboard.common.view import frames
from dashboard.common.view import ui as ui_module
from dashboard.hexagon import charts
from dashboard.hexagon import compute as hx
from dashboard.hexagon import frames as hf
from dashboard.hexagon import state as hs
from tests.frames_checks import encoded, sent

ROOT = Path(__file__).resolve().parents[3]


def assert_contract(document: dict, figures: dict[float, dict[str, dict]]) -> int:
    """For every pair of stops (j, k) drawn: patch k on the figure of j is the figure of k.
    Returns how many patched figures were compared."""
    stops = document["stops"]
    compared = 0
    for chart in (hf.DISTRIBUTION, hf.WORST_CASE):
        patches = document["charts"][chart]
        assert len(patches) == len(stops)
        paths = {tuple(sorted(p)) for p in patches if p is not None}
        assert len(paths) <= 1, "every patch of a chart sets the same paths"
        for k_eps, at_k in figures.items():
            patch = patches[stops.index(k_eps)]
            assert patch is not None, (chart, k_eps)
            for j_eps, at_j in figures.items():
                assert frames.apply(at_j[chart], patch) == at_k[chart], (chart, j_eps, k_eps)
                compared += 1
    return compared


# --- A small synthetic HAT: every pair of a few stops ---------------------------------------

HAT = synthetic.uniform([9, 7, 7, 5, 4, 3, 3, 2, 2, 1, 1, 1], rng=np.random.default_rng(3))
CHOSEN = tuple(default_names())
STOPS = (0.01, 0.02, 0.37, 1.0, 4.4, 10.0, 23.0)  # 23: an exact ε past the slider's 10


def curves_to(upto: float) -> pd.DataFrame:
    """The worst case against ε on HAT, as ``hx.worst_case_vs_epsilon`` makes it."""
    grid = hx.WORST_CASE_EPSILONS if upto <= 10.0 else hx.WORST_CASE_EPSILONS_WIDE
    rows = [
        {"epsilon": e}
        | {
            n: plan.worst_case(HAT.counts, HAT.upper, e, n, "mean").total
            for n in hx.worst_case_mechanisms()
        }
        for e in grid
    ]
    return pd.DataFrame(rows)


def page_figures(eps: float, *, raw, within, units, font, target, target_eps, m_ub, simulate):
    """Both figures the way ``dashboard/hexagon/page.py`` builds them at ``eps``."""
    sets = []
    for name in CHOSEN:
        values = hx.releases_of(simulate(HAT, name, eps, m_ub, 0, 400), HAT.upper, raw=raw)
        if values is None:
            continue
        share = float(np.mean(np.abs(values - HAT.true_mean) <= within))
        sets.append(
            charts.ReleaseSet(
                mechanism=name, title=MECHANISMS[name].title, values=values, share_within=share
            )
        )
    out = {}
    if sets:
        out[hf.DISTRIBUTION] = encoded(
            charts.releases_distribution(
                sets,
                true_mean=HAT.true_mean,
                within=within,
                epsilon=eps,
                units=units,
                raw=raw,
                font_size=font,
            )
        )
    out[hf.WORST_CASE] = encoded(
        charts.worst_case_vs_epsilon(
            curves_to(hx.worst_case_range(eps, target_eps)),
            epsilon=eps,
            target=target,
            target_epsilon=target_eps,
            units=units,
            height=charts.distribution_height(len(sets)),
            font_size=font,
        )
    )
    return out


def synthetic_document(*, raw, within, units, target, target_eps, m_ub, simulate=hx.simulate):
    return sent(
        hf.frames_of(
            HAT,
            stops=STOPS,
            chosen=CHOSEN,
            m_ub=m_ub,
            seed=0,
            n_runs=400,
            within=within,
            raw=raw,
            units=units,
            target=target,
            target_epsilon=target_eps,
            curves_to=curves_to,
            simulate=simulate,
        )
    )


CASES = {
    "defaults": dict(raw=False, within=1.0, units=Units(), font=None, target=None, target_eps=None),
    "presenter, raw, target": dict(
        raw=True,
        within=2.5,
        units=Units(value="knots", user="ship"),
        font=17,
        target=3.0,
        target_eps=2.2,
    ),  # fmt: skip
    "m_UB override": dict(
        raw=False, within=1.0, units=Units(), font=None, target=None, target_eps=None, m_ub=3
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_patch_k_on_the_figure_of_any_stop_is_the_figure_of_stop_k(case):
    args = {"m_ub": None, **CASES[case]}
    font = args.pop("font")
    doc = synthetic_document(**args)
    figures = {e: page_figures(e, font=font, simulate=hx.simulate, **args) for e in STOPS}
    assert doc["stops"] == list(STOPS)
    assert assert_contract(doc, figures) == 2 * len(STOPS) ** 2
    # What the worst-case chart's patches hold: the ε line, and the curves because one stop is
    # past 10 (its curves reach 100); the height never changes here.
    worst = doc["charts"][hf.WORST_CASE][0]
    assert {"layout.shapes[0].x0", "layout.shapes[0].x1", "data[0].y"} <= set(worst)
    assert "layout.height" not in worst


def test_only_what_varies_is_sent():
    """Within the slider's usual range the worst-case chart's patches hold the ε line alone."""
    doc = sent(
        hf.frames_of(
            HAT, stops=STOPS[:-1], chosen=CHOSEN, m_ub=None, seed=0, n_runs=400, within=1.0,
            raw=False, units=Units(), target=None, target_epsilon=None, curves_to=curves_to,
        )
    )  # fmt: skip
    assert doc["charts"][hf.WORST_CASE] == [
        {"layout.shapes[0].x0": e, "layout.shapes[0].x1": e} for e in STOPS[:-1]
    ]
    first = doc["charts"][hf.DISTRIBUTION][0]
    assert set(first) >= {"layout.title.text", "layout.xaxis.range", "data[1].x", "data[5].y"}
    assert "data[0].x" not in first and "data[6].x" not in first  # the band and the true mean


def test_a_stop_with_other_traces_is_null_and_the_others_still_hold():
    """A mechanism without releases at one stop (another number of ridges): that stop's
    distribution patch is null (the browser waits for the rerun); the worst-case chart's
    patches then carry the height, which follows the number of ridges."""
    gone = (STOPS[2], CHOSEN[1])

    def simulate(h, name, eps, m_ub, seed, n_runs, arrays=None):
        sim = hx.simulate(h, name, eps, m_ub, seed, n_runs, arrays)
        if (eps, name) == gone:
            return hx.Simulated(
                mechanism=name, estimates=None, m_ub=None, n_arrays=None,
                noise_scale=float("nan"), note="not applicable: test",
            )  # fmt: skip
        return sim

    args = dict(raw=False, within=1.0, units=Units(), target=None, target_eps=None, m_ub=None)
    doc = synthetic_document(simulate=simulate, **args)
    dist = doc["charts"][hf.DISTRIBUTION]
    assert dist[2] is None and all(p is not None for i, p in enumerate(dist) if i != 2)
    figures = {e: page_figures(e, font=None, simulate=simulate, **args) for e in STOPS}
    worst = {e: {hf.WORST_CASE: f[hf.WORST_CASE]} for e, f in figures.items()}
    # the worst-case chart at every stop (the odd one included), from every stop
    for k, at_k in worst.items():
        patch = doc["charts"][hf.WORST_CASE][STOPS.index(k)]
        assert "layout.height" in patch
        for at_j in worst.values():
            assert frames.apply(at_j[hf.WORST_CASE], patch) == at_k[hf.WORST_CASE]
    others = {e: f for e, f in figures.items() if e != gone[0]}
    assert (
        assert_contract(
            {**doc, "charts": {hf.DISTRIBUTION: dist, hf.WORST_CASE: doc["charts"][hf.WORST_CASE]}},
            others,
        )
        == 2 * len(others) ** 2
    )


def test_the_url_keys_every_input_and_computes_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(hf, "document", lambda *a, **k: calls.append(k) or {"stops": []})
    store = frames.Store()
    monkeypatch.setattr(frames, "STORE", store)
    spec = default_spec()
    base = dict(
        stops=hs.stops_with(1.0), chosen=CHOSEN, m_ub=None, seed=0, n_runs=2000, within=1.0,
        raw=False, units=Units(), noise_measure="mean", target=None, target_mechanism="opt-arrayavg",
    )  # fmt: skip
    path = hf.hexagon_frames_url(spec, "h/1", **base)
    assert path.startswith(frames.PREFIX) and calls == [] and len(store) == 1
    assert hf.hexagon_frames_url(spec, "h/1", **base) == path  # the same view: the same document
    changed = dict(
        stops=hs.stops_with(23.0), chosen=CHOSEN[:2], m_ub=4, seed=1, n_runs=10_000, within=2.0,
        raw=True, units=Units(value="knots"), noise_measure="std", target=3.0,
    )  # fmt: skip
    others = {hf.hexagon_frames_url(spec, "h/2", **base)}
    for name, value in changed.items():
        others.add(hf.hexagon_frames_url(spec, "h/1", **{**base, name: value}))
    assert path not in others and len(others) == 1 + len(changed)
    # the target's mechanism matters only with a target
    assert hf.hexagon_frames_url(spec, "h/1", **{**base, "target_mechanism": "baseline"}) == path
    entry = store.entry(path.removeprefix(frames.PREFIX).removesuffix(".json"))
    assert entry is not None and json.loads(frames.encode(entry.compute())) == {"stops": []}
    assert calls and calls[0]["stops"] == tuple(hs.stops_with(1.0))


# --- The demo city: the figures the page itself draws -----------------------------------------


def test_demo_city_patches_give_the_pages_own_figures(monkeypatch):
    """The One-hexagon page on the demo city, run at a few stops (the first, the last, the
    default ε and some between); every figure it draws is recorded, and stop k's patch on the
    figure of stop j must be the page's figure of stop k. Once the page passes its frames path
    to ``ui.chart(frames=...)``, that document is checked too (the same path at every stop)."""
    drawn: dict[str, dict] = {}
    urls: set[str] = set()
    original = ui_module.chart

    def record(fig, *, key, **kwargs):
        drawn["chart_" + key] = encoded(fig)
        if kwargs.get("frames") is not None:  # the page wired to its frames document
            urls.add(kwargs["frames"])
        return original(fig, key=key, **kwargs)

    monkeypatch.setattr(ui_module, "chart", record)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("dashboard/hexagon/page.py").run()
    assert not at.exception
    ss = at.session_state
    picked = (0.01, 0.03, 0.5, 1.0, 4.7, 10.0)
    figures = {}
    for eps in picked:
        at.select_slider(key=hs.EPSILON_SLIDER).set_value(eps).run()
        assert not at.exception and ss[state.EPSILON] == eps
        figures[eps] = {k: drawn[k] for k in (hf.DISTRIBUTION, hf.WORST_CASE)}
    if urls:  # the page's own document (all 271 stops): one for every ε step
        assert len(urls) == 1, urls
        entry = frames.STORE.entry(urls.pop().removeprefix(frames.PREFIX).removesuffix(".json"))
        assert entry is not None
        assert assert_contract(sent(entry.compute()), figures) == 2 * len(picked) ** 2
    # The page's view is a new visitor's: the arguments hf.new_visitor gives are the session's.
    args = {**hf.new_visitor(1.0), "stops": picked}  # a few of the 271 stops: the same patches
    assert args["chosen"] == tuple(n for n in MECHANISMS if n in ss[state.MECHANISMS])
    assert (args["seed"], args["noise_measure"], args["target_mechanism"]) == (
        int(ss[state.SEED]), str(ss[state.NOISE_MEASURE]), str(ss[hs.TARGET_MECHANISM])
    )  # fmt: skip
    doc = sent(hf.document(default_spec(), ss[state.HAT], **args))
    assert set(picked) <= set(hs.stops_with(1.0))
    assert assert_contract(doc, figures) == 2 * len(picked) ** 2


@pytest.mark.parametrize("raw", [False, True])
def test_release_sets_of_many_stops_are_each_stops(raw):
    """``release_sets_each`` (the document's stops 32 at a time) gives each stop's
    ``release_sets`` bit for bit: the same sets in order, the same releases and shares; a
    mechanism without releases at a stop is left out there."""
    sims = [[hx.simulate(HAT, name, e, None, 0, 400) for name in CHOSEN] for e in STOPS]
    sims[2][1] = hx.Simulated(
        mechanism=CHOSEN[1], estimates=None, m_ub=None, n_arrays=None,
        noise_scale=float("nan"), note="not applicable: test",
    )  # fmt: skip
    args = dict(upper=HAT.upper, true_mean=HAT.true_mean, within=1.0, raw=raw)
    got = hf.release_sets_each(sims, **args)
    want = [hf.release_sets(s, **args) for s in sims]
    assert [len(s) for s in got] == [len(s) for s in want] and len(got[2]) == len(CHOSEN) - 1
    for a, b in zip((x for s in got for x in s), (x for s in want for x in s), strict=True):
        assert (a.mechanism, a.title) == (b.mechanism, b.title)
        assert a.values.tobytes() == b.values.tobytes()
        assert np.float64(a.share_within).tobytes() == np.float64(b.share_within).tobytes()
