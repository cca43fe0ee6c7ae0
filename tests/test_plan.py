"""core.plan: the smallest ε for a target error, exact for the analytic worst cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import plan
from core import worstcase as wc
from core.errors import HexplorerError
from core.hat import HatData

U = 65.0
counts_st = st.lists(st.integers(1, 60), min_size=1, max_size=25)


def _root_search(f, target: float, lo: float = 1e-9, hi: float = 1e9) -> float:
    """Plain bisection on the float bits for a decreasing f: the smallest float with f <= target."""
    assert f(hi) <= target < f(lo)
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
    mechanism=st.sampled_from(plan.ANALYTIC_MECHANISMS),
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
    elif p.status == "unreachable":
        assert target <= p.floor  # the floor is approached as ε → ∞ only
        assert plan.worst_case(counts, U, 1e12, mechanism, noise_measure).total > target
    else:  # any: opt-bounding, releasing U/2 at ε → 0
        assert mechanism == "opt-bounding" and target >= U / 2
        assert plan.worst_case(counts, U, 1e-9, mechanism, noise_measure).total <= target


@settings(max_examples=80, deadline=None)
@given(
    counts=counts_st, target=st.floats(0.01, 200.0), noise_measure=st.sampled_from(["mean", "std"])
)
def test_baseline_closed_form_equals_root_search(counts, target, noise_measure):
    closed = plan.baseline_epsilon(counts, U, target, noise_measure)

    def f(e):
        return wc.baseline_error(counts, U, e, noise_measure)

    root = _root_search(f, target)
    assert closed == pytest.approx(root, rel=1e-14)
    p = plan.epsilon_for_error(counts, U, target, "baseline", noise_measure)
    assert p.epsilon == root  # both are the smallest float meeting the target


@settings(max_examples=60, deadline=None)
@given(
    counts=counts_st, target=st.floats(0.05, 60.0), noise_measure=st.sampled_from(["mean", "std"])
)
def test_opt_arrayavg_equals_root_search(counts, target, noise_measure):
    # W(ε) = E(m^(ε), ε) is continuous and strictly decreasing: one root.
    def f(e):
        return plan.worst_case(counts, U, e, "opt-arrayavg", noise_measure).total

    p = plan.epsilon_for_error(counts, U, target, "opt-arrayavg", noise_measure)
    assert p.status == "ok"
    assert p.epsilon == _root_search(f, target)
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
