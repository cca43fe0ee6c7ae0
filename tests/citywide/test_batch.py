"""core.citywide.batch: every HAT at once equals the per-HAT loop, HAT by HAT; its noise is private."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.citywide import batch as bt
from core.citywide.batch import (
    HatBatch,
    bestfit_assign,
    first_laplace,
    hat_key,
    hat_keys,
    hat_rng,
    release_all,
    release_loop,
    wraparound_means,
)
from core.data import load_demo, prepare
from core.errors import HexplorerError
from core.grouping import bestfit_fill, clipped_counts, wraparound
from core.mechanisms import MECHANISMS, vectorised_names
from tests.privacy_harness import audit

INTS = ["hat", "mechanism", "m_ub", "n_arrays", "users", "records"]
FLOATS = ["sensitivity", "noise_scale", "noiseless", "estimate", "true_mean"]


@pytest.fixture(scope="module")
def demo_batch():
    """250 HATs of the demo city (busiest and quiet ones alike)."""
    summaries = prepare(load_demo().head(250_000)).summaries
    hats = np.sort(summaries["hat"].unique())[::3][:250]
    return HatBatch.from_summaries(summaries[summaries["hat"].isin(hats)])


def _summaries(groups: dict[str, list[tuple[int, float]]]) -> pd.DataFrame:
    rows = [
        {"hat": h, "user_id": f"u{i:03d}", "m": m, "s": m * x}
        for h, users in groups.items()
        for i, (m, x) in enumerate(users)
    ]
    return pd.DataFrame(rows)


def test_first_laplace_is_numpys_first_draw_bit_for_bit():
    hats = [f"cell/{s}" for s in range(3000)]
    keys = [hat_key(9, "arrayavg-best", h) for h in hats] + [0, 2**128 - 1]
    words = np.array([[k & (2**64 - 1), k >> 64] for k in keys], dtype=np.uint64)
    assert np.array_equal(words[:-2], hat_keys(9, "arrayavg-best", hats))
    scale = np.linspace(0.0, 7.0, len(keys))
    expected = [
        np.random.Generator(np.random.Philox(key=k)).laplace(0.0, b, 1)[0]
        for k, b in zip(keys, scale, strict=True)
    ]
    assert np.array_equal(first_laplace(words, scale), np.array(expected))


def test_hat_rng_is_the_seed_rule():
    a = hat_rng(5, "levy", "c/h08").random()
    assert a == hat_rng(5, "levy", "c/h08").random()
    assert a != hat_rng(6, "levy", "c/h08").random() != hat_rng(5, "akmv", "c/h08").random()
    assert a != hat_rng(5, "levy", "c/h09").random()


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_release_all_equals_the_per_hat_loop_hat_by_hat(demo_batch, name):
    fast = release_all(name, demo_batch, 0.7, seed=11)
    loop = release_loop(name, demo_batch, 0.7, seed=11)
    assert len(fast) == demo_batch.n_hats
    for col in INTS:
        assert fast[col].tolist() == loop[col].tolist(), col
    assert np.array_equal(fast["noise_scale"], loop["noise_scale"])  # the noise: bit for bit
    assert np.array_equal(fast["sensitivity"], loop["sensitivity"])
    for col in FLOATS:  # summation order only (pairwise per HAT vs segment sums)
        np.testing.assert_allclose(fast[col], loop[col], rtol=1e-13, atol=1e-12, err_msg=col)
    noisy = fast["noise_scale"] > 0  # opt-bounding with T_eps = 0 releases U/2 without noise
    assert noisy.any() and (fast["estimate"] != fast["noiseless"])[noisy].all()


def test_release_all_equals_the_loop_on_awkward_hats():
    """Ties in counts, one user, equal counts, many distinct counts (several BestFit runs)."""
    rng = np.random.default_rng(0)
    groups = {
        "a/1": [(5, 10.0)],
        "a/2": [(3, 1.0), (3, 2.0), (3, 3.0)],
        "a/3": [(9, 60.0), (1, 0.0), (1, 65.0), (2, 30.0), (2, 31.0), (7, 5.0), (4, 4.0)],
        "b/1": [
            (int(m), float(x))
            for m, x in zip(rng.integers(1, 40, 300), rng.uniform(0, 65, 300), strict=True)
        ],
        "b/2": [
            (int(m), float(x))
            for m, x in zip(rng.geometric(0.2, 120), rng.uniform(0, 65, 120), strict=True)
        ],
    }
    b = HatBatch.from_summaries(_summaries(groups))
    for name in MECHANISMS:
        for eps in (0.3, 2.0):
            fast, loop = release_all(name, b, eps, seed=2), release_loop(name, b, eps, seed=2)
            assert fast[INTS].equals(loop[INTS]), name
            np.testing.assert_allclose(fast[FLOATS], loop[FLOATS], rtol=1e-13, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=25), min_size=1, max_size=6),
    st.integers(0, 2**31),
)
def test_bestfit_and_wraparound_in_lockstep_equal_one_hat_at_a_time(count_lists, salt):
    rng = np.random.default_rng(salt)
    groups = {
        f"h/{i}": [(m, float(x)) for m, x in zip(c, rng.uniform(0, 65, len(c)), strict=True)]
        for i, c in enumerate(count_lists)
    }
    b = HatBatch.from_summaries(_summaries(groups))
    lo, hi = b.counts[b.offsets[1:] - 1], b.counts[b.offsets[:-1]]
    m_ub = np.array([rng.integers(a, z + 1) for a, z in zip(lo, hi, strict=True)], dtype=np.int64)
    assign, k = bestfit_assign(b, m_ub)
    f_wrap, k_wrap = wraparound_means(b, m_ub)
    for h in range(b.n_hats):
        sl = slice(b.offsets[h], b.offsets[h + 1])
        expected, fills = bestfit_fill(clipped_counts(b.counts[sl], m_ub[h]), int(m_ub[h]))
        assert assign[sl].tolist() == expected.tolist()
        assert k[h] == fills.size
        arrays = wraparound(b.hat_data(h), int(m_ub[h]))
        assert k_wrap[h] == arrays.n_arrays
        assert f_wrap[h] == pytest.approx(arrays.f_arr, rel=1e-13, abs=1e-12)


def test_a_hats_value_does_not_depend_on_the_other_hats(demo_batch):
    summaries = pd.DataFrame(
        {
            "hat": np.repeat(demo_batch.hats, demo_batch.lengths),
            "user_id": demo_batch.user_ids,
            "m": demo_batch.counts,
            "s": demo_batch.sums,
        }
    )
    some = demo_batch.hats[::7]
    part = HatBatch.from_summaries(summaries[summaries["hat"].isin(some)])
    for name in ("arrayavg-best", "levy"):
        whole = release_all(name, demo_batch, 1.0, seed=4).set_index("hat")
        sub = release_all(name, part, 1.0, seed=4).set_index("hat")
        assert whole.loc[sub.index, "estimate"].tolist() == sub["estimate"].tolist()


def test_bad_input_is_one_line():
    b = HatBatch.from_summaries(_summaries({"a/1": [(2, 1.0)]}))
    with pytest.raises(HexplorerError, match="mechanism"):
        release_all("nope", b, 1.0, seed=1)
    with pytest.raises(HexplorerError, match="seed"):
        release_all("baseline", b, 1.0, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(HexplorerError, match="epsilon"):
        release_all("baseline", b, 0.0, seed=1)
    with pytest.raises(HexplorerError, match="empty"):
        HatBatch.from_summaries(_summaries({}).reindex(columns=["hat", "user_id", "m", "s"]))


def test_vectorised_list_is_what_the_docstring_says():
    assert set(vectorised_names()) <= set(MECHANISMS)
    for name in ("arrayavg-best", "baseline", "arrayavg-wrap", "opt-arrayavg"):
        assert name in vectorised_names()


# --- Empirical privacy of the vectorised path ------------------------------------------------
# The loop path is audited in tests/test_privacy.py; here the batch's own noise (first_laplace)
# is audited. One sample = one copy of the HAT under its own label (its own Philox stream), so
# one release_all call draws a whole sample. Pairs as in tests/test_privacy.py: user 0 has all
# values 0 in D and U in D'.

U = 10.0
COUNTS = [4, 3, 2, 2, 1]
MEANS = [0.0, 5.0, 5.0, 5.0, 5.0]
WHOLE = list(vectorised_names())


def _copies(means, size: int, salt: int) -> HatBatch:
    counts = np.asarray(COUNTS)
    labels = np.array([f"c/{salt}-{i}" for i in range(size)])
    frame = pd.DataFrame(
        {
            "hat": np.repeat(labels, counts.size),
            "user_id": np.tile([f"u{i}" for i in range(counts.size)], size),
            "m": np.tile(counts, size),
            "s": np.tile(counts * np.asarray(means), size),
        }
    )
    return HatBatch.from_summaries(frame, upper=U)


def _sampler(name, means):
    def sample(size, rng):
        b = _copies(means, size, int(rng.integers(2**62)))
        return release_all(name, b, 1.0, seed=int(rng.integers(2**62)))["estimate"].to_numpy()

    return sample


@pytest.mark.slow
@pytest.mark.parametrize("name", WHOLE)
def test_release_all_noise_is_private_and_too_little_is_detected(name, monkeypatch):
    d = list(MEANS)
    dp = [U] + MEANS[1:]
    kwargs = {"n": 60_000, "n_pilot": 10_000, "alpha": 1e-6}
    ok = audit(_sampler(name, d), _sampler(name, dp), 1.0, rng=np.random.default_rng(0), **kwargs)
    assert not ok.violated, str(ok)
    factor = 0.25 if name == "arrayavg-wrap" else 0.5  # wrap attains half its charged 2U/K
    original = bt.first_laplace
    monkeypatch.setattr(bt, "first_laplace", lambda keys, scale: original(keys, scale * factor))
    bad = audit(_sampler(name, d), _sampler(name, dp), 1.0, rng=np.random.default_rng(1), **kwargs)
    assert bad.violated, str(bad)


@pytest.mark.parametrize("name", vectorised_names())
def test_evaluate_all_is_the_exact_mae_that_sampling_estimates(demo_batch, name):
    from core.citywide.batch import evaluate_all
    from core.mechanisms import run_mechanism

    table = evaluate_all(name, demo_batch, 0.5)
    assert table["hat"].tolist() == demo_batch.hats.tolist()
    for h in (0, demo_batch.n_hats // 2, demo_batch.n_hats - 1):
        hat = demo_batch.hat_data(h)
        draws = run_mechanism(name, hat, 0.5, rng=np.random.default_rng(h), size=200_000)
        row = table.iloc[h]
        assert row["noise_scale"] == pytest.approx(draws.noise_scale[0], rel=1e-13)
        assert row["noiseless"] == pytest.approx(draws.noiseless[0], rel=1e-13, abs=1e-12)
        se = draws.abs_errors.std() / np.sqrt(draws.size)
        assert abs(draws.abs_errors.mean() - row["mae"]) < 5 * se + 1e-12


def test_evaluate_all_refuses_sampled_mechanisms(demo_batch):
    from core.citywide.batch import evaluate_all

    with pytest.raises(HexplorerError, match="needs sampling"):
        evaluate_all("levy", demo_batch, 1.0)


def test_a_batch_without_user_ids_is_the_same_batch_and_release():
    """Summaries in file order (hat, then user_id) need no user_id column for the vectorised
    releases (release --all reads hat, m, s only): same segments, counts, sums, releases."""
    summaries = prepare(load_demo().head(60_000)).summaries
    whole = HatBatch.from_summaries(summaries)
    bare = HatBatch.from_summaries(summaries[["hat", "m", "s"]])
    assert bare.hats.tolist() == whole.hats.tolist()
    assert bare.offsets.tolist() == whole.offsets.tolist()
    assert bare.counts.tolist() == whole.counts.tolist()
    assert bare.sums.tobytes() == whole.sums.tobytes()
    for name in vectorised_names():
        pd.testing.assert_frame_equal(
            release_all(name, bare, 0.7, seed=3), release_all(name, whole, 0.7, seed=3)
        )
    with pytest.raises(HexplorerError, match="without their user_id column"):
        _ = bare.user_ids
    shuffled = summaries[["hat", "m", "s"]].sample(frac=1.0, random_state=1)
    with pytest.raises(HexplorerError, match="must be sorted by hat"):
        HatBatch.from_summaries(shuffled)
