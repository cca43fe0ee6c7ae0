"""The course's words: each step's introduction, question, hint, explanation and answer line.

Every number comes from :mod:`core.course`'s :class:`~core.course.Answer` (no formula here); the
words name the data's unit and user noun. The page shows them; the teacher's sheet lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.course import STEPS, Answer
from dashboard.common.source.units import Units


@dataclass(frozen=True, kw_only=True)
class StepText:
    """What one step says."""

    title: str
    intro: str
    question: str
    hint: str
    explanation: str
    answer: str  # the exact answer, for the teacher
    accepted: str  # what the check accepts


def _eps(x: float | int | str) -> str:
    return f"{float(x):.4g}"


def text(a: Answer, u: Units) -> StepText:
    """The words of ``a``'s step for the data's units."""
    g, f = a.given, a.found
    title = STEPS[a.step - 1]
    if a.step == 1:
        k = g["factor"]
        return StepText(
            title=title,
            intro=(
                "ε is a promise about odds. Whatever one release shows, an observer's odds about "
                f"any one {u.user} (for instance, that it went fast) can change by at most a "
                "factor e^ε. Small ε: the release barely moves anyone's beliefs."
            ),
            question=(
                f"Move ε to the **largest** value at which one release can change an observer's "
                f"odds by at most ×{k:g}."
            ),
            hint=f"Watch the factor e^ε: it must stay at or below {k:g}, as close to it as the "
            "slider allows.",
            explanation=(
                f"e^ε ≤ {k:g} means ε ≤ ln {k:g} = {_eps(a.value)}. Doubling ε squares the factor: "
                f"ε = {_eps(2 * a.value)} would allow ×{k * k:g}."
            ),
            answer=f"ε = ln {k:g} = {_eps(a.value)}",
            accepted=f"ε in [{_eps(a.lo or 0)}, {_eps(a.hi or 0)}]",
        )
    if a.step == 2:
        return StepText(
            title=title,
            intro=(
                f"Two datasets are **neighbours** when they differ in one {u.user}'s records. "
                "Record-level privacy protects one record (noise for U/N); user-level privacy "
                f"protects all of one {u.user}'s records (noise for U·m*/N). Pick a {u.user}: "
                f"its records all take the value farthest from its mean, and you see the privacy "
                f"loss it would suffer if the mean were released with record-level noise at "
                f"ε = {g['epsilon']:g}."
            ),
            question=(
                f"Which {u.user} (among the {g['candidates']} busiest) would leak the most under "
                "record-level noise? Choose it and check."
            ),
            hint=f"The loss grows with the {u.user}'s number of records and with how far its "
            "values can move: try the busiest ones.",
            explanation=(
                f"{u.user.capitalize()} {a.value} would suffer a privacy loss of "
                f"{f['loss']:.4g} instead of ε = {g['epsilon']:g}: record-level noise is sized "
                f"for one record, and this {u.user} has many. User-level noise caps it at "
                f"{f['user_level_loss']:.3g} ≤ ε, with m* times more noise — which clipping "
                "(next step) brings back down."
            ),
            answer=f"{u.user} {a.value} (record-level loss {f['loss']:.4g})",
            accepted=", ".join(str(x) for x in a.accepted),
        )
    if a.step == 3:
        return StepText(
            title=title,
            intro=(
                f"Keep at most m_UB records per {u.user}. A small m_UB drops records (clipping "
                "bias E1: in the worst case every dropped record was at U); a large m_UB needs "
                "more noise (E2 grows with m_UB). The worst case E = E1 + E2 counts both."
            ),
            question=(
                f"Which m_UB gives the smallest worst case at ε = {g['epsilon']:g}? Move the "
                "slider and check."
            ),
            hint="Follow the total E on the chart, not one of its parts: it falls, then rises.",
            explanation=(
                f"m^(ε) = {a.value} gives E = {f['error']:.4g} {u.value} at ε = {g['epsilon']:g} "
                f"(values within 1 % of it count too); the median count {f['median']} is a common "
                "rule, not the best one."
            ),
            answer=f"m_UB = m^(ε) = {a.value}, E = {f['error']:.4g} {u.value}",
            accepted=_ranges(a.accepted),
        )
    if a.step == 4:
        return StepText(
            title=title,
            intro=(
                "The worst case is a bound over every dataset with these counts; releases of "
                "this data land around the true mean. Each bar counts simulated releases "
                "(OPT-Array-Averaging, clamped into [0, U]) in one bin; the shaded band is ± "
                f"{g['within']:g} {u.value}."
            ),
            question=(
                f"Find the **smallest** ε at which at least {g['level']:.0%} of releases land "
                f"within ±{g['within']:g} {u.value} of the true mean."
            ),
            hint=f"Below the answer the share within the band is under {g['level']:.0%}; above "
            "it you are giving away privacy you do not need.",
            explanation=(
                f"At ε = {_eps(a.value)}, {f['share']:.1%} of the simulated releases land within "
                f"±{g['within']:g} {u.value} (90 % of them within ±{f['q90']:.3g}). A smaller ε "
                "spreads them wider."
            ),
            answer=f"ε = {_eps(a.value)} ({f['share']:.1%} within ±{g['within']:g} {u.value})",
            accepted=f"ε in [{_eps(a.lo or 0)}, {_eps(a.hi or 0)}]",
        )
    if a.step == 5:
        return StepText(
            title=title,
            intro=(
                "For every ε there is a best m_UB, m^(ε): it minimises the worst case. As ε "
                "grows the noise shrinks and m^(ε) climbs a staircase (more records kept)."
            ),
            question=(
                f"Move ε until the worst case at m^(ε) is at most {g['target']:g} {u.value}: "
                "the **smallest** such ε."
            ),
            hint=f"Read E(m^(ε)) as you move ε: stop at the first ε where it is ≤ {g['target']:g}.",
            explanation=(
                f"ε = {_eps(a.value)} is the smallest: m^(ε) = {f['m_ub']} there, and the worst "
                f"case is exactly {f['error']:.4g} {u.value}."
            ),
            answer=f"ε = {_eps(a.value)} (m^(ε) = {f['m_ub']})",
            accepted=f"ε in [{_eps(a.lo or 0)}, {_eps(a.hi or 0)}]",
        )
    return StepText(
        title=title,
        intro=(
            f"A city releases every hexagon of the hour, each with ε. A {u.user} that crossed "
            f"G_ℓ hexagons loses G_ℓ·ε in total, so the city promises ε·max G_ℓ (here max "
            f"G_ℓ = {f['max_grids_per_user']} over {f['grids']} hexagons). CHOP-USER drops a few "
            f"(user, hexagon) pairs to lower that maximum to K without raising the worst error."
        ),
        question=(
            f"Find the **largest** ε per hexagon such that no {u.user} loses more than "
            f"{g['budget']:g} in total (ε·max G_ℓ ≤ {g['budget']:g})."
        ),
        hint=f"Divide the budget by the most hexagons one {u.user} crossed; stay at or below it.",
        explanation=(
            f"ε = {g['budget']:g} / {f['max_grids_per_user']} = {_eps(a.value)}. At that ε, "
            f"CHOP-USER lowers K to {f['k_final']} ({f['suppressed']} pairs suppressed): the "
            f"promise becomes K·ε = {f['after_chop']:.3g}, so a larger ε fits the same budget."
        ),
        answer=f"ε = {_eps(a.value)} (K after CHOP-USER = {f['k_final']})",
        accepted=f"ε in [{_eps(a.lo or 0)}, {_eps(a.hi or 0)}]",
    )


def _ranges(values) -> str:
    """'3–5, 9' for (3, 4, 5, 9)."""
    vals = sorted(int(v) for v in values)
    out, start = [], None
    for i, v in enumerate(vals):
        if start is None:
            start = v
        if i + 1 == len(vals) or vals[i + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}–{v}")
            start = None
    return ", ".join(out)
