"""Every experiment of the catalogue runs, writes its files, and its claim check can fail.

Few runs everywhere: these tests show that the pipeline works and that each check reads the
numbers (a case built to fail fails), not that the claims hold (docs/reproduction.md records
that, at full size).
"""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest

from core.errors import HexplorerError
from core.experiments import CATALOGUE, Experiment, get_experiment, run_experiment, tidy_table
from core.experiments import compute as cx

RUNS = 20
IDS = [e.id for e in CATALOGUE]


def swap(a: str, b: str):
    """Swap the y values of two series: the claim's ranking is turned round."""

    def mutate(t: pd.DataFrame) -> pd.DataFrame:
        t = t.copy()
        ia, ib = t["series"] == a, t["series"] == b
        ya, yb = t.loc[ia, "y"].to_numpy(), t.loc[ib, "y"].to_numpy()
        t.loc[ia, "y"], t.loc[ib, "y"] = yb, ya
        return t

    return mutate


def scale(series: str, factor: float, panel: str | None = None):
    def mutate(t: pd.DataFrame) -> pd.DataFrame:
        t = t.copy()
        rows = t["series"] == series
        if panel is not None:
            rows &= t["panel"] == panel
        t.loc[rows, "y"] *= factor
        return t

    return mutate


def reverse_staircase(t: pd.DataFrame) -> pd.DataFrame:
    t = t.copy()
    rows = t["series"] == "m^(ε)"
    t.loc[rows, "y"] = t.loc[rows, "y"].to_numpy()[::-1]
    return t


def dip_between_counts(t: pd.DataFrame) -> pd.DataFrame:
    """E(m) made smallest at an m that is no user's count (the ITMS-like counts skip 416)."""
    from core.experiments import itms_like_counts

    assert 416 not in set(itms_like_counts().tolist())
    t = t.copy()
    t.loc[(t["series"] == "E(m)") & (t["x"] == 416), "y"] = 0.0
    return t


# One case built to fail per experiment (a new experiment needs one here).
FAILING = {
    "spatio-temporal-fig1": swap("levy", "levy-wrap"),
    "spatio-temporal-fig2": swap("baseline", "levy"),
    "spatio-temporal-fig3": swap("levy", "baseline"),
    "spatio-temporal-fig4": swap("quantile-fixed", "baseline"),
    "spatio-temporal-fig5": reverse_staircase,
    "real-world-fig1": swap("baseline", "arrayavg-best"),
    "real-world-fig2a": swap("levy", "quantile-fixed"),
    "real-world-fig2b": swap("arrayavg-best", "baseline"),
    "real-world-worstcase": dip_between_counts,
    "real-world-staircase": reverse_staircase,
    "real-world-baseline": scale("core.worstcase.baseline_error", 1.001),
    "bounding-fig2": swap("opt-bounding", "akmv"),
    "bounding-fig3": swap("opt-bounding", "baseline"),
    "slides-privacy-loss": swap("K ε (CHOP-USER)", "ε max G_ℓ (by users)"),
    "slides-grid-errors": scale("after CHOP-USER", 1.01, panel="largest E_g"),
}


@pytest.fixture(scope="module")
def outcomes():
    return {}


def outcome_of(exp: Experiment, cache: dict):
    if exp.id not in cache:
        cache[exp.id] = run_experiment(exp, runs=RUNS, seed=5)
    return cache[exp.id]


def test_every_experiment_has_a_failing_case():
    assert sorted(FAILING) == sorted(IDS)


def test_catalogue_entries_are_complete():
    for e in CATALOGUE:
        assert e.paper_title and e.figure and e.plots and e.claim and e.setting
        assert e.function.startswith("core.experiments.compute.")
        assert "seed 0" not in e.setting and ".txt" not in e.setting  # papers by title only
    assert len(set(IDS)) == len(IDS)


@pytest.mark.usefixtures("small_city_grids")
@pytest.mark.parametrize("experiment_id", IDS)
def test_claim_check_fails_on_a_case_built_to_fail(experiment_id, outcomes):
    exp = get_experiment(experiment_id)
    out = outcome_of(exp, outcomes)
    bad = FAILING[experiment_id](out.table)
    holds, evidence = exp.check(bad)
    assert holds is False, evidence
    assert evidence


@pytest.mark.usefixtures("small_city_grids")
@pytest.mark.parametrize("experiment_id", IDS)
def test_experiment_runs_and_writes_its_files(experiment_id, outcomes, tmp_path):
    from core.cli.reproduce import write_outcome
    from dashboard.experiments.render import render_folder

    exp = get_experiment(experiment_id)
    out = outcome_of(exp, outcomes)
    assert list(out.table.columns) == list(cx.COLUMNS)
    assert len(out.table) > 0 and np.isfinite(out.table["y"]).all()
    record = write_outcome(out, tmp_path / exp.id)
    folder = tmp_path / exp.id
    claim = json.loads((folder / "claim.json").read_text(encoding="utf-8"))
    assert claim["id"] == exp.id and claim["claim"] == exp.claim
    assert claim["holds"] is out.holds and claim["evidence"] == out.evidence
    assert record["files"] == ["data.csv", "claim.json"]
    data = pd.read_csv(folder / "data.csv")
    # the columns are named after the figure's axes, and read back to the same table
    axes = [exp.x_column, exp.y_column, f"{exp.y_column}_se"]
    assert list(data.columns[:5]) == ["panel", "series", *axes]
    assert not {"x", "y", "y_se"} & set(data.columns)
    back = tidy_table(exp, pd.read_csv(folder / "data.csv", keep_default_na=False, na_values=[""]))
    pd.testing.assert_frame_equal(
        back[["x", "y", "y_se"]].astype(float), out.table[["x", "y", "y_se"]].astype(float)
    )
    assert back["series"].tolist() == out.table["series"].astype(str).tolist()
    if exp.monte_carlo:
        assert (data["runs"] == RUNS).all()
    # the figure is drawn outside core, from those two files
    assert render_folder(folder) == ["figure.html"]
    page = (folder / "figure.html").read_text(encoding="utf-8")
    assert "<script src=" not in page  # plotly.js inline: opens offline
    assert html.escape(exp.claim) in page


def test_runs_and_seed_reach_the_computation():
    a = run_experiment("bounding-fig3", runs=RUNS, seed=1).table
    b = run_experiment("bounding-fig3", runs=RUNS, seed=1).table
    c = run_experiment("bounding-fig3", runs=RUNS, seed=2).table
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["y"], c["y"])


def test_fresh_data_per_run_is_an_option_of_the_bounding_figures():
    fixed = run_experiment("bounding-fig2", runs=4, seed=1)
    fresh = run_experiment("bounding-fig2", runs=4, seed=1, fresh=True)
    assert fresh.fresh and not fixed.fresh
    assert len(fresh.table) == len(fixed.table)
    assert not np.allclose(fresh.table["y"], fixed.table["y"])
    with pytest.raises(HexplorerError, match="fixed dataset"):
        run_experiment("spatio-temporal-fig2", runs=4, fresh=True)


def test_bad_parameters_are_one_clear_error():
    with pytest.raises(HexplorerError, match="Unknown experiment"):
        get_experiment("fig-99")
    with pytest.raises(HexplorerError, match="runs"):
        run_experiment("real-world-baseline", runs=0)
    with pytest.raises(HexplorerError, match="seed"):
        run_experiment("real-world-baseline", runs=2, seed=-1)


def test_shared_computations_are_computed_once_per_cache():
    cache: dict = {}
    a = run_experiment("spatio-temporal-fig2", runs=RUNS, seed=3, cache=cache)
    b = run_experiment("real-world-fig1", runs=RUNS, seed=3, cache=cache)
    assert len(cache) == 1
    pd.testing.assert_frame_equal(a.table, b.table)
