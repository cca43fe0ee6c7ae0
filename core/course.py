"""The guided course's questions and their exact answers, computed from the data in use.

Six steps build on each other (the dashboard's Course page asks them, one live control each):

1. ε as odds: the largest ε at which one release changes an observer's odds by at most ×k.
2. Neighbouring datasets: which user's change leaks most under *record*-level noise
   (:func:`core.lessons.record_vs_user`, the loss m_ℓ |Δ| ε / U of each user's farthest neighbour).
3. Clipping bias vs noise: the m_UB with the smallest worst case E(m) at a fixed ε
   (:func:`core.worstcase.worst_case_error`, SPEC section 4).
4. Where releases land: the smallest ε at which a share (90 %) of simulated releases of
   OPT-Array-Averaging, clamped into [0, U], land within ±X of the true mean
   (:func:`core.mechanisms.run_mechanism`, :func:`core.evaluation.error_summary`).
5. The optimal m^(ε) and its staircase: the smallest ε whose worst case E(m^(ε)) is ≤ a target
   (:func:`core.plan.epsilon_for_error`).
6. Many hexagons: the largest ε per hexagon whose user-level composition ε · max_ℓ G_ℓ stays
   within a budget ([2], Theorem II.3; :func:`core.citywide.accounting.privacy_loss`), and what
   CHOP-USER makes of it (:func:`core.citywide.chop.chop_user`).

The learner moves a control over :data:`EPSILON_GRID` (the ε steps), a user picker (step 2) or
the m_UB slider (step 3); :meth:`Answer.accepts` checks the value with a tolerance: one grid
step, or 5 % of the answer when that is more (ε); 1 % of the smallest worst case (m_UB, so a
near-tie on a flat curve counts). Only numbers live here; the wording is the dashboard's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from core import lessons, worstcase
from core.citywide.accounting import privacy_loss
from core.citywide.chop import chop_user
from core.citywide.gridset import GridSet
from core.errors import HexplorerError
from core.evaluation import error_summary
from core.hat import HatData
from core.mechanisms import mechanism_rng, run_mechanism
from core.params import check_epsilon, check_positive_int, check_upper
from core.plan import epsilon_for_error
from core.postprocess import clamp_mean

__all__ = [
    "EPSILON_GRID",
    "STEPS",
    "Answer",
    "Course",
    "best_m_ub",
    "composition",
    "course",
    "grid_tolerance",
    "leakiest_user",
    "nice_up",
    "odds",
    "release_share",
    "share_within",
    "worst_case_target",
]

STEPS: tuple[str, ...] = (
    "ε as odds",
    "Neighbouring datasets: one record or one user",
    "Clipping bias vs noise: m_UB",
    "Where releases land",
    "The optimal m^(ε) and its staircase",
    "Many hexagons: composition and CHOP-USER",
)
"""The six steps' titles, in order (step numbers start at 1)."""

EPSILON_GRID: tuple[float, ...] = tuple(
    [round(0.01 * i, 2) for i in range(1, 100)] + [round(1.0 + 0.05 * i, 2) for i in range(81)]
)
"""The ε stops of the course's ε control: 0.01 … 0.99 by 0.01, then 1 … 5 by 0.05."""

SHARE_MECHANISM = "opt-arrayavg"
SHARE_RUNS = 2000
M_UB_RTOL = 0.01
EPSILON_RTOL = 0.05


def grid_tolerance(epsilon: float) -> float:
    """How far from an ε answer a learner may land: one grid step there, or 5 % if more.

    >>> grid_tolerance(0.5), grid_tolerance(2.0)
    (0.025, 0.1)
    """
    i = int(np.searchsorted(EPSILON_GRID, epsilon))
    i = min(max(i, 1), len(EPSILON_GRID) - 1)
    step = EPSILON_GRID[i] - EPSILON_GRID[i - 1]
    return max(step, EPSILON_RTOL * epsilon)


def nice_up(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is ≥ x (a round target for a question).

    >>> nice_up(1.09), nice_up(0.3), nice_up(7.0), nice_up(20.0)
    (2.0, 0.5, 10.0, 20.0)
    """
    if not (math.isfinite(x) and x > 0):
        raise HexplorerError(f"The 'x' parameter must be a finite number > 0. Got {x!r} instead.")
    k = math.floor(math.log10(x))
    for base in (1.0, 2.0, 2.5, 5.0, 10.0):
        v = base * 10.0**k
        if v >= x * (1 - 1e-12):
            return float(f"{v:.12g}")
    return float(f"{10.0 ** (k + 1):.12g}")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One step's exact answer and what the check accepts.

    Attributes
    ----------
    step : int
        1 … 6.
    value : float or str
        Core's exact answer (an ε, an m_UB or a user id).
    lo, hi : float or None
        The accepted interval of a numeric answer (ε), both ends included.
    accepted : tuple
        The accepted choices of a choice answer (user ids, m_UB values); empty for ε.
    given : dict
        The question's numbers (the odds factor, the fixed ε, the target X, the budget …).
    found : dict
        What the answer comes with (the worst case there, K after CHOP-USER, …).
    """

    step: int
    value: float | int | str
    lo: float | None = None
    hi: float | None = None
    accepted: tuple = ()
    given: dict = field(default_factory=dict)
    found: dict = field(default_factory=dict)

    def accepts(self, value) -> bool:
        """Whether a learner's value is right (within the tolerance).

        >>> Answer(step=1, value=1.0986, lo=1.05, hi=1.0986).accepts(1.05)
        True
        >>> Answer(step=3, value=4, accepted=(4, 5)).accepts(6)
        False
        """
        if self.accepted:
            return str(value) in {str(a) for a in self.accepted}
        try:
            x = float(value)
        except (TypeError, ValueError):
            return False
        return self.lo is not None and self.hi is not None and self.lo <= x <= self.hi


# ---------------------------------------------------------------------------------------------
# The six steps
# ---------------------------------------------------------------------------------------------


def odds(factor: float = 3.0) -> Answer:
    """Step 1: the largest ε with e^ε ≤ ``factor`` is ln(factor).

    >>> a = odds(3.0)
    >>> round(a.value, 4), a.accepts(1.05), a.accepts(1.1)
    (1.0986, True, False)
    """
    if not (math.isfinite(factor) and factor > 1):
        raise HexplorerError(f"The 'factor' parameter must be > 1. Got {factor!r} instead.")
    eps = math.log(factor)
    return Answer(step=1, value=eps, lo=eps - grid_tolerance(eps), hi=eps, given={"factor": factor})


def leakiest_user(hat: HatData, epsilon: float = 1.0, *, limit: int = 100) -> Answer:
    """Step 2: among the ``limit`` busiest users, whose change leaks most under record-level
    noise at ``epsilon`` (each user's neighbour is its farthest one, :func:`lessons.neighbours`).

    ``found`` holds every candidate's loss (``losses``: id → ε_ℓ) and the user-level loss of
    the worst one (≤ ε).

    >>> h = HatData.from_arrays([4, 1], [40.0, 60.0], user_ids=["a", "b"], upper=65.0)
    >>> a = leakiest_user(h, 1.0)
    >>> a.value, a.accepted, round(a.found["loss"], 4)
    ('a', ('a',), 3.3846)
    """
    epsilon = check_epsilon(epsilon)
    limit = check_positive_int("limit", limit)
    ids, _, _ = lessons.user_table(hat)
    losses = {}
    for uid in ids[:limit]:
        rv = lessons.record_vs_user(lessons.neighbours(hat, uid), epsilon)
        losses[str(uid)] = (rv.loss_record_noise, rv.loss_user_noise)
    top = max(v[0] for v in losses.values())
    best = tuple(u for u, v in losses.items() if v[0] >= top * (1 - 1e-12))
    return Answer(
        step=2,
        value=best[0],
        accepted=best,
        given={"epsilon": epsilon, "candidates": len(losses)},
        found={
            "loss": top,
            "user_level_loss": losses[best[0]][1],
            "losses": {u: v[0] for u, v in losses.items()},
        },
    )


def best_m_ub(counts, upper: float, epsilon: float = 0.5, *, rtol: float = M_UB_RTOL) -> Answer:
    """Step 3: m^(ε), the m_UB with the smallest worst case at ``epsilon``; every m whose E(m)
    is within ``rtol`` of the smallest is accepted.

    >>> a = best_m_ub([3, 2, 1], 65.0, 1.0)
    >>> a.value, a.accepted, a.found["error"]
    (3, (3,), 32.5)
    """
    epsilon = check_epsilon(epsilon)
    c = worstcase.check_counts(counts)
    upper = check_upper(upper)
    m_star = worstcase.m_opt(c, upper, epsilon)
    ms = np.arange(int(c.min()), int(c.max()) + 1)
    totals = np.asarray(worstcase.worst_case_error(c, upper, ms, epsilon).total, dtype=float)
    best = float(worstcase.worst_case_error(c, upper, m_star, epsilon).total)
    ok = ms[totals <= best * (1 + rtol) + 1e-12]
    return Answer(
        step=3,
        value=int(m_star),
        accepted=tuple(int(m) for m in ok),
        given={"epsilon": epsilon},
        found={"error": best, "median": worstcase.median_count(c)},
    )


def release_share(
    hat: HatData,
    epsilon: float,
    within: float,
    *,
    mechanism: str = SHARE_MECHANISM,
    seed: int = 0,
    n_runs: int = SHARE_RUNS,
):
    """Simulated releases at ``epsilon`` (clamped into [0, U]) and their error summary.

    The random stream is keyed by the seed, ε's position in :data:`EPSILON_GRID` (or ε itself)
    and the mechanism's name, so the page and :func:`share_within` see the same runs at an ε.

    Returns
    -------
    (estimates, ErrorSummary)
    """
    epsilon = check_epsilon(epsilon)
    key = [int(seed), 31, int(round(epsilon * 10_000))]
    rng = mechanism_rng(key, mechanism)
    d = run_mechanism(mechanism, hat, epsilon, rng=rng, size=n_runs)
    values = clamp_mean(d.estimates, hat.upper)
    return values, error_summary(values, hat.true_mean, within=within)


def share_within(
    hat: HatData,
    within: float | None = None,
    *,
    level: float = 0.9,
    mechanism: str = SHARE_MECHANISM,
    seed: int = 0,
    n_runs: int = SHARE_RUNS,
) -> Answer:
    """Step 4: the smallest ε of :data:`EPSILON_GRID` at which a share ``level`` of the
    simulated releases (:func:`release_share`) land within ±``within`` of the true mean.

    ``within`` defaults to a round number just above the 90 % bound at ε = 1 (so the answer
    is at most about 1). The answer is a grid ε; accepted: it up to :func:`grid_tolerance`.
    """
    if within is None:
        _, s = release_share(hat, 1.0, 0.0, mechanism=mechanism, seed=seed, n_runs=n_runs)
        within = nice_up(max(s.q90, 1e-9))
    within = float(within)
    for eps in EPSILON_GRID:
        _, s = release_share(hat, eps, within, mechanism=mechanism, seed=seed, n_runs=n_runs)
        if s.share_within is not None and s.share_within >= level:
            return Answer(
                step=4,
                value=eps,
                lo=eps,
                hi=eps + grid_tolerance(eps),
                given={"within": within, "level": level, "mechanism": mechanism},
                found={"share": s.share_within, "q90": s.q90},
            )
    raise HexplorerError(
        f"No ε up to {EPSILON_GRID[-1]:g} puts {level:.0%} of releases within ±{within:g}."
    )


def worst_case_target(counts, upper: float, target: float | None = None) -> Answer:
    """Step 5: the smallest ε whose worst case at m^(ε) is ≤ ``target``
    (:func:`core.plan.epsilon_for_error`, OPT-Array-Averaging).

    ``target`` defaults to a round number just above E(m^(1)) at ε = 1.

    >>> a = worst_case_target([3, 2, 1], 65.0, 32.5)
    >>> a.value, a.found["m_ub"], a.accepts(1.0), a.accepts(0.99)
    (1.0, 3, True, False)
    """
    c = worstcase.check_counts(counts)
    upper = check_upper(upper)
    if target is None:
        e1 = float(worstcase.worst_case_error(c, upper, worstcase.m_opt(c, upper, 1.0), 1.0).total)
        target = nice_up(e1)
    p = epsilon_for_error(c, upper, float(target), "opt-arrayavg")
    if p.status != "ok" or p.epsilon is None:
        raise HexplorerError(f"A worst case of {target:g} is {p.status} on this hexagon-hour.")
    eps = float(p.epsilon)
    return Answer(
        step=5,
        value=eps,
        lo=eps,
        hi=eps + grid_tolerance(eps),
        given={"target": float(target)},
        found={"m_ub": p.m_ub, "error": p.worst_case_error},
    )


def composition(grids: GridSet, budget: float | None = None, *, upper: float) -> Answer:
    """Step 6: the largest ε per hexagon with ε · max_ℓ G_ℓ ≤ ``budget`` (by users, [2]);
    ``found`` has G ε, the K after CHOP-USER at that ε and K ε.

    ``budget`` defaults to 1, or a round number near max G_ℓ / 10 when that is more.
    """
    upper = check_upper(upper)
    g_max = grids.max_grids_per_user
    if budget is None:
        budget = max(1.0, nice_up(g_max / 10.0))
    budget = check_epsilon(budget)
    eps = budget / g_max
    loss = privacy_loss(grids, eps)
    chop = chop_user(grids, eps, upper=upper)
    return Answer(
        step=6,
        value=eps,
        lo=eps - grid_tolerance(eps),
        hi=eps * (1 + 1e-12),
        given={"budget": budget},
        found={
            "max_grids_per_user": g_max,
            "grids": grids.n_grids,
            "basic": loss.basic,
            "by_users": loss.by_users,
            "k_final": chop.k_final,
            "after_chop": chop.privacy_loss,
            "suppressed": chop.n_suppressed,
        },
    )


@dataclass(frozen=True, kw_only=True)
class Course:
    """The six answers for one dataset (one HAT for steps 1–5, its slot's grids for step 6)."""

    hat: str
    answers: tuple[Answer, ...]

    def answer(self, step: int) -> Answer:
        """The answer of step 1 … 6."""
        if not 1 <= int(step) <= len(self.answers):
            raise HexplorerError(f"The 'step' parameter must be 1 … 6. Got {step!r} instead.")
        return self.answers[int(step) - 1]


def course(hat: HatData, grids: GridSet, *, seed: int = 0) -> Course:
    """All six answers for a hexagon-hour and the grids of its hour."""
    return Course(
        hat=str(hat.hat),
        answers=(
            odds(3.0),
            leakiest_user(hat, 1.0),
            best_m_ub(hat.counts, hat.upper, 0.5),
            share_within(hat, seed=seed),
            worst_case_target(hat.counts, hat.upper),
            composition(grids, upper=hat.upper),
        ),
    )
