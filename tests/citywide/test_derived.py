"""core.citywide.derived: the share within target, the trust classes, one release of every HAT
(the existing mechanisms, nothing new) and the derived mean's simulated interval (its coverage
is right, and wrong when the noise is halved)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from core.citywide import derived, errors
from core.citywide.batch import HatBatch, hat_rng, release_all
from core.citywide.gridset import GridSet, grid_set, select_grids
from core.data import default_slot, hat_table, load_demo, prepare
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import noise, release, run_mechanism
from core.postprocess import clamp_mean

U = 65.0
ORIGINAL_LAPLACE = noise._laplace


@functools.cache
def demo() -> tuple[pd.DataFrame, str]:
    summaries = prepare(load_demo()).summaries
    return summaries, default_slot(hat_table(summaries))


def city(n_hats: int = 24, seed: int = 5) -> pd.DataFrame:
    """A small synthetic slot: HATs of 3-12 users with 1-30 records, values in [0, U]."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(n_hats):
        for i in range(int(rng.integers(3, 13))):
            m = int(rng.integers(1, 31))
            mean = float(rng.uniform(5.0, 60.0))
            rows.append(
                {"hat": f"c{h:02d}/s", "cell": f"c{h:02d}", "slot": "s", "user_id": f"u{i}",
                 "m": m, "s": m * mean, "q": m * mean * mean}
            )  # fmt: skip
    return pd.DataFrame(rows)


# --- within target and trust classes ---------------------------------------------------------


def test_within_target_counts_hexagons_and_records_exactly():
    errs = np.array([0.5, 2.0, 2.0000001, np.nan, 1.0])
    recs = np.array([10, 20, 30, 40, 50])
    w = derived.within_target(errs, recs, 2.0)
    assert (w.hexagons, w.within, w.records, w.records_within) == (5, 3, 150, 80)
    assert w.share_hexagons == 3 / 5 and w.share_records == 80 / 150


def test_within_target_on_the_demo_equals_a_direct_count():
    summaries, slot = demo()
    table = errors.error_table(grid_set(summaries, slot=slot), upper=U)
    at = errors.errors_at(table, 0.5)
    w = derived.within_target(at.total, table.records, 5.0)
    ok = [e <= 5.0 for e in at.total.tolist()]
    assert w.within == sum(ok)
    assert w.records_within == sum(int(r) for r, k in zip(table.records, ok, strict=True) if k)


def test_trust_classes_split_over_target_from_no_useful_release():
    e = np.array([0.0, 5.0, 5.5, 32.4, 32.5, 80.0, np.nan])
    assert derived.trust_classes(e, target=5.0, upper=U).tolist() == [0, 0, 1, 1, 2, 2, 2]
    # a loose target: within target wins (class 0 is exactly within_target's set)
    assert derived.trust_classes(e, target=40.0, upper=U).tolist() == [0, 0, 0, 0, 0, 2, 2]
    w = derived.within_target(e, np.ones(e.size, dtype=int), 40.0)
    assert w.within == int((derived.trust_classes(e, target=40.0, upper=U) == 0).sum())


def test_a_one_user_hexagon_has_no_useful_release_at_small_epsilon():
    one = pd.DataFrame(
        {"hat": ["a/s"], "cell": ["a"], "slot": ["s"], "user_id": ["x"], "m": [7],
         "s": [140.0], "q": [2800.0]}
    )  # fmt: skip
    at = errors.errors_at(errors.error_table(one, upper=U), 1.0)
    assert at.total[0] == pytest.approx(U)  # c U m / (ε S) with S = m: U/ε
    assert derived.trust_classes(at.total, target=5.0, upper=U).tolist() == [2]


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "x", None])
def test_bad_target_is_one_clear_error(bad):
    with pytest.raises(HexplorerError, match="'target'"):
        derived.within_target(np.array([1.0]), np.array([1]), bad)


# --- one release: the existing mechanisms and seed rule ----------------------------------------


@pytest.mark.parametrize("mechanism", ["baseline", "opt-arrayavg", "arrayavg-best", "opt-bounding"])
def test_one_release_is_release_all_clamped_and_the_single_hat_release(mechanism):
    summaries = city()
    out = derived.one_release(summaries, 0.3, mechanism, upper=U, seed=11)
    ref = release_all(mechanism, HatBatch.from_summaries(summaries, upper=U), 0.3, seed=11)
    assert out["hat"].tolist() == ref["hat"].tolist()
    np.testing.assert_array_equal(out["raw"], ref["estimate"])
    np.testing.assert_array_equal(out["estimate"], clamp_mean(ref["estimate"].to_numpy(), U))
    assert ((out["estimate"] >= 0) & (out["estimate"] <= U)).all()
    # HAT by HAT it is core.mechanisms.release with the HAT's generator (the privacy-tested path)
    batch = HatBatch.from_summaries(summaries, upper=U)
    for h in (0, 7, 23):
        hat = batch.hat_data(h)
        r = release(mechanism, hat, 0.3, rng=hat_rng(11, mechanism, str(hat.hat)))
        assert out["raw"].iloc[h] == pytest.approx(r.estimate, rel=1e-12, abs=1e-9)


# --- the derived mean --------------------------------------------------------------------------


def test_derived_mean_runs_are_the_weighted_clamped_releases_of_run_mechanism():
    summaries = city()
    g = GridSet.from_summaries(summaries)
    d = derived.derived_mean(g, 0.5, "opt-arrayavg", upper=U, n_runs=50, seed=3)
    num = np.zeros(50)
    den = 0
    sums = 0.0
    for h in range(g.n_grids):
        sl = slice(int(g.starts[h]), int(g.starts[h + 1]))
        hat = HatData.from_arrays(g.m[sl], g.s[sl], None, g.user_ids[g.user[sl]], upper=U)
        draws = run_mechanism(
            "opt-arrayavg", hat, 0.5, rng=hat_rng(3, "opt-arrayavg", str(g.hats[h])), size=50
        )
        num += hat.n_records * np.clip(draws.estimates, 0.0, U)
        den += hat.n_records
        sums += float(g.s[sl].sum())
    np.testing.assert_allclose(d.runs, num / den, rtol=1e-13)
    assert d.true_value == pytest.approx(sums / den, rel=1e-13)
    assert d.records == den and d.hats == g.n_grids and d.skipped == ()
    assert d.low == pytest.approx(np.quantile(d.runs, 0.05))
    assert d.high == pytest.approx(np.quantile(d.runs, 0.95))
    assert d.error_quantile == pytest.approx(np.quantile(np.abs(d.runs - d.true_value), 0.9))


@pytest.mark.parametrize("mechanism", ["baseline", "opt-arrayavg", "opt-bounding"])
def test_the_first_run_is_the_release_shown_on_the_map(mechanism):
    """Run 0 of the simulation is the derived mean of :func:`one_release` (same seed)."""
    summaries, slot = demo()
    rows = select_grids(summaries, slot=slot)
    one = derived.one_release(rows, 1.0, mechanism, upper=U, seed=4)
    d = derived.derived_mean(rows, 1.0, mechanism, upper=U, n_runs=5, seed=4)
    first = float((one["estimate"] * one["records"]).sum() / one["records"].sum())
    assert d.runs[0] == pytest.approx(first, rel=1e-12)


def test_derived_mean_of_chosen_hexagons_uses_only_them():
    summaries = city()
    chosen = ["c03/s", "c10/s"]
    d = derived.derived_mean(summaries, 1.0, "baseline", upper=U, n_runs=20, seed=1, hats=chosen)
    part = summaries[summaries["hat"].isin(chosen)]
    assert d.hats == 2 and d.records == int(part["m"].sum())
    assert d.true_value == pytest.approx(part["s"].sum() / part["m"].sum())
    alone = derived.derived_mean(part, 1.0, "baseline", upper=U, n_runs=20, seed=1)
    np.testing.assert_allclose(d.runs, alone.runs, rtol=1e-13)  # per-HAT seeds


def test_derived_mean_bad_inputs_are_one_clear_error():
    summaries = city()
    with pytest.raises(HexplorerError, match="not one of"):
        derived.derived_mean(summaries, 1.0, "baseline", upper=U, n_runs=5, seed=0, hats=["zz"])
    with pytest.raises(HexplorerError, match="level"):
        derived.derived_mean(summaries, 1.0, "baseline", upper=U, n_runs=5, seed=0, level=1.0)
    with pytest.raises(HexplorerError, match="seed"):
        derived.derived_mean(summaries, 1.0, "baseline", upper=U, n_runs=5, seed=1.5)
    with pytest.raises(HexplorerError):
        derived.derived_mean(summaries, -1.0, "baseline", upper=U, n_runs=5, seed=0)


def test_sentence_says_the_interval_truth_and_settings():
    d = derived.derived_mean(city(), 1.0, "baseline", upper=U, n_runs=200, seed=2)
    text = d.sentence("knots", "mean speed")
    assert f"{d.low:,.2f} and {d.high:,.2f} knots" in text
    assert f"true value is {d.true_value:,.2f} knots" in text
    assert "ε = 1" in text and "200 simulated releases, seed 2" in text


# --- coverage of the simulated interval (and a companion that must fail) ---------------------

N_RUNS, N_FRESH = 2_000, 4_000


def _coverage(monkeypatch, factor: float) -> tuple[float, float]:
    """Coverage by fresh releases (full noise) of the ±q90 band simulated with the Laplace scale
    multiplied by ``factor``; and its standard error (the band's and the fresh runs' binomial
    errors combined)."""
    summaries = city(30, seed=9)

    def scaled(rng, scale, size):
        return ORIGINAL_LAPLACE(rng, np.asarray(scale) * factor, size)

    monkeypatch.setattr(noise, "_laplace", scaled)
    band = derived.derived_mean(summaries, 0.5, "opt-arrayavg", upper=U, n_runs=N_RUNS, seed=1)
    monkeypatch.setattr(noise, "_laplace", ORIGINAL_LAPLACE)
    fresh = derived.derived_mean(summaries, 0.5, "opt-arrayavg", upper=U, n_runs=N_FRESH, seed=2)
    inside = np.abs(fresh.runs - fresh.true_value) <= band.error_quantile
    se = float(np.sqrt(0.9 * 0.1 * (1 / N_RUNS + 1 / N_FRESH)))
    return float(inside.mean()), se


@pytest.mark.slow
def test_derived_interval_covers_ninety_percent_of_fresh_releases(monkeypatch):
    cov, se = _coverage(monkeypatch, 1.0)
    assert abs(cov - 0.9) < 4.5 * se, (cov, se)


@pytest.mark.slow
def test_companion_halved_noise_gives_a_band_that_fails_the_same_check(monkeypatch):
    cov, se = _coverage(monkeypatch, 0.5)
    assert not abs(cov - 0.9) < 4.5 * se, (cov, se)
    assert cov < 0.8
