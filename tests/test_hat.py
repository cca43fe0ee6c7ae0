"""HatData and the shared parameter checks."""

import math

import numpy as np
import pytest

from core.errors import HexplorerError
from core.hat import HatData
from core.params import ceil_two_over_epsilon, check_epsilon, check_m_ub
from core.synthetic import extreme_counts


def test_sorted_by_count_then_user_id():
    h = HatData.from_arrays([2, 5, 2], [4.0, 10.0, 6.0], user_ids=["z", "m", "a"], upper=10)
    assert h.counts.tolist() == [5, 2, 2]
    assert h.user_ids.tolist() == ["m", "a", "z"]
    assert h.sums.tolist() == [10.0, 6.0, 4.0]
    assert (h.n_users, h.n_records, h.m_max, h.m_min) == (3, 9, 5, 2)
    assert h.true_mean == pytest.approx(20.0 / 9)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"counts": [], "sums": []}, "at least one user"),
        ({"counts": [0, 2], "sums": [0.0, 2.0]}, "integer >= 1"),
        ({"counts": [1.5], "sums": [1.0]}, "integer >= 1"),
        ({"counts": ["a"], "sums": [1.0]}, "integer >= 1"),
        ({"counts": [None], "sums": [1.0]}, "integer >= 1"),
        ({"counts": [True], "sums": [1.0]}, "integer >= 1"),
        ({"counts": [2, 1], "sums": [1.0]}, "same length"),
        ({"counts": [1], "sums": [70.0]}, "[0, U]"),
        ({"counts": [2, 2], "sums": [1.0, 1.0], "user_ids": ["a", "a"]}, "repeated user id"),
    ],
)
def test_bad_summaries_are_rejected(kwargs, needle):
    with pytest.raises(HexplorerError, match=None) as info:
        HatData.from_arrays(upper=65, **kwargs)
    assert needle in str(info.value)


def test_repeated_user_would_understate_sensitivity():
    # Without the check, user 'a' (10 records in two rows of 5) would be charged as m* = 5.
    with pytest.raises(HexplorerError):
        HatData.from_arrays([5, 5, 1], [50.0, 50.0, 1.0], user_ids=["a", "a", "b"], upper=10)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "x", None, 1e-309])
def test_check_epsilon_rejects(bad):
    with pytest.raises(HexplorerError, match="epsilon"):
        check_epsilon(bad)


def test_ceil_two_over_epsilon_treats_near_integers_as_integers():
    assert ceil_two_over_epsilon(0.5) == 4
    assert ceil_two_over_epsilon(2 / 3) == 3
    assert ceil_two_over_epsilon(0.3) == 7
    assert ceil_two_over_epsilon(2.5) == 1


def test_check_m_ub_range():
    counts = np.array([9, 4, 2])
    assert check_m_ub(4, counts) == 4
    for bad in (1, 10, 2.5, "x", True):
        with pytest.raises(HexplorerError, match="m_ub"):
            check_m_ub(bad, counts)


@pytest.mark.parametrize("bad", ["a", None, 0, 2.5, True])
def test_extreme_counts_bad_input(bad):
    with pytest.raises(HexplorerError):
        extreme_counts(bad)
