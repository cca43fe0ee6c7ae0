"""The trends of SPEC section 6, reproduced with fixed seeds at a size CI runs in seconds.

Each comparison "A beats B" is asserted with a statistical margin, not just on the point
estimates: ``MAE_A + Z·sqrt(se_A² + se_B²) < MAE_B`` with Z = 3, where ``se`` is the Monte-Carlo
standard error that ``monte_carlo`` reports (cells use independent draws). So a trend that holds
only by the luck of the seed fails. ε runs over the papers' range [0.5, 2].

Data. The papers' ITMS HAT is stood in for by the demo city's busiest HAT (its counts are made
to look like the papers': ~200 buses, m* in the hundreds, N ≈ 17,000) and by projected-Gaussian
samples with the papers' μ = 20.66769, σ² = 115.135 on those counts ([4], section IV);
scaling uses λ = 10 as in the papers. Seed 004's collections use its own value distributions:
uniform on (0, U] for the geometric one, N(U/2, U/4) by rejection into (0, U] for the
extreme-valued one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import synthetic as syn
from core.data import hat_data, load_demo, prepare
from core.evaluation import monte_carlo
from core.mechanisms import run_mechanism
from core.worstcase import m_levy

Z = 3.0
EPSILONS = (0.5, 1.0, 2.0)
N_RUNS = 20_000
PAPER_MU, PAPER_VAR = 20.66769, 115.135  # [4]: ITMS mean and (1/N) variance
LAMBDA = 10


@pytest.fixture(scope="module")
def demo_hat():
    return hat_data(prepare(load_demo()).summaries)


@pytest.fixture(scope="module")
def synthetic_hat(demo_hat):
    return syn.projected_gaussian(
        demo_hat.counts, mean=PAPER_MU, variance=PAPER_VAR, upper=65.0,
        rng=np.random.default_rng(3),
    )  # fmt: skip


def _table(hat, mechanisms, seed, epsilons=EPSILONS, m_ub=None, n_runs=N_RUNS):
    tab = monte_carlo(
        hat, list(epsilons), list(mechanisms), n_runs=n_runs, rng=np.random.default_rng(seed),
        m_ub=m_ub,
    )  # fmt: skip
    return {(r.mechanism, r.epsilon): (r.mae, r.mae_se) for r in tab.itertuples()}


def _beats(a, b, msg=""):
    """MAE a is below MAE b by more than Z combined standard errors."""
    (ma, sa), (mb, sb) = a, b
    margin = Z * math.hypot(sa, sb)
    assert ma + margin < mb, f"{msg}: {ma:.4g} ± {sa:.2g} does not beat {mb:.4g} ± {sb:.2g}"


CLIPPING = (
    "arrayavg-best", "arrayavg-wrap", "levy", "quantile-fixed", "quantile-eps",
    "opt-arrayavg-convex",
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("which", ["demo", "synthetic"])
def test_clipping_beats_baseline(which, demo_hat, synthetic_hat):
    """Seed 003: "BASELINE performs uniformly poorer than all other algorithms" (Array-Averaging,
    Levy, FixedQuantile, ε-DependentQuantile; here also WrapAround Array-Averaging and the
    convex-proxy OPT). Not claimed for akmv, the WrapAround Levy/Quantile (their doubled
    sensitivities), nor opt-arrayavg, whose worst-case-optimal m^(ε) sits near m* on these data.
    """
    hat = demo_hat if which == "demo" else synthetic_hat
    t = _table(hat, ("baseline", *CLIPPING), seed=10)
    for eps in EPSILONS:
        for name in CLIPPING:
            _beats(t[name, eps], t["baseline", eps], f"{name} vs baseline at eps={eps}")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["demo", "synthetic"])
def test_bestfit_beats_wraparound_for_levy_and_quantile(which, demo_hat, synthetic_hat):
    """Seed 000, Figure 1: BestFit much better than WrapAround for Levy and FixedQuantile."""
    hat = demo_hat if which == "demo" else synthetic_hat
    t = _table(hat, ("levy", "levy-wrap", "quantile-fixed", "quantile-fixed-wrap"), seed=11)
    for eps in EPSILONS:
        _beats(t["levy", eps], t["levy-wrap", eps], f"levy at eps={eps}")
        _beats(t["quantile-fixed", eps], t["quantile-fixed-wrap", eps], f"quantile at eps={eps}")


COMPARED = ("baseline", "arrayavg-best", "levy", "quantile-fixed", "quantile-eps")


@pytest.mark.slow
def test_sample_scaling_levy_is_best(demo_hat):
    """Seed 003, Fig. 2a: with m̂_ℓ = 10 m_ℓ (fresh i.i.d. samples) Levy beats all others."""
    hat = syn.projected_gaussian(
        syn.sample_scaled(demo_hat.counts, LAMBDA), mean=PAPER_MU, variance=PAPER_VAR,
        upper=65.0, rng=np.random.default_rng(4),
    )  # fmt: skip
    t = _table(hat, COMPARED, seed=12)
    for eps in EPSILONS:
        for other in COMPARED:
            if other != "levy":
                _beats(t["levy", eps], t[other, eps], f"levy vs {other} at eps={eps}")


@pytest.mark.slow
def test_user_scaling_fixed_quantile_best_array_averaging_second(demo_hat):
    """Seed 003, Fig. 2b: every user repeated 10 times; FixedQuantile best, Array-Averaging
    second, Array-Averaging with m_UB = m_UB^(L) "to maintain uniformity" as the paper did.

    Array-Averaging's lead over ε-DependentQuantile at ε = 0.5 is small (≈ 3 %), so this test
    uses 4 × N_RUNS runs: with N_RUNS the 3-standard-error margin is about as large as the lead.
    """
    hat = syn.projected_gaussian(
        syn.user_scaled(demo_hat.counts, LAMBDA), mean=PAPER_MU, variance=PAPER_VAR,
        upper=65.0, rng=np.random.default_rng(5),
    )  # fmt: skip
    others = ("baseline", "levy", "quantile-fixed", "quantile-eps")
    n_runs = 4 * N_RUNS
    t = _table(hat, others, seed=13, n_runs=n_runs)
    t.update(_table(hat, ("arrayavg-best",), seed=14, m_ub=m_levy(hat.counts), n_runs=n_runs))
    for eps in EPSILONS:
        for other in COMPARED:
            if other != "quantile-fixed":
                _beats(t["quantile-fixed", eps], t[other, eps], f"quantile vs {other} @{eps}")
        for other in ("baseline", "levy", "quantile-eps"):
            _beats(t["arrayavg-best", eps], t[other, eps], f"arrayavg vs {other} @{eps}")


def _seed004_hats():
    u = 65.0
    geometric = syn.uniform(syn.geometric_counts(6), upper=u, rng=np.random.default_rng(6))
    extreme = syn.truncated_gaussian(
        syn.extreme_counts(), mean=u / 2, variance=u / 4, upper=u, rng=np.random.default_rng(7)
    )
    return {"geometric-uniform": geometric, "extreme-gaussian": extreme}


@pytest.mark.slow
@pytest.mark.parametrize("collection", ["geometric-uniform", "extreme-gaussian"])
def test_opt_bounding_beats_akmv_and_baseline_below_two(collection):
    """Seed 004, Figures 2 and 3: the worst-case-optimal bounding has lower average-case error
    than AKMV and the plain Laplace mechanism for ε < 2."""
    hat = _seed004_hats()[collection]
    eps_list = (0.5, 1.0, 1.5, 1.9)
    t = _table(hat, ("opt-bounding", "akmv", "baseline"), seed=15, epsilons=eps_list)
    for eps in eps_list:
        for other in ("akmv", "baseline"):
            _beats(t["opt-bounding", eps], t[other, eps], f"opt-bounding vs {other} @{eps}")


@pytest.mark.parametrize("collection", ["geometric-uniform", "extreme-gaussian"])
@pytest.mark.parametrize("epsilon", [2.0, 3.0, 10.0])
def test_opt_bounding_is_baseline_from_two(collection, epsilon):
    """For ε ≥ 2, ⌈2/ε⌉ = 1 and T_ε = U m*: every [a_ℓ, b_ℓ] = [0, U] and the noise is
    U m*/(N ε), Baseline's. With one seed both release the same values."""
    hat = _seed004_hats()[collection]
    opt = run_mechanism("opt-bounding", hat, epsilon, rng=np.random.default_rng(8), size=1000)
    base = run_mechanism("baseline", hat, epsilon, rng=np.random.default_rng(8), size=1000)
    np.testing.assert_allclose(opt.noise_scale, base.noise_scale, rtol=1e-12)
    np.testing.assert_allclose(opt.noiseless, base.noiseless, rtol=1e-12)
    np.testing.assert_allclose(opt.estimates, base.estimates, rtol=1e-12)
    assert float(opt.threshold[0]) == hat.upper * hat.m_max
