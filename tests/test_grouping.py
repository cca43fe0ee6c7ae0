"""Tests for core.grouping: WrapAround and BestFit (SPEC section 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import grouping
from core.errors import HexplorerError, NotApplicableError
from core.grouping import (
    Arrays,
    bestfit,
    bestfit_fill,
    clipped_counts,
    n_full_arrays,
    user_weights,
    wraparound,
)
from core.hat import HatData

# --------------------------------------------------------------------------------------------
# Naive reference implementations (straight from the SPEC's words)


def naive_bestfit(gamma: list[int], m_ub: int) -> tuple[list[int], list[int]]:
    """L arrays of capacity m_ub; each user into the fullest array with room, lowest index."""
    fills = [0] * len(gamma)
    assignment = []
    for g in gamma:
        best = None
        for i, f in enumerate(fills):
            if f + g <= m_ub and (best is None or f > fills[best]):
                best = i
        fills[best] += g
        assignment.append(best)
    used = max(assignment) + 1
    return assignment, fills[:used]


def naive_wraparound(hat: HatData, m_ub: int) -> list[float]:
    """Build the mean-replaced sample stream explicitly and cut it into full arrays."""
    stream: list[float] = []
    for m, xbar in zip(hat.counts.tolist(), hat.user_means.tolist(), strict=True):
        stream.extend([xbar] * min(m, m_ub))
    k = len(stream) // m_ub
    return [sum(stream[i * m_ub : (i + 1) * m_ub]) / m_ub for i in range(k)]


def naive_bestfit_means(hat: HatData, m_ub: int) -> list[float]:
    gamma = [min(m, m_ub) for m in hat.counts.tolist()]
    assignment, fills = naive_bestfit(gamma, m_ub)
    sums = [0.0] * len(fills)
    for a, g, xbar in zip(assignment, gamma, hat.user_means.tolist(), strict=True):
        sums[a] += g * xbar
    return [s / w for s, w in zip(sums, fills, strict=True)]


@st.composite
def hats(draw, max_users: int = 25, max_count: int = 15):
    counts = draw(st.lists(st.integers(1, max_count), min_size=1, max_size=max_users))
    means = draw(
        st.lists(st.floats(0.0, 65.0, allow_nan=False), min_size=len(counts), max_size=len(counts))
    )
    hat = HatData.from_arrays(
        counts, [m * x for m, x in zip(counts, means, strict=True)], upper=65.0
    )
    m_ub = draw(st.integers(hat.m_min, hat.m_max))
    return hat, m_ub


# --------------------------------------------------------------------------------------------
# Exact values


@pytest.fixture
def hat321() -> HatData:
    # counts (3, 2, 1), user means (10, 20, 5), U = 65
    return HatData.from_arrays([3, 2, 1], [30.0, 40.0, 5.0], upper=65.0)


def test_wraparound_exact_values(hat321):
    a = wraparound(hat321, 3)  # stream 10 10 10 | 20 20 5
    assert a.strategy == "wraparound" and a.n_arrays == 2 and a.assignment is None
    assert a.means.tolist() == pytest.approx([10.0, 15.0])
    assert a.fills.tolist() == [3, 3]
    assert a.f_arr == pytest.approx(12.5)
    b = wraparound(hat321, 2)  # stream 10 10 | 20 20 | 5 (dropped)
    assert b.n_arrays == 2 and b.means.tolist() == pytest.approx([10.0, 20.0])
    c = wraparound(hat321, 1)
    assert c.means.tolist() == pytest.approx([10.0, 20.0, 5.0])


def test_wraparound_user_straddles_two_arrays():
    # Γ = (4, 3, 3, 1) with m_UB = 4: | a a a a | b b b c | c c d (dropped)
    hat = HatData.from_arrays([5, 3, 3, 1], [5.0, 6.0, 30.0, 7.0], user_ids=list("abcd"))
    a = wraparound(hat, 4)
    assert a.n_arrays == 2
    assert a.means.tolist() == pytest.approx([1.0, (3 * 2.0 + 10.0) / 4])


def test_bestfit_exact_values(hat321):
    a = bestfit(hat321, 2)  # [10 10] [20 20] [5]
    assert a.strategy == "bestfit" and a.n_arrays == 3
    assert a.assignment.tolist() == [0, 1, 2]
    assert a.fills.tolist() == [2, 2, 1]
    assert a.means.tolist() == pytest.approx([10.0, 20.0, 5.0])
    assert a.f_arr == pytest.approx(35.0 / 3.0)
    b = bestfit(hat321, 3)  # [10 10 10] [20 20 5]
    assert b.assignment.tolist() == [0, 1, 1] and b.fills.tolist() == [3, 3]
    assert b.means.tolist() == pytest.approx([10.0, 15.0])


def test_bestfit_prefers_fullest_array_then_lowest_index():
    # m_UB = 6: users 4, 3, 3, 2, 2, 1
    # 4 -> A0(4); 3 -> A1(3); 3 -> A1(6); 2 -> A0(6); 2 -> A2(2); 1 -> A2(3)
    a, w = bestfit_fill(np.array([4, 3, 3, 2, 2, 1]), 6)
    assert a.tolist() == [0, 1, 1, 0, 2, 2]
    assert w.tolist() == [6, 6, 3]
    # the chosen array keeps taking users while it has room: 2 -> A0(2), 2 -> A0(4), 3 -> A1(3)
    a, w = bestfit_fill(np.array([2, 2, 3]), 5)
    assert a.tolist() == [0, 0, 1] and w.tolist() == [4, 3]
    # equal fills: A0(3), A1(3); then 2 goes to the lowest index, A0
    a, w = bestfit_fill(np.array([3, 3, 2]), 5)
    assert a.tolist() == [0, 1, 0] and w.tolist() == [5, 3]


def test_dtypes_and_helpers(hat321):
    a = bestfit(hat321, 2)
    assert a.means.dtype == np.float64 and a.fills.dtype == np.int64
    assert isinstance(a.n_arrays, int)
    assert clipped_counts(hat321.counts, 2).tolist() == [2, 2, 1]
    assert n_full_arrays(hat321.counts, 2) == 2
    alpha = user_weights(a, hat321.counts)
    assert alpha.sum() == pytest.approx(1.0)
    assert float(alpha @ hat321.user_means) == pytest.approx(a.f_arr)


# --------------------------------------------------------------------------------------------
# Invalid input


@pytest.mark.parametrize("m_ub", [0, 4, 2.5, "x", None])
def test_m_ub_must_lie_in_count_range(hat321, m_ub):
    with pytest.raises(HexplorerError, match="m_ub"):
        wraparound(hat321, m_ub)
    with pytest.raises(HexplorerError, match="m_ub"):
        bestfit(hat321, m_ub)


@pytest.mark.parametrize(
    ("counts", "m_ub", "match"),
    [
        ([1, 2], 0, "m_ub"),
        ([1, 2], 1.5, "m_ub"),
        ([3, 1], 2, "clipped_counts"),
        ([0, 1], 2, "clipped_counts"),
        ([1.5], 2, "clipped_counts"),
        ([], 2, "clipped_counts"),
        ([[1, 1]], 2, "clipped_counts"),
    ],
)
def test_bestfit_fill_rejects_bad_input(counts, m_ub, match):
    with pytest.raises(HexplorerError, match=match):
        bestfit_fill(np.asarray(counts), m_ub)


def test_no_array_guard_and_arrays_validation():
    from core.grouping import _check_no_array

    with pytest.raises(NotApplicableError, match="No array of m_UB = 5 samples"):
        _check_no_array(0, 5, 3)
    with pytest.raises(HexplorerError, match="strategy"):
        Arrays(strategy="best", m_ub=1, means=np.ones(1), fills=np.ones(1, int))
    with pytest.raises(HexplorerError, match="one fill per array"):
        Arrays(strategy="bestfit", m_ub=1, means=np.ones(2), fills=np.ones(1, int))
    with pytest.raises(HexplorerError, match="at least one array"):
        Arrays(strategy="bestfit", m_ub=1, means=np.ones(0), fills=np.ones(0, int))
    assert Arrays(strategy="bestfit", m_ub=1, means=np.ones(3), fills=np.ones(3, int)).n_arrays == 3


def test_user_weights_needs_bestfit(hat321):
    with pytest.raises(HexplorerError, match="bestfit"):
        user_weights(wraparound(hat321, 2), hat321.counts)


# --------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda cap: st.tuples(
            st.just(cap), st.lists(st.integers(1, cap), min_size=1, max_size=40), st.booleans()
        )
    )
)
def test_bestfit_fill_matches_naive_and_invariants(args):
    cap, gamma, sort = args
    if sort:
        gamma = sorted(gamma, reverse=True)
    g = np.array(gamma, dtype=np.int64)
    assignment, fills = bestfit_fill(g, cap)
    naive_a, naive_f = naive_bestfit(gamma, cap)
    assert assignment.tolist() == naive_a
    assert fills.tolist() == naive_f
    # the same through numpy merges of the fill levels' index chunks
    saved = grouping._NUMPY_MERGE_MIN
    grouping._NUMPY_MERGE_MIN = 0
    try:
        a2, f2 = bestfit_fill(g, cap)
    finally:
        grouping._NUMPY_MERGE_MIN = saved
    assert a2.tolist() == naive_a and f2.tolist() == naive_f
    # each user in exactly one array, arrays 0..K̄-1 all used, never overfilled
    assert assignment.shape == g.shape
    assert set(assignment.tolist()) == set(range(fills.size))
    assert np.bincount(assignment, weights=g).astype(int).tolist() == fills.tolist()
    assert fills.max() <= cap and fills.min() >= 1
    assert fills.size >= g.sum() // cap  # K̄ >= K


@settings(max_examples=200, deadline=None)
@given(hats())
def test_wraparound_matches_naive_stream(args):
    hat, m_ub = args
    a = wraparound(hat, m_ub)
    expected = naive_wraparound(hat, m_ub)
    assert a.n_arrays == len(expected) == n_full_arrays(hat.counts, m_ub)
    np.testing.assert_allclose(a.means, expected, rtol=1e-9, atol=1e-9)
    assert np.all(a.fills == m_ub)


@settings(max_examples=200, deadline=None)
@given(hats())
def test_bestfit_matches_naive_means(args):
    hat, m_ub = args
    a = bestfit(hat, m_ub)
    expected = naive_bestfit_means(hat, m_ub)
    assert a.n_arrays == len(expected) >= n_full_arrays(hat.counts, m_ub)
    np.testing.assert_allclose(a.means, expected, rtol=1e-9, atol=1e-9)
    assert a.means.min() >= 0.0 and a.means.max() <= 65.0 + 1e-9


@pytest.mark.parametrize("numpy_merge_min", [65, 0])
def test_bestfit_fill_large_runs_match_naive(monkeypatch, numpy_merge_min):
    # Long runs of equal Γ exercise the bulk steps (many arrays moved per level at once);
    # numpy_merge_min = 0 sends every merge of a level's index chunks through numpy.
    monkeypatch.setattr("core.grouping._NUMPY_MERGE_MIN", numpy_merge_min)
    rng = np.random.default_rng(7)
    for cap in (5, 9, 16):
        g = np.sort(rng.integers(1, cap + 1, 400))[::-1]
        a, w = bestfit_fill(g, cap)
        na, nw = naive_bestfit(g.tolist(), cap)
        assert a.tolist() == na and w.tolist() == nw
    for _ in range(3):
        g = np.minimum(np.ceil(rng.lognormal(1.5, 1.0, 300)), 12).astype(np.int64)
        for gamma in (np.sort(g)[::-1], g):
            a, w = bestfit_fill(gamma, 12)
            na, nw = naive_bestfit(gamma.tolist(), 12)
            assert a.tolist() == na and w.tolist() == nw


def test_arrays_per_user_is_the_sensitivity_factor(hat321):
    assert wraparound(hat321, 2).arrays_per_user == 2
    assert bestfit(hat321, 2).arrays_per_user == 1
