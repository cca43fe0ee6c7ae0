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
