"""Array-Averaging ([1], section III-C; [4]; SPEC section 3): average the means of the
arrays (pseudo-users) a grouping builds, plus Laplace noise of the arrays' sensitivity.

The four entries differ in the grouping and the default m_UB rule only: WrapAround or BestFit at
the median count, and BestFit at m^(ε) (OPT-Array-Averaging) or at the convex proxy m^(O,2).
``arrayavg-wrap`` is charged the papers' ``2U/K`` (a user can straddle two WrapAround arrays;
for plain averaging the exact sensitivity is U/K).
"""

from __future__ import annotations

import math

import numpy as np

from core import worstcase as wc
from core.errors import HexplorerError
from core.mechanisms.common import arrays_of, draws
from core.mechanisms.forms import BatchRelease, Pieces, WorstCaseForm, WorstParts
from core.mechanisms.registry import Mechanism, RunFn, get_rule, register
from core.params import check_noise_measure


def arrayavg(strategy: str, name: str) -> RunFn:
    """The run function of Array-Averaging on ``strategy`` arrays, registered as ``name``."""

    def run(hat, epsilon, m_ub, rng, size, *, arrays=None):
        """f_arr + Lap(U / (K̄ ε)) (BestFit) or the papers' charged Lap(2U / (K ε)) (WrapAround)."""
        arr = arrays if arrays is not None else arrays_of(hat, strategy, m_ub)
        factor = float(arr.arrays_per_user)
        sens = factor * hat.upper / arr.n_arrays
        return draws(
            name, hat, epsilon, m_ub, arr.n_arrays, arr.f_arr, sens, sens / epsilon, rng, size
        )

    return run


def bestfit_worst_case(rule_name: str) -> WorstCaseForm:
    """E(m_UB) = E1 + E2 of Array-Averaging (BestFit) at the m_UB rule ``rule_name`` (SPEC
    section 4; [1], Lemma V.1; [4], eq. (4)): ``U (1 − S(m)/N) + c U m / (ε S(m))``.

    A rule that reads the counts only gives one piece ``a + b/ε`` on (0, inf); a rule with a
    ``staircase`` (m^(ε)) gives one piece per step.
    """

    def m_of(counts, upper, epsilon, noise_measure) -> int:
        rule = get_rule(rule_name)
        if rule.counts_only:
            return rule(counts, math.nan, math.nan)
        return rule(counts, upper, epsilon, noise_measure)

    def one(counts, upper, epsilon, noise_measure) -> WorstParts:
        m = m_of(counts, upper, epsilon, noise_measure)
        parts = wc.worst_case_error(counts, upper, m, epsilon, noise_measure)
        return WorstParts(
            m_ub=int(m), clipping=float(parts.clipping), noise=float(parts.noise),
            total=float(parts.total),
        )  # fmt: skip

    def pieces(counts, upper, noise_measure) -> Pieces:
        c = check_noise_measure(noise_measure)
        n = int(counts.sum())
        rule = get_rule(rule_name)
        prof_s = lambda m: int(np.minimum(counts, m).sum())  # noqa: E731
        if rule.counts_only:
            ms = np.array([rule(counts, math.nan, math.nan)], dtype=np.int64)
            lo, hi = np.array([0.0]), np.array([np.inf])
        else:
            if rule.staircase is None:
                raise HexplorerError(f"The m_UB rule {rule_name!r} has no staircase.")
            steps = rule.staircase(counts, upper, noise_measure)
            ms = np.array([s.m for s in steps], dtype=np.int64)
            lo = np.array([s.epsilon_from for s in steps])
            hi = np.array([s.epsilon_to for s in steps])
        s_m = np.array([prof_s(m) for m in ms.tolist()], dtype=np.int64)
        return Pieces(lo=lo, hi=hi, a=upper * (1.0 - s_m / n), b=c * upper * ms / s_m, m=ms)

    def many(table, eps):
        u, n = table.upper, table.records
        c = check_noise_measure(table.noise_measure)
        m, s = table.rule_m_s(rule_name, eps)
        clipping = u * (1.0 - s / n)
        noise = c * u * m / (eps * s)
        return m, clipping, noise, clipping + noise

    def many_pieces(table):
        u = table.upper
        c = check_noise_measure(table.noise_measure)
        hat, lo, hi, m, s = table.rule_pieces(rule_name)
        n = table.records[hat]
        return hat, Pieces(lo=lo, hi=hi, a=u * (1.0 - s / n), b=c * u * m / s, m=m)

    return WorstCaseForm(many=many, many_pieces=many_pieces, one=one, pieces=pieces)


def release_all(grouping: str, rule_name: str):
    """The all-HATs release of Array-Averaging on ``grouping`` arrays at the rule ``rule_name``:
    every HAT's f_arr with sensitivity U/K̄ (BestFit) or the charged 2U/K (WrapAround)."""
    factor = 2.0 if grouping == "wraparound" else 1.0

    def run(b, epsilon) -> BatchRelease:
        m_ub = b.rule_m(rule_name, epsilon)
        f_arr, k = b.array_means(m_ub, grouping)
        sens = factor * b.upper / k
        return BatchRelease(
            m_ub=m_ub, n_arrays=k, sensitivity=sens, noise_scale=sens / epsilon, noiseless=f_arr
        )

    return run


_S0 = "[1] section III"
for _mechanism in (
    Mechanism(
        name="arrayavg-wrap", title="Array-Averaging (WrapAround)", family="Array-Averaging",
        description=(
            "Records laid end to end and cut into full arrays of m_UB; the mean of the array "
            "means plus Laplace noise charged 2U/K (a bus can straddle two arrays)."
        ),
        reference=f"{_S0}-C", spec="SPEC §2, §3", grouping="wraparound",
        m_ub_rule="median", colour="#56B4E9", run=arrayavg("wraparound", "arrayavg-wrap"),
        release_all=release_all("wraparound", "median"),
    ),
    Mechanism(
        name="arrayavg-best", title="Array-Averaging (BestFit)", family="Array-Averaging",
        description=(
            "Each bus whole in one array (BestFit), so one bus moves one array mean: the mean of "
            "the array means plus Laplace noise U/(K̄ε)."
        ),
        reference=f"{_S0}-C", spec="SPEC §2, §3", grouping="bestfit",
        m_ub_rule="median", colour="#0072B2", run=arrayavg("bestfit", "arrayavg-best"),
        worst_case=bestfit_worst_case("median"), release_all=release_all("bestfit", "median"),
        default=True,
    ),
    Mechanism(
        name="opt-arrayavg", title="OPT-Array-Averaging", family="Array-Averaging",
        description=(
            "Array-Averaging (BestFit) at m^(ε), the m_UB minimising the worst-case error; "
            "chosen from the public counts, so it spends no privacy."
        ),
        reference="[4] (m_UB^(O,1) = m^(ε))", spec="SPEC §3, §4",
        grouping="bestfit", m_ub_rule="opt", colour="#009E73",
        run=arrayavg("bestfit", "opt-arrayavg"), worst_case=bestfit_worst_case("opt"),
        release_all=release_all("bestfit", "opt"), default=True,
    ),
    Mechanism(
        name="opt-arrayavg-convex", title="OPT-Array-Averaging (convex proxy)",
        family="Array-Averaging",
        description="Array-Averaging (BestFit) at m^(O,2), the minimiser of a convex proxy of E(m).",
        reference="[4], eq. (5)", spec="SPEC §3, §4",
        grouping="bestfit", m_ub_rule="convex", colour="#44AA99",
        run=arrayavg("bestfit", "opt-arrayavg-convex"), worst_case=bestfit_worst_case("convex"),
        release_all=release_all("bestfit", "convex"),
    ),
):  # fmt: skip
    register(_mechanism)
