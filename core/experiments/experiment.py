"""What one reproduced figure is: :class:`Experiment` (the paper, the claim, how to compute and
check it), :class:`Outcome` (computed and checked) and its data file (:func:`data_table`, columns
named after the axes, and its inverse :func:`tidy_table`). The entries are in
:mod:`core.experiments.catalogue`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from core import references
from core.errors import HexplorerError
from core.params import check_positive_int

__all__ = ["PAPERS", "Experiment", "Outcome", "data_table", "tidy_table"]

#: The papers whose figures are reproduced, by key: (title, authors) (:mod:`core.references`).
PAPERS = {p.key: (p.title, p.authors) for p in references.PAPERS[:5]}


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """One figure (or checked number) of a paper, and how to reproduce it.

    Attributes
    ----------
    id : str
        Short, stable, lower case (``"spatio-temporal-fig3"``).
    paper : str
        Key of :data:`PAPERS`.
    figure : str
        As the paper numbers it ("Fig. 3"), or what the number is.
    plots : str
        What is plotted against what.
    claim : str
        The paper's claim, one sentence (what :attr:`check` tests).
    setting : str
        The data used, and what it stands in for.
    compute : callable
        ``compute(runs=, seed=, fresh=) -> DataFrame`` (:mod:`core.experiments.compute`).
    check : callable
        ``check(table) -> (holds, evidence)`` (:mod:`core.experiments.claims`).
    x_label, y_label : str
        Axis titles; ``log_x``/``log_y`` the axis types.
    default_runs : int
        Monte-Carlo runs per point at full size (1 for exact experiments).
    monte_carlo : bool
        Whether runs and seed matter.
    supports_fresh : bool
        Whether a new dataset per run (the bounding paper's protocol) is available.
    why_not : str
        Known reason the claim may not hold here (shown when it does not).
    panels : tuple of str, optional
        The panels of the computed table this figure shows and checks (None: all).
    x_column, y_column : str
        The names of the axes in ``data.csv`` (:func:`data_table`): the table's ``x`` and ``y``,
        and ``<y_column>_se`` its ``y_se`` (``epsilon``, ``mae``, ``mae_se`` by default).
    """

    id: str
    paper: str
    figure: str
    plots: str
    claim: str
    setting: str
    compute: Callable[..., pd.DataFrame]
    check: Callable[[pd.DataFrame], tuple[bool, str]]
    x_label: str = "ε"
    y_label: str = "MAE (km/h)"
    log_x: bool = False
    log_y: bool = False
    default_runs: int = 10_000
    monte_carlo: bool = True
    supports_fresh: bool = False
    why_not: str = ""
    panels: tuple[str, ...] | None = None
    x_column: str = "epsilon"
    y_column: str = "mae"

    def __post_init__(self) -> None:
        if not self.id or self.id != self.id.strip().lower() or " " in self.id:
            raise HexplorerError(f"An experiment id must be lower case, no spaces: {self.id!r}.")
        if self.paper not in PAPERS:
            raise HexplorerError(f"Unknown paper key {self.paper!r}; known: {sorted(PAPERS)}.")
        if not self.claim.strip() or not self.setting.strip():
            raise HexplorerError(f"Experiment {self.id!r} needs a claim and a setting.")
        check_positive_int("default_runs", self.default_runs)

    @property
    def paper_title(self) -> str:
        """The paper's title."""
        return PAPERS[self.paper][0]

    @property
    def authors(self) -> str:
        """The paper's authors."""
        return PAPERS[self.paper][1]

    @property
    def function(self) -> str:
        """Dotted name of the core function that computes the table (with its fixed args)."""
        fn = self.compute
        if isinstance(fn, functools.partial):
            args = ", ".join(repr(a) for a in fn.args)
            return f"{fn.func.__module__}.{fn.func.__qualname__}({args})"
        return f"{fn.__module__}.{fn.__qualname__}"


@dataclass(frozen=True, kw_only=True, eq=False)
class Outcome:
    """An experiment computed and its claim checked."""

    experiment: Experiment
    table: pd.DataFrame
    holds: bool
    evidence: str
    runs: int
    seed: int
    fresh: bool

    def data_table(self) -> pd.DataFrame:
        """The table as data.csv holds it: with the experiment's id, runs and seed per row."""
        return data_table(self.experiment, self.table, runs=self.runs, seed=self.seed)

    def claim_record(self) -> dict:
        """``{"id", "claim", "holds", "evidence"}`` plus the run's parameters (claim.json)."""
        e = self.experiment
        return {
            "id": e.id,
            "claim": e.claim,
            "holds": bool(self.holds),
            "evidence": self.evidence,
            "paper": e.paper_title,
            "figure": e.figure,
            "runs": self.runs if e.monte_carlo else None,
            "seed": self.seed if e.monte_carlo else None,
            "fresh": self.fresh,
            "why_not": "" if self.holds else e.why_not,
        }


def _axis_names(experiment: Experiment) -> dict[str, str]:
    y = experiment.y_column
    return {"x": experiment.x_column, "y": y, "y_se": f"{y}_se"}


def data_table(experiment: Experiment, table: pd.DataFrame, *, runs: int, seed: int):
    """``table`` as data.csv holds it: its columns named after the axes (``panel, series,
    epsilon, mae, mae_se`` for an MAE figure; :attr:`Experiment.x_column`, ``y_column``) and
    the columns experiment, runs and seed (empty for exact experiments)."""
    mc = experiment.monte_carlo
    return table.rename(columns=_axis_names(experiment)).assign(
        experiment=experiment.id, runs=runs if mc else None, seed=seed if mc else None
    )


def tidy_table(experiment: Experiment, data: pd.DataFrame) -> pd.DataFrame:
    """The inverse of :func:`data_table`: data.csv back as the tidy table (panel, series, x, y,
    y_se) the figures and claims read."""
    back = {v: k for k, v in _axis_names(experiment).items()}
    missing = [c for c in back if c not in data.columns]
    if missing:
        raise HexplorerError(
            f"The data of {experiment.id!r} has no column {missing[0]!r} (columns: "
            f"{', '.join(map(str, data.columns))})."
        )
    out = data.rename(columns=back)[["panel", "series", "x", "y", "y_se"]].copy()
    out["panel"] = ["" if pd.isna(v) else str(v) for v in out["panel"]]  # empty: read as NaN
    out["series"] = out["series"].astype(str)
    out["y_se"] = out["y_se"].astype("float64")
    return out
