"""Exact-value tests of the single-HAT mechanisms (SPEC section 3) on hand-computed HATs.

HAT A: counts (4, 2, 1), sums (40, 10, 5), U = 10, so user means (10, 5, 5), N = 7, f = 55/7.
  m_UB = 2 (the median): WrapAround keeps K = ⌊5/2⌋ = 2 arrays, means (10, 5);
  BestFit puts each user in its own array, K̄ = 3, means (10, 5, 5).
  m_UB = 4: BestFit fills array 1 with user 1 and array 2 with users 2 and 3: K̄ = 2, means (10, 5).
HAT B: counts (200, 200, 100), means (2, 3, 9), U = 10, m_UB = 200: BestFit K̄ = 3, means (2, 3, 9);
  WrapAround K = ⌊500/200⌋ = 2, means (2, 3).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import (
    MECHANISMS,
    clipped_mean,
    default_m_ub,
    exponential_mechanism_probabilities,
    levy_tau,
    noise,
    private_interval_distribution,
    private_quantile_distribution,
    quantile_eps_levels,
    release,
    run_mechanism,
)
from tests.mechanism_checks import ExactCase, add_cases

NAMES = list(MECHANISMS)  # every registered mechanism, read from the registry


def spec_names(m_ub: str | None = None) -> list[str]:
    """The names of the SPEC section 3 table, read from SPEC.md (rows start with a `name`);
    with ``m_ub``, only the rows whose m_UB column is exactly that."""
    text = (Path(__file__).resolve().parents[1] / "SPEC.md").read_text(encoding="utf-8")
    section = text.split("## 3.", 1)[1].split("\n## ", 1)[0]
    names: list[str] = []
    for line in section.splitlines():
        cells = line.split("|")
        if line.startswith("| `") and (m_ub is None or cells[3].strip() == m_ub):
            names += re.findall(r"`([a-z0-9-]+)`", cells[1])
    return names


@pytest.fixture
def hat_a() -> HatData:
    return HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)


@pytest.fixture
def hat_b() -> HatData:
    return HatData.from_arrays([200, 200, 100], [400.0, 600.0, 900.0], upper=10.0)


@pytest.fixture
def no_noise(monkeypatch):
    """Final Laplace noise replaced by zeros (the real code path otherwise)."""
    monkeypatch.setattr(noise, "_laplace", lambda rng, scale, size: np.zeros(size))


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------------
# Registry and defaults


def test_registry_has_every_spec_name():
    assert len(spec_names()) == 12 and set(spec_names()) <= set(MECHANISMS)
    assert all(name == m.name for name, m in MECHANISMS.items())
    # the SPEC table's m_UB column: "–" exactly for the mechanisms without arrays
    no_arrays = set(spec_names(m_ub="–"))
    assert len(no_arrays) == 3
    assert {n for n in spec_names() if not MECHANISMS[n].uses_m_ub} == no_arrays


@pytest.mark.parametrize(
    ("name", "epsilon", "expected"),
    [
        ("baseline", 1.0, None),
        ("arrayavg-wrap", 1.0, 2),  # median: the ceil(3/2) = 2nd largest count
        ("arrayavg-best", 1.0, 2),
        # m_UB^(L): sum min(m_l, m)/sqrt(m) = 3, 3.536, 3.464, 3.5 for m = 1..4
        ("levy-wrap", 1.0, 2),
        ("quantile-fixed-wrap", 1.0, 2),
        ("levy", 1.0, 2),
        ("quantile-fixed", 1.0, 2),
        ("quantile-eps", 1.0, 2),
        # m^(eps), U = 10: E(m) = 9.048, 6.857, 6.429, 5.714 at eps = 1 ...
        ("opt-arrayavg", 1.0, 4),
        # ... and 12.381, 10.857, 11.429, 11.429 at eps = 0.5
        ("opt-arrayavg", 0.5, 2),
        # convex proxy: 1.155, 0.869, 0.893, 1.0 for m = 1..4
        ("opt-arrayavg-convex", 1.0, 2),
        ("opt-bounding", 1.0, None),
        ("akmv", 1.0, None),
    ],
)
def test_default_m_ub(hat_a, name, epsilon, expected):
    assert default_m_ub(name, hat_a, epsilon) == expected
    assert run_mechanism(name, hat_a, epsilon, rng=rng(), size=2).m_ub == expected


# --------------------------------------------------------------------------------------------
# Baseline and Array-Averaging


def test_baseline_exact(hat_a, no_noise):
    d = run_mechanism("baseline", hat_a, 0.5, rng=rng(), size=4)
    assert d.m_ub is None and d.n_arrays is None and d.clip_lo is None
    np.testing.assert_allclose(d.noiseless, 55 / 7)
    np.testing.assert_allclose(d.sensitivity, 10 * 4 / 7)
    np.testing.assert_allclose(d.noise_scale, 10 * 4 / 7 / 0.5)
    np.testing.assert_array_equal(d.estimates, d.noiseless)
    assert d.true_mean == pytest.approx(55 / 7)


def test_baseline_sensitivity_paper_numbers():
    # [4]: m* = 417, N = 17166, U = 65 -> U m* / N = 27105 / 17166
    counts = [417] * 40 + [400, 86]
    assert sum(counts) == 17166
    hat = HatData.from_arrays(counts, [20.0 * c for c in counts], upper=65.0)
    d = run_mechanism("baseline", hat, 1.0, rng=rng(), size=1)
    assert d.sensitivity[0] == pytest.approx(27105 / 17166, rel=1e-12)
    assert d.sensitivity[0] == pytest.approx(1.578993359, rel=1e-9)


def test_arrayavg_exact(hat_a, no_noise):
    wrap = run_mechanism("arrayavg-wrap", hat_a, 1.0, rng=rng(), size=3)
    assert (wrap.m_ub, wrap.n_arrays) == (2, 2)
    np.testing.assert_allclose(wrap.noiseless, 7.5)
    np.testing.assert_allclose(wrap.sensitivity, 2 * 10 / 2)  # charged 2U/K
    np.testing.assert_allclose(wrap.noise_scale, 10.0)
    best = run_mechanism("arrayavg-best", hat_a, 2.0, rng=rng(), size=3)
    assert (best.m_ub, best.n_arrays) == (2, 3)
    np.testing.assert_allclose(best.noiseless, 20 / 3)
    np.testing.assert_allclose(best.sensitivity, 10 / 3)
    np.testing.assert_allclose(best.noise_scale, 10 / 3 / 2.0)
    # user-chosen m_ub overrides the median
    best4 = run_mechanism("arrayavg-best", hat_a, 1.0, m_ub=4, rng=rng(), size=1)
    assert (best4.m_ub, best4.n_arrays) == (4, 2)
    assert best4.noiseless[0] == pytest.approx(7.5)
    assert best4.sensitivity[0] == pytest.approx(5.0)


def test_opt_arrayavg_variants_use_their_m_ub(hat_a, no_noise):
    d = run_mechanism("opt-arrayavg", hat_a, 1.0, rng=rng(), size=1)
    assert (d.m_ub, d.n_arrays) == (4, 2)
    assert d.noiseless[0] == pytest.approx(7.5) and d.noise_scale[0] == pytest.approx(5.0)
    c = run_mechanism("opt-arrayavg-convex", hat_a, 1.0, rng=rng(), size=1)
    assert (c.m_ub, c.n_arrays) == (2, 3)
    assert c.noiseless[0] == pytest.approx(20 / 3)


# --------------------------------------------------------------------------------------------
# PrivateInterval and Levy


def test_levy_tau():
    assert levy_tau(10.0, 3, 200) == pytest.approx(10 * math.sqrt(math.log(30) / 400))
    assert levy_tau(65.0, 164, 46) == pytest.approx(65 * math.sqrt(math.log(1640) / 92))


def test_private_interval_exact():
    # tau = 2, U = 10: bins (0,2], ..., (8,10], midpoints 1, 3, 5, 7, 9.
    # 1.0 -> 1; 2.0 is halfway between 1 and 3 -> the lower, 1; 2.5 -> 3; 9.0 -> 9.
    d = private_interval_distribution([1.0, 2.0, 2.5, 9.0], 2.0, 2.0, 10.0)
    np.testing.assert_allclose(d.midpoints, [1, 3, 5, 7, 9])
    np.testing.assert_array_equal(d.assigned, [0, 0, 1, 4])
    # below = 0, 2, 3, 3, 3; above = 2, 1, 1, 1, 0
    np.testing.assert_array_equal(d.costs, [2, 2, 3, 3, 3])
    w = np.exp(-2.0 * np.array([2, 2, 3, 3, 3]) / 4)
    np.testing.assert_allclose(d.probabilities, w / w.sum(), rtol=1e-12)
    np.testing.assert_allclose(d.lo, [0, 0, 2, 4, 6])
    np.testing.assert_allclose(d.hi, [4, 6, 8, 10, 10])
    # WrapAround: score sensitivity 2 -> exp(-eps c / 8)
    d2 = private_interval_distribution([1.0, 2.0, 2.5, 9.0], 2.0, 2.0, 10.0, sensitivity=2.0)
    w2 = np.exp(-2.0 * np.array([2, 2, 3, 3, 3]) / 8)
    np.testing.assert_allclose(d2.probabilities, w2 / w2.sum(), rtol=1e-12)


def test_private_interval_one_bin_and_exact_bin_count():
    d = private_interval_distribution([1.0, 9.0], 1.0, 12.0, 10.0)
    assert d.midpoints.size == 1
    assert d.costs.tolist() == [0] and d.probabilities.tolist() == [1.0]
    assert (d.lo[0], d.hi[0]) == (0.0, 10.0)
    assert private_interval_distribution([5.0], 1.0, 10 / 3, 10.0).midpoints.size == 3


def test_levy_exact(hat_b, monkeypatch, no_noise):
    calls = []

    def fixed(rng, utility, epsilon, sensitivity, size, log_base=None):
        calls.append((np.asarray(utility).copy(), epsilon, sensitivity))
        return np.full(size, 3)

    monkeypatch.setattr(noise, "_exponential_mechanism", fixed)
    tau = 10 * math.sqrt(math.log(30) / 400)  # 0.92212: 11 bins; means 2, 3, 9 in bins 2, 3, 9
    d = run_mechanism("levy", hat_b, 1.0, m_ub=200, rng=rng(), size=2)
    (utility, eps, sens), *_ = calls
    np.testing.assert_array_equal(-utility, [3, 3, 2, 1, 2, 2, 2, 2, 2, 2, 3])
    assert (eps, sens) == (0.5, 1.0)
    assert d.n_arrays == 3
    # bin 3 has midpoint 3.5 tau: [a, b] = [2 tau, 5 tau] = [1.844, 4.611]
    np.testing.assert_allclose(d.clip_lo, 2 * tau)
    np.testing.assert_allclose(d.clip_hi, 5 * tau)
    np.testing.assert_allclose(d.noiseless, (2 + 3 + 5 * tau) / 3)
    np.testing.assert_allclose(d.sensitivity, 3 * tau / 3)
    np.testing.assert_allclose(d.noise_scale, 2 * tau / 1.0)


def test_levy_wrap_doubles_every_stage(hat_b, monkeypatch, no_noise):
    calls = []

    def fixed(rng, utility, epsilon, sensitivity, size, log_base=None):
        calls.append((epsilon, sensitivity))
        return np.full(size, 3)

    monkeypatch.setattr(noise, "_exponential_mechanism", fixed)
    tau = 10 * math.sqrt(math.log(20) / 400)  # K = 2 in place of K-bar
    d = run_mechanism("levy-wrap", hat_b, 2.0, m_ub=200, rng=rng(), size=1)
    assert calls == [(1.0, 2.0)]  # budget eps/2, score sensitivity 2
    assert d.n_arrays == 2
    assert d.noiseless[0] == pytest.approx(2.5)  # (2, 3) inside [2 tau, 5 tau]
    assert d.sensitivity[0] == pytest.approx(2 * 3 * tau / 2)
    assert d.noise_scale[0] == pytest.approx(4 * 3 * tau / (2 * 2.0))  # 4 (b - a) / (K eps)


# --------------------------------------------------------------------------------------------
# Private quantile and the quantile mechanisms


def test_private_quantile_distribution_exact():
    edges, p = private_quantile_distribution([3.0, 1.0], 0.5, 2.0, lo=0.0, hi=4.0)
    np.testing.assert_allclose(edges, [0, 1, 3, 4])
    w = np.array([1 * math.exp(-1), 2.0, 1 * math.exp(-1)])  # width * exp(-eps |i - 1| / 2)
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)


def test_private_quantile_empty_intervals_and_clamping():
    # z = 0, 2, 2 on [0, 4]: widths 0, 2, 0, 2; q n = 1.5
    edges, p = private_quantile_distribution([2.0, 0.0, 2.0], 0.5, 2.0, lo=0.0, hi=4.0)
    np.testing.assert_allclose(edges, [0, 0, 2, 2, 4])
    e = math.exp(-1.0)
    np.testing.assert_allclose(p, [0, 1 / (1 + e), 0, e / (1 + e)], rtol=1e-12)
    edges, p = private_quantile_distribution([-5.0, 20.0], 0.5, 1.0, lo=0.0, hi=10.0)
    np.testing.assert_allclose(edges, [0, 0, 10, 10])
    np.testing.assert_allclose(p, [0, 1, 0])


def test_sampler_never_picks_a_zero_probability_index():
    idx = noise._sample_index(rng(3), np.array([0.0, 0.5, 0.0, 0.5, 0.0]), 50_000)
    assert set(np.unique(idx).tolist()) == {1, 3}
    x = noise._private_quantile(rng(4), [2.0, 0.0, 2.0], 0.5, 2.0, lo=0.0, hi=4.0, size=50_000)
    assert np.all((x >= 0) & (x <= 4))
    p = 1 / (1 + math.exp(-1))  # P(interval (0, 2)); the empty intervals are never chosen
    assert abs(np.mean(x < 2) - p) < 5 * math.sqrt(p * (1 - p) / 50_000)


def _record_quantiles(monkeypatch, values):
    calls = []
    it = iter(values)

    def fixed(rng, values_, level, epsilon, *, lo, hi, sensitivity=1.0, size):
        calls.append((level, epsilon, lo, hi, sensitivity))
        return np.full(size, next(it))

    monkeypatch.setattr(noise, "_private_quantile", fixed)
    return calls


def test_quantile_fixed_exact(hat_a, monkeypatch, no_noise):
    calls = _record_quantiles(monkeypatch, [8.0, 6.0])  # reversed ends are swapped
    d = run_mechanism("quantile-fixed", hat_a, 1.0, m_ub=2, rng=rng(), size=2)
    assert calls == [(0.1, 0.25, 0.0, 10.0, 1.0), (0.9, 0.25, 0.0, 10.0, 1.0)]
    np.testing.assert_allclose(d.clip_lo, 6.0)
    np.testing.assert_allclose(d.clip_hi, 8.0)
    np.testing.assert_allclose(d.noiseless, (8 + 6 + 6) / 3)  # means (10, 5, 5) into [6, 8]
    np.testing.assert_allclose(d.sensitivity, 2 / 3)
    np.testing.assert_allclose(d.noise_scale, 2 * (2 / 3) / 1.0)


def test_quantile_fixed_wrap_exact(hat_a, monkeypatch, no_noise):
    calls = _record_quantiles(monkeypatch, [6.0, 8.0])
    d = run_mechanism("quantile-fixed-wrap", hat_a, 0.5, m_ub=2, rng=rng(), size=1)
    assert [c[4] for c in calls] == [2.0, 2.0]  # utility sensitivity 2 on WrapAround arrays
    assert [c[1] for c in calls] == [0.125, 0.125]
    assert d.noiseless[0] == pytest.approx((8 + 6) / 2)  # K = 2 means (10, 5) into [6, 8]
    assert d.sensitivity[0] == pytest.approx(2 * 2 / 2)
    assert d.noise_scale[0] == pytest.approx(4 * 2 / (2 * 0.5))


def test_quantile_eps_levels(hat_a, monkeypatch, no_noise):
    assert quantile_eps_levels(2.0, 3) == pytest.approx((1 / 3, 2 / 3))
    assert quantile_eps_levels(1.0, 3) == (0.5, 0.5)  # 2/3 > 1/3: they cross
    assert quantile_eps_levels(0.5, 8) == (0.5, 0.5)  # t = 4 exactly: 0.5 and 0.5
    calls = _record_quantiles(monkeypatch, [5.0, 5.0, 4.0, 9.0])
    run_mechanism("quantile-eps", hat_a, 2.0, m_ub=2, rng=rng(), size=1)
    d = run_mechanism("quantile-eps", hat_a, 1.0, m_ub=2, rng=rng(), size=1)
    assert [c[0] for c in calls] == pytest.approx([1 / 3, 2 / 3, 0.5, 0.5])
    assert d.noiseless[0] == pytest.approx((9 + 5 + 5) / 3)


def test_clipped_mean_matches_direct():
    values = rng(1).uniform(0, 10, 57)
    lo = rng(2).uniform(0, 5, 20)
    hi = lo + rng(3).uniform(0, 5, 20)
    direct = np.clip(values[None, :], lo[:, None], hi[:, None]).mean(axis=1)
    np.testing.assert_allclose(clipped_mean(values, lo, hi), direct, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# opt-bounding and akmv


def test_opt_bounding_exact(hat_a, no_noise):
    # eps = 1: T = 2nd largest of U m = 20; a = (2.5, 0, 0), b = (7.5, 10, 10)
    d = run_mechanism("opt-bounding", hat_a, 1.0, rng=rng(), size=2)
    np.testing.assert_allclose(d.threshold, 20.0)
    np.testing.assert_allclose(d.noiseless, (4 * 7.5 + 2 * 5 + 1 * 5) / 7)
    np.testing.assert_allclose(d.sensitivity, 20 / 7)
    np.testing.assert_allclose(d.noise_scale, 20 / 7)
    # eps = 2: T = U m* = 40, every interval is [0, U]: Baseline
    d = run_mechanism("opt-bounding", hat_a, 2.0, rng=rng(), size=1)
    assert d.noiseless[0] == pytest.approx(55 / 7)
    assert d.sensitivity[0] == pytest.approx(40 / 7)


def test_opt_bounding_zero_threshold_releases_half_u_without_noise(hat_a):
    # eps = 0.5: ceil(2/eps) = 4 > L = 3, T = 0: every interval is {U/2}; real noise path
    d = run_mechanism("opt-bounding", hat_a, 0.5, rng=rng(), size=5)
    np.testing.assert_array_equal(d.estimates, 5.0)
    np.testing.assert_array_equal(d.noise_scale, 0.0)
    assert "T_eps = 0" in d.note


def test_akmv_exact(hat_a, monkeypatch, no_noise):
    calls = _record_quantiles(monkeypatch, [12.0])
    d = run_mechanism("akmv", hat_a, 1.0, rng=rng(), size=2)
    # level 1 - ceil(2/1)/3 = 1/3, budget eps/2, range [0, U m*] = [0, 40]
    assert calls == [(pytest.approx(1 / 3), 0.5, 0.0, 40.0, 1.0)]
    np.testing.assert_allclose(d.noiseless, (5 + 10 + 12) / 7)  # sums 40, 10, 5 capped at 12
    np.testing.assert_allclose(d.clip_hi, 12.0)
    np.testing.assert_allclose(d.sensitivity, 12 / 7)
    np.testing.assert_allclose(d.noise_scale, 2 * 12 / (7 * 1.0))


# --------------------------------------------------------------------------------------------
# Every mechanism: zero noise, shapes, reproducibility, release, one user


@pytest.mark.parametrize("name", NAMES)
def test_zero_laplace_noise_gives_noiseless_value(hat_b, name, no_noise):
    d = run_mechanism(name, hat_b, 1.5, rng=rng(), size=50)
    assert d.estimates.shape == d.noiseless.shape == d.sensitivity.shape == (50,)
    np.testing.assert_array_equal(d.estimates, d.noiseless)
    np.testing.assert_allclose(
        d.noise_scale, d.sensitivity / (1.5 * MECHANISMS[name].laplace_share), rtol=1e-12
    )


@pytest.mark.parametrize("name", NAMES)
def test_reproducible_and_release_matches(hat_a, name):
    a = run_mechanism(name, hat_a, 0.7, rng=rng(5), size=20)
    b = run_mechanism(name, hat_a, 0.7, rng=rng(5), size=20)
    np.testing.assert_array_equal(a.estimates, b.estimates)
    r = release(name, hat_a, 0.7, rng=rng(5))
    assert r.mechanism == name and r.m_ub == a.m_ub and r.n_arrays == a.n_arrays
    assert math.isfinite(r.estimate) and r.noise_scale >= 0
    assert (r.clip_interval is None) == (a.clip_lo is None)


@pytest.mark.parametrize("name", NAMES)
def test_one_user_every_mechanism_runs(name):
    hat = HatData.from_arrays([5], [25.0], upper=10.0)
    d = run_mechanism(name, hat, 1.0, rng=rng(), size=100)
    assert np.all(np.isfinite(d.estimates))
    if MECHANISMS[name].uses_m_ub:
        assert (d.m_ub, d.n_arrays) == (5, 1)


def test_one_user_opt_bounding():
    hat = HatData.from_arrays([5], [25.0], upper=10.0)
    d = run_mechanism("opt-bounding", hat, 1.0, rng=rng(), size=3)  # ceil(2/1) = 2 > L = 1
    np.testing.assert_array_equal(d.estimates, 5.0)
    d = run_mechanism("opt-bounding", hat, 2.0, rng=rng(), size=1)  # T = U m*: Baseline
    assert d.sensitivity[0] == pytest.approx(10.0)


def test_m_ub_ignored_by_mechanisms_without_arrays(hat_a):
    for name in (n for n, m in MECHANISMS.items() if not m.uses_m_ub):
        d = run_mechanism(name, hat_a, 1.0, m_ub=3, rng=rng(), size=1)
        assert d.m_ub is None and "ignored" in d.note


# --------------------------------------------------------------------------------------------
# Invalid input


@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), float("inf"), "abc", None])
def test_bad_epsilon(hat_a, epsilon):
    with pytest.raises(HexplorerError, match="epsilon"):
        run_mechanism("levy", hat_a, epsilon, rng=rng(), size=1)


@pytest.mark.parametrize("m_ub", [0, 5, 2.5, "x"])
def test_bad_m_ub(hat_a, m_ub):
    with pytest.raises(HexplorerError, match="m_ub"):
        run_mechanism("arrayavg-best", hat_a, 1.0, m_ub=m_ub, rng=rng(), size=1)


def test_unknown_mechanism_lists_valid_names(hat_a):
    with pytest.raises(HexplorerError, match="mechanism") as info:
        run_mechanism("levy2", hat_a, 1.0, rng=rng(), size=1)
    assert all(name in str(info.value) for name in MECHANISMS)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"size": 0}, "size"),
        ({"size": 2.0}, "size"),
        ({"size": 1, "rng": None}, "rng"),
    ],
)
def test_bad_size_and_rng(hat_a, kwargs, param):
    with pytest.raises(HexplorerError, match=param):
        run_mechanism("baseline", hat_a, 1.0, **{"rng": rng(), **kwargs})


def test_bad_hat():
    with pytest.raises(HexplorerError, match="hat"):
        run_mechanism("baseline", [1, 2, 3], 1.0, rng=rng(), size=1)


def test_exponential_mechanism_probabilities_log_space():
    # huge utilities would overflow without the log-space shift
    p = exponential_mechanism_probabilities([-1e6, -1e6 - 2.0], 1.0, 1.0)
    np.testing.assert_allclose(p, [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])


# --------------------------------------------------------------------------------------------
# Statistical checks (principled tolerances: 5 standard errors, so false alarms ~ 6e-7)

N_STAT = 200_000


@pytest.mark.slow
def test_baseline_mae_is_noise_scale(hat_a):
    d = run_mechanism("baseline", hat_a, 1.0, rng=rng(11), size=N_STAT)
    b = 40 / 7
    # |Lap(b)| is exponential with mean b and std b
    assert abs(d.abs_errors.mean() - b) < 5 * b / math.sqrt(N_STAT)
    assert abs(d.estimates.mean() - 55 / 7) < 5 * math.sqrt(2) * b / math.sqrt(N_STAT)


@pytest.mark.slow
def test_levy_mean_matches_exact_expectation(hat_b):
    eps = 1.0
    tau = levy_tau(10.0, 3, 200)
    dist = private_interval_distribution([2.0, 3.0, 9.0], eps, tau, 10.0)
    cm = clipped_mean([2.0, 3.0, 9.0], dist.lo, dist.hi)
    scale = 2 * (dist.hi - dist.lo) / (3 * eps)
    mean = float(np.sum(dist.probabilities * cm))
    var = float(np.sum(dist.probabilities * (cm**2 + 2 * scale**2))) - mean**2
    d = run_mechanism("levy", hat_b, eps, m_ub=200, rng=rng(12), size=N_STAT)
    assert abs(d.estimates.mean() - mean) < 5 * math.sqrt(var / N_STAT)
    # and the interval choices follow the exact probabilities: recover each run's midpoint
    mid = np.where(d.clip_lo > 0, d.clip_lo + 1.5 * tau, d.clip_hi - 1.5 * tau)
    freq = np.bincount(np.round(mid / tau - 0.5).astype(int), minlength=p_size(dist)) / N_STAT
    p = dist.probabilities
    np.testing.assert_array_less(np.abs(freq - p), 5 * np.sqrt(p * (1 - p) / N_STAT) + 1e-12)


def p_size(dist) -> int:
    return int(dist.probabilities.size)


@pytest.mark.slow
def test_private_quantile_mean_matches_exact_expectation():
    values = [1.0, 2.0, 2.0, 4.0, 7.5]
    edges, p = private_quantile_distribution(values, 0.1, 0.5, lo=0.0, hi=10.0)
    lo, hi = edges[:-1], edges[1:]
    mean = float(np.sum(p * (lo + hi) / 2))
    second = float(np.sum(p * (lo**2 + lo * hi + hi**2) / 3))
    x = noise._private_quantile(rng(13), values, 0.1, 0.5, lo=0.0, hi=10.0, size=N_STAT)
    assert abs(x.mean() - mean) < 5 * math.sqrt((second - mean**2) / N_STAT)


# --------------------------------------------------------------------------------------------
# Conformance cases (run by tests/test_mechanism_conformance.py for every registered mechanism):
# the hand-computed values above, as data. HAT A and HAT B as in the module docstring.


def _quantiles(*values):
    """Hold the private quantiles: successive calls return ``values`` (per case run)."""

    def hold(mp):
        it = iter(values)
        mp.setattr(
            noise, "_private_quantile", lambda rng, v, q, e, *, size, **kw: np.full(size, next(it))
        )

    return hold


def _bin(index):
    """Hold PrivateInterval's exponential mechanism at bin ``index``."""

    def hold(mp):
        mp.setattr(
            noise,
            "_exponential_mechanism",
            lambda rng, u, e, s, size, log_base=None: np.full(size, index),
        )

    return hold


_A = {"counts": (4, 2, 1), "sums": (40.0, 10.0, 5.0), "upper": 10.0}
_B = {"counts": (200, 200, 100), "sums": (400.0, 600.0, 900.0), "upper": 10.0}
_TAU3 = 10 * math.sqrt(math.log(30) / 400)  # levy_tau(10, K̄ = 3, 200)
_TAU2 = 10 * math.sqrt(math.log(20) / 400)  # levy_tau(10, K = 2, 200)
for _name, _case in {
    "baseline": ExactCase(**_A, epsilon=0.5, expect={
        "m_ub": None, "n_arrays": None, "noiseless": 55 / 7, "sensitivity": 40 / 7}),
    "arrayavg-wrap": ExactCase(**_A, expect={
        "m_ub": 2, "n_arrays": 2, "noiseless": 7.5, "sensitivity": 10.0}),
    "arrayavg-best": ExactCase(**_A, epsilon=2.0, expect={
        "m_ub": 2, "n_arrays": 3, "noiseless": 20 / 3, "sensitivity": 10 / 3}),
    "opt-arrayavg": ExactCase(**_A, expect={
        "m_ub": 4, "n_arrays": 2, "noiseless": 7.5, "sensitivity": 5.0}),
    "opt-arrayavg-convex": ExactCase(**_A, expect={
        "m_ub": 2, "n_arrays": 3, "noiseless": 20 / 3, "sensitivity": 10 / 3}),
    "levy": ExactCase(**_B, m_ub=200, hold=_bin(3), expect={
        "n_arrays": 3, "clip_lo": 2 * _TAU3, "clip_hi": 5 * _TAU3,
        "noiseless": (2 + 3 + 5 * _TAU3) / 3, "sensitivity": _TAU3}),
    "levy-wrap": ExactCase(**_B, epsilon=2.0, m_ub=200, hold=_bin(3), expect={
        "n_arrays": 2, "noiseless": 2.5, "sensitivity": 3 * _TAU2}),
    "quantile-fixed": ExactCase(**_A, m_ub=2, hold=_quantiles(8.0, 6.0), expect={
        "clip_lo": 6.0, "clip_hi": 8.0, "noiseless": 20 / 3, "sensitivity": 2 / 3}),
    "quantile-fixed-wrap": ExactCase(**_A, epsilon=0.5, m_ub=2, hold=_quantiles(6.0, 8.0),
        expect={"n_arrays": 2, "noiseless": 7.0, "sensitivity": 2.0}),
    "quantile-eps": ExactCase(**_A, m_ub=2, hold=_quantiles(4.0, 9.0), expect={
        "noiseless": 19 / 3, "sensitivity": 5 / 3}),
    "opt-bounding": ExactCase(**_A, expect={
        "threshold": 20.0, "noiseless": 45 / 7, "sensitivity": 20 / 7}),
    "akmv": ExactCase(**_A, hold=_quantiles(12.0), expect={
        "clip_hi": 12.0, "noiseless": 27 / 7, "sensitivity": 12 / 7}),
}.items():  # fmt: skip
    add_cases(_name, exact=[_case])
