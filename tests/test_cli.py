"""The hexplorer command line: JSON shapes, agreement with core, one-line errors (status 2)."""

from __future__ import annotations

import io
import json
import math
import sys

import numpy as np
import pandas as pd
import pytest

from core import worstcase as wc
from core.cli import main
from core.data import ColumnMap, PrepConfig, hat_data, prepare
from core.evaluation import monte_carlo
from core.mechanisms import MECHANISMS, release, run_mechanism

LAT, LON = 21.1950, 72.8300  # one resolution-7 hexagon in Surat


def _records(
    counts: dict[str, int], speed: float = 20.0, hour: str = "2024-03-05 08"
) -> pd.DataFrame:
    rows = []
    for user, m in counts.items():
        for i in range(m):
            rows.append(
                {
                    "bus": user,
                    "la": LAT + 1e-5 * i,
                    "lo": LON,
                    "t": f"{hour}:{i % 60:02d}:00",
                    "kmh": speed + (i % 5),
                }
            )
    return pd.DataFrame(rows)


MAPPING = [
    "--user-col",
    "bus",
    "--lat-col",
    "la",
    "--lon-col",
    "lo",
    "--time-col",
    "t",
    "--value-col",
    "kmh",
]


@pytest.fixture
def small_csv(tmp_path):
    path = tmp_path / "buses.csv"
    _records({"a": 12, "b": 7, "c": 5, "d": 5, "e": 3, "f": 2}).to_csv(path, index=False)
    return path


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_json(capsys, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def _oracle_hat(path):
    raw = pd.read_csv(path)
    columns = ColumnMap(user="bus", lat="la", lon="lo", time="t", value="kmh")
    return hat_data(prepare(raw, columns, PrepConfig()).summaries)


def test_hats_lists_the_hat_with_its_counts(capsys, small_csv):
    hats = run_json(capsys, "hats", small_csv, *MAPPING)
    assert len(hats) == 1
    row = hats[0]
    assert set(row) >= {"hat", "cell", "slot", "users", "records", "m_max", "m_min", "m_median"}
    assert (row["users"], row["records"], row["m_max"], row["m_min"]) == (6, 34, 12, 2)
    assert row["hat"] == f"{row['cell']}/{row['slot']}"


def test_release_with_seed_equals_core_and_is_reproducible(capsys, small_csv):
    args = (
        "release",
        small_csv,
        *MAPPING,
        "--mechanism",
        "arrayavg-best",
        "--epsilon",
        "1",
        "--seed",
        "3",
    )
    first = run_json(capsys, *args)
    assert run_json(capsys, *args) == first
    hat = _oracle_hat(small_csv)
    expected = release("arrayavg-best", hat, 1.0, rng=np.random.default_rng(3))
    assert first["estimate"] == pytest.approx(expected.estimate)
    assert first["sensitivity"] == pytest.approx(expected.sensitivity)
    assert first["n_arrays"] == expected.n_arrays
    assert first["published"] is False


def test_release_honours_m_ub(capsys, small_csv):
    out = run_json(
        capsys,
        "release",
        small_csv,
        *MAPPING,
        "--mechanism",
        "arrayavg-best",
        "--epsilon",
        "1",
        "--m-ub",
        "5",
        "--seed",
        "1",
    )
    assert out["m_ub"] == 5
    assert out["sensitivity"] == pytest.approx(65.0 / out["n_arrays"])


def test_evaluate_covers_every_mechanism_by_default(capsys, small_csv):
    out = run_json(
        capsys,
        "evaluate",
        small_csv,
        *MAPPING,
        "--epsilon",
        "0.5",
        "2",
        "--trials",
        "200",
        "--seed",
        "1",
    )
    hat = _oracle_hat(small_csv)
    assert out["true_mean"] == pytest.approx(hat.true_mean)
    pairs = {(r["mechanism"], r["epsilon"]) for r in out["results"]}
    assert pairs == {(m, e) for m in MECHANISMS for e in (0.5, 2.0)}
    table = monte_carlo(hat, [0.5, 2.0], n_runs=200, rng=np.random.default_rng(1))
    expected = {(r.mechanism, r.epsilon): r.mae for r in table.itertuples()}
    assert {(r["mechanism"], r["epsilon"]): r["mae"] for r in out["results"]} == expected


def test_simulate_writes_raw_outputs(capsys, small_csv, tmp_path):
    target = tmp_path / "out.npy"
    out = run_json(
        capsys,
        "simulate",
        small_csv,
        *MAPPING,
        "--mechanism",
        "baseline",
        "--epsilon",
        "1",
        "--trials",
        "500",
        "--seed",
        "2",
        "--output",
        target,
    )
    values = np.load(target)
    assert values.shape == (500,) and out["trials"] == 500
    hat = _oracle_hat(small_csv)
    scale = 65.0 * hat.m_max / hat.n_records  # Baseline, epsilon = 1
    assert abs(np.mean(values) - hat.true_mean) < 6 * scale * np.sqrt(2 / 500)
    expected = run_mechanism("baseline", hat, 1.0, rng=np.random.default_rng(2), size=500)
    np.testing.assert_array_equal(values, expected.estimates)


def test_worstcase_from_counts_file_matches_core(capsys, tmp_path):
    counts = [417, 300, 120, 46, 46, 20, 5, 1]
    path = tmp_path / "counts.txt"
    path.write_text("\n".join(map(str, counts)) + "\n")
    out = run_json(capsys, "worstcase", "--counts", path, "--epsilon", "0.5", "1", "2")
    arr = np.array(counts)
    for row in out["results"]:
        m = wc.m_opt(arr, 65.0, row["epsilon"])
        assert row["m_opt"] == m
        assert row["error"] == pytest.approx(
            wc.worst_case_error(arr, 65.0, m, row["epsilon"]).total
        )
        assert row["opt_bounding_error"] == pytest.approx(
            wc.opt_bounding_error(arr, 65.0, row["epsilon"])
        )
    steps = out["staircase"]
    assert steps[0]["epsilon_from"] == 0 and steps[-1]["epsilon_to"] is None  # infinity -> null
    assert [s["m"] for s in steps] == sorted(s["m"] for s in steps)
    assert (out["m_levy"], out["m_convex"], out["m_median"]) == (
        wc.m_levy(arr),
        wc.m_convex(arr),
        wc.median_count(arr),
    )


def test_demo_city_is_the_default_dataset(capsys):
    hats = run_json(capsys, "hats")
    assert len(hats) >= 30
    records = [h["records"] for h in hats]
    assert records == sorted(records, reverse=True)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["release", "--mechanism", "baseline", "--epsilon", "0", "--seed", "1"], "epsilon"),
        (["release", "--mechanism", "baseline", "--epsilon", "-1", "--seed", "1"], "epsilon"),
        (
            [
                "release",
                "--mechanism",
                "arrayavg-best",
                "--epsilon",
                "1",
                "--m-ub",
                "99",
                "--seed",
                "1",
            ],
            "m_ub",
        ),
        (
            [
                "release",
                "--mechanism",
                "baseline",
                "--epsilon",
                "1",
                "--hat",
                "nope/never",
                "--seed",
                "1",
            ],
            "nope",
        ),
        (["evaluate", "--epsilon", "1", "--trials", "0"], "trials"),
        (["worstcase", "--epsilon", "1", "--counts", "/nonexistent/counts.txt"], "counts"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, small_csv, argv, needle):
    status, out, err = run(capsys, argv[0], small_csv, *MAPPING, *argv[1:])
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hexplorer: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "empty"),
        ("bus,la,lo,t\nx,21.1,72.8,2024-03-05 08:00:00\n", "kmh"),
        ("bus,la,lo,t,kmh\nx,21.1,72.8,2024-03-05 08:00:00,fast\n", "kmh"),
    ],
    ids=["empty-file", "missing-column", "text-speed"],
)
def test_bad_files_are_one_line_and_status_2(capsys, tmp_path, content, needle):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    status, out, err = run(capsys, "hats", path, *MAPPING)
    assert status == 2, out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0].lower(), err


def test_missing_data_file_is_status_2(capsys, tmp_path):
    status, _, err = run(capsys, "hats", tmp_path / "nope.csv")
    assert status == 2 and "does not exist" in err


def test_counts_file_with_text_is_status_2(capsys, tmp_path):
    path = tmp_path / "counts.txt"
    path.write_text("3\nfour\n")
    status, _, err = run(capsys, "worstcase", "--counts", path, "--epsilon", "1")
    assert status == 2 and "'four'" in err


def test_compose_matches_core_and_chop_never_raises_k(capsys, tmp_path):
    from core import multigrid

    frames = []
    for k, (dlat, dlon) in enumerate([(0, 0), (0.05, 0), (0, 0.05)]):
        df = _records({"a": 6 + k, "b": 4, "c": 3 + k, "d": 2})
        df["la"] += dlat
        df["lo"] += dlon
        frames.append(df)
    path = tmp_path / "city.csv"
    pd.concat(frames).to_csv(path, index=False)
    out = run_json(capsys, "compose", path, *MAPPING, "--epsilon", "0.5", "1")
    assert (out["grids"], out["users"], out["max_grids_per_user"]) == (3, 4, 3)
    raw = pd.read_csv(path)
    columns = ColumnMap(user="bus", lat="la", lon="lo", time="t", value="kmh")
    summaries = prepare(raw, columns, PrepConfig()).summaries
    expected = multigrid.compose(multigrid.GridSet.from_summaries(summaries), [0.5, 1.0], 65.0)
    for row, exp in zip(out["results"], expected["results"], strict=True):
        assert row["basic_loss"] == pytest.approx(3 * row["epsilon"])
        assert row["user_loss"] == pytest.approx(3 * row["epsilon"])
        assert row == {k: pytest.approx(v) for k, v in exp.items()}
        assert row["chop_k"] <= 3
        assert row["max_error_after"] <= row["threshold"] + 1e-9
    released = run_json(
        capsys, "compose", path, *MAPPING, "--epsilon", "1", "--simulate", "--seed", "1"
    )
    assert len(released["release"]) == 3 and released["simulated"] is True
    assert {"noisy_mean", "noisy_var", "true_mean"} <= set(released["release"][0])
    # user a is in all three grids: G_a = 3, so the per-user accounting's largest charge is 3 eps
    assert released["release_privacy_loss"] == pytest.approx(3.0)


def test_compose_release_is_gone_with_a_pointer(capsys, small_csv):
    status, out, err = run(capsys, "compose", small_csv, *MAPPING, "--epsilon", "1", "--release")
    assert status == 2 and out == ""
    assert "--publish" in err and "--simulate" in err and len(err.strip().splitlines()) == 1


def test_published_release_is_recorded_and_reused(capsys, small_csv, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    args = ("release", small_csv, *MAPPING, "--mechanism", "baseline", "--ledger", ledger)
    first = run_json(capsys, *args, "--epsilon", "0.5")
    again = run_json(capsys, *args, "--epsilon", "0.5")
    other = run_json(capsys, *args, "--epsilon", "1")
    assert (first["published"], first["reused"], again["reused"], other["reused"]) == (
        True,
        False,
        True,
        False,
    )
    assert again["estimate"] == first["estimate"]
    assert again["release_id"] == first["release_id"] != other["release_id"]
    assert first["max_user_epsilon"] == pytest.approx(0.5)
    assert again["max_user_epsilon"] == pytest.approx(0.5)  # a reused release costs nothing
    assert other["max_user_epsilon"] == pytest.approx(1.5)
    summary = run_json(capsys, "ledger", "--ledger", ledger)
    assert {k: summary[k] for k in ("releases", "users", "budget")} == {
        "releases": 2,
        "users": 6,
        "budget": None,
    }
    assert summary["max_user_epsilon"] == pytest.approx(1.5)


def test_simulate_into_missing_directory_is_one_line_and_status_2(capsys, small_csv, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.npy"
    status, out, err = run(
        capsys,
        "simulate",
        small_csv,
        *MAPPING,
        "--mechanism",
        "baseline",
        "--epsilon",
        "1",
        "--trials",
        "5",
        "--seed",
        "1",
        "--output",
        target,
    )
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--output" in lines[0] and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ([], "COMMAND"),
        (["release", "--mechanism", "nope", "--epsilon", "1"], "nope"),
        (["release", "--mechanism", "baseline", "--epsilon", "abc"], "abc"),
        (["frobnicate"], "frobnicate"),
    ],
    ids=["no-command", "unknown-mechanism", "text-epsilon", "unknown-command"],
)
def test_usage_errors_are_one_line_and_status_2(capsys, argv, needle):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hexplorer") and needle in lines[0], err


def test_rejected_and_clamped_rows_are_reported_on_stderr(capsys, tmp_path):
    path = tmp_path / "mixed.csv"
    frame = _records({"a": 4, "b": 3})
    frame["kmh"] = frame["kmh"].astype(object)
    frame.loc[0, "kmh"] = "fast"
    frame.loc[1, "kmh"] = 99.0
    frame.to_csv(path, index=False)
    status, out, err = run(capsys, "hats", path, *MAPPING, "--json")
    assert status == 0
    assert json.loads(out)[0]["records"] == 6
    (line,) = err.strip().splitlines()
    assert line.startswith("hexplorer: note:")
    assert "1 row rejected" in line and "1 value clamped" in line


def test_clean_data_prints_no_report(capsys, small_csv):
    status, _, err = run(capsys, "hats", small_csv, *MAPPING, "--json")
    assert status == 0 and err == ""


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"99999999999999999999999\n3\n", "2^53"),
        (b"5000000000000000000\n5000000000000000000\n", "2^53"),
        (b"\xff\xfe\x00\n", "UTF-8"),
    ],
    ids=["beyond-int64", "sum-overflows-int64", "binary"],
)
def test_counts_file_too_large_or_binary_is_one_line_and_status_2(
    capsys, tmp_path, content, needle
):
    path = tmp_path / "counts.txt"
    path.write_bytes(content)
    status, out, err = run(capsys, "worstcase", "--counts", path, "--epsilon", "1")
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err


@pytest.mark.parametrize("command", ["evaluate", "simulate"])
def test_trials_beyond_memory_is_one_line_and_status_2(capsys, small_csv, tmp_path, command):
    extra = ["--output", tmp_path / "x.npy"] if command == "simulate" else []
    status, out, err = run(
        capsys, command, small_csv, *MAPPING, "--mechanism", "baseline", "--epsilon", "1",
        "--trials", 10**14, "--seed", "1", *extra,
    )  # fmt: skip
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "out of memory" in lines[0] and "--trials" in lines[0], err


def test_worstcase_std_measure_applies_to_every_error(capsys, tmp_path):
    path = tmp_path / "counts.txt"
    path.write_text("3\n2\n1\n")
    out = run_json(
        capsys, "worstcase", "--counts", path, "--epsilon", "0.5", "--noise-measure", "std"
    )
    (row,) = out["results"]
    # Baseline: sqrt(2) U m* / (N eps) = sqrt(2) 65 3 / (6 * 0.5); T_0.5 = 0: opt-bounding is all bias
    assert row["baseline_error"] == pytest.approx(math.sqrt(2) * 65.0)
    assert row["opt_bounding_error"] == pytest.approx((3 * 65 + 2 * 65 + 65) / 2 / 6)
    out = run_json(
        capsys, "worstcase", "--counts", path, "--epsilon", "1", "--noise-measure", "std"
    )
    (row,) = out["results"]
    # T_1 = 65 * 2 (2nd largest): bias (65*3 - 130)/2 = 32.5, noise sqrt(2) * 130 / 1
    assert row["opt_bounding_error"] == pytest.approx((32.5 + math.sqrt(2) * 130.0) / 6)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("json_out", [False, True])
def test_prepare_in_a_terminal_shows_its_phases_on_one_line(
    monkeypatch, tmp_path, small_csv, json_out
):
    """In a terminal, ``prepare`` rewrites one line of stderr as each phase of each batch ends
    (10⁸ records take minutes), then clears it; with --json, or piped, it says nothing more."""
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    argv = ["prepare", small_csv, *MAPPING, "--output", tmp_path / "s.parquet"]
    assert main([str(a) for a in argv + (["--json"] if json_out else [])]) == 0
    text = err.getvalue()
    if json_out:
        assert "\r" not in text
        return
    shown = [part.replace("\x1b[K", "").strip() for part in text.split("\r")]
    shown = [part for part in shown if part]
    assert shown[0].startswith("prepare: batch 1, read done, ")
    assert "prepare: write done" in shown[-1]
    assert text.endswith("\r\x1b[K")  # cleared: what follows starts on a clean line
