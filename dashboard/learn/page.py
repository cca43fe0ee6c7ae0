"""Learn page: short explanations, with formulas, of the controls and charts.

The longer texts (error models, post-processing, glossary, papers) live in
``dashboard/learn/text.py``; every concept links to the lesson or chart that shows it.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.mechanisms import MECHANISMS
from core.mechanisms import docs as mechanism_docs
from dashboard.common.session import state
from dashboard.common.source import units
from dashboard.common.view import ui
from dashboard.common.view.figures import mechanism_legend
from dashboard.learn import text as text

state.init()  # keep the other pages' settings while this page is shown
u = units.current()


def _nouns(markdown: str) -> str:
    """The data's user noun and value unit in place of «user», «users» and «unit»."""
    return markdown.replace("«users»", u.users).replace("«user»", u.user).replace("«unit»", u.value)


def _see(page: str, label: str) -> None:
    """A link to the page that shows a concept (plain text when run without navigation)."""
    try:
        st.page_link(page, label=label, icon=":material/arrow_forward:")
    except Exception:  # noqa: BLE001 - StreamlitAPIException/KeyError when run without st.navigation
        st.caption(label)


st.title("Learn")
st.markdown(
    "Short explanations of what the other pages show, with the formulas of the papers (listed "
    "at the end and cited as [1]–[8]). $U$ is the largest value (values are clamped into "
    "$[0, U]$), $\\varepsilon$ the privacy loss. Plain names and their symbols: "
    "[Glossary](#glossary)."
)

st.header("HATs and what is public", anchor="hats")
st.markdown(
    _nouns(
        r"""
A **HAT** is one H3 hexagon in one timeslot. In a HAT, «user» $\ell$ has $m_\ell$ records with sum
$s_\ell$ and mean $\bar x_\ell = s_\ell / m_\ell$; there are $L$ «users» and $N = \sum_\ell m_\ell$
records, and the **true mean** to release is $f = \sum_\ell s_\ell / N$. The «users» are sorted so that
$m_1 \ge m_2 \ge \dots \ge m_L$; $m^* = m_1$, $m_* = m_L$.

As in the papers, **$L$ and the counts $\{m_\ell\}$ are treated as public**: only the speeds are
protected [1]. This dashboard is the data team's own workbench, so it also shows true values (true
means, histograms of counts) that a public release would never show.
"""
    )
)

st.header("User-level privacy", anchor="user-level")
st.markdown(
    _nouns(
        r"""
Two datasets are **neighbours** when they differ in *all* the records of one «user» (user-level), not
in one record. A mechanism $M$ is $\varepsilon$-DP when for all neighbours $D, D'$ and all sets
of outputs $S$: $\Pr[M(D) \in S] \le e^{\varepsilon} \Pr[M(D') \in S]$.
Smaller $\varepsilon$ means stronger privacy and more noise. Because a «user» may report hundreds
of times in one hexagon and hour, protecting whole «users» costs far more accuracy than protecting
single records; that cost is what this tool shows.
"""
    )
)
_see(
    text.LESSON_PAGE,
    "Lesson: pick a «user», change its values, watch the log-ratio stay within ±ε".replace(
        "«user»", u.user
    ),
)

st.header("Sensitivity and Laplace noise", anchor="sensitivity")
st.markdown(
    _nouns(
        r"""
The **sensitivity** $\Delta$ of a statistic is the most it can change between neighbours. Adding
Laplace noise $\mathrm{Lap}(b)$ with $b = \Delta/\varepsilon$ gives $\varepsilon$-DP; its
expected absolute size is $b$ and its standard deviation $\sqrt2\, b$.

**Baseline** releases the true mean: one «user» can move all its $m^*$ records from $0$ to $U$, so
$\Delta = U m^* / N$ and the release is $f + \mathrm{Lap}(U m^*/(N\varepsilon))$ — unbiased, but
the busiest «user» sets the noise.
"""
    )
)
_see(text.LESSON_PAGE, f"Lesson: the same release protecting one record vs one {u.user}")

st.header("Clipping and pseudo-users (arrays)", anchor="pseudo-users")
st.markdown(
    _nouns(
        r"""
Clipping keeps at most $m_{UB}$ records per «user»: $\Gamma_\ell = \min(m_\ell, m_{UB})$, each kept
record replaced by the «user»'s mean $\bar x_\ell$. The kept records are packed into **arrays**
(pseudo-users) of capacity $m_{UB}$ [1], and the release averages the array means
$\bar A_i = \sum_{\ell \in A_i} \Gamma_\ell \bar x_\ell / w(A_i)$:

* **BestFit** puts each «user» whole into one array (the fullest one with room), so one «user» moves
  one array mean by at most $U$: $\Delta = U/\bar K$ with $\bar K$ non-empty arrays.
* **WrapAround** lays the records end to end and cuts full arrays of length $m_{UB}$, keeping
  $K = \lfloor \sum_\ell \Gamma_\ell / m_{UB} \rfloor$; a «user» can straddle two arrays, and the
  papers charge $2U/K$ (for plain averaging the exact value is $U/K$).

Small $m_{UB}$: many arrays, little noise, but much clipping bias. Large $m_{UB}$: the reverse.
**Levy** [7] and the **quantile** mechanisms [8], [6] additionally clip the array means into a privately
chosen interval $[a, b]$ (budget split: half for the interval), then add
$\mathrm{Lap}(2(b-a)/(\bar K \varepsilon))$.
"""
    )
)
_see(
    text.ONE_HEXAGON_PAGE,
    "One hexagon: the histogram of records per «user» with m_UB marked".replace("«user»", u.user),
)

st.header("Worst-case error and choosing m_UB", anchor="worst-case")
st.markdown(
    _nouns(
        r"""
With $S(m) = \sum_\ell \min(m_\ell, m)$, Array-Averaging's worst-case error over all possible
values splits into [4]

* clipping (bias): $E_1(m) = U\,(1 - S(m)/N)$, reached when all dropped records are $U$ and all
  kept ones $0$ (the model assumes full arrays);
* noise: $E_2(m) = c\,U m / (\varepsilon S(m))$, with $c = 1$ for $E|\text{noise}|$ or $c = \sqrt2$
  for its standard deviation;

and $E(m) = E_1(m) + E_2(m)$. Its smallest minimiser is $m^{(\varepsilon)}$
(**OPT-Array-Averaging**); a minimiser always lies among the counts $\{m_\ell\}$.

**Why this spends no privacy:** $E(m)$ depends only on the counts and $U$, never on a speed.
Since the counts are public, $m_{UB}$ can be chosen by minimising $E$ before any speed is
looked at, and the whole budget $\varepsilon$ goes to the release.

For the arrays BestFit actually builds, the estimate is $\sum_\ell \alpha_\ell \bar x_\ell$ with
$\alpha_\ell = \Gamma_\ell / (\bar K\, w(\text{array of }\ell))$, so its **exact worst-case bias**
is $\frac U2 \sum_\ell |\alpha_\ell - m_\ell/N|$. It can be above or below $E_1$; the One-hexagon
page shows both, labelled.

Other defaults: the **median** count (Array-Averaging); Levy's
$m^{(L)} = \arg\max_m \sum_\ell \min(m_\ell, m)/\sqrt m$; the convex proxy $m^{(O,2)}$
minimising $1 - S(m)/N + \max(m, N/L)/m^*$.
"""
    )
)
_see(text.ONE_HEXAGON_PAGE, "One hexagon: the chart of E(m) split into clipping E1 and noise E2")

st.header("Two error models: worst case vs this dataset", anchor="error-models")
st.markdown(text.error_models(u))
_see(text.ONE_HEXAGON_PAGE, "One hexagon: worst case (E) beside simulated releases and their error")

st.header("The m^(ε) staircase", anchor="staircase")
st.markdown(
    _nouns(
        r"""
Write $t = 1/\varepsilon$. Each candidate $m$ gives a straight line $E = A_m + B_m t$ with
$A_m = E_1(m)$ and $B_m = cUm/S(m)$, so $\min_m E$ is the **lower envelope** of at most $L$ lines.
As $\varepsilon$ grows ($t$ falls) the noise matters less and the best $m$ can only grow:
$m^{(\varepsilon)}$ is a non-decreasing **staircase** in $\varepsilon$, and its breakpoints are
where two neighbouring lines of the envelope cross — computed exactly, without a grid of
$\varepsilon$ values.
"""
    )
)
_see(text.ONE_HEXAGON_PAGE, "One hexagon: the m^(ε) staircase chart")

st.header("Worst-case-optimal bounding", anchor="opt-bounding")
st.markdown(
    _nouns(
        r"""
**opt-bounding** [5] clips each «user»'s mean into its own interval $[a_\ell, b_\ell]$ chosen
from the counts: with $T_\varepsilon$ the $\lceil 2/\varepsilon\rceil$-th largest of
$\{U m_\ell\}$, $a_\ell = \max((Um_\ell - T_\varepsilon)/(2m_\ell), 0)$ and
$b_\ell = \min((Um_\ell + T_\varepsilon)/(2m_\ell), U)$. Its sensitivity is $T_\varepsilon/N$
and its worst-case error is
"""
    )
)
st.latex(
    r"E^{OPT}(\varepsilon) = \frac{1}{N}\Big(\sum_\ell \max\big(\tfrac{U m_\ell - T_\varepsilon}{2},"
    r" 0\big) + \frac{T_\varepsilon}{\varepsilon}\Big)"
)
st.markdown(
    r"For $\varepsilon \ge 2$, $T_\varepsilon = U m^*$ and it is Baseline. AKMV [6] instead "
    r"estimates one common threshold privately, spending half of $\varepsilon$ on it."
)


# Generated from the registry (core.mechanisms.MECHANISMS): a new mechanism appears here by itself.
st.header("Mechanisms", anchor="mechanisms")
st.markdown(text.cite(mechanism_docs.markdown_sections()))  # papers cited as [n]
ui.chart(mechanism_legend(list(MECHANISMS)), key="mechanism_colours")

st.header("Monte-Carlo error and simulated releases", anchor="monte-carlo")
st.markdown(
    _nouns(
        r"""
The Monte-Carlo curve reports the papers' mean absolute error
$\frac1n \sum_{i \le n} |M^{(i)}(D) - f(D)|$ over $n$ independent runs (all of a mechanism's
randomness redrawn, interval estimation included), with a fixed seed so the figures are
reproducible.

A **simulated** run releases nothing. A **published** release is different: its noise comes from
a vetted sampler that resists floating-point attacks (OpenDP), its randomness is never seeded by
the user, and it is recorded with its $\varepsilon$ so that asking again returns the same value
instead of fresh noise that could be averaged away.
"""
    )
)
_see(text.ONE_HEXAGON_PAGE, "One hexagon: simulated releases and the Monte-Carlo error against ε")

st.header("Clamping a release into its range is free", anchor="post-processing")
st.markdown(text.post_processing(u))


# The Whole-city page keeps its text beside it, as markdown.
st.header("Many grids at once: the whole city", anchor="city")
_CITY = (Path(__file__).resolve().parent / "city.md").read_text(encoding="utf-8")
st.markdown(_CITY.split("\n", 1)[1] if _CITY.startswith("## ") else _CITY)
_see(text.CITY_PAGE, "Whole city: every grid at once, the three accountings and CHOP-USER")

st.header("Glossary", anchor="glossary")
st.markdown(
    "Plain names first; the symbols and formulas are the papers'. The last column says where "
    "each one is shown."
)
st.markdown(text.glossary_markdown(u))

st.header("The papers", anchor="papers")
st.markdown(text.papers_markdown())
