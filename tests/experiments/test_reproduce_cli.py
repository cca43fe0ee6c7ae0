"""``hexplorer reproduce``: the listing, one experiment, all of them (reduced runs), errors."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.experiments import CATALOGUE
from dashboard.experiments import render


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_list_json_is_the_catalogue(capsys):
    status, out, _ = run(capsys, "reproduce", "--list", "--json")
    assert status == 0
    items = json.loads(out)
    assert [i["id"] for i in items] == [e.id for e in CATALOGUE]
    assert all(set(i) == {"id", "paper", "figure", "claim"} for i in items)
    titles = {i["paper"] for i in items}
    assert "Bounding User Contributions for User-Level Differentially Private Mean Estimation" in (
        titles
    )


def test_one_experiment_writes_data_and_claim_then_render_draws_it(capsys, tmp_path):
    out_dir = tmp_path / "fig"
    status, out, err = run(
        capsys,
        "reproduce",
        "real-world-baseline",
        "--runs",
        50,
        "--seed",
        3,
        "--output",
        out_dir,
        "--json",
    )
    assert status == 0, err
    result = json.loads(out)
    assert sorted(p.name for p in out_dir.iterdir()) == ["claim.json", "data.csv"]
    assert f"python -m dashboard.experiments.render {out_dir}" in err  # where the figure is
    assert render.main([str(out_dir)]) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["claim.json", "data.csv", "figure.html"]
    claim = json.loads((out_dir / "claim.json").read_text(encoding="utf-8"))
    assert {"id", "claim", "holds", "evidence"} <= set(claim)
    assert claim["id"] == "real-world-baseline" and claim["runs"] == 50 and claim["seed"] == 3
    assert result["holds"] == claim["holds"]
    # A second run into the same folder is refused, then allowed with --force.
    status, _, err = run(capsys, "reproduce", "real-world-baseline", "--output", out_dir)
    assert status == 2 and "--force" in err and err.count("\n") == 1
    status, _, err = run(
        capsys, "reproduce", "real-world-baseline", "--runs", 5, "--output", out_dir, "--force"
    )
    assert status == 0, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "nope", "--output", "{tmp}/x"], "Unknown experiment"),
        (["reproduce", "real-world-fig1"], "--output"),
        (["reproduce"], "Name an experiment"),
        (["reproduce", "real-world-fig1", "--runs", "0", "--output", "{tmp}/x"], "runs"),
        (["reproduce", "real-world-fig1", "--fresh", "--output", "{tmp}/x"], "fixed dataset"),
        (["reproduce", "all", "--fresh", "--output", "{tmp}/x"], "bounding"),
        (["reproduce", "real-world-fig1", "--output", "{tmp}/no/such/dir"], "does not exist"),
        (["reproduce", "--list", "real-world-fig1"], "not both"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, tmp_path, argv, message):
    status, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert status == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


@pytest.mark.usefixtures("small_city_grids")
def test_reproduce_all_at_reduced_runs(capsys, tmp_path):
    out_dir = tmp_path / "all"
    status, out, err = run(capsys, "reproduce", "all", "--runs", 10, "--output", out_dir, "--json")
    assert status == 0, err
    results = json.loads(out)
    assert [r["id"] for r in results] == [e.id for e in CATALOGUE]
    assert render.main([str(out_dir)]) == 0
    for e in CATALOGUE:
        assert (out_dir / e.id / "claim.json").is_file()
        assert (out_dir / e.id / "figure.html").is_file()
    assert f"[{len(CATALOGUE)}/{len(CATALOGUE)}] done" in err  # the progress line
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert len(summary) == len(CATALOGUE)
    md = (out_dir / "reproduction.md").read_text(encoding="utf-8")
    assert "--runs 10" in md
    for e in CATALOGUE:
        assert f"`{e.id}`" in md
    for r in summary:
        if not r["holds"]:
            assert "**Why:**" in md


def test_render_says_what_is_wrong_in_one_line(capsys, tmp_path):
    assert render.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "claim.json" in err


def test_busiest_day_of_the_demo_city():
    from core.data import ColumnMap, PrepConfig, load_demo, prepare
    from core.experiments import compute as cx

    grids, day = cx.busiest_day_grids()
    summaries = prepare(load_demo(), ColumnMap(), PrepConfig()).summaries
    per_day = summaries.groupby(summaries["slot"].str[:10])["m"].sum()
    assert day == per_day.idxmax()
    assert int(grids.records.sum()) == int(per_day.max())


def test_docs_reproduction_lists_every_experiment():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reproduction.md").read_text("utf-8")
    assert "Generated by `hexplorer reproduce all" in doc
    for e in CATALOGUE:
        assert f"`{e.id}`" in doc, f"docs/reproduction.md is stale: rerun reproduce all ({e.id})"
