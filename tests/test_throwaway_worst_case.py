"""A mechanism with a closed-form worst case is one registry entry: the proof.

The first part of this file is all a contributor writes (here inside a test file, registered for
each test by a fixture and removed afterwards): a user-level Laplace mean of the users' means,
``(1/L) Σ_ℓ x̄_ℓ + Lap(U / (L ε))``. Changing one user's values moves it by at most U/L. Its worst
case is closed form: the bias ``|(1/L) Σ x̄_ℓ − Σ m_ℓ x̄_ℓ / N|`` is largest with x̄_ℓ = U where
``1/L − m_ℓ/N > 0`` and 0 elsewhere, so ``E = U Σ_ℓ (1/L − m_ℓ/N)⁺ + c U / (L ε)``, one piece
``a + b/ε`` on (0, inf). The tests then find it, with no other file edited, on the Map's error
colouring (:func:`core.citywide.errors.errors_at`, the dashboard's map picker), in the plan (one
HAT, a city, ``hexplorer plan --all``), in ``hexplorer worstcase --all``, in ``hexplorer release
--all`` (its all-HATs form, equal to the loop over HATs) and in the conformance checks
(exact values, invalid input, empirical privacy).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

from core import cli, plan
from core.citywide.batch import HatBatch, release_all, release_loop
from core.citywide.errors import error_table, errors_at
from core.citywide.gridset import grid_set
from core.data import load_demo, prepare
from core.mechanisms import (
    MECHANISMS,
    PALETTE,
    BatchRelease,
    Mechanism,
    Pieces,
    WorstCaseForm,
    WorstParts,
    analytic_names,
    register,
    unregister,
    vectorised_names,
)
from core.mechanisms.common import draws
from core.mechanisms.forms import one_piece
from core.params import check_noise_measure
from tests.mechanism_checks import (
    CASES,
    Cases,
    ExactCase,
    PrivacyCase,
    check_exact,
    check_invalid,
    check_privacy,
)

NAME = "user-mean"
SLOT = "2024-03-05T08:00"

# --- the throwaway module: what a contributor writes ------------------------------------------


def _run(hat, epsilon, m_ub, rng, size):
    """(1/L) Σ x̄_ℓ + Lap(U / (L ε)): each user counts once, whatever its number of records."""
    sens = hat.upper / hat.n_users
    noiseless = float(np.mean(hat.user_means))
    return draws(NAME, hat, epsilon, None, None, noiseless, sens, sens / epsilon, rng, size)


def _bias(counts, upper) -> float:
    return upper * float(np.maximum(1.0 / counts.size - counts / counts.sum(), 0.0).sum())


def _one(counts, upper, epsilon, noise_measure) -> WorstParts:
    bias = _bias(counts, upper)
    noise = check_noise_measure(noise_measure) * upper / (counts.size * epsilon)
    return WorstParts(m_ub=None, clipping=bias, noise=noise, total=bias + noise)


def _pieces(counts, upper, noise_measure) -> Pieces:
    b = check_noise_measure(noise_measure) * upper / counts.size
    hat, p = one_piece(np.array([_bias(counts, upper)]), np.array([b]), np.array([-1]))
    return p


def _many_bias(table) -> np.ndarray:
    pair_l = np.repeat(table.users, table.users)
    pair_n = np.repeat(table.records, table.users)
    return table.upper * table.segment_sums(
        np.maximum(1.0 / pair_l - table.counts_desc / pair_n, 0)
    )


def _many(table, eps):
    bias = _many_bias(table)
    noise = check_noise_measure(table.noise_measure) * table.upper / (table.users * eps)
    return np.full(table.n_hats, -1), bias, noise, bias + noise


def _many_pieces(table):
    b = check_noise_measure(table.noise_measure) * table.upper / table.users
    return one_piece(_many_bias(table), b, np.full(table.n_hats, -1))


def _release_all(b, epsilon) -> BatchRelease:
    sens = b.upper / b.lengths
    none = np.full(b.n_hats, -1)
    noiseless = b.seg_sum(b.sums / b.counts) / b.lengths
    return BatchRelease(
        m_ub=none, n_arrays=none, sensitivity=sens, noise_scale=sens / epsilon, noiseless=noiseless
    )


def _mechanism(colour: str) -> Mechanism:
    return Mechanism(
        name=NAME, title="User-mean Laplace", family="Bounding",
        description="The mean of the users' means plus Laplace noise U/(Lε): one vote per user.",
        reference="a throwaway for the tests", spec="SPEC §3 (user-level, as baseline)",
        grouping=None, m_ub_rule=None, colour=colour, run=_run,
        worst_case=WorstCaseForm(many=_many, many_pieces=_many_pieces, one=_one, pieces=_pieces),
        release_all=_release_all,
    )  # fmt: skip


CASES_OF_IT = Cases(
    # counts (4, 2, 1), sums (40, 10, 5), U = 10: user means (10, 5, 5), mean 20/3, U/L = 10/3.
    exact=(
        ExactCase(
            counts=(4, 2, 1),
            sums=(40.0, 10.0, 5.0),
            upper=10.0,
            expect={"noiseless": 20.0 / 3.0, "sensitivity": 10.0 / 3.0, "m_ub": None},
        ),
    ),  # fmt: skip
    # user 0 moves from 0 to U: the mean of means moves by U/L, the whole sensitivity.
    privacy=PrivacyCase(counts=(4, 3, 2, 2, 1), means=(0.0, 5.0, 5.0, 5.0, 5.0), moved=0),
)

# --- the tests ---------------------------------------------------------------------------------


@pytest.fixture
def throwaway():
    taken = {m.colour.upper() for m in MECHANISMS.values()}
    colour = next(c for c in PALETTE if c.upper() not in taken)
    register(_mechanism(colour))
    CASES[NAME] = CASES_OF_IT
    try:
        yield NAME
    finally:
        unregister(NAME)
        CASES.pop(NAME, None)


@pytest.fixture(scope="module")
def demo():
    return prepare(load_demo()).summaries


def _cli(*args: str):
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main([*map(str, args), "--json"]) == 0
    return json.loads(out.getvalue())


def _by_hand(grids, upper: float, epsilon: float, c: float = 1.0) -> np.ndarray:
    """The closed form HAT by HAT, written out (the oracle)."""
    out = []
    for h in range(grids.n_grids):
        m = grids.m[int(grids.starts[h]) : int(grids.starts[h + 1])].astype(float)
        bias = upper * np.maximum(1.0 / m.size - m / m.sum(), 0.0).sum()
        out.append(bias + c * upper / (m.size * epsilon))
    return np.array(out)


def test_it_is_nowhere_before_registration():
    assert NAME not in analytic_names() and NAME not in vectorised_names()


def test_the_map_s_error_colouring_reads_it(throwaway, demo):
    from dashboard.map import state as map_state

    assert NAME in analytic_names() and NAME in map_state.mechanisms()
    grids = grid_set(demo, slot=SLOT)
    for nm, c in (("mean", 1.0), ("std", np.sqrt(2.0))):
        at = errors_at(error_table(grids, upper=65.0, noise_measure=nm), 0.7, NAME)
        np.testing.assert_allclose(at.total, _by_hand(grids, 65.0, 0.7, c), rtol=1e-12)
        assert (at.m_ub == -1).all()
        frame = at.frame()
        assert frame["m_ub"].isna().all() and (frame["mechanism"] == NAME).all()


def test_the_plan_reads_it_one_hat_and_a_city(throwaway, demo):
    grids = grid_set(demo, slot=SLOT)
    table = error_table(grids, upper=65.0)
    target = 6.0
    needed = plan.epsilon_needed(table, target, NAME)
    for h in range(grids.n_grids):
        m = grids.m[int(grids.starts[h]) : int(grids.starts[h + 1])]
        bias = _bias(m.astype(np.int64), 65.0)
        if bias >= target:
            assert needed[h] == np.inf
            continue
        closed = 65.0 / (m.size * (target - bias))  # bias + U/(Lε) = target
        assert needed[h] == pytest.approx(closed, rel=1e-9)
        one = plan.epsilon_for_error(m, 65.0, target, NAME)
        assert one.status == "ok" and one.epsilon == needed[h]
    out = _cli(
        "plan", "--target-error", target, "--all", "--slot-filter", SLOT, "--mechanism", NAME
    )
    want = plan.city_plan(table, target, coverage=0.9, mechanism=NAME)
    assert out["mechanism"] == NAME and out["status"] == want.status
    assert out["epsilon"] == want.epsilon and out["hats_reaching"] == want.hats_reaching


def test_worstcase_all_reads_it(throwaway, demo):
    rows = _cli("worstcase", "--all", "--slot-filter", SLOT, "--epsilon", "2", "--mechanism", NAME)
    grids = grid_set(demo, slot=SLOT)
    assert [r["hat"] for r in rows] == grids.hats.astype(str).tolist()
    np.testing.assert_allclose(
        [r["worst_case_error"] for r in rows], _by_hand(grids, 65.0, 2.0), rtol=1e-12
    )


def test_release_all_uses_its_all_hats_form(throwaway, demo, tmp_path):
    raw = tmp_path / "raw.csv"
    load_demo().head(20_000).to_csv(raw, index=False)
    target = tmp_path / "all.csv"
    _cli("release", raw, "--all", "--mechanism", NAME, "--epsilon", "1", "--seed", "5",
         "--output", target)  # fmt: skip
    table = pd.read_csv(target)
    batch = HatBatch.from_summaries(prepare(pd.read_csv(raw)).summaries)
    vectorised = release_all(NAME, batch, 1.0, seed=5)
    loop = release_loop(NAME, batch, 1.0, seed=5)  # run() HAT by HAT: the reference
    np.testing.assert_allclose(vectorised["noiseless"], loop["noiseless"], rtol=1e-12)
    np.testing.assert_allclose(vectorised["sensitivity"], loop["sensitivity"], rtol=1e-12)
    np.testing.assert_allclose(table["estimate"], vectorised["estimate"], rtol=1e-15)


def test_conformance_exact_and_invalid(throwaway, monkeypatch):
    for case in CASES_OF_IT.exact:
        with monkeypatch.context() as mp:
            check_exact(NAME, case, mp)
    check_invalid(NAME)


@pytest.mark.slow
def test_conformance_privacy(throwaway, monkeypatch):
    check_privacy(NAME, CASES_OF_IT.privacy, monkeypatch)
