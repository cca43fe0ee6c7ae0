"""A cached call into :func:`core.experiments.run_experiment` for the Experiments page
(:func:`dashboard.common.cache.cached`).

Arguments are parameters (the experiment's id, runs, seed, fresh), so they form the cache key;
the page and ``hexplorer reproduce ID --runs N --seed S`` show the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from core.experiments import data_table, get_experiment, run_experiment
from dashboard.common.cache import cached


@dataclass(frozen=True, kw_only=True, eq=False)
class Shown:
    """What the page shows of one computed experiment (picklable for the cache)."""

    table: pd.DataFrame
    holds: bool
    evidence: str
    runs: int
    seed: int
    fresh: bool


@cached(max_entries=32)
def outcome(experiment_id: str, runs: int, seed: int, fresh: bool) -> Shown:
    """The experiment's table and its claim check (cached by the parameters)."""
    out = run_experiment(experiment_id, runs=runs, seed=seed, fresh=fresh)
    return Shown(
        table=out.table,
        holds=out.holds,
        evidence=out.evidence,
        runs=out.runs,
        seed=out.seed,
        fresh=out.fresh,
    )


def csv_bytes(experiment_id: str, shown: Shown) -> bytes:
    """The table as ``hexplorer reproduce`` writes data.csv (with experiment, runs, seed)."""
    table = data_table(get_experiment(experiment_id), shown.table, runs=shown.runs, seed=shown.seed)
    return table.to_csv(index=False).encode("utf-8")
