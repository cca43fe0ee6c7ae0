"""Plain-language read-outs beside the numbers of the One-hexagon page.

Pure functions: numbers (computed by core) in, one sentence of Markdown out, with the data's
unit and user noun. The page shows them; tests compare them with core's numbers.
"""

from __future__ import annotations

import math

from dashboard.common.source.units import Units


def fmt(value: float, unit: str, digits: int = 3) -> str:
    """A number with its unit, ``digits`` significant digits ("1.09 km/h"); "—" for NaN."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}g} {unit}"


def percent(share: float) -> str:
    """A share as a whole percentage ("71 %")."""
    return f"{100.0 * share:.0f} %"


def landing(*, epsilon: float, title: str, bound90: float, units: Units) -> str:
    """'At ε = 1 with Array-Averaging (BestFit), 90 % of releases land within ±X of the mean.'"""
    return (
        f"At ε = {epsilon:g} with {title}, 90 % of releases land within "
        f"±{fmt(bound90, units.value)} of the true mean."
    )


def share_within(*, share: float, within: float, units: Units) -> str:
    """'71 % of releases within ±1 km/h'."""
    return f"{percent(share)} of releases within ±{within:g} {units.value}"


def odds(*, epsilon: float, user: str, units: Units) -> str:
    """What ε means as odds, for one named user."""
    who = user if user.lower().startswith(units.user.lower()) else f"{units.user} {user}"
    return (
        f"ε = {epsilon:g} as odds: whatever an observer believed beforehand, seeing the release "
        f"changes their odds that {who} was in the data by at most "
        f"e^ε = {math.exp(epsilon):.3g}×."
    )


def worst_vs_simulated(*, title: str, worst: float, typical: float, units: Units) -> str:
    """Why the worst case can far exceed what simulation shows."""
    ratio = worst / typical if typical > 0 else math.inf
    times = f"{ratio:.0f}×" if math.isfinite(ratio) and ratio >= 2 else "above"
    return (
        f"Why {title}'s worst case ({fmt(worst, units.value)}) is {times} its typical error "
        f"({fmt(typical, units.value)}): the worst case is the largest expected error over "
        f"*every* dataset with these record counts (all clipped {units.users} at one end of "
        f"[0, U]); the simulation adds noise to *this* dataset, whose speeds are not that extreme."
    )


def bias_vs_clipping(*, bias: float, clipping: float, m_ub: int, units: Units) -> str:
    """Why the exact bias of BestFit's arrays and the clipping error E1 differ."""
    if math.isclose(bias, clipping, rel_tol=1e-9, abs_tol=1e-12):
        relation = "equals"
    elif bias > clipping:
        relation = "exceeds"
    else:
        relation = "is below"
    return (
        f"At m_UB = {m_ub} the exact clipping bias of the arrays BestFit builds "
        f"({fmt(bias, units.value)}) {relation} the clipping error E1 ({fmt(clipping, units.value)}): "
        f"E1 is the papers' model, which assumes every array is full of m_UB records; BestFit "
        f"leaves some arrays part-full and weights their {units.users} differently, which can move "
        "the bias either way."
    )


def degenerate_notes(*, m_min: int, m_max: int, units: Units) -> list[str]:
    """Notes for data that make a figure degenerate (one count for all users, one record each)."""
    notes = []
    if m_max == 1:
        notes.append(
            f"Every {units.user} has one record in this hexagon-hour: user-level privacy equals "
            "record-level privacy here, records kept per "
            f"{units.user} is 1 for every rule, and the error curve is a single point."
        )
    elif m_min == m_max:
        notes.append(
            f"Every {units.user} has the same number of records ({m_max}) here: nothing is "
            f"clipped at m_UB = {m_max}, the only choice, so the error curve is a single point and "
            "the histogram a single bar."
        )
    return notes
