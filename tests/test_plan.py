"""core.plan: the smallest ε for a target error, exact for the analytic worst cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core import plan
from core import worstcase as wc
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import analytic_names
from core.params import EPSILON_MAX, EPSILON_MIN

U = 65.0
counts_st = st.lists(st.integers(1, 60), min_size=1, max_size=25)


def _root_search(f, target: float, lo: float = EPSILON_MIN, hi: float = EPSILON_MAX) -> float:
    """Plain bisection on the float bits for a decreasing f: the smallest float with f <= target
    within the product's ε range (None when f stays above the target up to its top)."""
    if f(hi) > target:
        return None
    assert target < f(lo)
    bi, gi = int(np.float64(lo).view(np.int64)), int(np.float64(hi).view(np.int64))
    while gi - bi > 1:
        mid = (gi + bi) // 2
        if f(float(np.int64(mid).view(np.float64))) <= target:
            gi = mid
        else:
            bi = mid
    return float(np.int64(gi).view(np.float64))


@settings(max_examples=150, deadline=None)
@given(
    counts=counts_st,
    target=st.floats(0.05, 60.0),
    mechanism=st.sampled_from(analytic_names()),
    noise_measure=st.sampled_from(["mean", "std"]),
)
def test_returned_epsilon_is_the_smallest(counts, target, mechanism, noise_measure):
    p = plan.epsilon_for_error(counts, U, target, mechanism, noise_measure)
    if p.status == "ok":
        at = plan.worst_case(counts, U, p.epsilon, mechanism, noise_measure)
        assert at.total <= target
        assert p.worst_case_error == at.total and p.m_ub == at.m_ub
        below = plan.worst_case(counts, U, p.epsilon * (1 - 1e-6), mechanism, noise_measure)
        assert below.total > target
    elif p.status == "unreachable":  # not even at the top of the product's ε range
        assert plan.worst_case(counts, U, EPSILON_MAX, mechanism, noise_measure).total > target
    else:  # any: opt-bounding, releasing U/2 at ε → 0
        assert mechanism == "opt-bounding" and target >= U / 2
        assert plan.worst_case(counts, U, EPSILON_MIN, mechanism, noise_measure).total <= target


@settings(max_examples=80, deadline=None)
@given(
    counts=counts_st, target=st.floats(0.01, 200.0), noise_measure=st.sampled_from(["mean", "std"])
)
def test_baseline_closed_form_equals_root_search(counts, target, noise_measure):
    closed = plan.baseline_epsilon(counts, U, target, noise_measure)

    def f(e):
        return wc.baseline_error(counts, U, e, noise_measure)

    assume(EPSILON_MIN * 1.001 < closed < EPSILON_MAX * 0.999)  # the ends: see the next test
    root = _root_search(f, target)
    assert closed == pytest.approx(root, rel=1e-14)
    p = plan.epsilon_for_error(counts, U, target, "baseline", noise_measure)
    assert p.epsilon == root  # both are the smallest float meeting the target


def test_a_plan_stays_inside_the_product_s_epsilon_range():
    # baseline on counts (1,): E = 65/ε; target 0.1 needs ε = 650 > EPSILON_MAX
    assert plan.epsilon_for_error([1], U, 0.1, "baseline").status == "unreachable"
    # target 1e5 is met at ε = 6.5e-4 < EPSILON_MIN: every ε of the range meets it
    assert plan.epsilon_for_error([1], U, 1e5, "baseline").status == "any"
    assert plan.epsilon_for_error([1], U, 0.65, "baseline").epsilon == pytest.approx(100.0)


@settings(max_examples=60, deadline=None)
@given(
    counts=counts_st, target=st.floats(0.05, 60.0), noise_measure=st.sampled_from(["mean", "std"])
)
def test_opt_arrayavg_equals_root_search(counts, target, noise_measure):
    # W(ε) = E(m^(ε), ε) is continuous and strictly decreasing: one root.
    def f(e):
        return plan.worst_case(counts, U, e, "opt-arrayavg", noise_measure).total

    p = plan.epsilon_for_error(counts, U, target, "opt-arrayavg", noise_measure)
    root = _root_search(f, target)
    assert p.status == ("ok" if root is not None else "unreachable")
    if root is None:
        return
    assert p.epsilon == root
    assert p.m_ub == wc.m_opt(counts, U, p.epsilon, noise_measure)


def test_exact_values_on_a_small_hat():
    # counts (3, 2, 1), U = 65: staircase m = 1 on (0, 1/5], 2 on (1/5, 3/5], 3 above.
    # On m = 3: E = 65/ε, so target 32.5 -> ε = 2; E(m^(1)) = 32.5 at ε = 1 via m = 3.
    p = plan.epsilon_for_error([3, 2, 1], U, 32.5)
    assert (p.status, p.epsilon, p.m_ub) == ("ok", 1.0, 3)
    # On m = 2 (S = 5): E = 65/6 + 2*65/(5ε); target 65/6 + 52 -> ε = 0.5 (inside (0.2, 0.6])
    p = plan.epsilon_for_error([3, 2, 1], U, 65 / 6 + 52)
    assert p.epsilon == pytest.approx(0.5, rel=1e-15) and p.m_ub == 2
    # Baseline: 65*3/(6ε) = 32.5/ε
    assert plan.epsilon_for_error([3, 2, 1], U, 13.0, "baseline").epsilon == pytest.approx(2.5)
    # Median rule (m = 2): floor E1(2) = 65/6; below it unreachable, above it the closed form
    p = plan.epsilon_for_error([3, 2, 1], U, 10.0, "arrayavg-best")
    assert p.status == "unreachable" and p.floor == pytest.approx(65 / 6)
    p = plan.epsilon_for_error([3, 2, 1], U, 65 / 6 + 26, "arrayavg-best")
    assert p.epsilon == pytest.approx(1.0) and p.m_ub == 2


def test_opt_bounding_pieces():
    # counts (3, 2, 1): ε < 2/3: T = 0, E = U/2. [2/3, 1): T = 65, E = (65 + 0 + 65/ε)/6 ...
    c = [3, 2, 1]
    assert plan.epsilon_for_error(c, U, U / 2, "opt-bounding").status == "any"
    p = plan.epsilon_for_error(c, U, 30.0, "opt-bounding")
    # piece k = 3 (T = 65): E = (65 + 32.5 + 65/ε) / 6 ... bias Σ max((65 m - 65)/2, 0) = 65 + 32.5
    assert p.epsilon == pytest.approx(65 / (6 * 30.0 - 97.5))
    assert wc.opt_bounding_error(c, U, p.epsilon) <= 30.0
    # a target below every piece's start but met inside the last one (k = 1, Baseline)
    p = plan.epsilon_for_error(c, U, 1.0, "opt-bounding")
    assert p.epsilon == pytest.approx(plan.baseline_epsilon(c, U, 1.0))


def test_opt_bounding_piece_starts_follow_the_spec_rounding():
    from core.params import ceil_two_over_epsilon

    lo = plan.opt_bounding_piece_starts(300)
    for k in range(1, 301):
        assert ceil_two_over_epsilon(lo[k]) == k
        assert ceil_two_over_epsilon(np.nextafter(lo[k], 0.0)) == k + 1
    eps = np.geomspace(1e-3, 1e3, 5001)
    assert ceil_two_over_epsilon_list(eps) == plan.ceil_two_over_epsilon_array(eps).tolist()


def ceil_two_over_epsilon_list(eps):
    from core.params import ceil_two_over_epsilon

    return [ceil_two_over_epsilon(float(e)) for e in eps]


def test_one_user_and_ties():
    p = plan.epsilon_for_error([7], U, 3.0)
    assert p.epsilon == pytest.approx(U / 3.0) and p.m_ub == 7  # E = U m/(ε m) = U/ε
    p = plan.epsilon_for_error([4, 4, 4], U, 3.0, "opt-arrayavg", "std")
    assert p.epsilon == pytest.approx(math.sqrt(2) * U * 4 / (12 * 3.0))


def test_bad_input_is_one_clear_error():
    with pytest.raises(HexplorerError, match="target"):
        plan.epsilon_for_error([3, 2], U, -1)
    with pytest.raises(HexplorerError, match="target"):
        plan.epsilon_for_error([3, 2], U, float("nan"))
    with pytest.raises(HexplorerError, match="analytic"):
        plan.epsilon_for_error([3, 2], U, 1.0, "levy")
    with pytest.raises(HexplorerError, match="noise_measure"):
        plan.epsilon_for_error([3, 2], U, 1.0, noise_measure="median")
    with pytest.raises(HexplorerError, match="counts"):
        plan.epsilon_for_error([], U, 1.0)
    assert plan.epsilon_for_error([3, 2], U, 0).status == "unreachable"


# --- Monte Carlo --------------------------------------------------------------------------------


def _hat():
    rng = np.random.default_rng(5)
    counts = np.array([40, 25, 25, 12, 6, 3, 1])
    means = rng.uniform(10, 50, counts.size)
    return HatData.from_arrays(counts, counts * means, counts * means**2, upper=U)


def test_monte_carlo_plan_matches_the_laplace_truth_for_baseline():
    # Baseline's |error| is |Lap(b)|, b = U m*/(N ε): MAE b, 0.9-quantile b ln 10.
    hat = _hat()
    b1 = U * 40 / (hat.n_records * 1.0)
    grid = np.geomspace(0.1, 100, 121)
    for statistic, factor in (("mae", 1.0), (0.9, math.log(10.0))):
        target = 2.0
        p = plan.epsilon_for_error_mc(
            hat, target, "baseline", statistic=statistic, rng=np.random.default_rng(1),
            n_runs=20000, grid=grid,
        )  # fmt: skip
        exact = factor * b1 / target  # the ε at which the statistic equals the target
        i = int(np.searchsorted(grid, exact))
        assert p.status == "ok"
        assert p.epsilon in (grid[i - 1], grid[i], grid[i + 1])
        assert abs(p.value - factor * b1 / p.epsilon) < 5 * p.standard_error
        assert p.curve["value"].iloc[-1] == p.value
        assert (p.curve["value"].iloc[:-1] > target).all()


def test_monte_carlo_plan_unreachable_and_errors():
    hat = _hat()
    p = plan.epsilon_for_error_mc(
        hat, 1e-6, "opt-arrayavg", rng=np.random.default_rng(0), n_runs=200, grid=[1, 2]
    )
    assert p.status == "unreachable" and p.epsilon is None and len(p.curve) == 2
    with pytest.raises(HexplorerError, match="statistic"):
        plan.epsilon_for_error_mc(
            hat, 1.0, "levy", statistic=1.5, rng=np.random.default_rng(0), n_runs=10
        )
    with pytest.raises(HexplorerError, match="grid"):
        plan.epsilon_for_error_mc(
            hat, 1.0, "levy", rng=np.random.default_rng(0), n_runs=10, grid=[]
        )


# --- A city ---------------------------------------------------------------------------------------


def _city():
    from core.citywide.gridset import grid_set
    from core.data import default_slot, hat_table, load_demo, prepare

    s = prepare(load_demo()).summaries
    return grid_set(s, slot=default_slot(hat_table(s)))


def _ties():
    import pandas as pd

    from core.citywide.gridset import GridSet

    rows = []
    hats = {"a": [5, 5, 5, 2, 2], "b": [7], "c": [1], "d": [4, 4, 4, 4], "e": [40, 30, 12, 4, 4, 1],
            "f": [3, 2, 1], "g": [2, 1], "h": [10, 1, 1, 1, 1], "i": [9, 9, 1, 1, 1]}  # fmt: skip
    for cell, counts in hats.items():
        for i, m in enumerate(counts):
            rows.append({"hat": f"{cell}/s", "cell": cell, "slot": "s", "user_id": f"u{i}",
                         "m": m, "s": 20.0 * m, "q": 400.0 * m})  # fmt: skip
    return GridSet.from_summaries(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def city():
    return _city()


@pytest.mark.parametrize("noise_measure", ["mean", "std"])
def test_epsilon_needed_equals_the_single_hat_plan(city, noise_measure):
    from core.citywide.errors import error_table

    for grids in (city, _ties()):
        table = error_table(grids, upper=U, noise_measure=noise_measure)
        for mechanism in analytic_names():
            for target in (0.7, 5.0, 33.0):
                got = plan.epsilon_needed(table, target, mechanism)
                for h in range(grids.n_grids):
                    p = plan.epsilon_for_error(
                        grids.m[grids.starts[h] : grids.starts[h + 1]], U, target, mechanism,
                        noise_measure,
                    )  # fmt: skip
                    want = {"ok": p.epsilon, "any": 0.0, "unreachable": math.inf}[p.status]
                    assert got[h] == want, (mechanism, target, h)


def _within(table, eps, mechanism, target):
    from core.citywide.errors import errors_at

    return int(np.count_nonzero(errors_at(table, eps, mechanism).total <= target))


@pytest.mark.parametrize("noise_measure", ["mean", "std"])
def test_city_plan_against_a_brute_force_scan(city, noise_measure):
    from core.citywide.errors import error_table

    grid = np.geomspace(0.01, EPSILON_MAX, 2500)
    for grids in (city, _ties()):
        table = error_table(grids, upper=U, noise_measure=noise_measure)
        for mechanism in analytic_names():
            for target in (1.0, 6.0, 25.0):
                counts = np.array([_within(table, e, mechanism, target) for e in grid])
                for coverage in (0.5, 0.9, 1.0):
                    need = math.ceil(coverage * table.n_hats - 1e-9)
                    first = np.flatnonzero(counts >= need)
                    p = plan.city_plan(table, target, coverage=coverage, mechanism=mechanism)
                    label = (mechanism, target, coverage)
                    if p.status == "unreachable":
                        assert first.size == 0, label
                        continue
                    if p.status == "any":
                        assert counts[0] >= need, label
                        continue
                    assert first.size and p.epsilon <= grid[first[0]], label
                    assert first[0] == 0 or p.epsilon > grid[first[0] - 1], label
                    assert p.hats_reaching == _within(table, p.epsilon, mechanism, target) >= need
                    assert _within(table, p.epsilon * (1 - 1e-6), mechanism, target) < need
                    assert len(p.missing) == table.n_hats - p.hats_reaching


def test_city_plan_lists_unreachable_hats_and_the_privacy_loss(city):
    from core.citywide.accounting import privacy_loss
    from core.citywide.chop import chop_user
    from core.citywide.errors import error_table

    table = error_table(city, upper=U)
    p = plan.city_plan(table, 3.0, coverage=0.8, grids=city)
    assert p.status == "ok" and p.hats_reaching >= math.ceil(0.8 * city.n_grids)
    want = privacy_loss(city, p.epsilon, chop_user(city, p.epsilon, upper=U))
    assert p.user_loss == want
    d = p.to_dict()
    assert d["user_loss"] == {
        "basic": want.basic, "by_users": want.by_users, "after_chop": want.after_chop
    }  # fmt: skip
    # the median rule keeps its clipping error: HATs whose E1(median) exceeds the target are
    # listed as unreachable, and a coverage above their complement cannot be met
    p = plan.city_plan(table, 8.0, coverage=1.0, mechanism="arrayavg-best")
    floors = [
        wc.clipping_error(c, U, wc.median_count(c)) for c in np.split(city.m, city.starts[1:-1])
    ]
    assert set(p.unreachable) == {h for h, f in zip(city.hats, floors, strict=True) if f >= 8.0}
    assert p.unreachable and p.status == "unreachable" and p.epsilon is None
    with pytest.raises(HexplorerError, match="coverage"):
        plan.city_plan(table, 3.0, coverage=0.0)


def test_coverage_curve_counts_the_hats_within_target(city):
    from core.citywide.errors import error_table

    table = error_table(city, upper=U)
    eps = [0.1, 0.5, 1.0, 5.0]
    curve = plan.coverage_curve(table, 4.0, eps)
    for row in curve.itertuples():
        brute = sum(
            plan.worst_case(c, U, row.epsilon).total <= 4.0
            for c in np.split(city.m, city.starts[1:-1])
        )
        assert row.hats_within == brute and row.share == brute / city.n_grids
    assert curve["share"].is_monotonic_increasing


@pytest.mark.parametrize("noise_measure", ["mean", "std"])
def test_one_user_opt_bounding_above_half_u_is_any(noise_measure):
    # Found by hypothesis: with one user the worst case is U/2 for every ε < 2, so a target of
    # 33 ≥ U/2 holds for any ε; the search used to walk down below the smallest accepted ε.
    p = plan.epsilon_for_error([1], U, 33.0, "opt-bounding", noise_measure)
    assert p.status == "any" and p.epsilon is None
    assert p.worst_case_error == pytest.approx(U / 2)


def test_the_log_grids_are_numpys_to_an_ulp_and_the_same_on_every_machine():
    """core.params.log_grid: numpy's geomspace to within a float's last bit, its ends exact,
    and computed in decimals, so a CPU with AVX-512 (whose numpy rounds the last bit of
    geomspace otherwise) gives the same ε axis: pinned here by a few of its points."""
    from core.params import log_grid

    for lo, hi, n in ((0.01, 10.0, 61), (0.01, 100.0, 81), (0.01, 100.0, 161), (0.01, 7.0, 60)):
        grid = np.array(log_grid(lo, hi, n))
        assert grid.size == n and grid[0] == lo and grid[-1] == hi
        np.testing.assert_allclose(grid, np.geomspace(lo, hi, n), rtol=3e-15, atol=0)
        assert np.all(np.diff(grid) > 0)
    grid = log_grid(0.01, 10.0, 61)
    assert [grid[i].hex() for i in (15, 24, 36, 55)] == [
        "0x1.ccab8602d2697p-5",
        "0x1.44960c576b375p-3",
        "0x1.430cd74f6d478p-1",
        "0x1.67e600b234626p+2",
    ]
