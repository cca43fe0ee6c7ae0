"""``hexplorer prepare`` and the summaries file as DATA: same results as the raw file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.cli import main
from core.data import load_demo

MAPPING = ["--user-col", "bus", "--value-col", "kmh", "--upper", "60", "--slot", "30min"]


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(capsys, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A raw CSV (renamed columns, U = 60, 30-min slots) and its summaries file."""
    folder = tmp_path_factory.mktemp("cli")
    raw = load_demo().head(60_000).rename(columns={"user_id": "bus", "speed": "kmh"})
    source = folder / "raw.csv"
    raw.to_csv(source, index=False)
    target = folder / "summaries.parquet"
    status = main(["prepare", str(source), *MAPPING, "--output", str(target)])
    assert status == 0
    return source, target


def test_prepare_reports_what_it_wrote(capsys, files, tmp_path):
    source, _ = files
    out = run_json(capsys, "prepare", source, *MAPPING, "--output", tmp_path / "s.parquet")
    assert out["output"].endswith("s.parquet") and out["engine"] == "polars"
    assert out["rows_read"] == 60_000 and out["records"] > 0 and out["hats"] > 0


def test_prepare_says_each_warning_once_on_a_line_of_its_own(capsys, files, tmp_path):
    """U = 20 clamps many speeds: the note says what was clamped, the warning why it matters,
    and the warning's sentence is not also in the note."""
    source, _ = files
    mapping = [a if a != "60" else "20" for a in MAPPING]
    status, out, err = run(capsys, "prepare", source, *mapping, "--output", tmp_path / "s.parquet")
    assert status == 0
    lines = err.strip().splitlines()
    warnings = [line for line in lines if line.startswith("hexplorer: warning: ")]
    notes = [line for line in lines if line.startswith("hexplorer: note: ")]
    assert len(warnings) == 1 and "U is probably too low" in warnings[0]
    assert len(notes) == 1 and "values above U = 20 set to U" in notes[0]
    assert err.count("U is probably too low") == 1


@pytest.mark.parametrize(
    "command",
    [
        ["hats"],
        ["worstcase", "--epsilon", "0.5", "2"],
        ["evaluate", "--epsilon", "1", "--trials", "200", "--seed", "4"],
        ["release", "--mechanism", "arrayavg-best", "--epsilon", "1", "--seed", "9"],
        ["release", "--mechanism", "levy", "--epsilon", "1", "--seed", "9", "--hat", "PICK"],
    ],
)
def test_summaries_file_gives_the_raw_files_results(capsys, files, command):
    source, summaries = files
    if "PICK" in command:  # the fifth-busiest HAT, not the default
        hats = run_json(capsys, "hats", source, *MAPPING)
        command = [c if c != "PICK" else hats[4]["hat"] for c in command]
    from_raw = run_json(capsys, command[0], source, *MAPPING, *command[1:])
    from_file = run_json(capsys, command[0], summaries, *command[1:])
    assert from_file == from_raw  # exactly, U = 60 and 30-min slots come from the file


def test_summaries_file_skips_preparation(capsys, files, monkeypatch):
    import core.data

    def refuse(*args, **kwargs):
        raise AssertionError("prepared again")

    monkeypatch.setattr(core.data, "prepare_file", refuse)
    assert run_json(capsys, "hats", files[1])


def test_contradicting_setting_is_one_line(capsys, files):
    status, out, err = run(capsys, "hats", files[1], "--upper", "65.5")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "prepared with upper = 60.0" in err
    assert run(capsys, "hats", files[1], "--upper", "60")[0] == 0  # the same value is fine


def test_summary_columns_without_metadata_are_one_line(capsys, files, tmp_path):
    bare = tmp_path / "bare.parquet"
    pd.read_parquet(files[1]).to_parquet(bare)
    status, out, err = run(capsys, "hats", bare)
    assert status == 2 and err.count("\n") == 1 and "no 'hexplorer.summaries' metadata" in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["prepare", "RAW"], "needs --output"),
        (["prepare", "--output", "OUT"], "needs a DATA file"),
        (["prepare", "RAW", "--output", "x.csv"], "must end in .parquet"),
        (["prepare", "SUMMARIES", "--output", "OUT"], "already a summaries file"),
        (["prepare", "RAW", "--output", "OUT", "--batch-rows", "0"], "batch_rows"),
    ],
)
def test_prepare_errors_are_one_line(capsys, files, tmp_path, argv, needle):
    names = {"RAW": files[0], "SUMMARIES": files[1], "OUT": tmp_path / "o.parquet"}
    status, out, err = run(capsys, *[names.get(a, a) for a in argv])
    assert status == 2 and err.count("\n") == 1 and needle in err, err


def test_prepare_refuses_to_overwrite_without_force(capsys, files, tmp_path):
    target = tmp_path / "o.parquet"
    target.write_bytes(b"x")
    status, _, err = run(capsys, "prepare", files[0], *MAPPING, "--output", target)
    assert status == 2 and "--force" in err
    assert run(capsys, "prepare", files[0], *MAPPING, "--output", target, "--force")[0] == 0
    assert np.isfinite(pd.read_parquet(target)["s"]).all()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_release_all_writes_one_row_per_hat_equal_to_core(capsys, files, tmp_path, suffix):
    from core.citywide.batch import HatBatch, release_all
    from core.data.summaries import read_summaries

    target = tmp_path / f"all{suffix}"
    args = ["release", files[1], "--all", "--mechanism", "arrayavg-best", "--epsilon", "1"]
    out = run_json(capsys, *args, "--seed", "5", "--output", target)
    table = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
    prepared = read_summaries(files[1])
    expected = release_all(
        "arrayavg-best", HatBatch.from_summaries(prepared.summaries, upper=60.0), 1.0, seed=5
    )
    assert out["hats"] == len(table) == len(expected) == prepared.report.hats
    assert table["hat"].tolist() == expected["hat"].tolist()
    np.testing.assert_allclose(table["estimate"], expected["estimate"], rtol=1e-15)
    # the raw file gives the same table
    raw_target = tmp_path / f"raw{suffix}"
    run_json(
        capsys, "release", files[0], *MAPPING, *args[2:], "--seed", "5", "--output", raw_target
    )
    again = pd.read_csv(raw_target) if suffix == ".csv" else pd.read_parquet(raw_target)
    pd.testing.assert_frame_equal(again, table)


def test_release_all_of_one_slot(capsys, files, tmp_path):
    hats = run_json(capsys, "hats", files[1])
    slot = hats[0]["slot"]
    target = tmp_path / "slot.csv"
    args = ["--all", "--mechanism", "baseline", "--epsilon", "1", "--seed", "1"]
    run_json(capsys, "release", files[1], *args, "--slot-filter", slot, "--output", target)
    table = pd.read_csv(target)
    assert len(table) == sum(h["slot"] == slot for h in hats)
    assert all(h.endswith("/" + slot) for h in table["hat"])


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--seed", "1", "--budget", "3", "--output", "OUT"], "--budget is for published"),
        (["--seed", "1"], "--all needs --output"),
        (["--seed", "1", "--output", "OUT", "--m-ub", "2"], "drop --m-ub"),
        (["--seed", "1", "--output", "x.json"], "must end in .csv or .parquet"),
    ],
)
def test_release_all_errors_are_one_line(capsys, files, tmp_path, extra, needle):
    argv = ["release", files[1], "--all", "--mechanism", "baseline", "--epsilon", "1"]
    extra = [str(tmp_path / "o.csv") if e == "OUT" else e for e in extra]
    status, out, err = run(capsys, *argv, *extra)
    assert status == 2 and err.count("\n") == 1 and needle in err, err
