"""The Learn page's words: the papers, the two error models, post-processing and the glossary.

Plain functions of the data's :class:`~dashboard.common.source.units.Units` returning markdown, so
the page stays thin and the texts can be tested without Streamlit. Papers are cited by number
([1]–[5], then the others), by title and author.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.references import references_markdown
from dashboard.common.source.units import Units

LESSON_PAGE = "dashboard/lessons/page.py"
ONE_HEXAGON_PAGE = "dashboard/hexagon/page.py"
CITY_PAGE = "dashboard/city/page.py"
MAP_PAGE = "dashboard/map/page.py"


_FILE_REFS = {"000": "[1]", "001": "[2]", "002": "[3]", "003": "[4]", "004": "[5]"}


def cite(markdown: str) -> str:
    """Developer references made readable: "seed 003, eq. (5)" → "[4], eq. (5)", "Amin et al.
    2019" → "[6]", and "SPEC §…" notes (the project's internal specification) dropped.

    >>> cite("seed 000 section III-B; SPEC §3.*")
    '[1] section III-B.*'
    >>> cite("Amin et al. 2019, adapted; SPEC §3 (private quantile).")
    '[6], adapted.'
    """
    out = re.sub(r"seeds? (00\d)", lambda m: _FILE_REFS.get(m.group(1), m.group(0)), markdown)
    out = re.sub(r"Amin et al\.? \(?2019\)?", "[6]", out)
    out = re.sub(r";?\s*\(?SPEC\s*§[^.;*)]*(\([^)]*\))?\)?", "", out)
    return out


def papers_markdown() -> str:
    """The reference list, one bullet per paper (:func:`core.references.references_markdown`)."""
    return references_markdown()


def error_models(u: Units) -> str:
    """The two error models: the worst case over all datasets vs this dataset's outcome; E1 vs
    the exact bias of BestFit's arrays."""
    return rf"""
**Two different questions get two different numbers.**

1. **Worst case over every dataset** — $E(m) = E_1(m) + E_2(m)$ [4]. It reads only the record
   counts and $U$, never a speed, so it can be computed (and $m_{{UB}}$ chosen from it) without
   spending privacy. It is a *bound*: it imagines the most unlucky speeds — every record that
   clipping drops at $U$ and every kept one at $0$ — plus the noise's mean size. Real data are
   rarely that unlucky.
2. **This dataset's outcome** — the simulated releases and their Monte-Carlo error. They use
   the actual speeds: clipping hurts little when the dropped records look like the kept ones
   (the usual case), so the errors seen in simulation are often far below $E$. A page showing
   "E = 34.7 {u.value}" beside releases within ±1.7 {u.value} is not a contradiction: the first
   is a guarantee for any data with these counts, the second is what happened on this data.

**Two models of the clipping error.** $E_1(m) = U\,(1 - S(m)/N)$ is the papers' model: it
assumes every array of $m$ records is *full*. The arrays BestFit actually builds are not all
full and weigh the {u.users} differently (weight
$\alpha_\ell = \Gamma_\ell / (\bar K\, w(\text{{array of }}\ell))$ instead of $m_\ell/N$), so the
**exact worst-case bias** of the release is $\frac U2 \sum_\ell |\alpha_\ell - m_\ell/N|$. It can
be larger or smaller than $E_1$ — for example larger when $m_{{UB}} = m^*$, where $E_1 = 0$ but
arrays of unequal fill still weigh records unequally. The One hexagon page shows both, labelled.
"""


def post_processing(u: Units) -> str:
    """Why clamping released values into [0, U] costs no privacy."""
    return rf"""
A noisy mean can land below $0$ or above $U$, and a noisy variance below $0$. Clamping a release
into its range — means into $[0, U]$, variances into $[0, U^2/4]$ — is **free under differential
privacy**: any function of a DP output that does not look at the data again is DP with the same
$\varepsilon$ (*post-processing*). It only ever moves a release closer to the truth, since the
true value lies in that range. The papers analyse the raw, unclamped estimates; the charts can
show either. Example: a raw release of −3 {u.value} becomes 0 {u.value}, with no extra privacy
cost.
"""


@dataclass(frozen=True, kw_only=True)
class Term:
    """A glossary entry: plain name first, then the symbol, its formula, and where it is shown."""

    plain: str
    symbol: str
    formula: str
    where: str


def glossary(u: Units) -> tuple[Term, ...]:
    """Plain names with their symbols and formulas, each linked to where it is shown."""
    one = "[One hexagon](one_hexagon)"
    return (
        Term(plain="hexagon-hour", symbol="HAT", formula="one H3 hexagon in one timeslot",
             where="[Map](./), " + one),
        Term(plain=f"{u.users} in the hexagon-hour", symbol="$L$", formula="public, as in the papers",
             where=one),
        Term(plain=f"records of {u.user} ℓ", symbol=r"$m_\ell$", formula=r"$N = \sum_\ell m_\ell$; most $m^*$, fewest $m_*$",
             where=one + " (histogram)"),
        Term(plain="true mean", symbol="$f$", formula=r"$\sum_\ell s_\ell / N$", where=one),
        Term(plain="privacy loss", symbol=r"$\varepsilon$",
             formula=r"odds change by at most $e^\varepsilon$", where="[Lesson](lesson)"),
        Term(plain="sensitivity", symbol=r"$\Delta$",
             formula=f"most one {u.user} can move the release", where="[Lesson](lesson)"),
        Term(plain="noise scale", symbol="$b$",
             formula=r"$\mathrm{Lap}(b)$, $b = \Delta/\varepsilon$; mean size $E\lvert\text{noise}\rvert = b$",
             where="[Lesson](lesson)"),
        Term(plain=f"records kept per {u.user}", symbol="$m_{UB}$",
             formula=r"$\Gamma_\ell = \min(m_\ell, m_{UB})$", where=one + " (m_UB slider)"),
        Term(plain="pseudo-users (arrays)", symbol=r"$\bar K$, $K$",
             formula="arrays of $m_{UB}$ records (BestFit, WrapAround)", where=one),
        Term(plain="clipping error", symbol="$E_1$", formula=r"$U\,(1 - S(m)/N)$",
             where=one + " (E(m) chart)"),
        Term(plain="noise error", symbol="$E_2$", formula=r"$c\,U m / (\varepsilon S(m))$",
             where=one + " (E(m) chart)"),
        Term(plain="worst-case error", symbol="$E$", formula="$E_1 + E_2$",
             where=one + " (E(m) chart)"),
        Term(plain="worst-case-optimal m_UB", symbol=r"$m^{(\varepsilon)}$",
             formula=r"smallest minimiser of $E$", where=one + " (staircase)"),
        Term(plain="Levy's m_UB", symbol="$m^{(L)}$",
             formula=r"$\arg\max_m \sum_\ell \min(m_\ell, m)/\sqrt m$", where=one + " (histogram)"),
        Term(plain="convex-proxy m_UB", symbol="$m^{(O,2)}$",
             formula=r"minimises $1 - S(m)/N + \max(m, N/L)/m^*$", where=one + " (histogram)"),
        Term(plain="opt-bounding threshold", symbol=r"$T_\varepsilon$",
             formula=r"$\lceil 2/\varepsilon\rceil$-th largest of $\{U m_\ell\}$", where=one),
        Term(plain="grids a user is in", symbol=r"$G_\ell$",
             formula=r"loss $\varepsilon \max_\ell G_\ell$", where="[Whole city](city)"),
        Term(plain="suppression for composition", symbol="CHOP-USER",
             formula="drop a user from some grids so that $K = \\max_\\ell G_\\ell$ falls",
             where="[Whole city](city)"),
    )  # fmt: skip


def glossary_markdown(u: Units) -> str:
    """The glossary as a markdown table."""
    rows = [
        "| plain name | symbol | formula | shown on |",
        "|---|---|---|---|",
        *(f"| {t.plain} | {t.symbol} | {t.formula} | {t.where} |" for t in glossary(u)),
    ]
    return "\n".join(rows)
