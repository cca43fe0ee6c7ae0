"""A summaries file read as runs of one HAT (core.data.runs, what ``release --all`` reads): the
same windows, rows and HATs as the polars pieces, the same table bit for byte, the same
refusals."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.citywide.pieces import release_runs, release_table
from core.data import load_demo, prepare
from core.data.runs import SummaryRuns, joined, summary_runs
from core.data.summaries import summary_pieces, write_summaries
from core.errors import HexplorerError


@pytest.fixture(scope="module")
def small_groups(tmp_path_factory):
    """The demo's summaries file rewritten in row groups of 700 rows (windows cross them)."""
    folder = tmp_path_factory.mktemp("runs")
    path = write_summaries(prepare(load_demo()), folder / "s.parquet")
    target = folder / "groups.parquet"
    pq.write_table(pq.read_table(path), target, row_group_size=700, compression="zstd")
    return target


def _runs_of(frame: pl.DataFrame) -> tuple[list[str], list[int]]:
    hats = frame.get_column("hat").to_list()
    starts = [i for i in range(len(hats)) if i == 0 or hats[i] != hats[i - 1]]
    return [hats[i] for i in starts], starts


@pytest.mark.parametrize("rows", [997, 1_400, 2_000_000])
def test_the_windows_are_the_polars_pieces(small_groups, rows):
    windows = summary_runs(small_groups, rows=rows)
    assert windows is not None
    pieces = list(summary_pieces(small_groups, ["hat", "m", "s"], rows=rows))
    windows = list(windows)
    assert len(windows) == len(pieces) > 0
    for window, piece in zip(windows, pieces, strict=True):
        labels, starts = _runs_of(piece)
        assert window.labels == labels
        assert window.starts.tolist() == starts
        assert window.counts.tolist() == piece.get_column("m").to_list()
        assert window.sums.tobytes() == piece.get_column("s").to_numpy().tobytes()


@pytest.mark.parametrize(("rows", "batch_rows"), [(997, 50), (2_000_000, 333), (997, 1 << 18)])
def test_the_released_table_is_byte_equal_to_the_pieces(
    small_groups, tmp_path, monkeypatch, rows, batch_rows
):
    """Each piece released in batches of whole HATs (BATCH_ROWS) and put end to end: the
    pieces and their columns are those of the polars pieces released at once."""
    import core.citywide.pieces

    monkeypatch.setattr(core.citywide.pieces, "BATCH_ROWS", batch_rows)
    windows = summary_runs(small_groups, rows=rows)
    ours = release_runs("opt-arrayavg", windows, 0.6, seed=12)
    pieces = summary_pieces(small_groups, ["hat", "m", "s"], rows=rows)
    theirs = release_table("opt-arrayavg", pieces, 0.6, seed=12)
    # the same pieces (they chunk the text columns, and the chunks can move the Parquet bytes)
    assert [list(p["hat"]) for p in ours.pieces] == [list(p["hat"]) for p in theirs.pieces]
    for mine, its in zip(ours.pieces, theirs.pieces, strict=True):
        for key, value in its.items():
            assert np.asarray(mine[key]).tobytes() == np.asarray(value).tobytes(), key
    for name, target in (("runs", ours), ("pieces", theirs)):
        target.write(tmp_path / f"{name}.parquet")
    digest = [
        hashlib.sha256((tmp_path / f"{n}.parquet").read_bytes()).digest()
        for n in ("runs", "pieces")
    ]
    assert digest[0] == digest[1]


def test_by_default_a_window_is_a_row_group_read_as_it_is(small_groups, monkeypatch):
    """Without ``rows``, the windows are the file's row groups (none of them a copy of two),
    at most WINDOW_ROWS each, and the release is the one of any other windows, value for
    value; row groups too small to be windows are read in windows of WINDOW_ROWS."""
    import core.data.runs

    meta = pq.read_metadata(small_groups)
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert set(groups[:-1]) == {700} and len(groups) > 3
    # row groups of 700 rows are under GROUP_WINDOW_ROWS: windows of WINDOW_ROWS, as before
    assert [w.rows for w in summary_runs(small_groups)] == [meta.num_rows]
    monkeypatch.setattr(core.data.runs, "GROUP_WINDOW_ROWS", 500)
    windows = list(summary_runs(small_groups))
    assert [w.rows for w in windows] == groups
    joins = []  # the number of pieces each window is made of (more than one: a copy)
    join = core.data.runs.joined
    monkeypatch.setattr(
        core.data.runs,
        "joined",
        lambda parts: joins.append(sum(p.rows > 0 for p in parts)) or join(parts),
    )
    list(summary_runs(small_groups))
    assert joins and max(joins) == 1
    monkeypatch.setattr(core.data.runs, "joined", join)
    monkeypatch.setattr(core.data.runs, "WINDOW_ROWS", 600)  # row groups of 700: capped
    assert {w.rows for w in list(summary_runs(small_groups))[:-1]} == {600}
    default = release_runs("arrayavg-best", summary_runs(small_groups), 0.8, seed=4)
    other = release_runs("arrayavg-best", summary_runs(small_groups, rows=1_999), 0.8, seed=4)
    assert default.to_arrow().combine_chunks().equals(other.to_arrow().combine_chunks())


def test_split_and_join_keep_the_runs():
    runs = SummaryRuns(
        ["a", "b", "c"], np.array([0, 2, 5]), np.arange(1, 8), np.arange(7, dtype=float)
    )
    for at in range(1, 8):
        left, right = runs.split(at)
        assert left.rows == at and right.rows == 7 - at
        back = joined([left, right])
        assert back.labels == runs.labels and back.starts.tolist() == [0, 2, 5]
        assert back.counts.tolist() == runs.counts.tolist()
    left, right = runs.split(2)
    assert (left.labels, right.labels, right.starts.tolist()) == (["a"], ["b", "c"], [0, 3])
    left, right = runs.split(3)
    assert (left.labels, right.labels, right.starts.tolist()) == (["a", "b"], ["b", "c"], [0, 2])


def test_other_column_types_are_left_to_the_polars_reader(small_groups, tmp_path):
    table = pq.read_table(small_groups)
    index = table.schema.get_field_index("m")
    table = table.set_column(index, pa.field("m", pa.int32()), table.column("m").cast(pa.int32()))
    path = tmp_path / "int32.parquet"
    pq.write_table(table, path)
    assert summary_runs(path) is None
    assert summary_runs(tmp_path) is None  # a folder


def test_hats_out_of_order_are_refused(small_groups, tmp_path):
    table = pq.read_table(small_groups)
    path = tmp_path / "shuffled.parquet"
    pq.write_table(table.take(np.arange(table.num_rows)[::-1].copy()), path)
    with pytest.raises(HexplorerError, match="not sorted by HAT"):
        release_runs("arrayavg-best", summary_runs(path, rows=997), 1.0, seed=1)


@pytest.mark.parametrize("column", ["hat", "m"])
def test_empty_values_are_refused_in_one_line(small_groups, tmp_path, column):
    table = pq.read_table(small_groups)
    values = table.column(column).to_pylist()
    values[5] = None
    index = table.schema.get_field_index(column)
    table = table.set_column(index, table.schema.field(column), pa.array(values))
    path = tmp_path / "nulls.parquet"
    pq.write_table(table, path)
    with pytest.raises(HexplorerError, match=f"empty values in its '{column}' column"):
        list(summary_runs(path))


def test_hats_longer_than_a_window_are_held_across_windows(small_groups, tmp_path):
    """Windows of 7 rows: a HAT's rows go on over several windows (held, then joined)."""
    head = tmp_path / "head.parquet"
    pq.write_table(pq.read_table(small_groups).slice(0, 600), head, row_group_size=90)
    lengths = np.diff(list(_runs_of(pl.read_parquet(head))[1]) + [600])
    assert lengths.max() > 14  # some HAT spans three windows or more
    ours = release_runs("arrayavg-wrap", summary_runs(head, rows=7), 0.9, seed=2)
    pieces = summary_pieces(head, ["hat", "m", "s"], rows=7)
    theirs = release_table("arrayavg-wrap", pieces, 0.9, seed=2)
    assert [list(p["hat"]) for p in ours.pieces] == [list(p["hat"]) for p in theirs.pieces]
    for mine, its in zip(ours.pieces, theirs.pieces, strict=True):
        for key, value in its.items():
            assert np.asarray(mine[key]).tobytes() == np.asarray(value).tobytes(), key
