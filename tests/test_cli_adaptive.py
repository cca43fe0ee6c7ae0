"""`hexplorer plan --adaptive`: the cover and shares equal core's adaptive_cover; bad input is one
line and status 2."""

from __future__ import annotations

import json

import pytest

from core.citywide.adaptive import adaptive_cover
from core.cli import main
from core.data import PrepConfig, load_demo, prepare

SLOT = "2024-03-05T08:00"


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_plan_adaptive_equals_core(capsys):
    status, out, err = run(
        capsys, "plan", "--adaptive", "--target-error", "3", "--resolutions", "5-8",
        "--slot-filter", SLOT, "--epsilon", "0.5", "--json",
    )  # fmt: skip
    assert status == 0, err
    got = json.loads(out)
    summ = prepare(load_demo(), config=PrepConfig(resolution=8)).summaries
    cover = adaptive_cover(summ, slot=SLOT, epsilon=0.5, target=3.0, resolutions=(5, 8))
    assert [c["cell"] for c in got["cells"]] == cover.cells.tolist()
    assert [c["resolution"] for c in got["cells"]] == cover.resolution.tolist()
    assert got["share_records"] == pytest.approx(cover.share_records)
    assert got["fixed"]["res 8"]["share_records"] == pytest.approx(cover.fixed_share_records(8))
    assert len(set(cover.resolution.tolist())) >= 2
    assert got["share_records"] > got["fixed"]["res 8"]["share_records"]
    grids_per_user = cover.summaries().groupby("user_id")["cell"].nunique()
    assert got["privacy_loss"]["by_users"] == 0.5 * grids_per_user.max()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--resolutions", "5-16"], "resolutions"),
        (["--resolutions", "5-8", "--resolution", "6"], "--resolution 6 contradicts"),
        (["--mechanism", "levy"], "analytic worst case"),
        (["--epsilon", "0"], "epsilon"),
        (["--day", "2024-03-05"], "one slot"),
        (["--slot-filter", "h99"], "slot"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    status, out, err = run(capsys, "plan", "--adaptive", "--target-error", "3", *argv)
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if not line.startswith("hexplorer: note:")]
    assert len(errors) == 1 and message in errors[0]


def _cover_on_demo(epsilon=1.0, target=3.0):
    summ = prepare(load_demo(), config=PrepConfig(resolution=7)).summaries
    slot = str(summ.loc[summ.groupby("hat")["m"].transform("sum").idxmax(), "slot"])
    return adaptive_cover(summ, slot=slot, epsilon=epsilon, target=target, resolutions=(5, 7))


def test_release_and_compose_publish_the_cover(capsys, tmp_path):
    import h3
    import pandas as pd

    cover = _cover_on_demo()
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "cells.csv"
    argv = [
        "release", "--adaptive", "--mechanism", "opt-arrayavg", "--epsilon", "1",
        "--target-error", "3", "--ledger", ledger, "--output", out, "--json",
    ]  # fmt: skip
    status, stdout, err = run(capsys, *argv)
    assert status == 0, err
    got = json.loads(stdout)
    table = pd.read_csv(out)
    assert table["cell"].tolist() == cover.cells.tolist()
    assert table["resolution"].tolist() == [h3.get_resolution(c) for c in table["cell"]]
    assert set(table["resolution"]) == {5, 6, 7}
    per_user = cover.summaries().groupby("user_id")["cell"].nunique()
    assert got["max_user_epsilon"] == 1.0 * per_user.max()  # eps per released cell it enters
    # the same request again: the recorded release, nothing charged twice
    status, stdout, _ = run(capsys, *argv[:-3], "--output", out, "--force", "--json")
    assert status == 0 and json.loads(stdout)["reused"] is True
    assert json.loads(stdout)["max_user_epsilon"] == got["max_user_epsilon"]
    # past the budget: refused, nothing recorded, no file
    refused = tmp_path / "refused.csv"
    status, _, err = run(
        capsys, "compose", "--publish", "--adaptive", "--epsilon", "1", "--target-error", "3",
        "--ledger", ledger, "--budget", str(got["max_user_epsilon"] + 1), "--output", refused,
    )  # fmt: skip
    assert status == 2 and "budget" in err and not refused.exists()
    city = tmp_path / "city.geojson"
    status, stdout, err = run(
        capsys, "compose", "--publish", "--adaptive", "--epsilon", "0.5", "--target-error", "3",
        "--ledger", tmp_path / "city.sqlite", "--output", city, "--json",  # no budget set
    )  # fmt: skip
    assert status == 0, err
    features = json.loads(city.read_text())["features"]
    assert [f["properties"]["resolution"] for f in features] == [
        h3.get_resolution(f["properties"]["cell"]) for f in features
    ]
    assert len({f["properties"]["resolution"] for f in features}) >= 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["release", "--adaptive", "--mechanism", "levy", "--epsilon", "1", "--target-error", "3",
          "--output", "x.csv"], "analytic worst case"),
        (["release", "--adaptive", "--mechanism", "baseline", "--epsilon", "1",
          "--target-error", "3"], "--output"),
        (["release", "--adaptive", "--mechanism", "baseline", "--epsilon", "1", "--seed", "1",
          "--target-error", "3", "--output", "x.csv"], "--seed"),
        (["release", "--adaptive", "--mechanism", "baseline", "--epsilon", "1",
          "--output", "x.csv"], "--target-error"),
        (["compose", "--adaptive", "--epsilon", "1", "--target-error", "3"], "--publish"),
    ],
)  # fmt: skip
def test_publishing_bad_input_is_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, *argv)
    errors = [line for line in err.splitlines() if not line.startswith("hexplorer: note:")]
    assert status == 2 and out == "" and len(errors) == 1 and message in errors[0], err


@pytest.mark.parametrize("command", ["release", "compose"])
def test_an_unwritable_output_is_refused_before_anything_is_charged(capsys, tmp_path, command):
    """All or nothing, as every publish: /proc takes no new file, so nothing is recorded."""
    from core.publish import Ledger

    ledger = tmp_path / "ledger.sqlite"
    flags = ["--mechanism", "opt-arrayavg"] if command == "release" else ["--publish"]
    status, out, err = run(
        capsys, command, "--adaptive", *flags, "--epsilon", "1", "--target-error", "3",
        "--ledger", ledger, "--output", "/proc/x.csv",
    )  # fmt: skip
    assert status == 2 and out == "" and "nothing was published or charged" in err, err
    assert not ledger.exists() or Ledger(ledger).summary().max_user_epsilon == 0.0
