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
