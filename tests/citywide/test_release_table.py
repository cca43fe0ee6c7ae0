"""``release --all`` writes its Parquet without pandas (core.citywide.release_table): the file
must stay the one ``DataFrame.to_parquet`` wrote, byte for byte (schema, chunks, the ``pandas``
metadata, the writer's settings)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from core.citywide.pieces import release_table
from core.data import load_demo, prepare
from core.data.summaries import summary_pieces, write_summaries

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def summaries_file(tmp_path_factory) -> Path:
    return write_summaries(prepare(load_demo()), tmp_path_factory.mktemp("t") / "s.parquet")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _same_bytes_as_pandas(table, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.parquet", tmp_path / "pandas.parquet"
    table.write(ours)
    table.to_pandas().to_parquet(theirs, index=False)
    assert _sha(ours) == _sha(theirs)


@pytest.mark.parametrize("rows", [997, 2_000_000])  # many pieces (text in chunks), two
def test_the_parquet_is_byte_equal_to_pandas(summaries_file, tmp_path, rows):
    pieces = summary_pieces(summaries_file, ["hat", "m", "s"], rows=rows)
    table = release_table("arrayavg-best", pieces, 0.7, seed=3)
    assert table.to_arrow() is not None  # the table went the way without pandas
    _same_bytes_as_pandas(table, tmp_path)


@pytest.mark.parametrize("interleaved", [True, False])
def test_the_parts_of_a_dataset_are_byte_equal_to_pandas(summaries_file, tmp_path, interleaved):
    """A dataset's parts hold whole HATs in any order: sorted at the end (pandas' sort leaves
    one chunk per column) or already in order (one chunk per part)."""
    frame = pl.read_parquet(summaries_file, columns=["hat", "m", "s"])
    hats = frame.get_column("hat").unique(maintain_order=True)
    odd = hats.gather(list(range(1, hats.len(), 2))) if interleaved else hats.tail(40)
    parts = [frame.filter(~pl.col("hat").is_in(odd)), frame.filter(pl.col("hat").is_in(odd))]
    table = release_table("opt-bounding", parts, 1.0, seed=8, whole_hats=True)
    assert table.to_pandas()["hat"].is_monotonic_increasing
    _same_bytes_as_pandas(table, tmp_path)


def test_a_looped_mechanism_goes_through_pandas(summaries_file, tmp_path):
    frame = pl.read_parquet(summaries_file, columns=["hat", "user_id", "m", "s"]).head(300)
    table = release_table("levy", [frame], 1.0, seed=8)
    assert table.to_arrow() is None
    _same_bytes_as_pandas(table, tmp_path)


def test_release_all_from_a_summaries_file_never_imports_pandas(summaries_file, tmp_path):
    """The whole ``release --all --seed`` process to Parquet (the summaries read, every HAT
    released, the table written) runs without pandas (≈ 0.4 s of imports), nor polars and the
    preparation's h3 engines (≈ 0.25 s): numpy and pyarrow only."""
    target = tmp_path / "all.parquet"
    code = (
        "import sys\n"
        "from core.cli import main\n"
        f"argv = ['release', {str(summaries_file)!r}, '--all', '--mechanism', 'arrayavg-best',"
        f" '--epsilon', '1', '--seed', '1', '--output', {str(target)!r}]\n"
        "assert main(argv) == 0\n"
        "heavy = ('pandas', 'polars', 'h3', 'h3ronpy')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert target.stat().st_size > 0


def test_the_data_package_gives_its_functions_not_its_submodules():
    """``core.data`` imports its names when first asked for; its submodule ``prepare`` (once
    imported) must not hide the function ``prepare``, as the eager package never let it."""
    code = (
        "import core.data.prepare, core.data.summaries\n"
        "from core.data import prepare, load_demo, SUMMARY_COLUMNS\n"
        "import core.data\n"
        "from core.data.summaries import SUMMARY_COLUMNS as ours\n"
        "assert callable(prepare) and core.data.prepare is prepare, prepare\n"
        "assert ours == SUMMARY_COLUMNS\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_data_package_lists_each_name_once_with_its_home():
    """``__all__`` (for the linters) and ``_HOMES`` (for the lazy import) name the same names,
    and each is its home module's own object."""
    import importlib

    import core.data

    assert sorted(core.data.__all__) == sorted(core.data._HOMES)
    for name, home in core.data._HOMES.items():
        module = importlib.import_module(f"core.data.{home}")
        assert getattr(core.data, name) is getattr(module, name), name


@pytest.mark.parametrize(
    "labels",
    [["a/1", "bb/2", "ccc/3"], ["8742/1", "8742/2", "8742/3"], ["ç/1", "é/22", "z/3"]],
)
def test_text_of_any_width_and_script_is_byte_equal_to_pandas(tmp_path, labels):
    """The text columns from their bytes: labels of one width and ASCII (a city's HATs) in one
    copy, others (widths that differ, accents) one by one; the same file either way."""
    import numpy as np

    from core.citywide.release_table import ReleaseTable

    def piece(hats):
        return {
            "hat": np.array(hats),
            "mechanism": "arrayavg-best",
            "epsilon": 0.5,
            "m_ub": np.arange(len(hats), dtype=np.int64),
            "estimate": np.linspace(0.0, 1.0, len(hats)),
        }

    _same_bytes_as_pandas(ReleaseTable([piece(labels[:2]), piece(labels[2:])]), tmp_path)


def test_release_all_pauses_the_cycle_collector_and_restores_it(
    summaries_file, tmp_path, monkeypatch
):
    """The release runs with Python's cycle collector paused (its walks of every imported
    object cost ~0.05 s at 10⁷ records) and leaves it as it found it."""
    import gc

    import core.citywide.pieces
    from core.cli import main

    seen = []
    real = core.citywide.pieces.release_runs

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(core.citywide.pieces, "release_runs", spy)
    argv = ["release", str(summaries_file), "--all", "--mechanism", "baseline", "--epsilon", "1"]
    assert gc.isenabled()
    assert main([*argv, "--seed", "1", "--output", str(tmp_path / "a.parquet")]) == 0
    assert seen == [False] and gc.isenabled()
