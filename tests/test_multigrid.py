"""Tests of core.multigrid (SPEC section 5): exact formulas against brute force, the per-grid
mechanism (exact values and an empirical privacy audit with its failing companion), privacy
accounting, and CHOP-USER (hand example, invariants as properties, equality with a naive loop)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import multigrid as mg
from core.citywide import grids as grids_module
from core.errors import HexplorerError
from core.multigrid import (
    GridSet,
    bias_mean,
    bias_var,
    chop_user,
    compose,
    delta_mean,
    delta_var,
    grid_error,
    grid_errors,
    noisy_statistics,
    privacy_loss,
    release_grids,
    select_grids,
)
from tests.privacy_harness import audit

ORIGINAL_LAPLACE = mg.laplace_noise


def frame(rows, slot="2024-03-05T08:00") -> pd.DataFrame:
    """Summaries from (cell, user, m, mean) rows; one slot unless the cell carries '/SLOT'."""
    out = []
    for cell, user, m, mean in rows:
        c, _, s = cell.partition("/")
        s = s or slot
        out.append((f"{c}/{s}", c, s, user, m, mean * m, mean * mean * m))
    return pd.DataFrame(out, columns=list(mg.SUMMARY_COLUMNS))


# --------------------------------------------------------------------------------------------
# Brute force of the exact formulas
# --------------------------------------------------------------------------------------------


def _enumerate(counts, keep, levels):
    """All datasets with values in ``levels``: statistics of the retained and of all records.

    Returns (retained mean, retained var, full mean, full var) as arrays of shape
    (len(levels),) * N, and the record axes of each user. A user keeps its first keep_l records.
    """
    n = int(sum(counts))
    grid = np.stack(np.meshgrid(*([np.asarray(levels, dtype=float)] * n), indexing="ij"), -1)
    axes, kept, pos = [], [], 0
    for m, g in zip(counts, keep, strict=True):
        axes.append(tuple(range(pos, pos + m)))
        kept.extend(range(pos, pos + g))
        pos += m
    r = grid[..., kept]
    return r.mean(-1), r.var(-1), grid.mean(-1), grid.var(-1), axes


def _sensitivity(stat, axes):
    return max(float((stat.max(axis=a) - stat.min(axis=a)).max()) for a in axes)


CASES = [
    # counts, retained counts Γ_ℓ: covering S > 2Γ*, S <= 2Γ* even and odd, R small and large
    ((1, 1, 1), (1, 1, 1)),  # S=3, Γ*=1: S > 2Γ*
    ((2, 1), (2, 1)),  # S=3, Γ*=2: odd, S <= 2Γ*
    ((2, 2), (2, 2)),  # S=4: even, S <= 2Γ*
    ((1, 1, 1, 1), (1, 1, 1, 1)),  # S=4, Γ*=1
    ((2, 1, 1, 1), (2, 1, 1, 1)),  # S=5, Γ*=2: S > 2Γ*
    ((3, 2), (3, 0)),  # user suppressed; S=3 odd, Γ*=3
    ((1, 3), (1, 0)),  # SPEC's counterexample shape: keep 1 of N=4
    ((2, 2, 1), (1, 2, 0)),  # partial retention: N=5, R=2: 2R <= N
    ((1, 1, 1, 1, 1), (1, 1, 0, 0, 0)),  # N=5 odd, R=3 > N/2
    ((2, 2, 2), (2, 0, 0)),  # N=6 even, R=4 > N/2
    ((3, 1), (2, 1)),  # R=1
]


@pytest.mark.parametrize(("counts", "keep"), CASES)
@pytest.mark.parametrize("upper", [1.0, 2.0])
def test_formulas_equal_brute_force(counts, keep, upper):
    levels = [0.0, upper / 2, upper]
    r_mean, r_var, f_mean, f_var, axes = _enumerate(counts, keep, levels)
    s, g, n = sum(keep), max(keep), sum(counts)
    assert _sensitivity(r_mean, axes) == pytest.approx(delta_mean(s, g, upper), abs=1e-12)
    assert _sensitivity(r_var, axes) == pytest.approx(delta_var(s, g, upper), abs=1e-12)
    assert float(np.abs(r_mean - f_mean).max()) == pytest.approx(bias_mean(s, n, upper), abs=1e-12)
    assert float(np.abs(r_var - f_var).max()) == pytest.approx(bias_var(s, n, upper), abs=1e-12)


@pytest.mark.parametrize(
    ("counts", "keep"), [((2, 1), (2, 1)), ((1, 1, 1), (1, 1, 1)), ((1, 2), (1, 0))]
)
def test_finer_value_grid_does_not_exceed_formulas(counts, keep):
    levels = np.linspace(0.0, 1.0, 7)
    r_mean, r_var, f_mean, f_var, axes = _enumerate(counts, keep, levels)
    s, g, n = sum(keep), max(keep), sum(counts)
    assert _sensitivity(r_var, axes) <= delta_var(s, g, 1.0) + 1e-12
    assert _sensitivity(r_mean, axes) <= delta_mean(s, g, 1.0) + 1e-12
    assert float(np.abs(r_var - f_var).max()) <= bias_var(s, n, 1.0) + 1e-12
    assert float(np.abs(r_mean - f_mean).max()) <= bias_mean(s, n, 1.0) + 1e-12


def test_spec_counterexample_to_the_slides():
    # U = 1, keep {0}, drop {1, 1, 0}: retained variance 0, full variance 1/4.
    full = np.array([0.0, 1.0, 1.0, 0.0])
    assert full.var() - np.array([0.0]).var() == 0.25
    assert bias_var(1, 4, 1.0) == 0.25
    slides = 1.0 * 1 * 3 / 4**2  # the slides' case "N > 2S": U² S R / N² = 3/16
    assert slides == 3 / 16 < bias_var(1, 4, 1.0)


def _delta_var_cases(s, g, u):
    if s > 2 * g:
        return u * u * g * (s - g) / s**2
    if s % 2 == 0:
        return u * u / 4
    return u * u / 4 * (1 - 1 / s**2)


def _bias_var_cases(s, n, u):
    r = n - s
    if r == 0:
        return 0.0
    if 2 * r <= n:
        return u * u * s * r / n**2
    if n % 2 == 0:
        return u * u / 4
    return u * u / 4 * (1 - 1 / n**2)


def test_case_formulas_of_spec_on_all_small_integers():
    for s in range(1, 40):
        for g in range(1, s + 1):
            assert delta_var(s, g, 3.0) == pytest.approx(_delta_var_cases(s, g, 3.0), rel=1e-14)
        for n in range(s, 60):
            assert bias_var(s, n, 3.0) == pytest.approx(_bias_var_cases(s, n, 3.0), rel=1e-14)


def test_exact_values_by_hand():
    assert delta_mean(4, 1, 2.0) == 0.5
    assert delta_var(4, 1, 2.0) == 4 * 3 / 16  # U² Γ*(S-Γ*)/S² = 4·1·3/16
    assert delta_var(4, 2, 2.0) == 1.0  # U²/4, S even
    assert delta_var(5, 3, 2.0) == 1.0 * (1 - 1 / 25)  # (U²/4)(1 - 1/S²), S odd
    assert delta_var(1, 1, 2.0) == 0.0
    assert bias_mean(3, 4, 2.0) == 0.5
    assert bias_var(4, 4, 2.0) == 0.0
    # E_g = E_μ + E_Var + 2Δ_μ/ε + 2Δ_Var/ε; S=3, Γ*=1, N=4, U=1, ε=0.5
    expected = 0.25 + 3 / 16 + 2 * (1 / 3) / 0.5 + 2 * (2 / 9) / 0.5
    assert grid_error(3, 1, 4, 1.0, 0.5) == pytest.approx(expected, rel=1e-15)
    vec = grid_error(np.array([3, 4]), np.array([1, 2]), np.array([4, 4]), 1.0, 0.5)
    assert vec.shape == (2,) and vec[0] == grid_error(3, 1, 4, 1.0, 0.5)


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: delta_mean(0, 1, 1.0), "total"),
        (lambda: delta_mean(2, 3, 1.0), "gamma_star"),
        (lambda: delta_var(2.5, 1, 1.0), "total"),
        (lambda: bias_var(5, 4, 1.0), "total"),
        (lambda: bias_mean(1, 2, -1.0), "upper"),
        (lambda: grid_error(2, 1, 2, 1.0, 0.0), "epsilon"),
    ],
)
def test_formula_input_errors(call, word):
    with pytest.raises(HexplorerError, match=word):
        call()


# --------------------------------------------------------------------------------------------
# Grids: selection, structure, errors
# --------------------------------------------------------------------------------------------


CITY = frame(
    [
        ("a/2024-03-05T08:00", "x", 3, 10.0),
        ("a/2024-03-05T08:00", "y", 1, 20.0),
        ("b/2024-03-05T08:00", "x", 2, 30.0),
        ("b/2024-03-05T08:00", "z", 2, 40.0),
        ("a/2024-03-05T09:00", "x", 1, 50.0),
        ("a/2024-03-06T08:00", "y", 4, 60.0),
    ]
)


def test_select_grids_by_slot_day_and_hats():
    assert set(select_grids(CITY, slot="2024-03-05T08:00")["hat"]) == {
        "a/2024-03-05T08:00",
        "b/2024-03-05T08:00",
    }
    assert set(select_grids(CITY, day="2024-03-05")["slot"]) == {
        "2024-03-05T08:00",
        "2024-03-05T09:00",
    }
    assert len(select_grids(CITY, hats=["a/2024-03-06T08:00"])) == 1
    assert len(select_grids(CITY)) == len(CITY)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"slot": "h08"}, "slot"),
        ({"day": "2024-04-01"}, "day"),
        ({"hats": ["nope/x"]}, "hats"),
        ({"slot": "2024-03-05T09:00", "hats": ["b/2024-03-05T08:00"]}, "no grid"),
        ({"slot": []}, "slot"),
    ],
)
def test_select_grids_errors(kwargs, word):
    with pytest.raises(HexplorerError, match=word):
        select_grids(CITY, **kwargs)


def test_gridset_structure():
    gs = GridSet.from_summaries(select_grids(CITY, slot="2024-03-05T08:00"))
    assert gs.hats.tolist() == ["a/2024-03-05T08:00", "b/2024-03-05T08:00"]
    assert gs.user_ids.tolist() == ["x", "y", "z"]
    assert gs.m.tolist() == [3, 1, 2, 2]  # by grid, count descending, ties by user id
    assert gs.user.tolist() == [0, 1, 0, 2]
    assert gs.starts.tolist() == [0, 2, 4]
    assert gs.grids_per_user.tolist() == [2, 1, 1]
    assert gs.records.tolist() == [4, 4]
    assert (gs.n_grids, gs.n_users, gs.n_pairs, gs.max_grids_per_user) == (2, 3, 4, 2)
    whole = GridSet.from_summaries(CITY.iloc[[5, 3, 0, 4, 2, 1]])  # row order does not matter
    assert whole.hats.tolist() == [
        f"{c}/{s}" for c, s in zip(whole.cells, whole.slots, strict=True)
    ]
    assert whole.slots.tolist() == ["2024-03-05T08:00", "2024-03-05T09:00"] + [
        "2024-03-06T08:00",
        "2024-03-05T08:00",
    ]


@pytest.mark.parametrize(
    ("mutate", "word"),
    [
        (lambda d: d.drop(columns="q"), "q"),
        (lambda d: d.assign(m=[0, 1, 1, 1, 1, 1]), "'m'"),
        (lambda d: d.assign(m=[1.5, 1, 1, 1, 1, 1]), "'m'"),
        (lambda d: d.assign(s=[-1.0, 1, 1, 1, 1, 1]), "'s'"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "twice"),
        (lambda d: d.iloc[:0], "no rows"),
    ],
)
def test_gridset_input_errors(mutate, word):
    with pytest.raises(HexplorerError, match=word):
        GridSet.from_summaries(mutate(CITY))


def test_grid_errors_with_suppression():
    gs = GridSet.from_summaries(select_grids(CITY, slot="2024-03-05T08:00"))
    keep = np.array([False, True, True, True])  # x suppressed in grid a
    e = grid_errors(gs, 0.5, upper=65.0, retained=keep)
    assert e.retained_records.tolist() == [1, 4] and e.gamma_star.tolist() == [1, 2]
    assert e.total[0] == grid_error(1, 1, 4, 65.0, 0.5)
    assert e.total[1] == grid_error(4, 2, 4, 65.0, 0.5)
    with pytest.raises(HexplorerError, match="retains no record"):
        grid_errors(gs, 0.5, upper=65.0, retained=np.array([False, False, True, True]))
    with pytest.raises(HexplorerError, match="retained"):
        grid_errors(gs, 0.5, upper=65.0, retained=np.ones(3, dtype=bool))


# --------------------------------------------------------------------------------------------
# The per-grid mechanism
# --------------------------------------------------------------------------------------------


def test_release_values_and_noise_scales(monkeypatch):
    gs = GridSet.from_summaries(select_grids(CITY, slot="2024-03-05T08:00"))
    scales = []

    def fake(rng, scale, size):
        scales.append(np.asarray(scale))
        return np.zeros(size)

    monkeypatch.setattr(grids_module, "laplace_noise", fake)
    keep = np.array([True, False, True, True])  # y suppressed in grid a
    out = release_grids(gs, 0.5, upper=65.0, rng=np.random.default_rng(0), retained=keep)
    assert list(out.columns[: len(mg.RELEASE_COLUMNS)]) == list(mg.RELEASE_COLUMNS)
    a, b = out.iloc[0], out.iloc[1]
    # grid a: x has 3 records of mean 10 (each 10), y 1 record of 20 (suppressed)
    assert (a.users, a.records, a.retained) == (2, 4, 3)
    assert a.true_mean == pytest.approx(12.5) and a.true_var == pytest.approx(18.75)
    assert a.noisy_mean == pytest.approx(10.0) and a.noisy_var == pytest.approx(0.0, abs=1e-9)
    assert b.noisy_mean == pytest.approx(35.0) and b.noisy_var == pytest.approx(25.0)
    assert a.delta_mean == 65.0 and a.delta_var == 65.0**2 / 4 * (1 - 1 / 9)
    np.testing.assert_allclose(scales[0], 2 * out.delta_mean / 0.5)
    np.testing.assert_allclose(scales[1], 2 * out.delta_var / 0.5)
    assert a.error_bound == grid_error(3, 3, 4, 65.0, 0.5)


def test_release_rejects_unclamped_values():
    gs = GridSet.from_summaries(frame([("a", "x", 2, 70.0), ("a", "y", 1, 1.0)]))
    with pytest.raises(HexplorerError, match="clamp"):
        release_grids(gs, 1.0, upper=65.0, rng=np.random.default_rng(0))


def test_noisy_statistics_shape_and_spread():
    gs = GridSet.from_summaries(select_grids(CITY, slot="2024-03-05T08:00"))
    mean, var = noisy_statistics(gs, 1.0, upper=65.0, rng=np.random.default_rng(1), size=50_000)
    assert mean.shape == var.shape == (50_000, 2)
    e = grid_errors(gs, 1.0, upper=65.0)
    # E|Lap(b)| = b = 2Δ/ε: the sample mean absolute deviation is within 3% (n = 50 000)
    np.testing.assert_allclose(np.abs(mean - mean.mean(0)).mean(0), 2 * e.delta_mean, rtol=0.03)


U_AUDIT = 10.0


def _audit_pair(column: int, epsilon: float, seed: int):
    """Grid with 4 users (2, 1, 1, 1 records), all values 0; D' moves the top user to U.

    The pair is tight: the mean moves by exactly Δ_μ = 2U/5 and the variance by exactly
    Δ_Var = U²·2·3/25 (S = 5 > 2Γ* = 4), so each statistic's loss on the pair is exactly ε/2.
    """
    gsets = []
    for v in (0.0, U_AUDIT):
        rows = [("a", "u1", 2, v), ("a", "u2", 1, 0.0), ("a", "u3", 1, 0.0), ("a", "u4", 1, 0.0)]
        rows.append(("b", "u1", 3, 5.0))  # another grid of the moved user, unchanged
        gsets.append(GridSet.from_summaries(frame(rows)))
    e = grid_errors(gsets[0], epsilon, upper=U_AUDIT)
    moved = _noiseless(gsets[1]) - _noiseless(gsets[0])
    assert moved[column] == pytest.approx([e.delta_mean[0], e.delta_var[0]][column], rel=1e-12)

    def sampler(gs):
        def draw(size, rng):
            out = noisy_statistics(gs, epsilon, upper=U_AUDIT, rng=rng, size=size)
            return out[column][:, 0]

        return draw

    return audit(
        sampler(gsets[0]),
        sampler(gsets[1]),
        epsilon / 2,
        rng=np.random.default_rng(seed),
        n=200_000,
        alpha=1e-6,
    )


def _noiseless(gs):
    mean, var = mg.grid_statistics(gs, np.ones(gs.n_pairs, dtype=bool))
    return np.array([mean[0], var[0]])


@pytest.mark.slow
@pytest.mark.parametrize("column", [0, 1], ids=["mean", "variance"])
def test_mechanism_is_private_per_statistic(column):
    verdict = _audit_pair(column, 1.0, seed=10 + column)
    assert not verdict.violated, str(verdict)


@pytest.mark.slow
@pytest.mark.parametrize("column", [0, 1], ids=["mean", "variance"])
def test_audit_catches_halved_noise(monkeypatch, column):
    monkeypatch.setattr(
        grids_module,
        "laplace_noise",
        lambda rng, scale, size: ORIGINAL_LAPLACE(rng, scale / 2, size),
    )
    verdict = _audit_pair(column, 1.0, seed=20 + column)
    assert verdict.violated, str(verdict)


# --------------------------------------------------------------------------------------------
# Privacy accounting and CHOP-USER
# --------------------------------------------------------------------------------------------


def test_privacy_loss_accountings():
    gs = GridSet.from_summaries(CITY)
    loss = privacy_loss(gs, 0.5)
    assert (loss.basic, loss.by_users, loss.after_chop) == (2.0, 1.5, None)
    chop = chop_user(gs, 0.5, upper=65.0)
    assert privacy_loss(gs, 0.5, chop).after_chop == chop.k_final * 0.5


def test_chop_user_by_hand():
    # U = 1, ε = 1. Grid a: x(1), y(1), z(1); grid b: x(1), w(2); grid c: x(1), v(1), t(1), s(1).
    gs = GridSet.from_summaries(
        frame(
            [("a", "x", 1, 0), ("a", "y", 1, 0), ("a", "z", 1, 0)]
            + [("b", "x", 1, 0), ("b", "w", 2, 0)]
            + [("c", "x", 1, 0), ("c", "v", 1, 0), ("c", "t", 1, 0), ("c", "s", 1, 0)]
        )
    )
    res = chop_user(gs, 1.0, upper=1.0)
    # errors before: a: 2/3 + 4/9; b: 2·2/3 + 2·(1/4)(1 - 1/9); c: 1/2 + 2·3/16
    before = [2 / 3 + 4 / 9, 4 / 3 + 4 / 9, 1 / 2 + 3 / 8]
    np.testing.assert_allclose(res.errors_before, before, rtol=1e-14)
    assert res.threshold == pytest.approx(4 / 3 + 4 / 9)
    # K = 3 (x). Suppressing x: a -> S=2, N=3: 1/3 + 2/9 + 2·1/2 + 2·1/4 = 2.0556 > thr;
    # b -> S=2, Γ*=2, N=3: 1/3 + 2/9 + 2 + 2·1/4 > thr; c -> S=3, N=4: 1/4 + 3/16 + 2/3 + 4/9
    # = 1.5486 <= thr (1.7778). So x leaves c; K = 2 ... then x is again the only user at K = 2.
    # a -> 2.0556, b -> 3.0556, c (S=2, N=4): 1/2 + 1/4 + 1 + 1/2 = 2.25: all above: stop.
    assert res.k_history == (3, 2)
    assert res.k_final == 2
    pairs = res.suppressed_pairs()
    assert pairs[["user_id", "hat"]].values.tolist() == [["x", "c/2024-03-05T08:00"]]
    assert res.stopped_by == "x" and res.wasted == 0
    assert res.errors_after[2] == pytest.approx(1 / 4 + 3 / 16 + 2 / 3 + 4 / 9)
    assert res.retained.tolist().count(False) == 1


def naive_chop(gs: GridSet, epsilon: float, upper: float):
    """SPEC section 5's loop, written directly: recompute every error from scratch."""
    keep = np.ones(gs.n_pairs, dtype=bool)
    threshold = grid_errors(gs, epsilon, upper=upper).total.max()
    g_count = gs.grids_per_user.copy()
    k = int(g_count.max())
    history, order = [k], []
    while True:
        for usr in np.flatnonzero(g_count == k):  # by user id
            best = None
            for p in np.flatnonzero(keep & (gs.user == usr)):  # by grid label
                g = gs.grid[p]
                if (keep & (gs.grid == g)).sum() == 1:
                    continue  # last contributor
                others = keep & (gs.grid == g)
                others[p] = False
                kept = gs.m[others]
                e = grid_error(kept.sum(), kept.max(), gs.m[gs.grid == g].sum(), upper, epsilon)
                if best is None or e < best[0]:
                    best = (e, p)
            if best is None or best[0] > threshold:
                return order, history, keep
            keep[best[1]] = False
            g_count[usr] -= 1
            order.append(int(best[1]))
        k -= 1
        history.append(k)


@st.composite
def small_cities(draw):
    n_grids = draw(st.integers(1, 5))
    n_users = draw(st.integers(1, 6))
    rows = []
    for g in range(n_grids):
        members = draw(
            st.lists(st.integers(0, n_users - 1), min_size=1, max_size=n_users, unique=True)
        )
        for usr in members:
            rows.append((f"g{g}", f"u{usr}", draw(st.integers(1, 4)), 0.0))
    epsilon = draw(st.sampled_from([0.25, 0.5, 1.0, 2.0, 8.0]))
    upper = draw(st.sampled_from([1.0, 65.0]))
    return GridSet.from_summaries(frame(rows)), epsilon, upper


def _check_invariants(gs, res):
    assert np.all(res.errors_after <= res.threshold)
    assert res.threshold == res.errors_before.max()
    assert all(a >= b for a, b in itertools.pairwise(res.k_history))
    assert res.k_final == res.k_history[-1] <= res.k_initial == gs.max_grids_per_user
    assert np.all(np.bincount(gs.grid[res.retained], minlength=gs.n_grids) >= 1)
    assert res.retained.sum() == gs.n_pairs - res.n_suppressed
    assert res.grids_per_user_after.max() == res.k_final


@settings(max_examples=150, deadline=None)
@given(small_cities())
def test_chop_user_properties_and_naive_equality(city):
    gs, epsilon, upper = city
    res = chop_user(gs, epsilon, upper=upper)
    _check_invariants(gs, res)
    again = chop_user(gs, epsilon, upper=upper)
    assert np.array_equal(res.suppressed, again.suppressed) and res.k_history == again.k_history
    order, history, keep = naive_chop(gs, epsilon, upper)
    assert res.suppressed.tolist() == order
    assert list(res.k_history) == history
    assert np.array_equal(res.retained, keep)


def _random_city(seed: int, n_grids: int, n_users: int) -> GridSet:
    rng = np.random.default_rng(seed)
    rows = []
    for usr in range(n_users):
        g_l = min(n_grids, 1 + int(rng.geometric(0.3)))
        for g in rng.choice(n_grids, size=g_l, replace=False, p=None):
            rows.append((f"g{g:03d}", f"u{usr:03d}", int(rng.geometric(0.35)), 0.0))
    have = {r[0] for r in rows}
    rows += [(f"g{g:03d}", "u000", 1, 0.0) for g in range(n_grids) if f"g{g:03d}" not in have]
    return GridSet.from_summaries(frame(rows))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("prefix", [1, 2, 4])
def test_chop_kernel_equals_naive_on_medium_cities(seed, prefix):
    # Larger than the hypothesis cities, so grids change and "wobble" within rounds; small
    # prefixes force the kernel's fallback scans.
    gs = _random_city(seed, 12, 40)
    for epsilon, upper in ((1.0, 65.0), (4.0, 1.0)):
        thr = float(grid_errors(gs, epsilon, upper=upper).total.max())
        got, history, _, _ = mg._chop_kernel(gs, epsilon, upper, thr, prefix=prefix)
        order, naive_history, _ = naive_chop(gs, epsilon, upper)
        assert got.tolist() == order
        assert history == naive_history


def _heavy_city(seed: int, n_grids: int, n_users: int) -> GridSet:
    """Zipf-like grid popularity, log-normal G_l and counts (as bench/bench_chop.py, smaller)."""
    rng = np.random.default_rng(seed)
    g_user = np.clip(np.round(rng.lognormal(np.log(6.0), 0.9, n_users)), 1, n_grids).astype(int)
    weight = 1.0 / np.arange(1, n_grids + 1) ** 0.8
    rows = set()
    for usr, g_l in enumerate(g_user):
        for g in rng.choice(n_grids, size=g_l, replace=False, p=weight / weight.sum()):
            rows.add((f"g{g:03d}", f"u{usr:04d}"))
    have = {r[0] for r in rows}
    rows |= {(f"g{g:03d}", "u0000") for g in range(n_grids) if f"g{g:03d}" not in have}
    counts = np.clip(np.round(rng.lognormal(np.log(3.0), 1.0, len(rows))), 1, 500).astype(int)
    return GridSet.from_summaries(
        frame([(c, u, int(m), 0.0) for (c, u), m in zip(sorted(rows), counts, strict=True)])
    )


def test_chop_kernel_equals_naive_on_a_heavy_tailed_city():
    # Hundreds of suppressions in rounds where many users share grids whose top counts change
    # (the kernel's "wobble" path) and grids near S <= 2Γ*.
    gs = _heavy_city(1, 60, 400)
    for epsilon in (0.5, 2.0):
        res = chop_user(gs, epsilon, upper=65.0)
        order, history, _ = naive_chop(gs, epsilon, 65.0)
        assert res.n_suppressed > 400 if epsilon == 0.5 else res.n_suppressed > 100
        assert res.suppressed.tolist() == order
        assert list(res.k_history) == history
        _check_invariants(gs, res)


def test_kernel_scalar_error_is_bit_identical_to_vectorised():
    rng = np.random.default_rng(5)
    n = rng.integers(2, 10_000, 2000)
    s = rng.integers(1, n + 1)
    g = rng.integers(1, s + 1)
    for u, eps in ((65.0, 0.3), (1.0, 2.0)):
        vec = grid_error(s, g, n, u, eps)
        for i in range(0, 2000, 7):
            one = grid_error(int(s[i]), int(g[i]), int(n[i]), u, eps)
            assert one == vec[i]


def test_compose_dict():
    out = compose(CITY, [0.5, 1.0], 65.0)
    assert (out["grids"], out["users"], out["max_grids_per_user"]) == (4, 3, 3)
    assert [r["epsilon"] for r in out["results"]] == [0.5, 1.0]
    r = out["results"][0]
    assert set(r) == {
        "epsilon",
        "basic_loss",
        "user_loss",
        "chop_k",
        "chop_loss",
        "threshold",
        "max_error_after",
        "suppressed_pairs",
    }
    assert r["basic_loss"] == 2.0 and r["user_loss"] == 1.5
    assert r["chop_loss"] == r["chop_k"] * 0.5 and r["max_error_after"] <= r["threshold"]
    assert math.isfinite(r["threshold"])
    with pytest.raises(HexplorerError, match="epsilon"):
        compose(CITY, [], 65.0)
    with pytest.raises(HexplorerError, match="epsilon"):
        compose(CITY, [-1.0], 65.0)
