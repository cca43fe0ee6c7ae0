"""core.course: each step's exact answer against an independent computation (brute force over
the control's values, or the closed form), and what the check accepts and refuses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core import course, worstcase
from core.citywide.gridset import GridSet
from core.errors import HexplorerError
from core.hat import HatData


@pytest.fixture(scope="module")
def hat() -> HatData:
    rng = np.random.default_rng(3)
    counts = np.array([60, 40, 30, 25, 20, 18, 15, 12, 10, 9, 8, 7, 6, 5, 4, 3, 3, 2, 2, 1] * 3)
    means = rng.uniform(10.0, 35.0, counts.size)
    ids = [f"u{i:02d}" for i in range(counts.size)]
    return HatData.from_arrays(counts, counts * means, user_ids=ids, upper=65.0)


@pytest.fixture(scope="module")
def grids() -> GridSet:
    # user x in 4 grids, y in 2, z in 2: five grids, max G = 4.
    rows = [("x", g) for g in "abcd"] + [("y", "a"), ("y", "b"), ("z", "c"), ("z", "e")]
    return GridSet.from_summaries(
        pd.DataFrame(
            {
                "hat": [f"{g}/s" for _, g in rows],
                "cell": [g for _, g in rows],
                "slot": ["s"] * len(rows),
                "user_id": [u for u, _ in rows],
                "m": [3, 2, 1, 2, 4, 1, 2, 5],
                "s": [30.0, 20.0, 10.0, 20.0, 40.0, 10.0, 20.0, 50.0],
                "q": [300.0, 200.0, 100.0, 200.0, 400.0, 100.0, 200.0, 500.0],
            }
        )
    )


def test_grid_is_increasing_and_spans_the_answers():
    g = np.asarray(course.EPSILON_GRID)
    assert np.all(np.diff(g) > 0) and g[0] == 0.01 and g[-1] == 5.0


def test_odds_is_ln_of_the_factor():
    a = course.odds(3.0)
    assert a.value == pytest.approx(math.log(3.0), rel=1e-15)
    largest_on_grid = max(e for e in course.EPSILON_GRID if math.exp(e) <= 3.0)
    assert a.accepts(largest_on_grid)
    assert not a.accepts(1.1)  # e^1.1 > 3
    assert not a.accepts(0.9)  # too far below: odds ×2.46, not the largest ε
    with pytest.raises(HexplorerError, match="factor"):
        course.odds(1.0)


def test_leakiest_user_matches_the_loss_formula(hat):
    a = course.leakiest_user(hat, 1.0)
    # Record-level noise b = U/(N ε); the farthest neighbour moves the mean by m |x̄ − v| / N.
    n, u = hat.n_records, hat.upper
    loss = {
        str(i): m * max(x, u - x) / n / (u / n)
        for i, m, x in zip(hat.user_ids, hat.counts, hat.user_means, strict=True)
    }
    best = max(loss.values())
    assert a.found["loss"] == pytest.approx(best, rel=1e-12)
    assert set(a.accepted) == {k for k, v in loss.items() if v >= best * (1 - 1e-12)}
    assert a.found["user_level_loss"] <= 1.0 + 1e-12
    other = next(k for k, v in loss.items() if v < best * 0.99)
    assert not a.accepts(other)


def test_best_m_ub_is_the_brute_force_argmin(hat):
    a = course.best_m_ub(hat.counts, hat.upper, 0.5)
    ms = np.arange(hat.m_min, hat.m_max + 1)
    totals = [
        float(worstcase.worst_case_error(hat.counts, hat.upper, int(m), 0.5).total) for m in ms
    ]
    best = min(totals)
    assert a.value == int(ms[int(np.argmin(totals))])
    assert a.found["error"] == pytest.approx(best, rel=1e-12)
    assert set(a.accepted) == {int(m) for m, t in zip(ms, totals, strict=True) if t <= best * 1.01}
    worst = int(ms[int(np.argmax(totals))])
    assert not a.accepts(worst)


def test_share_within_is_the_smallest_grid_epsilon(hat):
    a = course.share_within(hat, 3.0, seed=1, n_runs=1000)
    assert a.value in course.EPSILON_GRID
    _, s = course.release_share(hat, a.value, 3.0, seed=1, n_runs=1000)
    assert s.share_within >= 0.9 and s.share_within == a.found["share"]
    i = course.EPSILON_GRID.index(a.value)
    if i:
        _, before = course.release_share(hat, course.EPSILON_GRID[i - 1], 3.0, seed=1, n_runs=1000)
        assert before.share_within < 0.9
    assert a.accepts(a.value) and not a.accepts(course.EPSILON_GRID[i - 1])


def test_share_within_default_band_is_round(hat):
    a = course.share_within(hat, seed=0, n_runs=500)
    assert a.given["within"] == course.nice_up(a.given["within"])
    with pytest.raises(HexplorerError, match="No ε"):
        course.share_within(hat, 1e-9, seed=0, n_runs=200)


def test_worst_case_target_is_the_smallest_epsilon(hat):
    a = course.worst_case_target(hat.counts, hat.upper, 2.0)

    def e(eps: float) -> float:
        m = worstcase.m_opt(hat.counts, hat.upper, eps)
        return float(worstcase.worst_case_error(hat.counts, hat.upper, m, eps).total)

    assert e(a.value) <= 2.0 < e(a.value * (1 - 1e-6))
    assert a.found["m_ub"] == worstcase.m_opt(hat.counts, hat.upper, a.value)
    assert a.accepts(a.value + 0.005) and not a.accepts(a.value * 0.98)
    assert course.worst_case_target(hat.counts, hat.upper).given["target"] == course.nice_up(e(1.0))


def test_composition_budget_over_max_grids(grids):
    a = course.composition(grids, 1.0, upper=65.0)
    assert a.value == pytest.approx(0.25)
    assert a.found["by_users"] == pytest.approx(1.0) and a.found["basic"] == pytest.approx(1.25)
    assert 1 <= a.found["k_final"] <= 4
    assert a.found["after_chop"] == pytest.approx(a.found["k_final"] * 0.25)
    assert a.accepts(0.24) and not a.accepts(0.26)


def test_course_has_six_answers_in_order(hat, grids):
    c = course.course(hat, grids)
    assert [a.step for a in c.answers] == [1, 2, 3, 4, 5, 6]
    assert c.answer(3) is c.answers[2]
    with pytest.raises(HexplorerError, match="step"):
        c.answer(7)


def test_nice_up():
    assert [course.nice_up(x) for x in (0.011, 1.0, 1.5, 2.1, 4.0, 60.0)] == [
        0.02, 1.0, 2.0, 2.5, 5.0, 100.0,
    ]  # fmt: skip
    with pytest.raises(HexplorerError):
        course.nice_up(0.0)
