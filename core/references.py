"""The papers this project implements and cites, numbered once for every text that cites them.

Docstrings, SPEC.md, the README, the registry's references and the dashboard's Learn page cite
a paper by its number (``[4], eq. (5)``); :data:`PAPERS` says which paper each number is.
:func:`paper` finds one by its short key (the experiment catalogue names papers by key).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import HexplorerError

__all__ = ["PAPERS", "Paper", "paper", "references_markdown"]


@dataclass(frozen=True, kw_only=True)
class Paper:
    """One reference: a short key, its number, authors, title, where it appeared, and what it
    gives here."""

    key: str
    ref: str
    authors: str
    title: str
    venue: str
    gives: str


PAPERS: tuple[Paper, ...] = (
    Paper(
        key="spatio-temporal",
        ref="[1]",
        authors="V. Arvind Rameshwar, Anshoo Tandon, Prajjwal Gupta, Aditya Vikram Singh, "
        "Novoneel Chakraborty, Abhay Sharma",
        title="Mean Estimation with User-Level Privacy for Spatio-Temporal IoT Datasets",
        venue="Full version (arXiv 2401.15906)",
        gives="WrapAround and BestFit pseudo-users, Baseline, Array-Averaging, Levy, the quantile "
        "mechanisms, the bus-speed experiments, and OPT-Array-Averaging from a minimax analysis",
    ),
    Paper(
        key="multi-dimensional",
        ref="[2]",
        authors="V. Arvind Rameshwar, Anshoo Tandon and colleagues",
        title="Mean Estimation with User-Level Privacy on Multi-Dimensional IoT Datasets",
        venue="",
        gives="many grids at once, composition (a user's loss is ε times the number of grids it "
        "is in), and the algorithms with their formulas (PrivateInterval)",
    ),
    Paper(
        key="slides",
        ref="[3]",
        authors="V. Arvind Rameshwar (with A. Tandon, P. Gupta, N. Chakraborty, A. Singh, "
        "A. Sharma)",
        title="Differentially Private Release of Spatio-Temporal Data Statistics",
        venue="Seminar slides, CNI Networks Seminar 2024",
        gives="the exact sensitivities and worst-case biases of means and variances under "
        "clipping, and the CHOP-USER suppression algorithm",
    ),
    Paper(
        key="real-world",
        ref="[4]",
        authors="V. Arvind Rameshwar, Anshoo Tandon, Abhay Sharma",
        title="User-Level Differentially Private Mean Estimation for Real-World Datasets",
        venue="Conference version",
        gives="the worst-case error E(m) = E1 + E2, OPT-Array-Averaging and its convex proxy",
    ),
    Paper(
        key="bounding",
        ref="[5]",
        authors="V. Arvind Rameshwar, Anshoo Tandon",
        title="Bounding User Contributions for User-Level Differentially Private Mean Estimation",
        venue="",
        gives="the worst-case-optimal clipping of each user's mean (opt-bounding, T_ε) and its "
        "comparison with the AKMV strategy",
    ),
    Paper(
        key="akmv",
        ref="[6]",
        authors="Kareem Amin, Alex Kulesza, Andrés Muñoz Medina, Sergei Vassilvitskii",
        title="Bounding User Contributions: A Bias-Variance Trade-off in Differential Privacy",
        venue="ICML 2019",
        gives="the AKMV bounding strategy and the ε-dependent quantile",
    ),
    Paper(
        key="levy",
        ref="[7]",
        authors="Daniel Levy, Ziteng Sun, Kareem Amin, Satyen Kale, Alex Kulesza, Mehryar Mohri, "
        "Ananda Theertha Suresh",
        title="Learning with User-Level Privacy",
        venue="NeurIPS 2021",
        gives="the private interval behind the Levy mechanism",
    ),
    Paper(
        key="smith",
        ref="[8]",
        authors="Adam Smith",
        title="Privacy-Preserving Statistical Estimation with Optimal Convergence Rates",
        venue="STOC 2011",
        gives="the private quantile used by the quantile mechanisms and AKMV",
    ),
)


def paper(key: str) -> Paper:
    """The paper with short key ``key`` (e.g. ``"real-world"``).

    >>> paper("bounding").ref
    '[5]'
    """
    for p in PAPERS:
        if p.key == key:
            return p
    raise HexplorerError(f"Unknown paper key {key!r}; known: {sorted(p.key for p in PAPERS)}.")


def references_markdown() -> str:
    """The reference list, one bullet per paper, in number order."""
    return "\n".join(
        f"- {p.ref} {p.authors}. *{p.title}*."
        + (f" {p.venue}." if p.venue else "")
        + f" — {p.gives}."
        for p in PAPERS
    )
