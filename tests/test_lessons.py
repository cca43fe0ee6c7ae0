"""core.lessons: neighbouring datasets, the exact Laplace log-ratio and the simulated one.

The privacy checks have failing companions: with the final Laplace scale halved (monkeypatched in
``core.mechanisms._draws``, so the real mechanism code runs), the log-ratio leaves ±ε.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from core import lessons
from core import mechanisms as mech
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import common as mech_common

EXACT = [n for n in mech.MECHANISMS if lessons.has_exact_density(n)]
SIMULATED = [n for n in mech.MECHANISMS if not lessons.has_exact_density(n)]


@pytest.fixture(scope="module")
def hat() -> HatData:
    rng = np.random.default_rng(5)
    counts = np.array([60, 40, 30, 25, 20, 18, 15, 12, 10, 9, 8, 7, 6, 5, 4, 3, 3, 2, 2, 1] * 3)
    means = rng.uniform(10.0, 35.0, counts.size)
    return HatData.from_arrays(counts, counts * means, upper=65.0)


def _halve_noise(monkeypatch) -> None:
    """Every mechanism's final Laplace scale (and the recorded noise_scale) halved."""
    real = mech_common.draws

    def halved(name, hat, epsilon, m_ub, n_arrays, noiseless, sensitivity, scale, rng, size, **kw):
        return real(name, hat, epsilon, m_ub, n_arrays, noiseless, sensitivity,
                    np.asarray(scale) / 2.0, rng, size, **kw)  # fmt: skip

    patched = 0
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("core.mechanisms.") and (
            getattr(module, "draws", None) is real
        ):
            monkeypatch.setattr(module, "draws", halved)
            patched += 1
    assert patched >= 4  # baseline, array averaging, Levy + quantile, bounding


# --- neighbours --------------------------------------------------------------------------------


def test_neighbour_changes_one_users_speeds_and_keeps_every_count(hat):
    uid = str(hat.user_ids[0])
    nb = lessons.neighbours(hat, uid, 0.0)
    assert np.array_equal(nb.changed.counts, hat.counts)
    assert nb.changed.sums[0] == 0.0 and nb.changed.sumsq[0] == 0.0
    assert np.array_equal(nb.changed.sums[1:], hat.sums[1:])
    expected = (hat.sums.sum() - hat.sums[0]) / hat.n_records
    assert nb.changed.true_mean == pytest.approx(expected, rel=1e-12)


def test_default_neighbour_is_the_farthest_end_of_the_range(hat):
    nb = lessons.neighbours(hat, hat.user_ids[3])
    assert nb.old_mean < 32.5 and nb.value == 65.0
    high = HatData.from_arrays([2, 1], [120.0, 10.0], user_ids=["a", "b"], upper=65.0)
    assert lessons.neighbours(high, "a").value == 0.0


@pytest.mark.parametrize("value", [-1.0, 65.5, "fast", math.nan])
def test_neighbour_value_outside_the_range_is_refused(hat, value):
    with pytest.raises(HexplorerError, match="value"):
        lessons.neighbours(hat, hat.user_ids[0], value)


def test_unknown_user_is_refused(hat):
    with pytest.raises(HexplorerError, match="user"):
        lessons.neighbours(hat, "nobody")


# --- exact Laplace log-ratio --------------------------------------------------------------------


def test_laplace_log_ratio_exact_values():
    x = np.array([-5.0, 0.25, 5.0])
    got = lessons.laplace_log_ratio(x, 0.0, 0.5, 1.0, 0.5)
    assert got.tolist() == pytest.approx([2.0, 1.0, -2.0])
    dens = lessons.laplace_pdf(x, 0.0, 0.5) / lessons.laplace_pdf(x, 1.0, 0.5)
    assert np.log(dens) == pytest.approx(got)


def test_exact_log_ratio_reads_the_mechanisms_noiseless_value_and_scale(hat):
    nb = lessons.neighbours(hat, hat.user_ids[0])
    r = lessons.exact_log_ratio("baseline", nb, 0.5)
    b = hat.upper * hat.m_max / (hat.n_records * 0.5)
    assert r.exact and r.scale == pytest.approx(b) and r.scale_changed == pytest.approx(b)
    assert r.noiseless == pytest.approx(hat.true_mean)
    assert r.noiseless_changed == pytest.approx(nb.changed.true_mean)
    shift = abs(nb.changed.true_mean - hat.true_mean)
    assert r.max_abs == pytest.approx(shift / b, rel=1e-9)  # reached outside both centres


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_exact_log_ratio_stays_within_epsilon(hat, name, epsilon):
    for uid in hat.user_ids[[0, 1, 5, -1]]:
        for value in (0.0, 65.0):
            r = lessons.exact_log_ratio(name, lessons.neighbours(hat, uid, value), epsilon)
            assert r.max_abs <= epsilon * (1 + 1e-9), (name, uid, value, r.max_abs)


@pytest.mark.parametrize("name", ["baseline", "arrayavg-best", "opt-arrayavg", "opt-bounding"])
def test_exact_log_ratio_exceeds_epsilon_when_the_noise_is_halved(hat, name, monkeypatch):
    nb = lessons.neighbours(hat, hat.user_ids[0])
    assert lessons.exact_log_ratio(name, nb, 1.0).max_abs <= 1.0 + 1e-9
    _halve_noise(monkeypatch)
    assert lessons.exact_log_ratio(name, nb, 1.0).max_abs > 1.0


def test_exact_log_ratio_refuses_a_mechanism_without_a_closed_form(hat):
    with pytest.raises(HexplorerError, match="simulated"):
        lessons.exact_log_ratio("levy", lessons.neighbours(hat, hat.user_ids[0]), 1.0)


# --- simulated log-ratio ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", SIMULATED)
def test_simulated_log_ratio_stays_within_epsilon_up_to_sampling_error(hat, name):
    nb = lessons.neighbours(hat, hat.user_ids[0])
    r = lessons.simulated_log_ratio(name, nb, 1.0, n_runs=200_000, rng=np.random.default_rng(3))
    assert not r.exact and np.isfinite(r.log_ratio).sum() >= 10
    # 40 bins, 5 standard errors: a false alarm has probability below 1e-5.
    assert r.worst_excess_z <= 5.0, (name, r.max_abs, r.worst_excess_z)


@pytest.mark.slow
def test_simulated_log_ratio_detects_halved_noise(hat, monkeypatch):
    """The histogram estimate agrees with the exact ratio and sees a halved scale."""
    nb = lessons.neighbours(hat, hat.user_ids[0])
    exact = lessons.exact_log_ratio("baseline", nb, 1.0)
    r = lessons.simulated_log_ratio("baseline", nb, 1.0, rng=np.random.default_rng(4))
    assert r.worst_excess_z <= 5.0
    inside = np.isfinite(r.log_ratio)
    truth = np.interp(r.x[inside], exact.x, exact.log_ratio)
    assert np.all(np.abs(r.log_ratio[inside] - truth) <= 5 * r.stderr[inside] + 0.1)
    _halve_noise(monkeypatch)
    r = lessons.simulated_log_ratio("baseline", nb, 1.0, rng=np.random.default_rng(4))
    assert r.worst_excess_z > 5.0 and r.max_abs > 1.2


def test_log_ratio_picks_exact_or_simulated(hat):
    nb = lessons.neighbours(hat, hat.user_ids[0])
    rng = np.random.default_rng(0)
    assert lessons.log_ratio("arrayavg-best", nb, 1.0, rng=rng).exact
    sim = lessons.log_ratio("akmv", nb, 1.0, n_runs=20_000, rng=rng)
    assert not sim.exact and sim.n_runs == 20_000 and sim.edges is not None


def test_simulated_log_ratio_is_reproducible_with_a_seed(hat):
    nb = lessons.neighbours(hat, hat.user_ids[0])
    a = lessons.simulated_log_ratio("levy", nb, 1.0, n_runs=5_000, rng=np.random.default_rng(9))
    b = lessons.simulated_log_ratio("levy", nb, 1.0, n_runs=5_000, rng=np.random.default_rng(9))
    assert np.array_equal(a.density, b.density)


# --- record level vs user level ------------------------------------------------------------------


def test_record_vs_user_noise_and_the_loss_under_record_level_noise(hat):
    uid = hat.user_ids[0]
    nb = lessons.neighbours(hat, uid, 65.0)
    r = lessons.record_vs_user(nb, 0.5)
    n, u = hat.n_records, hat.upper
    assert r.sensitivity_record == pytest.approx(u / n)
    assert r.sensitivity_user == pytest.approx(u * hat.m_max / n)
    assert r.noise_ratio == pytest.approx(hat.m_max)
    assert r.half_width_user == pytest.approx(u * hat.m_max / (n * 0.5) * math.log(10))
    shift = hat.counts[0] * (65.0 - hat.user_means[0]) / n
    assert r.user_shift == pytest.approx(shift)
    assert r.loss_user_noise <= 0.5 + 1e-12
    # Record-level noise protects this bus only up to m_ℓ · |x̄_ℓ − value| / U times ε.
    assert r.loss_record_noise == pytest.approx(
        0.5 * hat.counts[0] * (65.0 - hat.user_means[0]) / u
    )
    assert r.loss_record_noise > 10 * 0.5
