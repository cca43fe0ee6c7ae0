"""The Spark engine (core.data.spark) equals the default engine bit for bit, on local[2]: the
summaries dataset it writes from the executors holds the default engine's rows and report, and
``release --all --engine spark`` (core.citywide.spark_release) its releases.

Skipped only when PySpark is not installed (CI installs it, with Debian's Java). Every check
runs inside one test (as subtests) so that the whole file starts one JVM whatever the xdist
distribution: ``--dist loadgroup`` cannot be relied on (pytest-xdist 3.8 marks groups by
rewriting node ids, which pytest 9.2 no longer reads, so grouped tests spread over workers).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed (pip install -e '.[spark]')")

from core.cli import main  # noqa: E402
from core.data import ColumnMap, PrepConfig, load_demo, prepare_file  # noqa: E402
from core.data.spark import prepare_spark, session  # noqa: E402
from core.data.spark_dataset import SIDECAR  # noqa: E402
from core.data.summaries import METADATA_KEY, SCHEMA, read_summaries  # noqa: E402
from core.errors import HexplorerError  # noqa: E402
from tests.data.test_ids import _mixed  # noqa: E402
from tests.data.test_summaries import _dirty, _with_repeats  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)


def dataset_rows(folder) -> pd.DataFrame:
    """A summaries dataset's parts concatenated and sorted by (hat, user_id), read with pyarrow
    as read_summaries reads a file (no dataset reader needed)."""
    parts = sorted(Path(folder).glob("**/part-*.parquet"))
    assert parts, f"no parts in {folder}"
    table = pa.concat_tables([pq.read_table(p) for p in parts]).cast(SCHEMA)
    return table.sort_by([("hat", "ascending"), ("user_id", "ascending")]).to_pandas()


def check_layout(folder) -> int:
    """Every HAT in exactly one part, each part sorted by (hat, user_id); the number of parts."""
    parts = sorted(Path(folder).glob("**/part-*.parquet"))
    seen: set[str] = set()
    for p in parts:
        rows = pq.read_table(p, columns=["hat", "user_id"]).to_pandas()
        assert rows.equals(rows.sort_values(["hat", "user_id"]).reset_index(drop=True)), p
        hats = set(rows["hat"])
        assert not hats & seen, f"a HAT lies in two parts ({p})"
        seen |= hats
    return len(parts)


def _same(folder, expected, report, path=None):
    """The dataset at ``folder`` holds ``expected``'s rows bit for bit, and its sidecar the
    footer body of the default engine's file (``path``, written here when None) plus the layout."""
    pd.testing.assert_frame_equal(dataset_rows(folder), expected.summaries)  # s, q bit for bit
    assert report == expected.report  # rejections, examples, repeats, notes
    if path is None:
        from core.data.summaries import write_summaries

        path = write_summaries(expected, Path(folder).parent / "default.parquet")
    footer = json.loads(pq.read_schema(path).metadata[METADATA_KEY.encode()])
    sidecar = json.loads((Path(folder) / SIDECAR).read_text())
    assert sidecar == {**footer, "engine": "spark", "layout": "dataset"}
    check_layout(folder)


def _test_data(spark, tmp_path, fmt):
    raw = _dirty(n=4000)
    raw["user_id"] = raw["user_id"].str.replace("u", "0")  # numeric ids with leading zeros
    src = tmp_path / f"dirty.{fmt}"
    if fmt == "parquet":
        raw.to_parquet(src)
    else:
        raw.to_csv(src, index=False)
    config = PrepConfig(slot="30min", upper=50.0)
    report = prepare_spark(src, tmp_path / "s", config=config, spark=spark)
    expected = prepare_file(src, config=config)
    _same(tmp_path / "s", expected, report)
    assert report.rejected and report.clamped_high and report.zeros_dropped


def _demo_city(spark, tmp_path):
    src = tmp_path / "demo.parquet"
    load_demo().rename(columns={"speed": "kmh"}).to_parquet(src)  # nanosecond timestamps
    columns = ColumnMap(value="kmh")
    report = prepare_spark(src, tmp_path / "s", columns, spark=spark)
    _same(tmp_path / "s", prepare_file(src, columns), report)


_SMALL = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100",
    "spark.sql.files.maxPartitionBytes": "4096",
    "spark.sql.files.openCostInBytes": "0",
}


def _repeats_over_partitions(spark, tmp_path, fmt):
    """100-row Arrow batches in many partitions: repeats straddle batches and partitions."""
    raw = _with_repeats(n=1200)
    text = raw["timestamp"].dt.strftime("%Y-%m-%d %H:%M:%S").astype(object)
    text[1100:] = text[1100:] + "Z"  # only the last rows carry an offset
    raw["timestamp"] = text
    src = tmp_path / f"rep.{fmt}"
    if fmt == "parquet":
        raw.to_parquet(src, row_group_size=150)
    else:
        raw.to_csv(src, index=False)
    expected = prepare_file(src)
    assert expected.report.duplicates == int(raw.duplicated().sum()) == 4
    assert expected.report.notes
    old = {k: spark.conf.get(k) for k in _SMALL}
    try:
        for k, v in _SMALL.items():
            spark.conf.set(k, v)
        reader = spark.read.parquet if fmt == "parquet" else spark.read.option("header", True).csv
        assert reader(str(src)).rdd.getNumPartitions() > 1
        report = prepare_spark(src, tmp_path / "s", spark=spark)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    _same(tmp_path / "s", expected, report)


def _zone_aware_timestamps(spark, tmp_path):
    raw = _dirty(n=600)
    raw["timestamp"] = raw["timestamp"].dt.tz_localize("Asia/Kolkata")
    src = tmp_path / "tz.parquet"
    raw.to_parquet(src)
    report = prepare_spark(src, tmp_path / "s", spark=spark)
    _same(tmp_path / "s", prepare_file(src), report)


def _cli_engine_spark(spark, tmp_path):
    src = tmp_path / "d.csv"
    _dirty(n=1500).to_csv(src, index=False)
    argv = [str(src), "--engine", "spark", "--spark-master", "local[2]", "--json"]
    assert main(["prepare", *argv, "--output", str(tmp_path / "s")]) == 0
    assert main(["prepare", str(src), "--output", str(tmp_path / "p.parquet")]) == 0
    expected = read_summaries(tmp_path / "p.parquet")
    _same(tmp_path / "s", expected, expected.report, tmp_path / "p.parquet")


def _canonical_ids(spark, tmp_path, fmt):
    """Spellings of one id (spaces, 7.0, NFD, case) over many partitions: the same users and
    the same count of merged ids as the default engine, case-folded too."""
    raw = _mixed()
    src = tmp_path / f"ids.{fmt}"
    raw.to_csv(src, index=False) if fmt == "csv" else raw.to_parquet(src, row_group_size=150)
    old = {k: spark.conf.get(k) for k in _SMALL}
    try:
        for k, v in _SMALL.items():
            spark.conf.set(k, v)
        for config in (PrepConfig(), PrepConfig(ids="casefold")):
            expected = prepare_file(src, config=config)
            assert expected.report.ids_merged > expected.report.ids_merged_into > 0
            report = prepare_spark(src, tmp_path / "s", config=config, spark=spark, overwrite=True)
            _same(tmp_path / "s", expected, report)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    floats = _dirty(n=300)
    floats["user_id"] = floats["user_id"].str.replace("u", "36600000").astype(float)
    floats.to_parquet(tmp_path / "f.parquet")  # one missing id: float64, 366000001.0
    report = prepare_spark(tmp_path / "f.parquet", tmp_path / "s", spark=spark, overwrite=True)
    _same(tmp_path / "s", prepare_file(tmp_path / "f.parquet"), report)
    assert "366000001" in set(dataset_rows(tmp_path / "s")["user_id"])


def _errors_are_one_line(spark, tmp_path):
    src = tmp_path / "x.csv"
    src.write_text("a,b\n1,2\n")
    with pytest.raises(HexplorerError, match="Column 'user_id' not found"):
        prepare_spark(src, tmp_path / "s", spark=spark)
    zeros = _dirty(n=50)
    zeros["speed"] = 0.0
    zeros.to_csv(tmp_path / "z.csv", index=False)
    with pytest.raises(HexplorerError, match="keep_zeros"):
        prepare_spark(tmp_path / "z.csv", tmp_path / "s", spark=spark)
    with pytest.raises(HexplorerError, match="Spark could not read"):
        prepare_spark(tmp_path / "absent", tmp_path / "s", spark=spark)


def _fleet(tmp_path) -> tuple[Path, Path]:
    """A small city fleet (bench/fleet.py) and its default-engine summaries file, made once
    for all the cases (in the folder beside theirs)."""
    from bench.fleet import make_fleet
    from core.data.stream import prepare_to_file

    shared = tmp_path.parent / "fleet"
    src, default = shared / "fleet.parquet", shared / "default.parquet"
    if not default.exists():
        shared.mkdir(exist_ok=True)
        make_fleet(6000, seed=2, n_users=120).write_parquet(src)
        prepare_to_file(src, default, config=PrepConfig(resolution=8))
    return src, default


def _fleet_dataset(spark, tmp_path) -> tuple[Path, Path]:
    """The fleet's summaries dataset written by Spark in 3 parts (made once), and the file."""
    src, default = _fleet(tmp_path)
    dataset = default.parent / "s"
    if not (dataset / SIDECAR).exists():
        prepare_spark(src, dataset, config=PrepConfig(resolution=8), spark=spark, parts=3)
    return dataset, default


_COLLECTORS = ("collect", "tail", "toArrow", "toPandas", "_collect_as_arrow", "toLocalIterator")


def _refusing(frame_type, name):
    """``<frame_type>.<name>`` that fails on a frame of summaries (columns m and s, or hat or
    user_id)."""
    original = getattr(frame_type, name)

    def guarded(self, *args, **kwargs):
        cols = set(self.columns)
        if {"m", "s"} <= cols or {"hat", "user_id"} & cols:
            raise AssertionError(f"DataFrame.{name} brought summaries to the driver: {cols}")
        return original(self, *args, **kwargs)

    return guarded


def _dataset_from_the_executors(spark, tmp_path):
    """Parts written by the executors, nothing collected: every DataFrame collector refuses a
    frame of summaries while the job runs (the old engine's agg.toArrow() fails here)."""
    src, default = _fleet(tmp_path)
    dataset = default.parent / "s"
    frame_type = type(spark.range(1))  # the classic DataFrame every collector runs through
    with pytest.MonkeyPatch.context() as mp:
        for name in _COLLECTORS:
            mp.setattr(frame_type, name, _refusing(frame_type, name))
        report = prepare_spark(
            src, dataset, config=PrepConfig(resolution=8), spark=spark, parts=3, overwrite=True
        )
        with pytest.raises(AssertionError, match="brought summaries"):  # the guard works
            spark.read.parquet(str(dataset)).limit(1).collect()
    expected = read_summaries(default)
    _same(dataset, expected, report, default)
    assert check_layout(dataset) == 3
    assert (dataset / "_SUCCESS").exists()


def _default_release(default, name, epsilon, seed) -> pd.DataFrame:
    from core.citywide.batch import HatBatch, release_all
    from core.data.summaries import read_summary_frame

    batch = HatBatch.from_summaries(read_summary_frame(default), upper=65.0)
    return release_all(name, batch, epsilon, seed=seed)


def _release_all_equals_the_default_engine(spark, tmp_path):
    """Releases of a dataset (several batches) and of a single file, bit for bit by hat."""
    import shutil

    from core.citywide.spark_release import release_all_spark

    dataset, default = _fleet_dataset(spark, tmp_path)
    nested = tmp_path / "nested"  # parts at two depths, one folder named as Spark partitions
    (nested / "slot=1").mkdir(parents=True)
    shutil.copy(dataset / SIDECAR, nested)
    for i, part in enumerate(sorted(dataset.glob("part-*.parquet"))):
        shutil.copy(part, nested / "slot=1" if i else nested)
    for source, name, out in (
        (dataset, "arrayavg-best", "a.parquet"),
        (nested, "opt-arrayavg", "b.parquet"),
        (default, "opt-arrayavg-convex", "c.parquet"),
    ):
        result = release_all_spark(
            source, tmp_path / out, name, 0.7, seed=11, spark=spark, batch_rows=1500
        )
        got = pq.read_table(tmp_path / out).to_pandas().sort_values("hat", ignore_index=True)
        expected = _default_release(default, name, 0.7, 11)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        assert result["hats"] == len(expected) and not result["published"]


def _cli_release_spark(spark, tmp_path):
    """The CLI: prepare and release --all on Spark (CSV parts) equal the default engine's."""
    import polars as pl

    src, default = _fleet(tmp_path)
    spark_opts = ["--engine", "spark", "--spark-master", "local[2]"]
    data = ["--resolution", "8"]
    assert main(["prepare", str(src), *data, *spark_opts, "--output", str(tmp_path / "s")]) == 0
    release = ["release", "--all", "--mechanism", "baseline", "--epsilon", "2", "--seed", "4"]
    out = tmp_path / "r.csv"
    assert (
        main([*release[:1], str(tmp_path / "s"), *release[1:], *spark_opts, "--output", str(out)])
        == 0
    )
    assert (
        main([*release[:1], str(default), *release[1:], "--output", str(tmp_path / "d.csv")]) == 0
    )
    got = pl.read_csv(sorted(out.glob("part-*.csv"))).sort("hat")
    assert got.equals(pl.read_csv(tmp_path / "d.csv"))  # Spark's doubles parse back the same
    assert (
        main([*release[:1], str(tmp_path / "s"), *release[1:], *spark_opts, "--output", str(out)])
        == 2
    )
    assert (
        main(
            [
                *release[:1],
                str(tmp_path / "s"),
                *release[1:],
                *spark_opts,
                "--output",
                str(out),
                "--force",
            ]
        )
        == 0
    )


def _default_engine_reads_it(spark, tmp_path):
    """A dataset Spark wrote (hash-partitioned parts) is a summaries dataset to the default
    engine: read whole it is the file's rows, and release --all --seed on it (part by part) and
    hats give what the file gives."""
    import contextlib
    import io

    import polars as pl

    from core.data.summaries import is_summaries

    dataset, default = _fleet_dataset(spark, tmp_path)
    assert is_summaries(dataset)
    pd.testing.assert_frame_equal(
        read_summaries(dataset).summaries, read_summaries(default).summaries, check_exact=True
    )
    release = ["--all", "--mechanism", "arrayavg-best", "--epsilon", "1", "--seed", "7"]
    hats = {}
    for name, data in (("d", dataset), ("f", default)):
        assert (
            main(["release", str(data), *release, "--output", str(tmp_path / f"{name}.csv")]) == 0
        )
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["hats", str(data), "--json"]) == 0
        hats[name] = json.loads(out.getvalue())
    assert pl.read_csv(tmp_path / "d.csv").equals(pl.read_csv(tmp_path / "f.csv"))
    assert hats["d"] == hats["f"] and len(hats["f"]) > 0


def _url_target(spark, tmp_path):
    """A URL target: parts and the sidecar through Hadoop's FileSystem (file:// here, s3a://
    on a cluster), released from the URL."""
    from core.citywide.spark_release import release_all_spark

    src, default = _fleet(tmp_path)
    url = (tmp_path / "u").as_uri()
    report = prepare_spark(src, url, config=PrepConfig(resolution=8), spark=spark, parts=2)
    _same(tmp_path / "u", read_summaries(default), report, default)
    release_all_spark(url, (tmp_path / "r.parquet").as_uri(), "baseline", 1.0, seed=1, spark=spark)
    got = pq.read_table(tmp_path / "r.parquet").to_pandas().sort_values("hat", ignore_index=True)
    pd.testing.assert_frame_equal(got, _default_release(default, "baseline", 1.0, 1))


def _refusals(spark, tmp_path):
    """One line for every input the Spark dataset and release refuse."""
    import shutil

    from core.citywide.spark_release import release_all_spark

    src, default = _fleet(tmp_path)
    with pytest.raises(HexplorerError, match="writes a summaries dataset, a folder"):
        prepare_spark(src, tmp_path / "s.parquet", spark=spark)
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(HexplorerError, match="exists; pass --force"):
        prepare_spark(src, other, spark=spark)
    with pytest.raises(HexplorerError, match="not overwriting it"):
        prepare_spark(src, other, spark=spark, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"
    dataset, _ = _fleet_dataset(spark, tmp_path)
    run = dict(spark=spark, seed=1)
    with pytest.raises(HexplorerError, match="all-HATs release form"):
        release_all_spark(dataset, tmp_path / "r.parquet", "levy", 1.0, **run)
    with pytest.raises(HexplorerError, match="epsilon"):
        release_all_spark(dataset, tmp_path / "r.parquet", "baseline", 0.0, **run)
    with pytest.raises(HexplorerError, match="must end in .parquet or .csv"):
        release_all_spark(dataset, tmp_path / "r", "baseline", 1.0, **run)
    with pytest.raises(HexplorerError, match="upper = 65.0; --upper 50.0"):
        release_all_spark(dataset, tmp_path / "r.parquet", "baseline", 1.0, upper=50.0, **run)
    cut = tmp_path / "cut"  # an interrupted write: parts without the sidecar
    shutil.copytree(dataset, cut)
    (cut / SIDECAR).unlink()
    with pytest.raises(HexplorerError, match="not a summaries dataset"):
        release_all_spark(cut, tmp_path / "r.parquet", "baseline", 1.0, **run)
    bad = tmp_path / "bad"  # values no preparation gives: refused on the executors, one line
    shutil.copytree(dataset, bad)
    part = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    pq.write_table(table.set_column(4, "m", pa.array([-1] * table.num_rows, pa.int64())), part)
    for crc in bad.glob(".*.crc"):  # Hadoop's local checksums of the parts
        crc.unlink()
    with pytest.raises(HexplorerError, match="The Spark job failed: .* holds summaries no prep"):
        release_all_spark(bad, tmp_path / "r.parquet", "baseline", 1.0, **run)
    spark_opts = ["--engine", "spark", "--spark-master", "local[2]", "--mechanism", "baseline"]
    release = ["release", str(dataset), *spark_opts, "--epsilon", "1"]
    out = ["--output", str(tmp_path / "r.parquet")]
    assert main([*release, "--all", *out]) == 2  # no --seed: publishing is refused
    assert main([*release, "--seed", "1"]) == 2  # no --all
    assert main([*release, "--all", "--seed", "1", "--day", "2024-03-04", *out]) == 2
    assert not list(tmp_path.glob("r.parquet/part-*"))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in folder.rglob("*") if f.is_file()}


def _failed_jobs_leave_the_target(spark, tmp_path):
    """A job that fails leaves its target as it was: absent (no ``_temporary``, no hidden
    staging folder), or an earlier release or dataset intact even with overwrite (Spark's
    overwrite deletes first; the staged write replaces the folder only once it is whole)."""
    import shutil

    from core.citywide.spark_release import release_all_spark

    dataset, _ = _fleet_dataset(spark, tmp_path)
    bad = tmp_path / "bad"  # values no preparation gives: the executors refuse them mid-job
    shutil.copytree(dataset, bad)
    part = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    pq.write_table(table.set_column(4, "m", pa.array([-1] * table.num_rows, pa.int64())), part)
    for crc in bad.glob(".*.crc"):
        crc.unlink()
    run = dict(spark=spark, seed=1)
    fresh = tmp_path / "fresh.parquet"
    with pytest.raises(HexplorerError, match="job failed: .* Nothing was written to"):
        release_all_spark(bad, fresh, "baseline", 1.0, **run)
    assert not fresh.exists()
    kept = tmp_path / "kept.parquet"
    release_all_spark(dataset, kept, "baseline", 1.0, **run)
    before = _files(kept)
    with pytest.raises(HexplorerError, match="job failed: .*kept.parquet' was left as it was"):
        release_all_spark(bad, kept, "baseline", 1.0, overwrite=True, **run)
    assert _files(kept) == before
    release_all_spark(dataset, kept, "baseline", 2.0, overwrite=True, **run)  # replaced whole
    assert _files(kept) != before and (kept / "_SUCCESS").exists()

    src, _ = _fleet(tmp_path)  # a dataset's rewrite that fails at its last step, the sidecar
    again = tmp_path / "again"
    shutil.copytree(dataset, again)
    before = _files(again)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("core.data.spark.write_sidecar", _fail_sidecar)
        with pytest.raises(HexplorerError, match="disk full.*again' was left as it was"):
            prepare_spark(src, again, config=PrepConfig(resolution=8), spark=spark, overwrite=True)
    assert _files(again) == before
    assert not [f.name for f in tmp_path.iterdir() if f.name.startswith(".")]


def _fail_sidecar(*args, **kwargs):
    raise OSError("disk full")


CASES: dict[str, Callable] = {
    "dirty parquet": lambda s, p: _test_data(s, p, "parquet"),
    "dirty csv": lambda s, p: _test_data(s, p, "csv"),
    "demo city": _demo_city,
    "repeats over partitions, parquet": lambda s, p: _repeats_over_partitions(s, p, "parquet"),
    "repeats over partitions, csv": lambda s, p: _repeats_over_partitions(s, p, "csv"),
    "zone-aware timestamps": _zone_aware_timestamps,
    "cli --engine spark": _cli_engine_spark,
    "canonical ids, csv": lambda s, p: _canonical_ids(s, p, "csv"),
    "canonical ids, parquet": lambda s, p: _canonical_ids(s, p, "parquet"),
    "one-line errors": _errors_are_one_line,
    "dataset from the executors, nothing collected": _dataset_from_the_executors,
    "release --all on Spark equals the default engine": _release_all_equals_the_default_engine,
    "cli release --all --engine spark": _cli_release_spark,
    "the default engine reads it": _default_engine_reads_it,
    "a URL target": _url_target,
    "refusals": _refusals,
    "a failed job leaves the target as it was": _failed_jobs_leave_the_target,
}


def test_spark_engine_equals_the_default_engine(subtests, tmp_path, capsys):
    spark = session("local[2]")
    try:
        for name, case in CASES.items():
            folder = tmp_path / name.replace(" ", "_").replace(",", "")
            folder.mkdir()
            with subtests.test(msg=name):
                case(spark, folder)
            capsys.readouterr()
    finally:
        spark.stop()
