"""The catalogue: one :class:`Experiment` per figure (or checked number) of the papers.

Each entry names the paper by title, the figure, what it plots, the paper's claim in one
sentence, the synthetic setting that stands in for data that is not public, the function in
``core`` that computes it and the check that tests the claim on the numbers.
:func:`run_experiment` computes one entry and checks its claim.
"""

from __future__ import annotations

import functools
import math

from core.errors import HexplorerError
from core.experiments import claims
from core.experiments import compute as cx
from core.experiments.experiment import PAPERS, Experiment, Outcome, data_table, tidy_table
from core.params import check_positive_int

__all__ = [
    "CATALOGUE",
    "PAPERS",
    "Experiment",
    "Outcome",
    "data_table",
    "get_experiment",
    "run_experiment",
    "tidy_table",
]

#: The five BestFit mechanisms the two papers' MAE figures compare ([1] Figs. 2-4, [2] Figs. 1-2):
#: the papers' choice, fixed by the figures (not the registry, which grows).
BESTFIT_FIVE = ("baseline", "arrayavg-best", "levy", "quantile-fixed", "quantile-eps")

ITMS_SETTING = (
    "ITMS-like HAT standing in for the real ITMS bus data (not public): a synthetic counts "
    "vector with exactly the published summary (L = 217 buses, N = 17,166 records, m* = 417, "
    "m_* = 1, median 46) and projected-Gaussian speeds Π[0,65](X), X ~ N(20.66769, 115.135), the "
    "published mean and variance. i.i.d. speeds, unlike the real data."
)


_SCALING = (
    "Synthetic data of the papers' section on scaling: the ITMS-like counts (standing in for "
    "the real, non-public ones) scaled by λ = 10, {how}; fresh i.i.d. projected-Gaussian speeds "
    "Π[0,65](X), X ~ N(20.66769, 115.135) (the published ITMS mean and variance)."
)
_WRAP_WHY = (
    "WrapAround's sensitivity is charged 2U/K here (SPEC: a user can be split over two arrays), "
    "which makes Array-Averaging (WrapAround) about 2x worse than BestFit; the papers' figure "
    "shows the two close, so their WrapAround was charged less."
)
_ITMS_WHY = (
    "The stand-in data is i.i.d.; on the real, non-i.i.d. ITMS data the clipping mechanisms may "
    "sit closer together (or further apart) than here."
)
_BOUND_SETTING = {
    "geometric": (
        "The paper's own synthetic data: the geometric collection (M = 6: 2^i users with "
        "2^(6−i) samples, L = 127) with samples uniform on (0, 65]."
    ),
    "extreme": (
        "The paper's own synthetic data: the extreme-valued collection (one user with 10 samples, "
        "100 with one) with samples N(32.5, 16.25) conditioned on (0, 65] by rejection."
    ),
}
_BOUND_CLAIM = (
    "The worst-case-optimal bounding (opt-bounding) has a lower average-case error than the "
    "Laplace mechanism (Baseline) and AKMV at every ε < 2."
)
_CITY_SETTING = (
    "The built-in demo city (synthetic buses, standing in for the ITMS data of the slides): every "
    "HAT of its busiest day is a grid; counts are public as in the papers."
)

CATALOGUE: tuple[Experiment, ...] = (
    Experiment(
        id="spatio-temporal-fig1",
        paper="spatio-temporal",
        figure="Fig. 1",
        plots="MAE against ε of Array-Averaging, Levy (γ = 0.2) and FixedQuantile, each under "
        "WrapAround and BestFit grouping.",
        claim="For Levy and Quantile BestFit performs much better than WrapAround, while for "
        "Array-Averaging the two grouping strategies perform similarly.",
        setting=ITMS_SETTING,
        compute=functools.partial(
            cx.itms_mae,
            (
                "arrayavg-wrap",
                "arrayavg-best",
                "levy-wrap",
                "levy",
                "quantile-fixed-wrap",
                "quantile-fixed",
            ),
        ),
        check=claims.bestfit_beats_wraparound,
        why_not=_WRAP_WHY,
    ),
    Experiment(
        id="spatio-temporal-fig2",
        paper="spatio-temporal",
        figure="Fig. 2",
        plots="MAE against ε of Baseline, Array-Averaging, Levy, FixedQuantile and "
        "ε-DependentQuantile, all with BestFit.",
        claim="Clipping the samples per user and the values performs much better than Baseline, "
        "with very little difference between the clipping algorithms.",
        setting=ITMS_SETTING,
        compute=functools.partial(cx.itms_mae, BESTFIT_FIVE),
        check=claims.clipping_beats_baseline,
        why_not=_ITMS_WHY,
    ),
    Experiment(
        id="spatio-temporal-fig3",
        paper="spatio-temporal",
        figure="Fig. 3",
        plots="MAE against ε under sample scaling (λ = 10), BestFit.",
        claim="Under sample scaling Baseline performs much worse than the clipping algorithms "
        "and Levy performs best of all.",
        setting=_SCALING.format(how="sample scaling (same 217 users, 10 m_ℓ samples each)"),
        compute=functools.partial(
            cx.scaling_mae,
            "sample",
            BESTFIT_FIVE,
        ),
        check=functools.partial(claims.best_everywhere, best="levy"),
        log_y=True,
    ),
    Experiment(
        id="spatio-temporal-fig4",
        paper="spatio-temporal",
        figure="Fig. 4",
        plots="MAE against ε under user scaling (λ = 10), BestFit, m_UB^(L) for Array-Averaging.",
        claim="Under user scaling FixedQuantile performs best and Array-Averaging second best.",
        setting=_SCALING.format(how="user scaling (every user repeated 10 times, L = 2170)"),
        compute=functools.partial(
            cx.scaling_mae,
            "user",
            BESTFIT_FIVE,
        ),
        check=functools.partial(
            claims.ranked_first_second, first="quantile-fixed", second="arrayavg-best"
        ),
        log_y=True,
    ),
    Experiment(
        id="spatio-temporal-fig5",
        paper="spatio-temporal",
        figure="Fig. 5",
        plots="m^(ε), the smallest minimiser of the worst-case error E(m), against ε.",
        claim="The minimiser m^(ε) is a staircase function of ε and is non-decreasing in ε.",
        setting=ITMS_SETTING.split(" and projected")[0] + " (counts only).",
        compute=cx.staircase_points,
        check=claims.staircase_nondecreasing,
        y_label="m^(ε)",
        y_column="m_opt",
        log_x=True,
        default_runs=1,
        monte_carlo=False,
    ),
    Experiment(
        id="real-world-fig1",
        paper="real-world",
        figure="Fig. 1",
        plots="MAE against ε on the ITMS data: Baseline and the clipping algorithms (BestFit).",
        claim="Clipping performs much better than the naïve Baseline, with very little "
        "difference between the other algorithms.",
        setting=ITMS_SETTING,
        compute=functools.partial(cx.itms_mae, BESTFIT_FIVE),
        check=claims.clipping_beats_baseline,
        why_not=_ITMS_WHY,
    ),
    Experiment(
        id="real-world-fig2a",
        paper="real-world",
        figure="Fig. 2a",
        plots="MAE against ε under sample scaling (λ = 10).",
        claim="Under sample scaling Baseline performs worse than the other algorithms and Levy "
        "(γ = 0.2) outperforms all of them.",
        setting=_SCALING.format(how="sample scaling (same 217 users, 10 m_ℓ samples each)"),
        compute=functools.partial(
            cx.scaling_mae,
            "sample",
            BESTFIT_FIVE,
        ),
        check=functools.partial(claims.best_everywhere, best="levy"),
        log_y=True,
    ),
    Experiment(
        id="real-world-fig2b",
        paper="real-world",
        figure="Fig. 2b",
        plots="MAE against ε under user scaling (λ = 10), m_UB^(L) for Array-Averaging too.",
        claim="Under user scaling FixedQuantile outperforms all the other algorithms and "
        "Array-Averaging performs second best.",
        setting=_SCALING.format(how="user scaling (every user repeated 10 times, L = 2170)"),
        compute=functools.partial(
            cx.scaling_mae,
            "user",
            BESTFIT_FIVE,
        ),
        check=functools.partial(
            claims.ranked_first_second, first="quantile-fixed", second="arrayavg-best"
        ),
        log_y=True,
    ),
    Experiment(
        id="real-world-worstcase",
        paper="real-world",
        figure="E(m), eq. (4)",
        plots="Worst-case error E(m) = E1(m) + E2(m) of Array-Averaging against m, for "
        "ε = 0.5, 1, 2.",
        claim="The smallest minimiser of E(m) over [m_*, m*] is one of the users' counts, so a "
        "search over the counts finds m^(ε).",
        setting=ITMS_SETTING.split(" and projected")[0] + " (counts only).",
        compute=cx.worstcase_curves,
        check=claims.minimiser_is_a_count,
        x_label="m (samples per user kept)",
        y_label="worst-case error",
        x_column="m",
        y_column="worst_case_error",
        log_y=True,
        default_runs=1,
        monte_carlo=False,
    ),
    Experiment(
        id="real-world-staircase",
        paper="real-world",
        figure="m^(ε) staircase",
        plots="m^(ε), the m_UB of OPT-Array-Averaging, against ε.",
        claim="m^(ε) is a non-decreasing staircase in ε.",
        setting=ITMS_SETTING.split(" and projected")[0] + " (counts only).",
        compute=cx.staircase_points,
        check=claims.staircase_nondecreasing,
        y_label="m^(ε)",
        y_column="m_opt",
        log_x=True,
        default_runs=1,
        monte_carlo=False,
    ),
    Experiment(
        id="real-world-baseline",
        paper="real-world",
        figure="Baseline's error (number)",
        plots="Baseline's worst-case error U m*/(N ε) against ε: the published numbers, core's "
        "formula on the counts, and the Monte-Carlo MAE.",
        claim="Baseline's worst-case error on the ITMS dataset is 65·417/17,166/ε "
        "(about 1.579/ε km/h).",
        setting=ITMS_SETTING,
        compute=cx.baseline_number,
        check=claims.baseline_matches_published,
        y_label="error",
        y_column="error",
    ),
    Experiment(
        id="bounding-fig2",
        paper="bounding",
        figure="Fig. 2",
        plots="Average-case error against ε of the Laplace mechanism (Baseline), AKMV and "
        "opt-bounding.",
        claim=_BOUND_CLAIM,
        setting=_BOUND_SETTING["geometric"],
        compute=functools.partial(cx.bounding_mae, "geometric"),
        check=claims.opt_bounding_best,
        supports_fresh=True,
    ),
    Experiment(
        id="bounding-fig3",
        paper="bounding",
        figure="Fig. 3",
        plots="Average-case error against ε (log scale) of the Laplace mechanism (Baseline), "
        "AKMV and opt-bounding.",
        claim=_BOUND_CLAIM,
        setting=_BOUND_SETTING["extreme"],
        compute=functools.partial(cx.bounding_mae, "extreme"),
        check=claims.opt_bounding_best,
        log_y=True,
        supports_fresh=True,
    ),
    Experiment(
        id="slides-privacy-loss",
        paper="slides",
        figure="Privacy loss under composition",
        plots="Privacy loss against ε: basic composition G ε, ε max_ℓ G_ℓ (by users), and K ε "
        "after CHOP-USER.",
        claim="CHOP-USER lowers the privacy loss under composition below ε·max_ℓ G_ℓ, with clear "
        "gains for small (high-privacy) ε.",
        setting=_CITY_SETTING,
        compute=cx.citywide,
        check=claims.chop_lowers_loss,
        panels=("privacy loss",),
        y_label="privacy loss / error",
        y_column="value",
        log_x=True,
        log_y=True,
        default_runs=1,
        monte_carlo=False,
    ),
    Experiment(
        id="slides-grid-errors",
        paper="multi-dimensional",
        figure="Per-grid worst-case errors",
        plots="Per-grid worst-case errors of the mean and the variance (largest and median over "
        "grids) and max_g E_g against ε, before and after CHOP-USER.",
        claim="Suppression by CHOP-USER does not raise the worst estimation error among the "
        "grids: max_g E_g after suppression stays at most E_thresh.",
        setting=_CITY_SETTING,
        compute=cx.citywide,
        check=claims.chop_keeps_error,
        panels=("mean error", "variance error", "largest E_g"),
        y_label="privacy loss / error",
        y_column="value",
        log_x=True,
        log_y=True,
        default_runs=1,
        monte_carlo=False,
    ),
)

_BY_ID = {e.id: e for e in CATALOGUE}


assert len(_BY_ID) == len(CATALOGUE), "experiment ids must be unique"


def get_experiment(experiment_id: str) -> Experiment:
    """The catalogue entry with this id; raises with the valid ids listed."""
    try:
        return _BY_ID[str(experiment_id).strip().lower()]
    except KeyError:
        raise HexplorerError(
            f"Unknown experiment {experiment_id!r}. Known: {', '.join(_BY_ID)}."
        ) from None


def _compute_key(fn) -> tuple:
    if isinstance(fn, functools.partial):
        return (fn.func, fn.args, tuple(sorted(fn.keywords.items())))
    return (fn,)


def run_experiment(
    experiment: Experiment | str,
    *,
    runs: int | None = None,
    seed: int = 0,
    fresh: bool = False,
    cache: dict | None = None,
) -> Outcome:
    """Compute one experiment's table and check its claim.

    Parameters
    ----------
    experiment : Experiment or id
    runs : int, optional
        Monte-Carlo runs per point (default: the experiment's ``default_runs``).
    seed : int
        Seed of ``np.random.default_rng``.
    fresh : bool
        A new dataset on every run (bounding figures only).
    cache : dict, optional
        Tables already computed, keyed by (computation, runs, seed, fresh): experiments that
        plot the same computation (one figure in two papers) share it within a run.
    """
    exp = experiment if isinstance(experiment, Experiment) else get_experiment(experiment)
    n = exp.default_runs if runs is None else check_positive_int("runs", runs)
    if not exp.monte_carlo:
        n = 1
    if fresh and not exp.supports_fresh:
        raise HexplorerError(
            f"{exp.id} has one fixed dataset; fresh data per run is for the bounding figures."
        )
    try:
        seed_int = int(seed)
    except (TypeError, ValueError):
        raise HexplorerError(f"The seed must be an integer >= 0. Got {seed!r} instead.") from None
    if seed_int != seed or seed_int < 0:
        raise HexplorerError(f"The seed must be an integer >= 0. Got {seed!r} instead.")
    key = (_compute_key(exp.compute), n, seed_int, bool(fresh))
    if cache is not None and key in cache:
        table = cache[key]
    else:
        table = exp.compute(runs=n, seed=seed_int, fresh=fresh)
        if cache is not None:
            cache[key] = table
    if exp.panels is not None:
        table = table[table["panel"].isin(exp.panels)].reset_index(drop=True)
    holds, evidence = exp.check(table)
    if not isinstance(holds, bool) or math.isnan(float(holds)):
        raise HexplorerError(f"{exp.id}: its claim check returned {holds!r}, not a bool.")
    return Outcome(
        experiment=exp,
        table=table,
        holds=holds,
        evidence=evidence,
        runs=n,
        seed=seed_int,
        fresh=fresh,
    )
