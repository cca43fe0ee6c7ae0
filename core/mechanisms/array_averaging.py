"""Array-Averaging ([1], section III-C; [4]; SPEC section 3): average the means of the
arrays (pseudo-users) a grouping builds, plus Laplace noise of the arrays' sensitivity.

The four entries differ in the grouping and the default m_UB rule only: WrapAround or BestFit at
the median count, and BestFit at m^(ε) (OPT-Array-Averaging) or at the convex proxy m^(O,2).
``arrayavg-wrap`` is charged the papers' ``2U/K`` (a user can straddle two WrapAround arrays;
for plain averaging the exact sensitivity is U/K).
"""

from __future__ import annotations

from core.mechanisms.common import arrays_of, draws
from core.mechanisms.registry import Mechanism, RunFn, register


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
    ),
    Mechanism(
        name="arrayavg-best", title="Array-Averaging (BestFit)", family="Array-Averaging",
        description=(
            "Each bus whole in one array (BestFit), so one bus moves one array mean: the mean of "
            "the array means plus Laplace noise U/(K̄ε)."
        ),
        reference=f"{_S0}-C", spec="SPEC §2, §3", grouping="bestfit",
        m_ub_rule="median", colour="#0072B2", run=arrayavg("bestfit", "arrayavg-best"),
    ),
    Mechanism(
        name="opt-arrayavg", title="OPT-Array-Averaging", family="Array-Averaging",
        description=(
            "Array-Averaging (BestFit) at m^(ε), the m_UB minimising the worst-case error; "
            "chosen from the public counts, so it spends no privacy."
        ),
        reference="[4] (m_UB^(O,1) = m^(ε))", spec="SPEC §3, §4",
        grouping="bestfit", m_ub_rule="opt", colour="#009E73",
        run=arrayavg("bestfit", "opt-arrayavg"),
    ),
    Mechanism(
        name="opt-arrayavg-convex", title="OPT-Array-Averaging (convex proxy)",
        family="Array-Averaging",
        description="Array-Averaging (BestFit) at m^(O,2), the minimiser of a convex proxy of E(m).",
        reference="[4], eq. (5)", spec="SPEC §3, §4",
        grouping="bestfit", m_ub_rule="convex", colour="#44AA99",
        run=arrayavg("bestfit", "opt-arrayavg-convex"),
    ),
):  # fmt: skip
    register(_mechanism)
