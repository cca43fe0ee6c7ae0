"""One hexagon's words: select-box labels, rule names, the headline table, a plan's note.

Plain functions of values (no ``st.*`` call), so the page stays thin and the texts are tested
alone. Units come in as a :class:`~dashboard.common.source.units.Units`; the glossary's plain
names come first, symbols second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.mechanisms import MECHANISMS, get_rule
from dashboard.common.source.units import Units
from dashboard.hexagon import glossary as g
from dashboard.hexagon import state as hs


def help_text(key: str, units: Units, extra: str = "") -> str:
    """A widget's help: the glossary's tip for ``key``, then ``extra``."""
    return f"{g.tip(key, units)}{(' ' + extra) if extra else ''}"


def plan_note(p, units: Units) -> str | None:
    """One line on a plan that did not set ε exactly (out of the page's range, unreachable…)."""
    u = units.value
    title = MECHANISMS[p.mechanism].title
    if p.status == "unreachable":
        return (
            f"No ε up to {hs.EPSILON_MAX:g} brings {title}'s worst case within {p.target:g} {u} "
            f"(it never gets below {p.floor:.3g} {u}, the clipping error of its m_UB rule). "
            "ε is unchanged."
        )
    if p.status == "any":
        return f"Every ε meets {p.target:g} {u} for {title}; ε is unchanged."
    if p.epsilon is not None and not hs.EPSILON_MIN <= p.epsilon <= hs.EPSILON_MAX:
        return (
            f"{title} meets {p.target:g} {u} from ε = {p.epsilon:.4g}, outside this page's "
            f"range [{hs.EPSILON_MIN:g}, {hs.EPSILON_MAX:g}]; ε is set to the nearest end."
        )
    return None


def rows(head: pd.DataFrame, *names: str) -> list[tuple]:
    """The columns ``names`` of ``head``, row by row, as tuples (numpy scalars; ``pd.NA`` where
    an integer column has none). ``DataFrame.itertuples`` builds a namedtuple class and takes
    every column through ``iloc`` on each call: milliseconds per ε step for a five-row table."""
    return list(zip(*(head[n].to_numpy() for n in names), strict=True))


def headline_table(head: pd.DataFrame, rules: dict[str, str], units: Units, m_ub: int) -> str:
    """The headline as a Markdown table: numbers only, units in the column labels (no wrapping
    of numbers, nothing truncated)."""
    u = units.value
    lines = [
        f"| mechanism | records kept per {units.user} | typical error ({u}) "
        f"| 90 % within ± ({u}) | worst case ({u}) | at your m_UB = {m_ub}: worst case ({u}) |",
        "|---|---|--:|--:|--:|--:|",
    ]
    columns = ("mechanism", "title", "note", "m_ub", "typical", "bound90", "worst_case",
               "worst_case_yours")  # fmt: skip
    for mechanism, title, note, m, typical, bound90, worst, yours in rows(head, *columns):
        own = "all" if pd.isna(m) else f"{int(m)} ({rules.get(mechanism, 'rule')})"
        if pd.isna(typical):
            lines.append(f"| **{title}** | {note} | | | | |")
            continue
        lines.append(
            f"| **{title}** | {own} | {num(typical)} | ±{num(bound90)} "
            f"| {num(worst)} | {num(yours)} |"
        )
    return "\n".join(lines)


def num(value: float) -> str:
    """Three significant digits; "—" where there is no number (no worst case in SPEC, no m_UB)."""
    return "—" if value is None or pd.isna(value) or not np.isfinite(value) else f"{value:.3g}"


def hat_option(row: dict, rank: int, units: Units) -> str:
    """A short select-box label that fits the sidebar: '#1 · 03-05 15:00 · 205 buses'."""
    slot = str(row["slot"])
    if len(slot) == 16 and slot[10] == "T":  # absolute window 'YYYY-MM-DDTHH:MM'
        slot = f"{slot[5:10]} {slot[11:]}"
    return f"#{rank} · {slot} · {units.count(int(row['users']))}"


def rule_name(name: str, units: Units) -> str:
    """A rule's plain name first, its symbol second ("Levy's rule, m^(L)")."""
    rule = get_rule(name)
    if name not in g.TERMS:
        return rule.label
    text = g.plain(name, units)
    return text if rule.label in text else f"{text}, {rule.label}"


def rule_help(name: str) -> str:
    rule = get_rule(name)
    users = [m.title for m in MECHANISMS.values() if m.m_ub_rule == name]
    return f"Set m_UB to {rule.label}: {rule.help}. The default of {', '.join(users)}."
