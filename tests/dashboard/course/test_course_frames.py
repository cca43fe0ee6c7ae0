"""The contract of the course's frames documents (``dashboard.course.frames``): applying stop
k's patch to the figure a step draws at any stop j gives, after the same JSON encoding, the
figure the step draws at stop k (steps 1, 4, 5 and 6: the steps with an ε chart).

On a small synthetic HAT every pair of a handful of stops is checked, with the figures built
as the page builds them; on the demo city the figures are the ones the page itself draws
(AppTest, its ``ui.chart`` calls recorded) and the document is the one the page registered.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import course, synthetic, worstcase
from dashboard.common.sidebar import default_spec
from dashboard.common.source.units import Units
from dashboard.common.view import frames
from dashboard.common.view import ui as ui_module
from dashboard.course import charts
from dashboard.course import compute as cc
from dashboard.course import frames as cf
from dashboard.course import state as cs
from tests.frames_checks import encoded, sent

ROOT = Path(__file__).resolve().parents[3]


def assert_contract(document: dict, chart: str, figures: dict[float, dict]) -> int:
    """For every pair of stops (j, k) drawn: patch k on the figure of j is the figure of k.
    Returns how many patched figures were compared."""
    stops = document["stops"]
    patches = document["charts"][chart]
    assert len(patches) == len(stops)
    assert len({tuple(sorted(p)) for p in patches}) == 1, "every patch sets the same paths"
    compared = 0
    for k_eps, at_k in figures.items():
        patch = patches[stops.index(k_eps)]
        for j_eps, at_j in figures.items():
            assert frames.apply(at_j, patch) == at_k, (chart, j_eps, k_eps)
            compared += 1
    return compared


# --- A small synthetic HAT: every pair of a few stops ---------------------------------------

HAT = synthetic.uniform([9, 7, 7, 5, 4, 3, 3, 2, 2, 1, 1, 1], rng=np.random.default_rng(3))
STOPS = (0.01, 0.02, 0.37, 1.0, 2.5, 5.0)
KNOTS = Units(value="knots", user="ship")
GRIDS, MAX_G = 40, 7  # step 6: a slot of 40 hexagons whose most travelled user crossed 7


def step_figure(step: int, eps: float, *, u: Units, within: float = 1.0, seed: int = 0) -> dict:
    """The step's chart as ``dashboard/course/page.py`` builds it at ``eps`` on HAT."""
    if step == 1:
        return encoded(charts.odds_chart(eps, 3.0))
    if step == 4:
        values, s = cc.share_of(HAT, eps, within, seed)
        title = charts.releases_title(eps, s.share_within, within, u)
        return encoded(charts.releases_chart(values, HAT.true_mean, within, u, title=title))
    if step == 6:
        return encoded(charts.composition_chart(eps, grids=GRIDS, max_grids=MAX_G, budget=2.0, u=u))
    m, err = cc.optimal_of(HAT, eps)
    title = charts.staircase_title(eps, m, err, u)
    return encoded(
        charts.staircase_chart(worstcase.staircase(HAT.counts, HAT.upper), eps, m, title=title)
    )


def synthetic_document(step: int, *, u: Units, within: float = 1.0, seed: int = 0) -> dict:
    if step == 1:
        return sent(cf.odds_document(STOPS))
    if step == 4:
        return sent(cf.releases_document(HAT, within=within, seed=seed, u=u, stops=STOPS))
    if step == 6:
        return sent(cf.composition_document(MAX_G, 2.0, u=u, stops=STOPS))
    return sent(cf.staircase_document(HAT, u=u, stops=STOPS))


CHART = {1: cf.ODDS, 4: cf.RELEASES, 5: cf.STAIRCASE, 6: cf.COMPOSITION}


@pytest.mark.parametrize("u", [Units(), KNOTS], ids=["km/h", "knots"])
@pytest.mark.parametrize("step", [1, 4, 5, 6])
def test_patch_k_on_the_figure_of_any_stop_is_the_figure_of_stop_k(step, u):
    doc = synthetic_document(step, u=u)
    figures = {e: step_figure(step, e, u=u) for e in STOPS}
    assert doc["stops"] == list(STOPS)
    assert assert_contract(doc, CHART[step], figures) == len(STOPS) ** 2
    title = figures[STOPS[0]]["layout"]["title"]["text"]
    assert (u.user if step == 6 else u.value) in title or step == 1


def test_a_broken_patch_fails_the_contract():
    """The check can fail: a patch that misses a path, or puts a value at another trace."""
    figures = {e: step_figure(4, e, u=Units()) for e in STOPS}
    doc = synthetic_document(4, u=Units())
    missing = [
        {p: v for p, v in q.items() if p != "data[0].width"} for q in doc["charts"][cf.RELEASES]
    ]
    with pytest.raises(AssertionError):
        assert_contract({**doc, "charts": {cf.RELEASES: missing}}, cf.RELEASES, figures)
    figures = {e: step_figure(1, e, u=Units()) for e in STOPS}
    doc = synthetic_document(1, u=Units())
    moved = [
        {p.replace("data[1]", "data[0]"): v for p, v in q.items()} for q in doc["charts"][cf.ODDS]
    ]
    with pytest.raises(AssertionError):
        assert_contract({**doc, "charts": {cf.ODDS: moved}}, cf.ODDS, figures)


def test_the_urls_key_every_input_and_compute_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(cf, "releases_document", lambda *a, **k: calls.append(k) or {})
    monkeypatch.setattr(cf, "staircase_document", lambda *a, **k: calls.append(k) or {})
    store = frames.Store()
    monkeypatch.setattr(frames, "STORE", store)
    spec = default_spec()
    base = dict(within=1.0, seed=0, u=Units())
    path = cf.releases_url(spec, "h/1", **base)
    assert path.startswith(frames.PREFIX) and calls == [] and len(store) == 1
    assert cf.releases_url(spec, "h/1", **base) == path  # the same step: the same document
    others = {cf.releases_url(spec, "h/2", **base)}
    for name, value in dict(within=2.0, seed=1, u=KNOTS).items():
        others.add(cf.releases_url(spec, "h/1", **{**base, name: value}))
    others |= {cf.staircase_url(spec, "h/1", u=Units()), cf.staircase_url(spec, "h/1", u=KNOTS)}
    others.add(cf.odds_url())
    monkeypatch.setattr(cf, "composition_document", lambda *a, **k: calls.append(k) or {})
    step6 = dict(budget=2.0, u=Units())
    others.add(cf.composition_url(spec, "s/1", **step6))
    assert cf.composition_url(spec, "s/1", **step6) in others
    for name, value in dict(budget=3.0, u=KNOTS).items():
        others.add(cf.composition_url(spec, "s/1", **{**step6, name: value}))
    others.add(cf.composition_url(spec, "s/2", **step6))
    assert path not in others and len(others) == 11 and calls == []


# --- The demo city: the figures the page itself draws -----------------------------------------


@pytest.mark.parametrize("step", [1, 4, 5, 6])
def test_demo_city_patches_give_the_pages_own_figures(step, monkeypatch):
    """The Course page on the demo city at a few stops of one ε step; every chart it draws is
    recorded with the frames path it passed, and stop k's patch of that document (the one the
    page registered: all 180 stops) on the page's figure of stop j must be its figure of k."""
    drawn: dict[str, dict] = {}
    urls: set[str] = set()
    original = ui_module.chart

    def record(fig, *, key, **kwargs):
        drawn["chart_" + key] = encoded(fig)
        assert kwargs.get("group") == cs.EPSILON_GROUP[step]
        urls.add(kwargs["frames"])
        return original(fig, key=key, **kwargs)

    monkeypatch.setattr(ui_module, "chart", record)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["step"] = str(step)
    at.run()
    at.switch_page("dashboard/course/page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    picked = (0.01, 0.5, 1.0, 5.0)
    figures = {}
    for eps in picked:
        at.select_slider(key=cs.EPSILON[step]).set_value(eps).run()
        assert not at.exception and at.session_state[cs.EPSILON[step]] == eps
        figures[eps] = drawn[CHART[step]]
    assert len(urls) == 1, urls  # one document for every ε of the step
    entry = frames.STORE.entry(urls.pop().removeprefix(frames.PREFIX).removesuffix(".json"))
    assert entry is not None
    doc = sent(entry.compute())
    assert doc["stops"] == list(course.EPSILON_GRID)
    assert assert_contract(doc, CHART[step], figures) == len(picked) ** 2
