"""The course's charts: the browser draws each with plotly.js's basic bundle (scatter, bar and
pie only, a quarter of the full bundle's start-up cost), and the releases chart's bars count
every simulated release."""

from __future__ import annotations

import numpy as np

from core import worstcase
from dashboard.common.source.units import Units
from dashboard.common.view import liveplot
from dashboard.course import charts


def test_the_releases_bars_count_every_release_in_equal_bins():
    values = np.random.default_rng(0).normal(20.0, 3.0, size=5_000)
    fig = charts.releases_chart(values, 20.0, 1.0, Units(), bins=60)
    (bars,) = fig.data
    assert bars.type == "bar" and len(bars.x) == 60
    assert int(np.sum(bars.y)) == len(values)
    assert np.allclose(np.diff(bars.x), bars.width)
    assert bars.x[0] - bars.width / 2 == min(values)
    (band,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (band.x0, band.x1) == (19.0, 21.0)
    assert band.fillcolor and not band.fillcolor.replace(" ", "").endswith(",0)")  # visible
    assert any(a.text == "±1 km/h" for a in fig.layout.annotations)


def test_every_course_chart_needs_only_the_basic_bundle():
    ms = np.arange(1, 6)
    parts = worstcase.worst_case_error(np.array([1, 2, 3, 4, 5]), 65.0, ms, 1.0)
    steps = [worstcase.Step(epsilon_from=0.0, epsilon_to=1.0, m=3)]
    figs = [
        charts.odds_chart(1.0, 3.0),
        charts.error_chart(ms, parts, 3, Units()),
        charts.releases_chart(np.linspace(0.0, 1.0, 100), 0.5, 0.1, Units()),
        charts.staircase_chart(steps, 0.5, 3),
        charts.composition_chart(0.1, grids=40, max_grids=7, budget=2.0, u=Units()),
    ]
    assert [liveplot.bundle(f) for f in figs] == ["basic"] * len(figs)
    assert [liveplot.bundle(f, lite=True) for f in figs] == ["lite"] * len(figs)  # the page's


def test_the_staircase_is_drawn_on_a_log_axis_over_the_course_stops():
    steps = [
        worstcase.Step(epsilon_from=0.0, epsilon_to=0.05, m=2),
        worstcase.Step(epsilon_from=0.05, epsilon_to=0.3, m=7),
        worstcase.Step(epsilon_from=0.3, epsilon_to=float("inf"), m=9),
    ]
    fig = charts.staircase_chart(steps, 0.2, 7)
    line = fig.data[0]
    assert fig.layout.xaxis.type == "log"
    assert (min(line.x), max(line.x)) == (0.01, 5.0)  # log 0 has no place: from the first stop
    assert list(line.y) == [2, 2, 7, 7, 9, 9]


def test_the_composition_chart_puts_the_learners_epsilon_on_the_by_users_line():
    """Step 6: G·ε and ε·max G_ℓ as lines, the budget as a line; the learner's point is what
    the most travelled user loses, and it crosses the budget at the step's answer (budget /
    max G_ℓ)."""
    u = Units(value="knots", user="ship")
    fig = charts.composition_chart(0.25, grids=40, max_grids=8, budget=2.0, u=u)
    basic, by_users, point = fig.data
    assert np.allclose(np.asarray(basic.y) / np.asarray(basic.x), 40.0)
    assert np.allclose(np.asarray(by_users.y) / np.asarray(by_users.x), 8.0)
    assert tuple(point.x) == (0.25,) and tuple(point.y) == (2.0,)  # 8 × 0.25: at the budget
    (budget,) = [s for s in fig.layout.shapes if s.type == "line"]
    assert budget.y0 == budget.y1 == 2.0
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert fig.layout.title.text == "ε = 0.25 per hexagon: a ship loses at most 2 (budget 2)"
    assert "ships" in by_users.name
