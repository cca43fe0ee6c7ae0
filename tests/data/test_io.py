import io

import pandas as pd
import pytest

from core.data import ColumnMap, prepare, prepare_file, read_table
from core.errors import HexplorerError

RAW = pd.DataFrame(
    {
        "user_id": ["a", "a", "b", "c"],
        "lat": [21.2, 21.2, 21.2, 21.21],
        "lon": [72.8, 72.8, 72.8, 72.81],
        "timestamp": [
            "2024-03-05 08:10:00",
            "2024-03-05 08:20:00",
            "2024-03-05 08:30:00",
            "2024-03-05 09:00:00",
        ],
        "speed": [10.0, 20.0, 30.0, 40.0],
    }
)


def csv_bytes(frame=RAW):
    return frame.to_csv(index=False).encode()


def parquet_bytes(frame=RAW):
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


@pytest.mark.parametrize("make", [csv_bytes, parquet_bytes])
def test_round_trip_bytes_file_object(make):
    data = make()
    for source in (data, io.BytesIO(data)):
        back = read_table(source)
        assert list(back.columns) == list(RAW.columns)
        assert back["user_id"].tolist() == RAW["user_id"].tolist()
        assert back["speed"].tolist() == RAW["speed"].tolist()


@pytest.mark.parametrize(("make", "suffix"), [(csv_bytes, ".csv"), (parquet_bytes, ".parquet")])
def test_round_trip_paths_and_prepare_file(tmp_path, make, suffix):
    path = tmp_path / f"data{suffix}"
    path.write_bytes(make())
    back = read_table(path)
    assert back["lat"].tolist() == RAW["lat"].tolist()
    # str path, sniffing without suffix, and the fast path agree with prepare()
    nosuffix = tmp_path / "data"
    nosuffix.write_bytes(make())
    expected = prepare(RAW).summaries
    for source in (str(path), nosuffix):
        got = prepare_file(source).summaries
        pd.testing.assert_frame_equal(got, expected)


def test_fmt_from_filename_for_uploaded_bytes():
    assert read_table(parquet_bytes(), fmt="upload.parquet").shape == (4, 5)
    assert read_table(csv_bytes(), fmt="upload.CSV").shape == (4, 5)
    with pytest.raises(HexplorerError, match="'fmt'"):
        read_table(csv_bytes(), fmt="upload.xlsx")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(HexplorerError, match="empty"):
        read_table(path)
    with pytest.raises(HexplorerError, match="empty"):
        read_table(b"")
    with pytest.raises(HexplorerError, match="no data rows"):
        read_table(b"user_id,lat,lon,timestamp,speed\n")


def test_missing_file(tmp_path):
    with pytest.raises(HexplorerError, match="File not found"):
        read_table(tmp_path / "nope.csv")


def test_unreadable_parquet():
    with pytest.raises(HexplorerError, match="Could not read the uploaded file as PARQUET"):
        read_table(b"PAR1 this is not parquet at all")


def test_missing_column_message():
    frame = RAW.rename(columns={"speed": "v"})
    msg = "Column 'speed' not found; the file has columns: user_id, lat, lon, timestamp, v"
    with pytest.raises(HexplorerError) as info:
        prepare(frame)
    assert str(info.value) == msg
    with pytest.raises(HexplorerError) as info:
        prepare_file(csv_bytes(frame))
    assert str(info.value) == msg
    with pytest.raises(HexplorerError) as info:
        prepare_file(parquet_bytes(frame))
    assert str(info.value) == msg


def test_column_mapping_other_names(tmp_path):
    frame = RAW.rename(
        columns={"user_id": "bus", "lat": "y", "lon": "x", "timestamp": "t", "speed": "kmh"}
    )
    cols = ColumnMap(user="bus", lat="y", lon="x", time="t", value="kmh")
    expected = prepare(RAW).summaries
    pd.testing.assert_frame_equal(prepare(frame, cols).summaries, expected)
    pd.testing.assert_frame_equal(prepare_file(csv_bytes(frame), cols).summaries, expected)


def test_text_speed_in_csv_late_row():
    """A text value after many numeric rows (beyond type inference) is rejected, not a crash."""
    n = 12_000
    frame = pd.DataFrame(
        {
            "user_id": ["u"] * n,
            "lat": [21.2] * n,
            "lon": [72.8] * n,
            "timestamp": ["2024-03-05 08:10"] * n,
            "speed": ["10"] * (n - 1) + ["fast"],
        }
    )
    p = prepare_file(csv_bytes(frame))
    assert p.report.rejected == {"speed not a number": 1}
    assert p.summaries["m"].tolist() == [n - 1]
    assert p.summaries["s"].tolist() == [10.0 * (n - 1)]


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe\x00\x01garbage\x00\x00\xff\n\x01\x02",  # binary
        "user_id,speed\n\xe9,1\n".encode("latin-1"),  # not UTF-8
        b"a,b\n1,2,3,4\n5\n",  # ragged
    ],
)
def test_unreadable_csv_one_line_error(data):
    with pytest.raises(HexplorerError, match="^Could not read the uploaded file as CSV: [^\n]*$"):
        read_table(data)


@pytest.mark.parametrize("make", [csv_bytes, parquet_bytes])
def test_column_names(make, tmp_path):
    from core.data import column_names

    assert column_names(make()) == list(RAW.columns)
    path = tmp_path / "x.bin"
    path.write_bytes(make())
    assert column_names(path) == list(RAW.columns)
    with pytest.raises(HexplorerError, match="empty"):
        column_names(b"")


# --- memory budget (estimate_memory, max_bytes) ------------------------------------------------


def _repeated_parquet(rows: int) -> bytes:
    """A small Parquet file holding ``rows`` copies of one record (compresses to almost nothing)."""
    import polars as pl

    one = {"user_id": "a", "lat": 21.2, "lon": 72.8, "timestamp": "2024-03-05 08:10", "speed": 3.0}
    frame = pl.select(**{k: pl.repeat(v, rows) for k, v in one.items()})
    out = io.BytesIO()
    frame.write_parquet(out)
    return out.getvalue()


def test_estimate_reads_parquet_rows_from_the_footer():
    from core.data.io import BYTES_PER_ROW, estimate_memory

    data = _repeated_parquet(2_000_000)
    assert len(data) < 100_000  # tiny on disk ...
    assert estimate_memory(data, "parquet") >= 2_000_000 * BYTES_PER_ROW  # ... big in memory
    wanted = estimate_memory(data, "parquet", ["user_id", "speed"])
    assert 2_000_000 * BYTES_PER_ROW <= wanted < estimate_memory(data, "parquet")


def test_estimate_of_csv_scales_with_its_rows(tmp_path):
    from core.data.io import BYTES_PER_ROW, estimate_memory

    line = b"bus-0001,21.2,72.8,2024-03-05 08:10:00,30.5\n"
    body = b"user_id,lat,lon,timestamp,speed\n" + line * 100_000
    path = tmp_path / "r.csv"
    path.write_bytes(body)
    rows = estimate_memory(body, "csv") - 2 * len(body)
    assert rows == pytest.approx(100_000 * BYTES_PER_ROW, rel=0.01)
    assert estimate_memory(str(path), "csv") == estimate_memory(body, "csv")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_file_over_the_budget_is_refused_before_it_is_parsed(monkeypatch, fmt):
    import polars as pl

    if fmt == "parquet":
        data = _repeated_parquet(20_000)
    else:
        data = b"user_id,lat,lon,timestamp,speed\n" + b"a,21.2,72.8,2024-03-05 08:10,3\n" * 20_000

    def never(*args, **kwargs):
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(pl, "read_parquet", never)
    monkeypatch.setattr(pl, "read_csv", never)
    handle = io.BytesIO(data)
    handle.name = f"big.{fmt}"
    with pytest.raises(HexplorerError, match=r"'big\.\w+' would need about \d+ MB of memory"):
        prepare_file(handle, max_bytes=2**20)
    monkeypatch.undo()
    handle.seek(0)
    assert prepare_file(handle, max_bytes=2**30).report.records > 0


def test_estimate_of_csv_samples_head_middle_and_tail(tmp_path):
    """A file that starts with long lines (a wide free-text column early on) and goes on with
    short ones: the first 64 kB alone under-estimated its rows several times."""
    from core.data.io import BYTES_PER_ROW, estimate_memory

    long_line = b"bus-0001,21.2,72.8,2024-03-05 08:10:00,30.5," + b"x" * 400 + b"\n"
    short = b"b1,21.2,72.8,2024-03-05 08:10:00,30.5,\n"
    body = b"user_id,lat,lon,timestamp,speed,note\n" + long_line * 200 + short * 200_000
    rows = (estimate_memory(body, "csv") - 2 * len(body)) / BYTES_PER_ROW
    assert rows == pytest.approx(200_200, rel=0.35)
    path = tmp_path / "r.csv"
    path.write_bytes(body)
    assert estimate_memory(str(path), "csv") == estimate_memory(body, "csv")


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        (b"user_id,lat,lon,timestamp,speed,Speed", "'speed', 'Speed'"),
        (b"user_id,lat,lon,timestamp,speed,speed", "'speed', 'speed'"),
        (b"USER_ID,user_id,lat,lon,timestamp,speed", "'USER_ID', 'user_id'"),
    ],
)
def test_repeated_headers_ignoring_case_are_refused_with_their_names(tmp_path, header, shown):
    body = header + b"\n" + b"a,b,21.2,72.8,2024-03-05 08:10,3\n"
    with pytest.raises(HexplorerError, match=f"repeats column names \\(ignoring case\\): {shown}"):
        read_table(body)
    path = tmp_path / "dup.csv"
    path.write_bytes(body)
    with pytest.raises(HexplorerError, match="repeats column names"):
        prepare_file(path)
    from core.data.io import column_names

    with pytest.raises(HexplorerError, match="repeats column names"):
        column_names(path)


def test_repeated_parquet_columns_ignoring_case_are_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "dup.parquet"
    pq.write_table(pa.table({"user_id": ["a"], "speed": [1.0], "SPEED": [2.0]}), path)
    with pytest.raises(HexplorerError, match="'speed', 'SPEED'"):
        read_table(path)


@pytest.mark.parametrize("name", ["records.csv.gz", "records.zip", "r.CSV.GZ"])
def test_compressed_files_are_refused_in_one_line(tmp_path, name):
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(b"user_id,lat,lon,timestamp,speed\na,1,1,2024-01-01,1\n"))
    with pytest.raises(HexplorerError, match=r"is compressed \(\.\w+\): decompress it first"):
        read_table(path)
    handle = io.BytesIO(path.read_bytes())
    handle.name = name
    with pytest.raises(HexplorerError, match="decompress it first"):
        read_table(handle)
