"""One HAT, analytic: the smallest ε whose worst case is within target (:func:`epsilon_for_error`)
and Baseline's closed form (:func:`baseline_epsilon`); see :mod:`core.plan`."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import HexplorerError
from core.params import (
    EPSILON_MAX,
    EPSILON_MIN,
    check_counts,
    check_noise_measure,
    check_upper,
)
from core.plan.pieces import (
    STATUSES,
    check_analytic,
    check_target,
    first_candidate,
    pieces_of,
    smallest_float,
    worst_case_of,
)

# --------------------------------------------------------------------------------------------
# One HAT, analytic


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The smallest ε whose worst-case error is within a target, for one HAT.

    Attributes
    ----------
    status : {"ok", "unreachable", "any"}
        "ok": ``epsilon`` is the answer; "unreachable": no ε of the product's range
        (``core.params.EPSILON_MIN`` to ``EPSILON_MAX``) brings the worst case down to the target
        (``floor`` is how low it goes); "any": the smallest ε of the range already meets it.
    epsilon : float or None
        The smallest ε (status "ok"), else None.
    m_ub : int or None
        The m_UB to use at ``epsilon`` (m^(ε) for opt-arrayavg, the registry rule's value for
        the fixed rules); None for baseline, opt-bounding or when status is not "ok".
    worst_case_error : float or None
        The worst case at ``epsilon`` (status "ok"; ≤ target), or as ε → 0 (status "any").
    floor : float
        The infimum of the worst case over ε > 0 (0 except for the fixed m_UB rules, whose
        clipping error E1(m_UB) stays); it is approached as ε → ∞, never reached.
    target, mechanism, noise_measure : the inputs.
    """

    status: str
    epsilon: float | None
    m_ub: int | None
    worst_case_error: float | None
    floor: float
    target: float
    mechanism: str
    noise_measure: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise HexplorerError(f"Plan status must be one of {STATUSES}. Got {self.status!r}.")
        if (self.status == "ok") != (self.epsilon is not None):
            raise HexplorerError("A plan has an epsilon exactly when its status is 'ok'.")

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "m_ub": self.m_ub,
            "worst_case_error": self.worst_case_error,
            "floor": self.floor,
            "target": self.target,
            "mechanism": self.mechanism,
            "noise_measure": self.noise_measure,
        }


def epsilon_for_error(
    counts,
    upper: float,
    target: float,
    mechanism: str = "opt-arrayavg",
    noise_measure: str = "mean",
) -> Plan:
    """The smallest ε whose analytic worst-case error is ≤ ``target`` (SPEC section 4).

    Parameters
    ----------
    counts : array-like of int
        The users' record counts m_ℓ (public, SPEC section 1).
    upper : float
        U.
    target : float
        The error one can live with, in the data's unit (>= 0).
    mechanism : str
        A mechanism with a worst case (``core.mechanisms.analytic_names()``; others:
        :func:`epsilon_for_error_mc`).
    noise_measure : {"mean", "std"}
        Noise error as E|Lap| (c = 1) or its standard deviation (c = √2).

    Returns
    -------
    Plan
        See :class:`Plan`; "unreachable" and "any" are results, not exceptions.

    Raises
    ------
    HexplorerError
        Bad counts, U, target, noise measure, or a mechanism without an analytic worst case.

    Counts (3, 2, 1), U = 65: E(m^(ε)) = 32.5 at ε = 1 (m^(ε) = 3), so a target of 32.5
    needs ε = 1; the staircase's closed form on the step of m = 3 gives it.

    >>> p = epsilon_for_error([3, 2, 1], 65, 32.5)
    >>> p.status, p.epsilon, p.m_ub, p.worst_case_error
    ('ok', 1.0, 3, 32.5)
    >>> epsilon_for_error([3, 2, 1], 65, 0).status
    'unreachable'
    >>> epsilon_for_error([3, 2, 1], 65, 40, "opt-bounding").status
    'any'
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    target = check_target(target)
    check_noise_measure(noise_measure)
    name = check_analytic(mechanism)
    pieces = pieces_of(c_arr, upper, name, noise_measure)
    floor = float(pieces.a[-1])  # the last piece reaches ε = inf

    def result(status: str, eps: float | None, m_ub: int | None, error: float | None) -> Plan:
        return Plan(
            status=status, epsilon=eps, m_ub=m_ub, worst_case_error=error, floor=floor,
            target=target, mechanism=name, noise_measure=noise_measure,
        )  # fmt: skip

    first = first_candidate(pieces, target)
    if first is None:
        return result("unreachable", None, None, None)
    i, guess = first
    if guess == 0.0:  # a constant piece from ε = 0 meets the target (opt-bounding's U/2)
        return result("any", None, None, float(pieces.a[i]))

    def total(e: float) -> float:
        return worst_case_of(c_arr, upper, e, name, noise_measure).total

    lowest = total(EPSILON_MIN)  # the smallest ε the project accepts already meets the target
    if guess <= EPSILON_MIN or lowest <= target:
        return result("any", None, None, lowest)
    eps = smallest_float(total, target, guess) if guess <= EPSILON_MAX else None
    if eps is None or eps > EPSILON_MAX:  # no ε the product accepts meets it
        return result("unreachable", None, None, None)
    at = worst_case_of(c_arr, upper, eps, name, noise_measure)
    return result("ok", eps, at.m_ub, at.total)


def baseline_epsilon(counts, upper: float, target: float, noise_measure: str = "mean") -> float:
    """Baseline's closed form: ``ε = c U m* / (N · target)`` (target > 0; SPEC section 4).

    :func:`epsilon_for_error` settles it to the smallest float; the two agree to rounding.

    >>> baseline_epsilon([3, 2, 1], 65, 65.0)
    0.5
    """
    c_arr = check_counts(counts)
    upper = check_upper(upper)
    target = check_target(target)
    if target == 0:
        raise HexplorerError("The 'target' parameter must be > 0 for Baseline's closed form.")
    c = check_noise_measure(noise_measure)
    return float(c * upper * int(c_arr.max()) / (int(c_arr.sum()) * target))
