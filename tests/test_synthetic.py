"""Tests for core.synthetic (SPEC section 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import synthetic as syn
from core.errors import HexplorerError
from core.hat import HatData

U = 65.0


# --------------------------------------------------------------------------------------------
# Count collections and scaling


def test_geometric_collection_of_seed_004():
    c = syn.geometric_counts()  # M = 6
    assert c.size == 127 and c.dtype == np.int64
    values, mult = np.unique(c, return_counts=True)
    assert values.tolist() == [1, 2, 4, 8, 16, 32, 64]
    assert mult.tolist() == [64, 32, 16, 8, 4, 2, 1]  # 2^i users with 2^(M-i) samples
    assert int(c.sum()) == 7 * 64
    assert np.all(np.diff(c) <= 0)
    assert syn.geometric_counts(0).tolist() == [1]


def test_extreme_collection_of_seed_004():
    c = syn.extreme_counts()
    assert c.size == 101 and int(c.max()) == 10 and int(c.sum()) == 110
    assert np.count_nonzero(c == 1) == 100
    assert syn.extreme_counts(3, 5).tolist() == [5, 1, 1]


def test_sample_and_user_scaling_of_counts():
    assert syn.sample_scaled([3, 1, 2], 10).tolist() == [30, 10, 20]
    assert syn.user_scaled([3, 1], 3).tolist() == [3, 3, 3, 1, 1, 1]


def test_scaling_of_hat_summaries():
    hat = HatData.from_arrays([2, 1], [10.0, 5.0], [60.0, 25.0], ["a", "b"], upper=U, hat="x/y")
    s = syn.scale_samples(hat, 3)
    assert s.counts.tolist() == [6, 3] and s.sums.tolist() == [30.0, 15.0]
    assert s.sumsq.tolist() == [180.0, 75.0] and s.true_mean == hat.true_mean
    assert s.user_ids.tolist() == ["a", "b"] and s.hat == "x/y"
    u = syn.scale_users(hat, 2)
    assert u.user_ids.tolist() == ["a#0", "a#1", "b#0", "b#1"]
    assert u.counts.tolist() == [2, 2, 1, 1] and u.sums.tolist() == [10.0, 10.0, 5.0, 5.0]
    assert u.true_mean == hat.true_mean and u.n_users == 4


@pytest.mark.parametrize("lam", [0, -1, 1.5, "x", 2.0, True])
def test_bad_scaling_factor(lam):
    with pytest.raises(HexplorerError, match="lam"):
        syn.sample_scaled([1, 2], lam)
    with pytest.raises(HexplorerError, match="lam"):
        syn.scale_users(HatData.from_arrays([1], [1.0]), lam)


def test_bad_collection_parameters():
    with pytest.raises(HexplorerError, match="'M'"):
        syn.geometric_counts(-1)
    with pytest.raises(HexplorerError, match="n_users"):
        syn.extreme_counts(0)
    with pytest.raises(HexplorerError, match="m_star"):
        syn.extreme_counts(5, 0)


# --------------------------------------------------------------------------------------------
# Values: exact layout and determinism


def test_gaussian_params_exact():
    # samples {1, 1} and {3, 3}: mean 2, (1/N) variance 1
    hat = HatData.from_arrays([2, 2], [2.0, 6.0], [2.0, 18.0])
    assert syn.gaussian_params(hat) == (2.0, 1.0)
    with pytest.raises(HexplorerError, match="sumsq"):
        syn.gaussian_params(HatData.from_arrays([2], [2.0]))


def test_projected_gaussian_layout_matches_per_user_loop():
    counts = [1, 3, 2]
    h = syn.projected_gaussian(
        counts, mean=30.0, variance=400.0, upper=U, rng=np.random.default_rng(5)
    )
    x = np.clip(np.random.default_rng(5).normal(30.0, 20.0, 6), 0, U)
    per_user = {
        "s0000000": x[0:1],
        "s0000001": x[1:4],
        "s0000002": x[4:6],
    }
    assert h.counts.tolist() == [3, 2, 1]
    assert h.user_ids.tolist() == ["s0000001", "s0000002", "s0000000"]
    for uid, s, q in zip(h.user_ids.tolist(), h.sums, h.sumsq, strict=True):
        assert s == pytest.approx(per_user[uid].sum())
        assert q == pytest.approx((per_user[uid] ** 2).sum())


def test_projection_clips_into_0_u():
    hi = syn.projected_gaussian(
        [3, 2], mean=200.0, variance=1.0, upper=U, rng=np.random.default_rng(0)
    )
    assert hi.sums.tolist() == [3 * U, 2 * U]
    lo = syn.projected_gaussian(
        [3, 2], mean=-200.0, variance=1.0, upper=U, rng=np.random.default_rng(0)
    )
    assert lo.sums.tolist() == [0.0, 0.0]


def test_same_seed_same_data_and_like_uses_source_params():
    a = syn.uniform([5, 4, 1], upper=U, rng=np.random.default_rng(11))
    b = syn.uniform([5, 4, 1], upper=U, rng=np.random.default_rng(11))
    assert a.sums.tolist() == b.sums.tolist()
    src = HatData.from_arrays([2, 2], [20.0, 20.0], [200.0, 200.0], upper=U)  # all samples 10
    like = syn.projected_gaussian_like(src, rng=np.random.default_rng(0), counts=[4, 1])
    assert like.counts.tolist() == [4, 1]
    assert like.sums.tolist() == pytest.approx([40.0, 10.0])  # variance 0: every sample = μ
    assert like.upper == U


def test_uniform_and_truncated_stay_in_0_u():
    rng = np.random.default_rng(3)
    counts = np.ones(20000, dtype=np.int64)
    u = syn.uniform(counts, upper=U, rng=rng)
    assert u.sums.min() > 0.0 and u.sums.max() <= U
    t = syn.truncated_gaussian(counts, mean=U / 2, variance=U * U / 4, upper=U, rng=rng)
    assert t.sums.min() > 0.0 and t.sums.max() <= U


def test_bad_value_parameters():
    rng = np.random.default_rng(0)
    with pytest.raises(HexplorerError, match="variance"):
        syn.projected_gaussian([1], mean=1.0, variance=-1.0, rng=rng)
    with pytest.raises(HexplorerError, match="mean"):
        syn.projected_gaussian([1], mean=float("nan"), variance=1.0, rng=rng)
    with pytest.raises(HexplorerError, match="counts"):
        syn.uniform([0, 1], rng=rng)
    with pytest.raises(HexplorerError, match="upper"):
        syn.uniform([1], upper=0, rng=rng)
    with pytest.raises(HexplorerError, match="too little mass"):
        syn.truncated_gaussian([1], mean=1e6, variance=1.0, rng=rng)


# --------------------------------------------------------------------------------------------
# Distributions (statistical; tolerance: 5 standard errors of the sample mean)


def _projected_normal_moments(mu: float, sd: float, upper: float) -> tuple[float, float]:
    """Mean and variance of min(U, max(0, X)), X ~ N(mu, sd^2), by numerical integration."""
    z = np.linspace(-12, 12, 400001)
    dens = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    x = np.clip(mu + sd * z, 0, upper)
    dz = z[1] - z[0]
    m1 = float(np.sum(x * dens) * dz)
    m2 = float(np.sum(x * x * dens) * dz)
    return m1, m2 - m1 * m1


@pytest.mark.slow
def test_projected_gaussian_moments_match_theory():
    mu, var = 20.66769, 115.135  # [4], Appendix E
    n = 200_000
    h = syn.projected_gaussian(
        np.full(n // 4, 4), mean=mu, variance=var, upper=U, rng=np.random.default_rng(2024)
    )
    m1, v1 = _projected_normal_moments(mu, math.sqrt(var), U)
    got_mu, got_var = syn.gaussian_params(h)
    assert abs(got_mu - m1) < 5 * math.sqrt(v1 / n)
    # variance of the sample variance ~ (mu4 - sigma^4)/n; bound mu4 by U^2 sigma^2
    assert abs(got_var - v1) < 5 * math.sqrt(U * U * v1 / n)
    assert m1 > mu  # projection at 0 pulls the mean up


@pytest.mark.slow
def test_uniform_moments_match_theory():
    n = 200_000
    h = syn.uniform(np.full(n // 8, 8), upper=U, rng=np.random.default_rng(77))
    got_mu, got_var = syn.gaussian_params(h)
    var = U * U / 12
    assert abs(got_mu - U / 2) < 5 * math.sqrt(var / n)
    # Var of sample variance for uniform: (mu4 - sigma^4)/n with mu4 = U^4/80
    assert abs(got_var - var) < 5 * math.sqrt((U**4 / 80 - var * var) / n)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"mean": "fast", "variance": 1.0}, "'mean'"),
        ({"mean": None, "variance": 1.0}, "'mean'"),
        ({"mean": 1.0, "variance": "x"}, "'variance'"),
        ({"mean": 1.0, "variance": float("inf")}, "'variance'"),
    ],
)
@pytest.mark.parametrize("sampler", [syn.projected_gaussian, syn.truncated_gaussian])
def test_non_numeric_gaussian_parameters_are_hexplorer_errors(sampler, kwargs, needle):
    with pytest.raises(HexplorerError, match=needle):
        sampler([1], rng=np.random.default_rng(0), **kwargs)


def test_truncated_gaussian_needs_positive_variance():
    with pytest.raises(HexplorerError, match="'variance' parameter must be > 0"):
        syn.truncated_gaussian([1], mean=1.0, variance=0.0, rng=np.random.default_rng(0))
