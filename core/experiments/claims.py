"""Claim checks: each reads an experiment's tidy table and returns ``(holds, evidence)``.

A check tests the paper's sentence on the numbers, point by point (every ε of the figure), and
its evidence names the numbers that decide it, so a reader can see *why* it holds or not.
Comparisons are of the Monte-Carlo estimates themselves, as the papers read their plots; the
evidence gives the closest margin so a near-tie is visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.errors import HexplorerError
from core.experiments.itms import ITMS_SUMMARY

Check = tuple[bool, str]


def _pivot(data: pd.DataFrame, panel: str = "") -> pd.DataFrame:
    """x down, series across, y in the cells (one panel)."""
    part = data[data["panel"] == panel]
    if part.empty:
        raise HexplorerError(f"The experiment's table has no panel {panel!r}.")
    return part.pivot_table(index="x", columns="series", values="y", aggfunc="first", sort=True)


def _need(table: pd.DataFrame, names: Sequence[str]) -> None:
    missing = [n for n in names if n not in table.columns]
    if missing:
        raise HexplorerError(f"The experiment's table has no series {missing[0]!r}.")


def _fmt(x: float) -> str:
    return f"{x:g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3g}"


def below_everywhere(
    data: pd.DataFrame,
    better: str,
    worse: Sequence[str],
    *,
    panel: str = "",
    x_below: float = math.inf,
) -> Check:
    """``better``'s y is strictly below each of ``worse`` at every x < ``x_below``."""
    t = _pivot(data, panel)
    _need(t, [better, *worse])
    t = t[t.index < x_below]
    failures = []
    closest = math.inf
    for name in worse:
        ratio = t[better] / t[name]
        bad = t.index[~(t[better] < t[name])].tolist()
        if bad:
            failures.append(f"{better} ≥ {name} at ε = {', '.join(_fmt(x) for x in bad)}")
        closest = min(closest, float(ratio.max()))
    if failures:
        return False, "; ".join(failures) + "."
    return True, (
        f"{better} is below {', '.join(worse)} at all {len(t)} ε"
        + ("" if math.isinf(x_below) else f" < {_fmt(x_below)}")
        + f" (largest ratio {better}/other = {closest:.3f})."
    )


def best_everywhere(data: pd.DataFrame, best: str, panel: str = "") -> Check:
    """``best`` has the smallest y of all series at every x."""
    t = _pivot(data, panel)
    others = [c for c in t.columns if c != best]
    return below_everywhere(data, best, others, panel=panel)


def ranked_first_second(data: pd.DataFrame, first: str, second: str, panel: str = "") -> Check:
    """``first`` is best and ``second`` second-best at every x."""
    holds1, ev1 = best_everywhere(data, first, panel)
    t = _pivot(data, panel)
    others = [c for c in t.columns if c not in (first, second)]
    holds2, ev2 = below_everywhere(data, second, others, panel=panel)
    return holds1 and holds2, f"First: {ev1} Second: {ev2}"


def bestfit_beats_wraparound(data: pd.DataFrame) -> Check:
    """Levy and FixedQuantile: BestFit below WrapAround at every ε; Array-Averaging: the two
    within 25 % of each other at every ε ("similar")."""
    h1, e1 = below_everywhere(data, "levy", ["levy-wrap"])
    h2, e2 = below_everywhere(data, "quantile-fixed", ["quantile-fixed-wrap"])
    t = _pivot(data)
    _need(t, ["arrayavg-wrap", "arrayavg-best"])
    ratio = t["arrayavg-wrap"] / t["arrayavg-best"]
    h3 = bool(np.all((ratio <= 1.25) & (ratio >= 0.8)))
    e3 = (
        f"Array-Averaging WrapAround/BestFit MAE ratio {ratio.min():.2f} to {ratio.max():.2f} "
        f"({'within' if h3 else 'not within'} the 0.8 to 1.25 taken as 'similar')."
    )
    return h1 and h2 and h3, f"{e1} {e2} {e3}"


def clipping_beats_baseline(data: pd.DataFrame) -> Check:
    """Every other mechanism is below Baseline at every ε; the clipping ones are within a
    factor 2 of each other ("very little difference")."""
    t = _pivot(data)
    _need(t, ["baseline"])
    others = [c for c in t.columns if c != "baseline"]
    worst = t[others].max(axis=1)
    h1 = bool(np.all(worst < t["baseline"]))
    spread = t[others].max(axis=1) / t[others].min(axis=1)
    h2 = bool(np.all(spread <= 2.0))
    e1 = (
        f"largest clipping MAE / Baseline's ≤ {float((worst / t['baseline']).max()):.3f} "
        f"at every ε ({'below' if h1 else 'NOT below'} Baseline everywhere)."
    )
    e2 = (
        f"spread among the clipping mechanisms (max/min MAE) up to {float(spread.max()):.2f} "
        f"({'within' if h2 else 'more than'} the factor 2 taken as 'very little difference')."
    )
    return h1 and h2, f"{e1} {e2}"


def opt_bounding_best(data: pd.DataFrame) -> Check:
    """opt-bounding below Baseline (Laplace) and AKMV at every ε < 2 (SPEC section 6)."""
    holds, evidence = below_everywhere(data, "opt-bounding", ["baseline", "akmv"], x_below=2.0)
    t = _pivot(data)
    ratio = t["akmv"] / t["baseline"]
    return holds, (
        f"{evidence} AKMV/Laplace MAE ratio {ratio.min():.2f} to {ratio.max():.2f} "
        "(the paper: AKMV 'a little worse' than Laplace)."
    )


def staircase_nondecreasing(data: pd.DataFrame) -> Check:
    """m^(ε) is a non-decreasing step function: the staircase's m rise with ε, and m_opt at an
    independent ε grid is non-decreasing and takes only the staircase's values."""
    t = data[data["panel"] == ""]
    stairs = t[t["series"] == "m^(ε)"].sort_values("x", kind="stable")
    grid = t[t["series"] == "m_opt at grid ε"].sort_values("x", kind="stable")
    if stairs.empty or grid.empty:
        raise HexplorerError("The staircase table needs the series 'm^(ε)' and 'm_opt at grid ε'.")
    steps = stairs["y"].to_numpy()
    values = grid["y"].to_numpy()
    h1 = bool(np.all(np.diff(steps) >= 0))
    h2 = bool(np.all(np.diff(values) >= 0))
    h3 = bool(np.isin(values, steps).all())
    distinct = np.unique(steps).size
    evidence = (
        f"{distinct} steps, m from {int(steps.min())} to {int(steps.max())}; "
        f"staircase {'non-decreasing' if h1 else 'DECREASES somewhere'}; m_opt at "
        f"{values.size} ε {'non-decreasing' if h2 else 'DECREASES somewhere'}"
        f"{'' if h3 else ' and takes values off the staircase'}."
    )
    return h1 and h2 and h3 and distinct > 1, evidence


def minimiser_is_a_count(data: pd.DataFrame) -> Check:
    """At each ε, the smallest minimiser of E(m) over every integer m of [m_*, m*] is one of
    the users' counts ("Mean Estimation with User-Level Privacy for Spatio-Temporal IoT
    Datasets", Lemma V.2) and equals core.worstcase.m_opt."""
    from core import worstcase as wc
    from core.experiments.itms import itms_like_counts

    counts = itms_like_counts()
    parts = []
    holds = True
    for panel in sorted(data["panel"].unique()):
        t = data[(data["panel"] == panel) & (data["series"] == "E(m)")].sort_values("x")
        if t.empty:
            raise HexplorerError(f"Panel {panel!r} has no series 'E(m)'.")
        eps = float(panel.split("=")[1])
        m_min = int(t["x"].to_numpy()[int(np.argmin(t["y"].to_numpy()))])
        m_core = wc.m_opt(counts, float(ITMS_SUMMARY["upper"]), eps)
        ok = m_min in set(counts.tolist()) and m_min == m_core
        holds &= ok
        parts.append(f"ε = {eps:g}: argmin E = {m_min} (m_opt {m_core}, a count: {ok})")
    return holds, "; ".join(parts) + "."


def baseline_matches_published(data: pd.DataFrame) -> Check:
    """core's Baseline error equals 65·417/17166/ε (rel. 1e-12) and the Monte-Carlo MAE is
    within 4 standard errors of it at every ε."""
    t = data[data["panel"] == ""]
    pub = t[t["series"] == "published 65·417/17166/ε"].set_index("x")["y"]
    core_v = t[t["series"] == "core.worstcase.baseline_error"].set_index("x")["y"]
    mc = t[t["series"] == "Monte-Carlo MAE"].set_index("x")
    if pub.empty or core_v.empty or mc.empty:
        raise HexplorerError("The Baseline table needs its three series.")
    exact = bool(np.allclose(core_v, pub, rtol=1e-12, atol=0))
    z = (mc["y"] - pub) / mc["y_se"]
    close = bool(np.all(np.abs(z) <= 4))
    at1 = float(pub.loc[1.0]) if 1.0 in pub.index else float("nan")
    return exact and close, (
        f"published U m*/(N ε) = {at1:.6f} at ε = 1; core.worstcase.baseline_error "
        f"{'equals it' if exact else 'DIFFERS'} at every ε; Monte-Carlo MAE within "
        f"{float(np.abs(z).max()):.2f} standard errors ({'≤' if close else '>'} 4)."
    )


def chop_lowers_loss(data: pd.DataFrame) -> Check:
    """K ≤ max_ℓ G_ℓ at every ε and K < max_ℓ G_ℓ at the smallest ε (gains for small ε)."""
    t = _pivot(data, "privacy loss")
    by_users, after = t["ε max G_ℓ (by users)"], t["K ε (CHOP-USER)"]
    h1 = bool(np.all(after <= by_users + 1e-12))
    eps0 = float(t.index.min())
    h2 = bool(after.loc[eps0] < by_users.loc[eps0])
    k = (after / after.index.to_numpy()).round().astype(int)
    g = int(round(float(by_users.iloc[0] / by_users.index[0])))
    return h1 and h2, (
        f"max G_ℓ = {g}; K after CHOP-USER = "
        + ", ".join(f"{kk} at ε = {_fmt(e)}" for e, kk in k.items())
        + f" ({'never above' if h1 else 'ABOVE'} max G_ℓ; "
        + f"{'below' if h2 else 'not below'} it at ε = {_fmt(eps0)})."
    )


def chop_keeps_error(data: pd.DataFrame) -> Check:
    """After CHOP-USER the largest per-grid error max_g E_g is ≤ E_thresh at every ε."""
    t = _pivot(data, "largest E_g")
    before, after = t["before CHOP-USER"], t["after CHOP-USER"]
    ok = after <= before * (1 + 1e-12)
    return bool(ok.all()), (
        f"max_g E_g after / before CHOP-USER: {float((after / before).min()):.4f} to "
        f"{float((after / before).max()):.4f} over {len(t)} ε "
        f"({'never above' if ok.all() else 'ABOVE'} E_thresh)."
    )
