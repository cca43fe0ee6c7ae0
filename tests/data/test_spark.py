"""The Spark engine (core.data.spark) equals the default engine bit for bit, on local[2].

Skipped only when PySpark is not installed (CI installs it, with Debian's Java). Every check
runs inside one test (as subtests) so that the whole file starts one JVM whatever the xdist
distribution: ``--dist loadgroup`` cannot be relied on (pytest-xdist 3.8 marks groups by
rewriting node ids, which pytest 9.2 no longer reads, so grouped tests spread over workers).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed (pip install -e '.[spark]')")

from core.cli import main  # noqa: E402
from core.data import ColumnMap, PrepConfig, load_demo, prepare_file  # noqa: E402
from core.data.spark import prepare_spark, session  # noqa: E402
from core.data.summaries import read_metadata, read_summaries  # noqa: E402
from core.errors import HexplorerError  # noqa: E402
from tests.data.test_ids import _mixed  # noqa: E402
from tests.data.test_summaries import _dirty, _with_repeats  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)


def _same(got_path, expected, report):
    got = read_summaries(got_path)
    pd.testing.assert_frame_equal(got.summaries, expected.summaries)  # s, q bit for bit
    assert report == got.report == expected.report  # rejections, examples, repeats, notes
    assert read_metadata(got_path)["engine"] == "spark"


def _test_data(spark, tmp_path, fmt):
    raw = _dirty(n=4000)
    raw["user_id"] = raw["user_id"].str.replace("u", "0")  # numeric ids with leading zeros
    src = tmp_path / f"dirty.{fmt}"
    if fmt == "parquet":
        raw.to_parquet(src)
    else:
        raw.to_csv(src, index=False)
    config = PrepConfig(slot="30min", upper=50.0)
    report = prepare_spark(src, tmp_path / "s.parquet", config=config, spark=spark)
    expected = prepare_file(src, config=config)
    _same(tmp_path / "s.parquet", expected, report)
    assert report.rejected and report.clamped_high and report.zeros_dropped


def _demo_city(spark, tmp_path):
    src = tmp_path / "demo.parquet"
    load_demo().rename(columns={"speed": "kmh"}).to_parquet(src)  # nanosecond timestamps
    columns = ColumnMap(value="kmh")
    report = prepare_spark(src, tmp_path / "s.parquet", columns, spark=spark)
    _same(tmp_path / "s.parquet", prepare_file(src, columns), report)


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
        report = prepare_spark(src, tmp_path / "s.parquet", spark=spark)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    _same(tmp_path / "s.parquet", expected, report)


def _zone_aware_timestamps(spark, tmp_path):
    raw = _dirty(n=600)
    raw["timestamp"] = raw["timestamp"].dt.tz_localize("Asia/Kolkata")
    src = tmp_path / "tz.parquet"
    raw.to_parquet(src)
    report = prepare_spark(src, tmp_path / "s.parquet", spark=spark)
    _same(tmp_path / "s.parquet", prepare_file(src), report)


def _cli_engine_spark(spark, tmp_path):
    src = tmp_path / "d.csv"
    _dirty(n=1500).to_csv(src, index=False)
    argv = [str(src), "--engine", "spark", "--spark-master", "local[2]", "--json"]
    assert main(["prepare", *argv, "--output", str(tmp_path / "s.parquet")]) == 0
    assert main(["prepare", str(src), "--output", str(tmp_path / "p.parquet")]) == 0
    pd.testing.assert_frame_equal(
        read_summaries(tmp_path / "s.parquet").summaries,
        read_summaries(tmp_path / "p.parquet").summaries,
    )


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
            report = prepare_spark(src, tmp_path / "s.parquet", config=config, spark=spark)
            _same(tmp_path / "s.parquet", expected, report)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    floats = _dirty(n=300)
    floats["user_id"] = floats["user_id"].str.replace("u", "36600000").astype(float)
    floats.to_parquet(tmp_path / "f.parquet")  # one missing id: float64, 366000001.0
    report = prepare_spark(tmp_path / "f.parquet", tmp_path / "s.parquet", spark=spark)
    _same(tmp_path / "s.parquet", prepare_file(tmp_path / "f.parquet"), report)
    assert "366000001" in set(read_summaries(tmp_path / "s.parquet").summaries["user_id"])


def _errors_are_one_line(spark, tmp_path):
    src = tmp_path / "x.csv"
    src.write_text("a,b\n1,2\n")
    with pytest.raises(HexplorerError, match="Column 'user_id' not found"):
        prepare_spark(src, tmp_path / "s.parquet", spark=spark)
    zeros = _dirty(n=50)
    zeros["speed"] = 0.0
    zeros.to_csv(tmp_path / "z.csv", index=False)
    with pytest.raises(HexplorerError, match="keep_zeros"):
        prepare_spark(tmp_path / "z.csv", tmp_path / "s.parquet", spark=spark)
    with pytest.raises(HexplorerError, match="Spark could not read"):
        prepare_spark(tmp_path / "absent", tmp_path / "s.parquet", spark=spark)


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
