"""The ITMS-like HAT has exactly the published summary of the real data."""

from __future__ import annotations

import numpy as np

from core.experiments import ITMS_SUMMARY, itms_like_counts, itms_like_hat, summary_of
from core.synthetic import gaussian_params
from core.worstcase import median_count


def test_counts_have_the_published_summary_exactly():
    c = itms_like_counts()
    assert summary_of(c) == {
        "users": 217,
        "records": 17166,
        "m_max": 417,
        "m_min": 1,
        "median": 46,
    }
    assert median_count(c) == 46  # the ceil(L/2)-th largest, as the papers define it
    assert np.all(np.diff(c) <= 0)  # sorted, descending
    assert c.dtype == np.int64


def test_counts_are_deterministic():
    assert np.array_equal(itms_like_counts(), itms_like_counts())


def test_hat_uses_the_counts_and_the_published_gaussian():
    hat = itms_like_hat(np.random.default_rng(3))
    assert np.array_equal(hat.counts, itms_like_counts())
    assert hat.upper == 65.0
    assert np.all((hat.user_means >= 0) & (hat.user_means <= 65))
    mu, var = gaussian_params(hat)
    # Projection into [0, 65] lifts the mean a little and shrinks the variance (N(20.7, 115)
    # puts 2.6 % below 0): the drawn data is close to, not exactly, the published numbers.
    assert abs(mu - ITMS_SUMMARY["mean"]) < 0.6
    assert abs(var - ITMS_SUMMARY["variance"]) < 12


def test_summary_of_uses_the_papers_median():
    assert summary_of([5, 2, 1, 1])["median"] == 2  # the ceil(L/2)-th largest
    assert summary_of([5, 3, 2, 1, 1])["median"] == 2
