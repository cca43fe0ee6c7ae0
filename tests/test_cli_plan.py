"""`hexplorer plan` and `hexplorer worstcase --all`: JSON/CSV/GeoJSON equal core's numbers; bad
input is one line and status 2."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core import plan
from core.citywide import errors
from core.citywide.gridset import grid_set
from core.cli import main
from core.data import hat_data, load_demo, prepare

SLOT = "2024-03-05T08:00"


@pytest.fixture(scope="module")
def demo():
    return prepare(load_demo()).summaries


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(capsys, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def test_plan_default_hat_equals_core(capsys, demo):
    out = run_json(capsys, "plan", "--target-error", "2")
    hat = hat_data(demo)
    want = plan.epsilon_for_error(hat.counts, 65.0, 2.0)
    assert out["hat"] == hat.hat
    assert (out["status"], out["epsilon"], out["m_ub"], out["worst_case_error"]) == (
        "ok", want.epsilon, want.m_ub, want.worst_case_error,
    )  # fmt: skip
    assert out["mechanism"] == "opt-arrayavg"
    out = run_json(
        capsys, "plan", "--target-error", "3", "--mechanism", "opt-bounding",
        "--noise-measure", "std",
    )  # fmt: skip
    want = plan.epsilon_for_error(hat.counts, 65.0, 3.0, "opt-bounding", "std")
    assert out["epsilon"] == want.epsilon and out["m_ub"] is None


def test_plan_all_equals_core(capsys, demo):
    out = run_json(
        capsys, "plan", "--target-error", "2", "--all", "--slot-filter", SLOT, "--coverage", "0.75"
    )
    grids = grid_set(demo, slot=SLOT)
    want = plan.city_plan(
        errors.error_table(grids, upper=65.0), 2.0, coverage=0.75, grids=grids
    ).to_dict()
    for key in ("epsilon", "coverage", "hats_reaching", "hats_total", "user_loss", "missing"):
        assert out[key] == want[key], key
    assert out["status"] == "ok" and out["slot"] == SLOT


def test_plan_monte_carlo_for_a_mechanism_without_worst_case(capsys, demo):
    out = run_json(
        capsys, "plan", "--target-error", "5", "--mechanism", "levy", "--trials", "300",
        "--seed", "4",
    )  # fmt: skip
    want = plan.epsilon_for_error_mc(
        hat_data(demo), 5.0, "levy", rng=np.random.default_rng(4), n_runs=300
    )
    assert (out["epsilon"], out["mae"], out["standard_error"]) == (
        want.epsilon, want.value, want.standard_error,
    )  # fmt: skip


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plan", "--target-error", "-1"], "target"),
        (["plan", "--target-error", "2", "--all", "--coverage", "1.5"], "coverage"),
        (["plan", "--target-error", "2", "--all", "--mechanism", "levy"], "analytic"),
        (["plan", "--target-error", "2", "--slot-filter", SLOT], "needs --all"),
        (["worstcase", "--epsilon", "1", "--all", "--mechanism", "levy"], "--trials"),
        (["worstcase", "--epsilon", "1", "--output", "x.csv"], "needs --all"),
        (["worstcase", "--epsilon", "1", "--all", "--output", "x.txt"], "--output"),
        (["worstcase", "--epsilon", "1", "--all", "--day", "1999-01-01"], "day"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    lines = [line for line in err.splitlines() if not line.startswith("hexplorer: note:")]
    assert len(lines) == 1 and message in lines[0]


def test_worstcase_all_json_equals_core(capsys, demo):
    rows = run_json(
        capsys, "worstcase", "--all", "--slot-filter", SLOT, "--epsilon", "0.5", "2",
        "--mechanism", "opt-bounding",
    )  # fmt: skip
    table = errors.error_table(grid_set(demo, slot=SLOT), upper=65.0)
    want = pd.concat(
        [errors.errors_at(table, e, "opt-bounding").frame() for e in (0.5, 2.0)],
        ignore_index=True,
    )
    assert [r["hat"] for r in rows] == want["hat"].tolist()
    assert [r["worst_case_error"] for r in rows] == want["worst_case_error"].tolist()
    assert all(r["m_ub"] is None for r in rows)
    assert set(rows[0]) >= set(errors.ERROR_COLUMNS)


def test_worstcase_all_csv_and_geojson(capsys, demo, tmp_path):
    csv = tmp_path / "errors.csv"
    status, out, err = run(capsys, "worstcase", "--all", "--epsilon", "1", "--output", csv)
    assert status == 0, err
    got = pd.read_csv(csv)
    want = errors.errors_at(errors.error_table(grid_set(demo), upper=65.0), 1.0).frame()
    assert got["hat"].tolist() == want["hat"].tolist()
    assert got["m_ub"].tolist() == want["m_ub"].astype(int).tolist()
    np.testing.assert_allclose(got["worst_case_error"], want["worst_case_error"], rtol=1e-15)
    status, out, err = run(capsys, "worstcase", "--all", "--epsilon", "1", "--output", csv)
    assert status == 2 and "--force" in err  # no silent overwrite
    gj = tmp_path / "errors.geojson"
    status, out, err = run(
        capsys, "worstcase", "--all", "--slot-filter", SLOT, "--epsilon", "1", "--output", gj,
        "--mechanism", "levy", "--trials", "50",
    )  # fmt: skip
    assert status == 0, err
    fc = json.loads(gj.read_text())
    props = fc["features"][0]["properties"]
    assert props["mechanism"] == "levy" and props["worst_case_error"] is None
    assert props["q90_error"] > 0 and props["trials"] == 50
    assert fc["features"][0]["geometry"]["type"] == "Polygon"
