"""Plain names first: every symbol the dashboard shows, with its plain label and its formula.

A label on screen reads as the plain name ("records kept per bus"); the symbol and formula go in
the tooltip (and on Learn). The user noun and value unit come from :class:`Units`, so the same
entry reads "records kept per ship" on a harbour's data.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.common.source.units import Units


@dataclass(frozen=True, kw_only=True)
class Term:
    """One symbol: its plain name (with ``{user}``/``{users}``/``{unit}`` placeholders),
    the symbol as the papers write it, and the formula or definition (SPEC terms)."""

    plain: str
    symbol: str
    formula: str


TERMS: dict[str, Term] = {
    "hat": Term(
        plain="hexagon-hour",
        symbol="HAT",
        formula="one H3 hexagon in one timeslot: the unit a mean is released for (SPEC §1)",
    ),
    "busiest": Term(
        plain="busiest hexagon-hour",
        symbol="busiest HAT",
        formula="the hexagon-hour with the most records N (ties: the first in the HAT table)",
    ),
    "n_users": Term(
        plain="{users} here", symbol="L", formula="L = the number of {users} with a record here"
    ),
    "n_records": Term(plain="records here", symbol="N", formula="N = Σ_ℓ m_ℓ"),
    "m_max": Term(
        plain="most records of one {user}", symbol="m*", formula="m* = max_ℓ m_ℓ (public)"
    ),
    "m_min": Term(
        plain="fewest records of one {user}", symbol="m_*", formula="m_* = min_ℓ m_ℓ (public)"
    ),
    "true_mean": Term(
        plain="true mean", symbol="f", formula="f = (1/N) Σ_ℓ s_ℓ, the value being protected"
    ),
    "m_ub": Term(
        plain="records kept per {user}",
        symbol="m_UB",
        formula="m_UB: each {user} contributes at most m_UB records (Γ_ℓ = min(m_ℓ, m_UB))",
    ),
    "median": Term(
        plain="median rule",
        symbol="median",
        formula="m_UB = the median of {{m_ℓ}} (Array-Averaging's default)",
    ),
    "levy": Term(
        plain="Levy's rule",
        symbol="m^(L)",
        formula="m_UB^(L) = argmax_m Σ_ℓ min(m_ℓ, m) / √m (Levy and the quantile mechanisms)",
    ),
    "opt": Term(
        plain="best for this ε",
        symbol="m^(ε)",
        formula="m^(ε) = the smallest minimiser of E(m) = E1(m) + E2(m) (OPT-Array-Averaging)",
    ),
    "convex": Term(
        plain="convex proxy rule",
        symbol="m^(O,2)",
        formula="m_UB^(O,2) minimises 1 − S(m)/N + max(m, N/L)/m* ([4], eq. 5)",
    ),
    "e1": Term(
        plain="clipping error",
        symbol="E1",
        formula="E1(m) = U (1 − S(m)/N), S(m) = Σ_ℓ min(m_ℓ, m): worst-case bias, full arrays",
    ),
    "e2": Term(
        plain="noise error",
        symbol="E2",
        formula="E2(m) = c U m / (ε S(m)); c = 1 (E|noise|) or √2 (std of noise)",
    ),
    "e": Term(
        plain="worst-case error",
        symbol="E",
        formula="E(m) = E1(m) + E2(m): the largest expected error over every possible dataset "
        "with these counts",
    ),
    "bestfit_bias": Term(
        plain="exact clipping bias of BestFit's arrays",
        symbol="bias_BestFit",
        formula="(U/2) Σ_ℓ |α_ℓ − m_ℓ/N|, α_ℓ = Γ_ℓ / (K̄ w(array of ℓ)): the arrays BestFit "
        "really builds, some not full (SPEC §4)",
    ),
    "epsilon": Term(
        plain="privacy loss",
        symbol="ε",
        formula="ε: an observer's odds that one {user} was in the data change by at most e^ε",
    ),
    "typical": Term(
        plain="typical error",
        symbol="median |M − f|",
        formula="the median of |release − true mean| over the simulated runs",
    ),
    "bound90": Term(
        plain="90 % of releases within",
        symbol="q0.9 |M − f|",
        formula="the 90th percentile of |release − true mean| over the simulated runs",
    ),
    "mae": Term(
        plain="mean absolute error",
        symbol="MAE",
        formula="MAE = (1/n) Σ_i |M^(i) − f| over n simulated runs (the papers' measure)",
    ),
    "n_arrays": Term(
        plain="pseudo-users (arrays)",
        symbol="K̄",
        formula="K̄ = the number of arrays of m_UB records BestFit builds (K for WrapAround)",
    ),
    "noise_scale": Term(
        plain="noise scale", symbol="b", formula="b = sensitivity / ε of the Laplace noise"
    ),
    "sensitivity": Term(
        plain="sensitivity",
        symbol="Δ",
        formula="Δ: how much one {user}'s data can move the noiseless value",
    ),
    "chop_user": Term(
        plain="drop {users} present in too many hexagons",
        symbol="CHOP-USER",
        formula="CHOP-USER: keep each {user} in at most G_max grids so ε adds up less (SPEC §5)",
    ),
}


def _fill(text: str, units: Units) -> str:
    return text.format(user=units.user, users=units.users, unit=units.value)


def plain(key: str, units: Units | None = None) -> str:
    """The plain label of ``key`` for these units (bus/km/h by default)."""
    return _fill(TERMS[key].plain, units or Units())


def tip(key: str, units: Units | None = None) -> str:
    """Tooltip text: ``symbol — formula``."""
    term = TERMS[key]
    return f"{term.symbol} — {_fill(term.formula, units or Units())}"


def label(key: str, units: Units | None = None, *, unit: bool = False) -> str:
    """``plain (symbol)``, with the value unit appended when ``unit`` is set."""
    units = units or Units()
    text = f"{plain(key, units)} ({TERMS[key].symbol})"
    return f"{text}, {units.value}" if unit else text
