"""The computations behind the catalogue's figures: each returns one tidy table.

Every function takes ``runs`` (Monte-Carlo runs per point; ignored by the analytic ones),
``seed`` (the one source of randomness, ``np.random.default_rng(seed)``: data first, then the
mechanisms) and ``fresh`` (the protocol of "Bounding User Contributions for User-Level
Differentially Private Mean Estimation": a new dataset on every run, instead of one fixed
dataset) and returns a DataFrame with :data:`COLUMNS`: one row per plotted point, ``panel``
(a sub-plot), ``series`` (a curve: a mechanism name where it is one), ``x``, ``y`` and ``y_se``
(the Monte-Carlo standard error, NaN for exact values). The MAE is the papers' error measure
(SPEC section 3, Evaluation); everything mathematical lives in the modules called here.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from core import synthetic
from core import worstcase as wc
from core.errors import HexplorerError
from core.evaluation import monte_carlo
from core.experiments.itms import ITMS_SUMMARY, itms_like_counts, itms_like_hat
from core.hat import HatData
from core.mechanisms import run_mechanism
from core.params import log_grid

COLUMNS = ("panel", "series", "x", "y", "y_se")

#: ε from 0.5 to 2, as in the ITMS papers' figures.
EPSILONS_ITMS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
#: ε for the bounding paper's figures (its claim is about ε < 2; at ε ≥ 2 opt-bounding is Baseline).
EPSILONS_BOUNDING = (0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5)
#: ε for the worst-case curves and the many-grid experiments.
EPSILONS_WORSTCASE = (0.5, 1.0, 2.0)
EPSILONS_CITY = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
#: λ of the scaling experiments.
LAMBDA = 10


def _tidy(rows: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["y_se"] = table["y_se"].astype(np.float64)
    return table


def _mae_rows(table: pd.DataFrame, panel: str = "") -> list[dict]:
    return [
        {"panel": panel, "series": r.mechanism, "x": r.epsilon, "y": r.mae, "y_se": r.mae_se}
        for r in table.itertuples()
    ]


# --------------------------------------------------------------------------------------------
# The ITMS-like HAT and the scaling experiments ([1], 001, 003)


def itms_mae(
    mechanisms: tuple[str, ...], *, runs: int, seed: int, fresh: bool = False
) -> pd.DataFrame:
    """MAE against ε on the ITMS-like HAT, every mechanism at its own default m_UB.

    As in the papers: Array-Averaging at the median count, Levy and the quantile mechanisms at
    m_UB^(L) (SPEC section 3 table). One dataset (the real data is one fixed dataset); ``fresh``
    is not supported.
    """
    _no_fresh(fresh)
    rng = np.random.default_rng(seed)
    hat = itms_like_hat(rng)
    table = monte_carlo(hat, EPSILONS_ITMS, list(mechanisms), n_runs=runs, rng=rng)
    return _tidy(_mae_rows(table))


def scaling_mae(
    kind: str, mechanisms: tuple[str, ...], *, runs: int, seed: int, fresh: bool = False
) -> pd.DataFrame:
    """MAE against ε on projected-Gaussian data scaled from the ITMS-like HAT (λ = 10).

    ``kind`` "sample": same users, λ m_ℓ samples each; "user": every user repeated λ times
    ("User-Level Differentially Private Mean Estimation for Real-World
    Datasets", section V-B; SPEC section 6). Samples are ``Π[0,U](X)``, X ~ N(μ, σ²) with the
    published ITMS μ and σ². Under user scaling every mechanism uses m_UB = m_UB^(L) of the
    scaled counts ("for Array-Averaging as well, to maintain uniformity"); under sample scaling
    each uses its own default (Array-Averaging the median count).
    """
    _no_fresh(fresh)
    rng = np.random.default_rng(seed)
    base = itms_like_counts()
    if kind == "sample":
        counts = synthetic.sample_scaled(base, LAMBDA)
    elif kind == "user":
        counts = synthetic.user_scaled(base, LAMBDA)
    else:
        raise HexplorerError(f"kind must be 'sample' or 'user'. Got {kind!r} instead.")
    hat = synthetic.projected_gaussian(
        counts,
        mean=float(ITMS_SUMMARY["mean"]),
        variance=float(ITMS_SUMMARY["variance"]),
        upper=float(ITMS_SUMMARY["upper"]),
        rng=rng,
        hat=f"itms-like, {kind} scaling x{LAMBDA}",
    )
    m_ub = wc.m_levy(hat.counts) if kind == "user" else None
    table = monte_carlo(hat, EPSILONS_ITMS, list(mechanisms), n_runs=runs, rng=rng, m_ub=m_ub)
    return _tidy(_mae_rows(table))


def _no_fresh(fresh: bool) -> None:
    if fresh:
        raise HexplorerError(
            "This experiment has one fixed dataset; fresh data per run applies to the "
            "bounding paper's figures only."
        )


# --------------------------------------------------------------------------------------------
# Worst-case analysis on the ITMS-like HAT ([1] and 003)


def worstcase_curves(*, runs: int, seed: int, fresh: bool = False) -> pd.DataFrame:
    """E(m) = E1(m) + E2(m) for every integer m in [m_*, m*] at a few ε (SPEC section 4).

    Panels "ε = …"; series "E(m)", "clipping E1(m)", "noise E2(m)". Exact, so runs, seed and
    fresh are ignored.
    """
    counts = itms_like_counts()
    upper = float(ITMS_SUMMARY["upper"])
    m = np.arange(int(counts.min()), int(counts.max()) + 1)
    rows: list[dict] = []
    for eps in EPSILONS_WORSTCASE:
        parts = wc.worst_case_error(counts, upper, m, eps)
        panel = f"ε = {eps:g}"
        for series, values in (
            ("E(m)", parts.total),
            ("clipping E1(m)", parts.clipping),
            ("noise E2(m)", parts.noise),
        ):
            rows += [
                {"panel": panel, "series": series, "x": int(x), "y": float(y), "y_se": np.nan}
                for x, y in zip(m.tolist(), np.asarray(values).tolist(), strict=True)
            ]
    return _tidy(rows)


def staircase_points(*, runs: int, seed: int, fresh: bool = False) -> pd.DataFrame:
    """m^(ε) on a fine ε grid (0.01 to 5, log-spaced) and at the staircase's breakpoints.

    Series "m^(ε)" (the exact staircase of :func:`core.worstcase.staircase`, two points per
    step) and "m_opt at grid ε" (:func:`core.worstcase.m_opt` evaluated independently).
    """
    counts = itms_like_counts()
    upper = float(ITMS_SUMMARY["upper"])
    rows: list[dict] = []
    hi_eps = 5.0
    for step in wc.staircase(counts, upper):
        lo = max(step.epsilon_from, 0.01)
        hi = min(step.epsilon_to, hi_eps)
        if hi <= lo:
            continue
        for x in (lo, hi):
            rows.append({"panel": "", "series": "m^(ε)", "x": x, "y": step.m, "y_se": np.nan})
    for eps in log_grid(0.01, hi_eps, 60):
        rows.append(
            {
                "panel": "",
                "series": "m_opt at grid ε",
                "x": eps,
                "y": wc.m_opt(counts, upper, eps),
                "y_se": np.nan,
            }
        )
    return _tidy(rows)


def baseline_number(*, runs: int, seed: int, fresh: bool = False) -> pd.DataFrame:
    """Baseline's worst-case error U m*/(N ε) on the ITMS-like HAT, three ways, against ε.

    Series "published 65·417/17166/ε" (the formula with the published numbers),
    "core.worstcase.baseline_error" (from the counts) and "Monte-Carlo MAE" (Baseline has no
    bias, so its MAE is the Laplace scale b = U m*/(N ε)).
    """
    _no_fresh(fresh)
    rng = np.random.default_rng(seed)
    hat = itms_like_hat(rng)
    s = ITMS_SUMMARY
    rows: list[dict] = []
    table = monte_carlo(hat, EPSILONS_ITMS, ["baseline"], n_runs=runs, rng=rng)
    for r in table.itertuples():
        eps = float(r.epsilon)
        published = float(s["upper"]) * int(s["m_max"]) / int(s["records"]) / eps
        rows += [
            {
                "panel": "",
                "series": "published 65·417/17166/ε",
                "x": eps,
                "y": published,
                "y_se": np.nan,
            },
            {
                "panel": "",
                "series": "core.worstcase.baseline_error",
                "x": eps,
                "y": wc.baseline_error(hat.counts, hat.upper, eps),
                "y_se": np.nan,
            },
            {"panel": "", "series": "Monte-Carlo MAE", "x": eps, "y": r.mae, "y_se": r.mae_se},
        ]
    return _tidy(rows)


# --------------------------------------------------------------------------------------------
# "Bounding User Contributions for User-Level Differentially Private Mean Estimation"

BOUNDING_MECHANISMS = ("baseline", "akmv", "opt-bounding")


def _bounding_data(collection: str, counts: np.ndarray, rng: np.random.Generator) -> HatData:
    upper = 65.0
    if collection == "geometric":
        return synthetic.uniform(counts, upper=upper, rng=rng, hat="geometric, uniform")
    return synthetic.truncated_gaussian(
        counts,
        mean=upper / 2,
        variance=upper / 4,
        upper=upper,
        rng=rng,
        hat="extreme-valued, Gaussian",
    )


def bounding_mae(collection: str, *, runs: int, seed: int, fresh: bool = False) -> pd.DataFrame:
    """Average-case error of Baseline (the Laplace mechanism), AKMV and opt-bounding against ε.

    ``collection`` "geometric": M = 6 (L = 127) with uniform samples on (0, U]; "extreme": one
    user with 10 samples and 100 with one, samples N(U/2, U/4) conditioned on (0, U] by rejection
    (the bounding paper, section V). ``fresh=False``: one dataset, ``runs`` mechanism runs on it (the MAE
    of :func:`core.evaluation.monte_carlo`). ``fresh=True``: the paper's protocol, a new dataset
    on every run; the error is then |M(D_i) − f(D_i)| averaged over the runs i.
    """
    if collection == "geometric":
        counts = synthetic.geometric_counts(6)
    elif collection == "extreme":
        counts = synthetic.extreme_counts(101, 10)
    else:
        raise HexplorerError(
            f"collection must be 'geometric' or 'extreme'. Got {collection!r} instead."
        )
    rng = np.random.default_rng(seed)
    if not fresh:
        hat = _bounding_data(collection, counts, rng)
        table = monte_carlo(hat, EPSILONS_BOUNDING, list(BOUNDING_MECHANISMS), n_runs=runs, rng=rng)
        return _tidy(_mae_rows(table))
    errors = np.empty((len(BOUNDING_MECHANISMS), len(EPSILONS_BOUNDING), runs))
    for i in range(runs):
        hat = _bounding_data(collection, counts, rng)
        for a, name in enumerate(BOUNDING_MECHANISMS):
            for b, eps in enumerate(EPSILONS_BOUNDING):
                d = run_mechanism(name, hat, eps, rng=rng, size=1)
                errors[a, b, i] = abs(float(d.estimates[0]) - hat.true_mean)
    rows: list[dict] = []
    for a, name in enumerate(BOUNDING_MECHANISMS):
        for b, eps in enumerate(EPSILONS_BOUNDING):
            e = errors[a, b]
            se = float(e.std(ddof=1) / np.sqrt(runs)) if runs > 1 else np.nan
            rows.append({"panel": "", "series": name, "x": eps, "y": float(e.mean()), "y_se": se})
    return _tidy(rows)


# --------------------------------------------------------------------------------------------
# Many grids on the demo city ("... on Multi-Dimensional IoT Datasets" and the seminar slides)


@functools.lru_cache(maxsize=1)
def busiest_day_grids():
    """The grids (HATs) of the demo city's busiest day (most records), as a GridSet, and the day.

    Slots are the demo's absolute hours ``YYYY-MM-DDTHH:MM``; every HAT of that day is a grid.
    """
    from core.citywide.gridset import grid_set
    from core.data import ColumnMap, PrepConfig, load_demo, prepare

    summaries = prepare(load_demo(), ColumnMap(), PrepConfig()).summaries
    days = summaries["slot"].astype(str).str[:10]
    per_day = summaries.groupby(days, sort=True)["m"].sum()
    day = str(per_day.sort_values(ascending=False, kind="stable").index[0])
    return grid_set(summaries, day=day), day


def citywide(*, runs: int, seed: int, fresh: bool = False) -> pd.DataFrame:
    """Per-grid worst-case errors and the privacy loss against ε on the demo's busiest day.

    Panels: "privacy loss" (series "G ε" basic composition, "ε max G_ℓ" by users, "K ε" after
    CHOP-USER), "mean error" and "variance error" (per-grid ``E_μ + 2Δ_μ/ε`` and
    ``E_Var + 2Δ_Var/ε``: largest over grids, before and after CHOP-USER), "largest E_g" (before
    = E_thresh, after). Exact (counts only), so runs, seed and fresh are ignored (SPEC §5).
    """
    from core.citywide.accounting import privacy_loss
    from core.citywide.chop import chop_user
    from core.citywide.grids import grid_errors

    grids, _day = busiest_day_grids()
    upper = 65.0
    rows: list[dict] = []

    def add(panel: str, series: str, x: float, y: float) -> None:
        rows.append({"panel": panel, "series": series, "x": x, "y": float(y), "y_se": np.nan})

    for eps in EPSILONS_CITY:
        chop = chop_user(grids, eps, upper=upper)
        loss = privacy_loss(grids, eps, chop)
        add("privacy loss", "G ε (basic)", eps, loss.basic)
        add("privacy loss", "ε max G_ℓ (by users)", eps, loss.by_users)
        add("privacy loss", "K ε (CHOP-USER)", eps, chop.k_final * eps)
        for when, mask in (("before", None), ("after", chop.retained)):
            err = grid_errors(grids, eps, upper=upper, retained=mask)
            mean_err = err.bias_mean + 2 * err.delta_mean / eps
            var_err = err.bias_var + 2 * err.delta_var / eps
            add("mean error", f"largest, {when} CHOP-USER", eps, mean_err.max())
            add("mean error", f"median, {when} CHOP-USER", eps, np.median(mean_err))
            add("variance error", f"largest, {when} CHOP-USER", eps, var_err.max())
            add("variance error", f"median, {when} CHOP-USER", eps, np.median(var_err))
            add("largest E_g", f"{when} CHOP-USER", eps, err.total.max())
    return _tidy(rows)
