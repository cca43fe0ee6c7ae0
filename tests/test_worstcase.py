"""Tests for core.worstcase (SPEC section 4): exact values, brute force, the staircase."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import worstcase as wc
from core.errors import HexplorerError
from core.grouping import bestfit
from core.hat import HatData
from core.synthetic import extreme_counts, geometric_counts

U = 65.0

# --------------------------------------------------------------------------------------------
# Exact (rational) brute force, straight from the SPEC's definitions


def s_of(counts, m: int) -> int:
    return sum(min(c, m) for c in counts)


def e_exact(counts, m: int, eps: Fraction) -> Fraction:
    """E(m)/U with c = 1, as an exact rational."""
    n = sum(counts)
    s = s_of(counts, m)
    return 1 - Fraction(s, n) + Fraction(m, s) / eps


def brute_m_opt(counts, eps: float) -> int:
    """Smallest minimiser of E over every integer of [m_*, m*], exact (c = 1)."""
    e = Fraction(repr(eps))  # epsilon as written (0.1 is 1/10)
    values = {m: e_exact(counts, m, e) for m in range(min(counts), max(counts) + 1)}
    best = min(values.values())
    return min(m for m, v in values.items() if v == best)


counts_strategy = st.lists(st.integers(1, 30), min_size=1, max_size=12)


# --------------------------------------------------------------------------------------------
# Exact values: counts (3, 2, 1), U = 65. N = 6, S(1) = 3, S(2) = 5, S(3) = 6.


def test_errors_exact_321():
    c = [3, 2, 1]
    assert wc.clipping_error(c, U, 1) == pytest.approx(U / 2)
    assert wc.clipping_error(c, U, 2) == pytest.approx(U / 6)
    assert wc.clipping_error(c, U, 3) == 0.0
    assert wc.noise_error(c, U, 1, 0.5) == pytest.approx(U * 1 / (0.5 * 3))
    assert wc.noise_error(c, U, 2, 0.5) == pytest.approx(52.0)
    assert wc.noise_error(c, U, 2, 0.5, "std") == pytest.approx(52.0 * math.sqrt(2))
    p = wc.worst_case_error(c, U, 2, 1.0)
    assert (p.clipping, p.noise, p.total) == pytest.approx((U / 6, U * 2 / 5, U / 6 + U * 2 / 5))


def test_errors_vectorised_over_m():
    c = np.array([7, 7, 4, 2, 1, 1])
    ms = np.array([1, 2, 4, 7])
    p = wc.worst_case_error(c, U, ms, 0.8, "std")
    assert isinstance(p.total, np.ndarray) and p.total.shape == (4,)
    for i, m in enumerate(ms.tolist()):
        q = wc.worst_case_error(c, U, m, 0.8, "std")
        assert isinstance(q.total, float)
        assert p.total[i] == pytest.approx(q.total)
        assert q.clipping == pytest.approx(U * (1 - s_of(c.tolist(), m) / 22))
        assert q.noise == pytest.approx(math.sqrt(2) * U * m / (0.8 * s_of(c.tolist(), m)))


def test_m_opt_and_staircase_exact_321():
    # lines (E/U vs t = 1/eps): m=1: 1/2 + t/3; m=2: 1/6 + 2t/5; m=3: t/2.
    # m=1|m=2 cross at eps = 1/5, m=2|m=3 at eps = 3/5.
    c = [3, 2, 1]
    steps = wc.staircase(c, U)
    assert [s.m for s in steps] == [1, 2, 3]
    assert steps[0].epsilon_from == 0.0 and steps[-1].epsilon_to == math.inf
    for step, exact in zip(steps[:-1], [Fraction(1, 5), Fraction(3, 5)], strict=True):
        # the largest float whose decimal value is not above the exact breakpoint
        assert Fraction(repr(step.epsilon_to)) <= exact
        assert exact < Fraction(repr(math.nextafter(step.epsilon_to, 1e9)))
    assert wc.m_opt(c, U, 0.1) == 1
    assert wc.m_opt(c, U, 0.2) == 1  # 0.2 is 1/5, the tie: the smaller m (not the binary float)
    assert steps[0].epsilon_to == 0.2  # breakpoints print as the user would write them
    assert wc.m_opt(c, U, 0.2000001) == 2
    assert wc.m_opt(c, U, 0.5) == 2
    assert wc.m_opt(c, U, 0.6) == 2  # tie at 3/5 (0.6 is just below): the smaller m
    assert wc.m_opt(c, U, 0.61) == 3
    # std: c = sqrt(2) scales every breakpoint by sqrt(2)
    steps = wc.staircase(c, U, "std")
    assert [s.m for s in steps] == [1, 2, 3]
    assert steps[0].epsilon_to == pytest.approx(math.sqrt(2) / 5, rel=1e-15)
    assert steps[1].epsilon_to == pytest.approx(3 * math.sqrt(2) / 5, rel=1e-15)
    assert Fraction(repr(steps[1].epsilon_to)) ** 2 <= Fraction(18, 25)
    assert Fraction(repr(math.nextafter(steps[1].epsilon_to, 9.0))) ** 2 > Fraction(18, 25)


def test_exact_tie_goes_to_smaller_m():
    # counts (2, 1): m=1: 1/3 + t/2 ; m=2: 2t/3 -> tie at t = 2, eps = 1/2 (a float exactly)
    assert wc.m_opt([2, 1], U, 0.5) == 1
    assert wc.m_opt([2, 1], U, math.nextafter(0.5, 1.0)) == 2
    steps = wc.staircase([2, 1], U)
    assert [(s.epsilon_from, s.epsilon_to, s.m) for s in steps] == [
        (0.0, 0.5, 1),
        (0.5, math.inf, 2),
    ]


def test_single_distinct_count():
    assert wc.staircase([4, 4, 4], U) == [wc.Step(epsilon_from=0.0, epsilon_to=math.inf, m=4)]
    assert wc.m_opt([4, 4, 4], U, 0.3) == 4
    assert wc.m_levy([4, 4]) == wc.m_convex([4, 4]) == wc.median_count([4, 4]) == 4


def test_paper_numbers_baseline_sensitivity():
    # [4], App. E: m* = 417, N = 17166, U = 65 -> Baseline sensitivity 27105/17166
    counts = [417] + [46] * 364 + [5]
    assert sum(counts) == 17166
    assert wc.baseline_error(counts, U, 1.0) == pytest.approx(65 * 417 / 17166)
    assert wc.baseline_error(counts, U, 1.0) == pytest.approx(1.578993, abs=1e-6)
    assert wc.baseline_error(counts, U, 0.5, "std") == pytest.approx(
        2 * math.sqrt(2) * 27105 / 17166
    )
    # Baseline is E(m*)
    assert wc.worst_case_error(counts, U, 417, 0.7).total == pytest.approx(
        wc.baseline_error(counts, U, 0.7)
    )


def test_median_levy_convex_exact():
    assert wc.median_count([5, 1, 3, 2]) == 3  # 2nd largest of 4
    assert wc.median_count([5, 1, 3, 2, 2]) == 2  # 3rd largest of 5
    # Levy: S(m)/sqrt(m) for (3, 2, 1): 3, 5/sqrt2, 6/sqrt3 -> m = 2
    assert wc.m_levy([3, 2, 1]) == 2
    # (4, 2, 1, 1): S(1)=4 -> 4; S(2)=6 -> 6/sqrt2; S(4)=8 -> 8/2 = 4. argmax 2.
    assert wc.m_levy([4, 2, 1, 1]) == 2
    # (4, 1, 1, 1, 1): S(1) = 5 vs S(4)/2 = 4 -> 1;  (4, 4, 1, 1): S(1) = 4 vs 10/2 = 5 -> 4
    assert wc.m_levy([4, 1, 1, 1, 1]) == 1 and wc.m_levy([4, 4, 1, 1]) == 4
    # exact tie: (4, 4, 1, 1, 1, 1): S(1)/1 = 6 = S(4)/2 -> the smaller, 1
    assert wc.m_levy([4, 4, 1, 1, 1, 1]) == 1
    # convex proxy (10, 1, 1, 1, 1): m̄ = 2.8, interior minimum at ceil(m̄) = 3
    assert wc.m_convex([10, 1, 1, 1, 1]) == 3
    assert wc.m_convex([3, 2, 1]) == 2


def test_opt_bounding_exact_geometric_and_extreme():
    g = geometric_counts(6)  # 64 x1, 32 x2, 16 x4, 8 x8, 4 x16, 2 x32, 1 x64; N = 448
    assert wc.opt_bounding_threshold(g, U, 1.0) == 32 * U
    assert wc.opt_bounding_error(g, U, 1.0) == pytest.approx((16 * U + 32 * U) / 448)
    assert wc.opt_bounding_threshold(g, U, 0.5) == 16 * U
    assert wc.opt_bounding_error(g, U, 0.5) == pytest.approx((24 * U + 16 * U + 32 * U) / 448)
    x = extreme_counts()  # 10, then 100 ones; N = 110
    assert wc.opt_bounding_threshold(x, U, 1.0) == U
    assert wc.opt_bounding_error(x, U, 1.0) == pytest.approx((4.5 * U + U) / 110)
    assert wc.opt_bounding_threshold([3, 2, 1], U, 0.5) == 0.0  # ceil(2/eps) = 4 > L = 3
    assert wc.opt_bounding_error([3, 2, 1], U, 0.5) == pytest.approx(U / 2)
    assert wc.opt_bounding_error(x, U, 1.0, "std") == pytest.approx(
        (4.5 * U + math.sqrt(2) * U) / 110
    )


@pytest.mark.parametrize("counts", [geometric_counts(6), extreme_counts()])
def test_opt_bounding_vs_baseline(counts):
    # eps >= 2: T = U m*, opt-bounding is Baseline; eps < 2: never worse (worst case)
    for eps in (2.0, 3.0, 10.0):
        assert wc.opt_bounding_error(counts, U, eps) == pytest.approx(
            wc.baseline_error(counts, U, eps)
        )
    for eps in (0.25, 0.5, 1.0, 1.5):
        assert wc.opt_bounding_error(counts, U, eps) < wc.baseline_error(counts, U, eps)


def test_bestfit_bias_spec_example():
    # SPEC: counts (2, 1), m_UB = 2: E1 = 0, exact bias U/6
    assert wc.clipping_error([2, 1], U, 2) == 0.0
    assert wc.bestfit_bias([2, 1], U, 2) == pytest.approx(U / 6)
    assert wc.bestfit_bias([1, 2], U, 2) == pytest.approx(U / 6)  # any input order


# --------------------------------------------------------------------------------------------
# Invalid input


@pytest.mark.parametrize(
    "counts", [[], [[1, 2]], [0, 1], [1.5], ["a"], [1, -2], [np.nan], "abc", [True]]
)
def test_bad_counts_raise(counts):
    with pytest.raises(HexplorerError, match="counts"):
        wc.m_opt(counts, U, 1.0)


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_epsilon_raises(eps):
    with pytest.raises(HexplorerError, match="epsilon"):
        wc.m_opt([3, 2, 1], U, eps)
    with pytest.raises(HexplorerError, match="epsilon"):
        wc.noise_error([3, 2, 1], U, 2, eps)
    with pytest.raises(HexplorerError, match="epsilon"):
        wc.opt_bounding_error([3, 2, 1], U, eps)


def test_bad_parameters_raise():
    with pytest.raises(HexplorerError, match="noise_measure"):
        wc.staircase([3, 2, 1], U, "variance")
    with pytest.raises(HexplorerError, match="upper"):
        wc.clipping_error([3, 2, 1], -1, 2)
    for m in (0, 4, 2.5, [1, 5]):
        with pytest.raises(HexplorerError, match="'m'"):
            wc.clipping_error([3, 2, 1], U, m)
    with pytest.raises(HexplorerError, match="m_ub"):
        wc.bestfit_bias([3, 2, 1], U, 4)


# --------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=150, deadline=None)
@given(counts_strategy, st.floats(0.01, 50.0))
def test_m_opt_equals_exact_brute_force(counts, eps):
    m = wc.m_opt(counts, U, eps)
    assert m in counts  # SPEC: a minimiser always lies in {m_l}
    assert m == brute_m_opt(counts, eps)


@settings(max_examples=60, deadline=None)
@given(counts_strategy, st.sampled_from(["mean", "std"]))
def test_staircase_structure_and_brute_force(counts, measure):
    steps = wc.staircase(counts, U, measure)
    ms = [s.m for s in steps]
    assert steps[0].epsilon_from == 0.0 and steps[-1].epsilon_to == math.inf
    assert ms[0] == min(counts) and ms[-1] == max(counts)
    assert all(a < b for a, b in zip(ms, ms[1:], strict=False))  # strictly increasing
    assert set(ms) <= set(counts)
    for a, b in zip(steps, steps[1:], strict=False):
        assert a.epsilon_to == b.epsilon_from and a.epsilon_from < a.epsilon_to
    # the staircase equals m_opt on a fine grid and at (and just past) each breakpoint
    grid = np.geomspace(1e-3, 100.0, 50)  # the product's ε range
    for eps in grid.tolist():
        m = wc.step_at(steps, eps)
        assert m == wc.m_opt(counts, U, eps, measure)
        # brute force in floats over every integer m: m attains the minimum
        all_m = np.arange(min(counts), max(counts) + 1)
        e = wc.worst_case_error(counts, U, all_m, eps, measure).total
        assert e[m - min(counts)] <= e.min() * (1 + 1e-12)
        if measure == "mean":
            assert m == brute_m_opt(counts, eps)
    for a, b in zip(steps, steps[1:], strict=False):
        assert wc.m_opt(counts, U, a.epsilon_to, measure) == a.m
        assert wc.m_opt(counts, U, math.nextafter(a.epsilon_to, math.inf), measure) == b.m
        # the breakpoint is where the two lines meet (E(a.m) = E(b.m)), up to rounding
        ea = wc.worst_case_error(counts, U, a.m, a.epsilon_to, measure).total
        eb = wc.worst_case_error(counts, U, b.m, a.epsilon_to, measure).total
        assert ea == pytest.approx(eb, rel=1e-9)
        if measure == "mean":
            # exactly: E(a.m) <= E(b.m) at the float breakpoint, > just past it
            r = Fraction(repr(a.epsilon_to))
            assert e_exact(counts, a.m, r) <= e_exact(counts, b.m, r)
            r2 = Fraction(repr(math.nextafter(a.epsilon_to, math.inf)))
            assert e_exact(counts, a.m, r2) > e_exact(counts, b.m, r2)


@settings(max_examples=150, deadline=None)
@given(counts_strategy)
def test_m_levy_and_m_convex_equal_exact_brute_force(counts):
    n, big_l, top = sum(counts), len(counts), max(counts)
    rng = range(min(counts), top + 1)
    # Levy: argmax S(m)/sqrt(m)  <=>  argmax S(m)^2 / m (exact)
    levy = {m: Fraction(s_of(counts, m) ** 2, m) for m in rng}
    best = max(levy.values())
    assert wc.m_levy(counts) == min(m for m, v in levy.items() if v == best)
    # convex proxy: 1 - S/N + max(m, N/L)/m*
    conv = {
        m: 1 - Fraction(s_of(counts, m), n) + max(Fraction(m), Fraction(n, big_l)) / top
        for m in rng
    }
    best = min(conv.values())
    assert wc.m_convex(counts) == min(m for m, v in conv.items() if v == best)
    # median: ceil(L/2)-th largest
    assert wc.median_count(counts) == sorted(counts, reverse=True)[(big_l + 1) // 2 - 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=7), st.data())
def test_bestfit_bias_equals_brute_force_over_extreme_means(counts, data):
    m_ub = data.draw(st.integers(min(counts), max(counts)))
    worst = 0.0
    for xs in itertools.product([0.0, U], repeat=len(counts)):
        hat = HatData.from_arrays(counts, [m * x for m, x in zip(counts, xs, strict=True)])
        worst = max(worst, abs(bestfit(hat, m_ub).f_arr - hat.true_mean))
    assert wc.bestfit_bias(counts, U, m_ub) == pytest.approx(worst, abs=1e-9)


def test_ties_at_a_decimal_epsilon_go_to_the_smaller_m():
    # counts (4, 4, 3, 1), N = 12: E(1)/U = 1 - 4/12 + 1/(4 eps), E(3)/U = 1 - 11/12 + 3/(11 eps);
    # equal at eps = 1/10 exactly (reviewer's case); the float 0.1 lies just above 1/10.
    c = [3, 1, 4, 4]
    assert wc.worst_case_error(c, U, 1, 0.1).total == pytest.approx(
        wc.worst_case_error(c, U, 3, 0.1).total
    )
    assert wc.m_opt(c, U, 0.1) == 1
    assert wc.step_at(wc.staircase(c, U), 0.1) == 1
    assert wc.m_opt(c, U, 0.1000001) == 3


@pytest.mark.parametrize(
    "counts",
    [[2**63 + 5], np.array([2**63 + 5], dtype=np.uint64), [1e30], [2**62, 2**62], [2**52, 2**52]],
    ids=["beyond-int64", "uint64", "huge-float", "sum-overflows-int64", "sum-reaches-2^53"],
)
def test_counts_too_large_to_compute_with_raise(counts):
    with pytest.raises(HexplorerError, match=r"'counts' parameter must total fewer than 2\^53"):
        wc.check_counts(counts)


def test_counts_up_to_the_limit_pass():
    assert wc.check_counts([2**52, 2**52 - 1]).tolist() == [2**52, 2**52 - 1]
