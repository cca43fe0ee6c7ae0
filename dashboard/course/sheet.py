"""The teacher's sheet: the six questions and their exact answers for the data in use (Markdown).

Built from :mod:`core.course`'s answers and the course's words (:mod:`dashboard.course.steps`);
no Streamlit, so it is tested as text.
"""

from __future__ import annotations

from core.course import Course
from dashboard.common.source.units import Units
from dashboard.course.steps import text


def markdown(c: Course, u: Units, *, data: str, link: str | None = None, version: str = "") -> str:
    """The sheet as Markdown: one section per step (question, exact answer, what is accepted)."""
    lines = [
        "# dp-hexplorer course: the teacher's sheet",
        "",
        f"Data: **{data}**; hexagon-hour **{c.hat}** (steps 1–5) and the hexagons of its hour "
        "(step 6). The answers are computed from this data; another dataset or hexagon-hour "
        "has other answers.",
        "",
    ]
    if link:
        lines += [f"Open the course at step 1: <{link}> (add `?step=3` to start at step 3).", ""]
    for a in c.answers:
        t = text(a, u)
        lines += [
            f"## Step {a.step}: {t.title}",
            "",
            f"**Question.** {t.question}",
            "",
            f"**Exact answer.** {t.answer}",
            "",
            f"**Accepted.** {t.accepted}",
            "",
            f"**Hint after a wrong try.** {t.hint}",
            "",
            f"**Explanation after a right one.** {t.explanation}",
            "",
        ]
    if version:
        lines.append(f"_dp-hexplorer {version}_")
    return "\n".join(lines) + "\n"
