"""Plan from an accuracy target: the smallest ε whose error is within a target (SPEC section 4).

Every other part of the project answers "given ε, how large is the error?". This module answers
the reverse question, "how much privacy must be spent for the error one can live with?", for one
HAT (:func:`epsilon_for_error`, :func:`epsilon_for_error_mc`) and for every HAT of a slot, a day
or a file (:func:`city_plan`, :func:`coverage_curve`).

Analytic worst cases (SPEC sections 3 and 4), one per mechanism whose registry entry carries one
(``Mechanism.worst_case``; :func:`core.mechanisms.analytic_names`), each of the form ``A + B/ε``
on pieces of the ε axis (the built-in ones):

- ``opt-arrayavg``: ``W(ε) = min_m E(m, ε) = E(m^(ε), ε)``. With ``t = 1/ε`` it is the lower
  envelope of the lines ``A_m + B_m t``, ``A_m = E1(m)``, ``B_m = c U m / S(m)`` > 0: continuous
  and strictly decreasing in ε. On each step of the m^(ε) staircase m is fixed and the root of
  ``A_m + B_m/ε = target`` is ``ε = B_m / (target − A_m)``. As ε → ∞ it tends to ``E1(m*) = 0``.
- ``baseline``: ``c U m* / (N ε)``, so ``ε = c U m* / (N · target)`` in closed form.
- fixed m_UB rules (``arrayavg-best``: the median; ``opt-arrayavg-convex``: m_UB^(O,2)):
  ``E(m_UB, ε)``; the floor is the clipping error ``E1(m_UB)``, reached only as ε → ∞.
- ``opt-bounding``: ``E^OPT(ε)`` ([5], Theorem III.1). With ``k = ⌈2/ε⌉`` and ``m_(k)`` the
  k-th largest count (0 if k > L), ``T_ε = U m_(k)`` and
  ``E^OPT = U (Σ_{j≤k} m_(j) − k m_(k)) / (2N) + c U m_(k) / (N ε)``: on each piece where ⌈2/ε⌉
  is constant it is ``A + B/ε`` again. For ε below 2/L it is the constant U/2 (T_ε = 0). With
  the "mean" noise measure the pieces join continuously (E^OPT is non-increasing and at most
  U/2); with "std" it jumps up at each piece's left end, so the pieces are scanned one by one.

The smallest ε. On the first piece (in increasing ε) that holds an ε with error ≤ target, the
closed-form root gives a candidate; it is then settled in floating point by bisection on the
bit patterns of the floats (positive floats are ordered like their bits), evaluating the
worst case with the same functions as :mod:`core.worstcase`, so the returned ε is the smallest
float whose computed worst case is ≤ target (far inside the 1e-9 relative tolerance asked for).

Results, not exceptions: ``status`` is ``"ok"`` (ε found), ``"unreachable"`` (the error never
gets down to the target: ``floor`` says how low it goes; a floor approached only as ε → ∞ is not
reached) or ``"any"`` (the target holds for every small enough ε: opt-bounding when the target is
at least U/2, which releasing U/2 achieves without spending privacy).

Modules: :mod:`core.plan.pieces` (checks, the worst case at one ε, the pieces and the smallest
float), :mod:`core.plan.hexagon` (one HAT, analytic), :mod:`core.plan.montecarlo` (one HAT,
simulated) and :mod:`core.plan.city` (every HAT of a slot, a day or a file).
"""

from core.plan.city import (
    CityPlan,
    check_coverage,
    city_plan,
    coverage_curve,
    epsilon_needed,
    recommended_mechanism,
)
from core.plan.hexagon import Plan, baseline_epsilon, epsilon_for_error
from core.plan.montecarlo import MonteCarloPlan, epsilon_for_error_mc
from core.plan.pieces import (
    DEFAULT_MC_GRID,
    STATUSES,
    WorstCase,
    ceil_two_over_epsilon_array,
    check_analytic,
    check_target,
    fixed_m_ub,
    m_rule,
    opt_bounding_piece_starts,
    smallest_float,
    worst_case,
)

__all__ = [
    "DEFAULT_MC_GRID",
    "STATUSES",
    "CityPlan",
    "MonteCarloPlan",
    "Plan",
    "WorstCase",
    "baseline_epsilon",
    "ceil_two_over_epsilon_array",
    "check_analytic",
    "check_coverage",
    "check_target",
    "city_plan",
    "coverage_curve",
    "epsilon_for_error",
    "epsilon_for_error_mc",
    "epsilon_needed",
    "recommended_mechanism",
    "fixed_m_ub",
    "m_rule",
    "opt_bounding_piece_starts",
    "smallest_float",
    "worst_case",
]
