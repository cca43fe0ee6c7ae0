"""``hexplorer release --all``: one simulated release per HAT, equal to core.citywide.batch."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.citywide.batch import HatBatch, release_all
from core.cli import main
from core.data import load_demo, prepare


@pytest.fixture(scope="module")
def raw_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("all") / "raw.csv"
    load_demo().head(20_000).to_csv(path, index=False)
    return path


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_release_all_writes_one_row_per_hat_equal_to_core(capsys, raw_csv, tmp_path, suffix):
    target = tmp_path / f"all{suffix}"
    argv = ["release", raw_csv, "--all", "--mechanism", "arrayavg-best", "--epsilon", "1"]
    status, out, err = run(capsys, *argv, "--seed", "5", "--output", target, "--json")
    assert status == 0, err
    table = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
    summaries = prepare(pd.read_csv(raw_csv)).summaries
    expected = release_all("arrayavg-best", HatBatch.from_summaries(summaries), 1.0, seed=5)
    assert json.loads(out)["hats"] == len(table) == len(expected)
    assert table["hat"].tolist() == expected["hat"].tolist()
    np.testing.assert_allclose(table["estimate"], expected["estimate"], rtol=1e-15)


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--seed", "1", "--budget", "3", "--output", "OUT"], "--budget is for published"),
        (["--seed", "1"], "--all needs --output"),
        (["--seed", "1", "--output", "OUT", "--m-ub", "2"], "drop --m-ub"),
    ],
)
def test_release_all_errors_are_one_line(capsys, raw_csv, tmp_path, extra, needle):
    argv = ["release", raw_csv, "--all", "--mechanism", "baseline", "--epsilon", "1"]
    extra = [str(tmp_path / "o.csv") if e == "OUT" else e for e in extra]
    status, out, err = run(capsys, *argv, *extra)
    assert status == 2 and err.count("\n") == 1 and needle in err, err


def test_release_all_from_a_summaries_file_is_bit_equal_to_core(capsys, raw_csv, tmp_path):
    """From a summaries file ``--all`` reads the columns straight into polars: the same table,
    bit for bit, as the library on the pandas summaries."""
    from core.data.summaries import write_summaries

    prepared = prepare(pd.read_csv(raw_csv))
    summaries_file = write_summaries(prepared, tmp_path / "s.parquet")
    target = tmp_path / "all.parquet"
    argv = ["release", summaries_file, "--all", "--mechanism", "opt-arrayavg", "--epsilon", "0.5"]
    status, _, err = run(capsys, *argv, "--seed", "9", "--output", target, "--json")
    assert status == 0, err
    expected = release_all("opt-arrayavg", HatBatch.from_summaries(prepared.summaries), 0.5, seed=9)
    pd.testing.assert_frame_equal(pd.read_parquet(target), expected, check_exact=True)


def test_the_command_starts_numpy_with_one_blas_thread_unless_told_otherwise():
    """Nothing in core multiplies matrices, so ``core.cli`` has numpy's OpenBLAS start without
    a thread per core (~0.04 CPU s of every command): the setting must be made before numpy
    loads, so ``import core`` imports no numpy. A value the user set is kept."""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "import core\n"
        "print('numpy' in sys.modules)\n"
        "import core.cli\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert run.stdout.split() == ["False", "1"]
    env["OPENBLAS_NUM_THREADS"] = "3"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert run.stdout.split() == ["False", "3"]


def test_release_all_asks_the_allocator_to_keep_freed_memory(
    capsys, raw_csv, tmp_path, monkeypatch
):
    """``release --all`` of a summaries file (batches of a few MB, freed and made again) asks
    glibc's malloc to keep freed memory for reuse; the table is the same either way. The
    setting itself (process-wide) is tried in a fresh process, not in this one."""
    import platform
    import subprocess
    import sys

    from core.cli import common
    from core.data.summaries import write_summaries

    calls = []
    monkeypatch.setattr(common, "keep_freed_memory", lambda: calls.append(1) or True)
    summaries_file = write_summaries(prepare(pd.read_csv(raw_csv)), tmp_path / "s.parquet")
    target = tmp_path / "all.parquet"
    argv = ["release", summaries_file, "--all", "--mechanism", "arrayavg-best", "--epsilon", "1"]
    status, _, err = run(capsys, *argv, "--seed", "3", "--output", target, "--json")
    assert status == 0, err
    assert calls == [1]
    code = "from core.cli.common import keep_freed_memory; print(keep_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert out.stdout.strip() == "True"
