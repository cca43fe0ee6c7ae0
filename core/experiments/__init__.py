"""Reproduce the papers: a catalogue of their figures, each computed by ``core`` and checked.

- :mod:`~core.experiments.experiment`: what one figure is (:class:`Experiment`, :class:`Outcome`)
  and its data file (:func:`data_table`, :func:`tidy_table`);
- :mod:`~core.experiments.catalogue`: :data:`CATALOGUE` (one :class:`Experiment` per figure),
  :func:`get_experiment`, :func:`run_experiment`;
- :mod:`~core.experiments.compute`: the tables behind the figures;
- :mod:`~core.experiments.claims`: the claim checks, ``(holds, evidence)``;
- :mod:`~core.experiments.itms`: the ITMS-like HAT standing in for the papers' real data.

Figures are drawn outside ``core``: ``hexplorer reproduce`` writes each figure's data (columns
named after its axes) and its checked claim, and ``python -m dashboard.experiments.render DIR``
draws the figures from them (``dashboard.experiments.charts``).
"""

from __future__ import annotations

from core.experiments.catalogue import (
    CATALOGUE,
    PAPERS,
    Experiment,
    Outcome,
    data_table,
    get_experiment,
    run_experiment,
    tidy_table,
)
from core.experiments.itms import ITMS_SUMMARY, itms_like_counts, itms_like_hat, summary_of

__all__ = [
    "CATALOGUE",
    "ITMS_SUMMARY",
    "PAPERS",
    "Experiment",
    "Outcome",
    "data_table",
    "get_experiment",
    "itms_like_counts",
    "itms_like_hat",
    "run_experiment",
    "summary_of",
    "tidy_table",
]
