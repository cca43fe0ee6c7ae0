"""Monte-Carlo evaluation (SPEC section 3, Evaluation): table shape, exact expectations, errors.

HAT A: counts (4, 2, 1), sums (40, 10, 5), U = 10: f = 55/7; arrayavg-best at m_UB = 2 has
noiseless value 20/3 (bias β = 20/3 − 55/7 = −25/21) and Laplace scale b = (10/3)/ε, so
E|β + Lap(b)| = |β| + b·exp(−|β|/b).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from core import mechanisms as mech
from core.errors import HexplorerError, NotApplicableError
from core.evaluation import COLUMNS, mae_samples, monte_carlo, simulate
from core.hat import HatData
from core.mechanisms import MECHANISMS, run_mechanism


@pytest.fixture
def hat_a() -> HatData:
    return HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)


def test_table_shape_and_order(hat_a):
    calls = []
    table = monte_carlo(
        hat_a,
        [0.5, 1.0],
        n_runs=50,
        rng=np.random.default_rng(0),
        progress=lambda done, total: calls.append((done, total)),
    )
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 2 * len(MECHANISMS)
    assert table["mechanism"].tolist() == [n for n in MECHANISMS for _ in range(2)]
    assert table["epsilon"].tolist() == [0.5, 1.0] * len(MECHANISMS)
    assert (table["n_runs"] == 50).all()
    total = 2 * len(MECHANISMS)
    assert calls == [(i, total) for i in range(1, total + 1)]
    assert table["mae"].notna().all()
    assert (table["q05"] <= table["q95"]).all()
    no_arrays = table["mechanism"].isin([n for n, m in MECHANISMS.items() if not m.uses_m_ub])
    assert table.loc[no_arrays, "m_ub"].isna().all()
    assert table.loc[~no_arrays, "m_ub"].notna().all()


def test_user_m_ub_overrides_and_is_reported(hat_a):
    table = monte_carlo(
        hat_a, 1.0, ["arrayavg-best", "baseline"], n_runs=10, rng=np.random.default_rng(1), m_ub=4
    )
    best, base = table.iloc[0], table.iloc[1]
    assert (best["m_ub"], best["n_arrays"]) == (4, 2)
    assert pd.isna(base["m_ub"]) and "ignored" in base["note"]


def test_constant_release_has_exact_mae(hat_a):
    # opt-bounding at eps = 0.5: T_eps = 0 (4 > L = 3), the release is U/2 every time
    table = monte_carlo(hat_a, [0.5], ["opt-bounding"], n_runs=100, rng=np.random.default_rng(2))
    row = table.iloc[0]
    assert row["mae"] == pytest.approx(abs(5.0 - 55 / 7), rel=1e-12)
    assert row["std"] == 0.0 and row["q05"] == row["q95"] == 5.0
    assert "T_eps = 0" in row["note"]


def test_not_applicable_gives_nan_row_with_note(hat_a, monkeypatch):
    def not_applicable(hat, epsilon, m_ub, rng, size, **kwargs):
        raise NotApplicableError("No array of m_UB = 2 samples can be formed.")

    broken = dataclasses.replace(MECHANISMS["levy"], run=not_applicable)
    monkeypatch.setitem(mech.MECHANISMS, "levy", broken)
    table = monte_carlo(hat_a, [1.0], ["levy", "baseline"], n_runs=20, rng=np.random.default_rng(3))
    levy, base = table.iloc[0], table.iloc[1]
    assert math.isnan(levy["mae"]) and levy["note"].startswith("not applicable")
    assert "No array" in levy["note"]
    assert math.isfinite(base["mae"])


def test_simulate_and_mae_samples_are_the_raw_runs(hat_a):
    est = simulate(hat_a, "levy", 0.8, n_runs=30, rng=np.random.default_rng(4))
    ref = run_mechanism("levy", hat_a, 0.8, rng=np.random.default_rng(4), size=30).estimates
    np.testing.assert_array_equal(est, ref)
    err = mae_samples(hat_a, "levy", 0.8, n_runs=30, rng=np.random.default_rng(4))
    np.testing.assert_allclose(err, np.abs(ref - 55 / 7))


def test_seeded_table_is_reproducible(hat_a):
    a = monte_carlo(hat_a, [0.5, 2.0], n_runs=40, rng=np.random.default_rng(5))
    b = monte_carlo(hat_a, [0.5, 2.0], n_runs=40, rng=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"epsilons": [1.0, 0.0]}, "epsilon"),
        ({"epsilons": []}, "epsilons"),
        ({"mechanisms": ["levy", "nope"]}, "mechanism"),
        ({"mechanisms": []}, "mechanisms"),
        ({"n_runs": 0}, "n_runs"),
        ({"m_ub": 9}, "m_ub"),
        ({"rng": 3}, "rng"),
    ],
)
def test_bad_input_raises_before_any_work(hat_a, kwargs, param):
    calls = []
    args = {
        "epsilons": [1.0],
        "mechanisms": None,
        "n_runs": 10,
        "rng": np.random.default_rng(0),
        "progress": lambda d, t: calls.append(d),
    } | kwargs
    eps = args.pop("epsilons")
    with pytest.raises(HexplorerError, match=param):
        monte_carlo(hat_a, eps, **args)
    assert calls == []


@pytest.mark.slow
def test_arrayavg_mae_matches_exact_expectation(hat_a):
    n, eps = 200_000, 1.0
    beta, b = abs(20 / 3 - 55 / 7), (10 / 3) / eps
    expected = beta + b * math.exp(-beta / b)
    # E|beta + Z|^2 = beta^2 + 2 b^2 gives the exact standard error
    se = math.sqrt((beta**2 + 2 * b**2 - expected**2) / n)
    row = monte_carlo(
        hat_a, [eps], ["arrayavg-best"], n_runs=n, rng=np.random.default_rng(6), m_ub=2
    ).iloc[0]
    assert abs(row["mae"] - expected) < 5 * se
    assert row["mae_se"] == pytest.approx(se, rel=0.05)


def test_each_mechanism_rows_depend_on_its_name_not_on_the_others(hat_a):
    """Seeds keyed by name: a subset's rows equal the same mechanisms' rows in the full table."""
    full = monte_carlo(hat_a, [0.5, 1.0], n_runs=30, rng=np.random.default_rng(9))
    part = monte_carlo(hat_a, [0.5, 1.0], ["akmv", "levy"], n_runs=30, rng=np.random.default_rng(9))
    for name in ("akmv", "levy"):
        pd.testing.assert_frame_equal(
            part[part["mechanism"] == name].reset_index(drop=True),
            full[full["mechanism"] == name].reset_index(drop=True),
        )
