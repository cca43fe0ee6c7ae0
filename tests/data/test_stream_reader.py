"""The streaming reader's user ids: text ids of a Parquet file are read as polars categories
(cheap from its dictionary pages), and every report and summary is what the text gives."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from core.data import ColumnMap, PrepConfig, prepare_file
from core.data.clean import _category_codes, _distinct_codes
from core.data.stream import batches, prepare_to_file
from core.data.summaries import read_summaries

_IDS = [" a", "a", None, "Cafe\u0301", "Caf\u00e9", "7.0", "7", "B", "b", "", "a"]


def _records(n: int = 440) -> pa.Table:
    ids = [_IDS[i % len(_IDS)] for i in range(n)]
    return pa.table(
        {
            "user_id": ids,
            "lat": [21.17 + (i % 13) * 0.004 for i in range(n)],
            "lon": [72.80 + (i % 7) * 0.004 for i in range(n)],
            "timestamp": pa.array([1_709_600_000 + 97 * i for i in range(n)], pa.timestamp("s")),
            "speed": [float(i % 70) for i in range(n)],
        }
    )


def test_category_codes_equal_the_text_codes():
    raw = pl.Series("user_id", _IDS * 3)
    for values in (raw, raw.drop_nulls(), pl.Series("user_id", [None, None], dtype=pl.String)):
        text, codes = _distinct_codes(values)
        cats, cat_codes = _category_codes(values.cast(pl.Categorical))
        assert cats.dtype == pl.String and cat_codes.dtype == pl.UInt32
        assert cats.gather(cat_codes).to_list() == values.to_list()
        assert sorted(cats.to_list(), key=str) == sorted(text.to_list(), key=str)
        assert cats.len() == text.len()


def test_streamed_ids_as_categories_give_the_text_ids_report_and_summaries(tmp_path):
    src = tmp_path / "ids.parquet"
    pq.write_table(_records(), src)
    first = next(iter(batches(src, ColumnMap(), 100)()))
    assert isinstance(first.schema["user_id"], pl.Categorical)
    config = PrepConfig(upper=50.0)
    expected = prepare_file(src, config=config)  # in memory: the ids read as text
    assert expected.report.ids_merged and expected.report.rejected
    for batch_rows in (100, 10_000):
        report = prepare_to_file(src, tmp_path / "s.parquet", config=config, batch_rows=batch_rows)
        assert report == expected.report
        got = read_summaries(tmp_path / "s.parquet").summaries
        assert got.equals(expected.summaries)


def test_prepare_to_a_summaries_file_never_imports_pandas(tmp_path):
    """`hexplorer prepare` needs no pandas: importing it costs half a second (pyarrow's
    ``pa.array`` of a numpy array imports it, so the writer must not call it)."""
    import subprocess
    import sys

    src = tmp_path / "ids.parquet"
    pq.write_table(_records(), src)
    code = (
        "import sys\n"
        "from core.data.outofcore import prepare_summaries\n"
        f"prepare_summaries({str(src)!r}, {str(tmp_path / 's.parquet')!r})\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert read_summaries(tmp_path / "s.parquet").summaries.shape[0] > 0
