import datetime as dt

import h3
import numpy as np
import pandas as pd
import pytest

from core.data import ColumnMap, PrepConfig, aggregate, prepare
from core.errors import HexplorerError

LAT, LON = 21.195, 72.83
CELL = h3.latlng_to_cell(LAT, LON, 7)


def frame(rows):
    return pd.DataFrame(rows, columns=["user_id", "lat", "lon", "timestamp", "speed"])


def test_counts_sums_squares_clamping_zeros():
    raw = frame(
        [
            ("a", LAT, LON, "2024-03-05 08:00:00", 10.0),
            ("a", LAT, LON, "2024-03-05 08:59:59", 70.0),  # clamped to 65
            ("a", LAT, LON, "2024-03-05 08:30:00", 0.0),  # dropped
            ("b", LAT, LON, "2024-03-05 08:15:00", -5.0),  # clamped to 0, kept
            ("b", LAT, LON, "2024-03-05 09:00:00", 20.0),  # next slot
        ]
    )
    p = prepare(raw)
    s = p.summaries
    assert list(s.columns) == ["hat", "cell", "slot", "user_id", "m", "s", "q"]
    assert s["hat"].tolist() == [f"{CELL}/2024-03-05T08:00"] * 2 + [f"{CELL}/2024-03-05T09:00"]
    assert s["user_id"].tolist() == ["a", "b", "b"]
    assert s["m"].tolist() == [2, 1, 1]
    assert s["s"].tolist() == [75.0, 0.0, 20.0]
    assert s["q"].tolist() == [100.0 + 65.0**2, 0.0, 400.0]
    assert s["m"].dtype == np.int64 and s["s"].dtype == np.float64 and s["q"].dtype == np.float64
    r = p.report
    assert (r.rows_read, r.zeros_dropped, r.clamped, r.clamped_low, r.clamped_high) == (
        5,
        1,
        2,
        1,
        1,
    )
    assert (r.records, r.users, r.hats, r.cells, r.slots) == (4, 2, 2, 1, 2)
    assert r.rejected == {}
    text = " ".join(r.lines())
    assert "1 negative value set to 0" in text and "1 value above U = 65 set to U" in text
    assert "2 values clamped into [0, 65]" in text  # the noun agrees with its number
    assert "4 records from 2 users in 2 HATs (1 cell x 2 slots)." in text


def test_keep_zeros_and_other_upper():
    raw = frame(
        [("a", LAT, LON, "2024-03-05 08:00", 0.0), ("a", LAT, LON, "2024-03-05 08:01", 50.0)]
    )
    p = prepare(raw, config=PrepConfig(keep_zeros=True, upper=40))
    assert p.summaries[["m", "s", "q"]].values.tolist() == [[2, 40.0, 1600.0]]
    assert p.report.zeros_dropped == 0 and p.report.clamped == 1


def test_all_zero_rows_error():
    raw = frame([("a", LAT, LON, "2024-03-05 08:00", 0.0)])
    with pytest.raises(HexplorerError, match="keep_zeros") as raised:
        prepare(raw)
    # every place a user meets it names its own switch: the library's, the CLI's, the sidebar's
    assert "--keep-zeros" in str(raised.value) and "Keep zero values" in str(raised.value)
    import inspect

    from dashboard.common import sidebar

    assert '"Keep zero values"' in inspect.getsource(sidebar)  # the sidebar's label, as named


def test_rejection_reasons_and_counts():
    raw = frame(
        [
            ("a", LAT, LON, "2024-03-05 08:00", 10.0),  # good
            (None, LAT, LON, "2024-03-05 08:00", 10.0),  # missing user
            ("", LAT, LON, "2024-03-05 08:00", 10.0),  # missing user
            ("b", 91.0, LON, "2024-03-05 08:00", 10.0),  # lat out of range
            ("b", LAT, -181.0, "2024-03-05 08:00", 10.0),  # lon out of range
            ("b", np.nan, LON, "2024-03-05 08:00", 10.0),  # missing lat
            ("b", LAT, LON, "not a time", 10.0),  # bad time
            ("b", LAT, LON, None, 10.0),  # missing time
            ("b", LAT, LON, "2024-03-05 08:00", np.nan),  # missing speed
            ("b", LAT, LON, "2024-03-05 08:00", np.inf),  # speed not finite
        ]
    )
    p = prepare(raw)
    assert p.report.rejected == {
        "missing user_id": 2,
        "lat outside [-90, 90]": 1,
        "missing lat": 1,
        "lon outside [-180, 180]": 1,
        "missing timestamp": 1,
        "timestamp not a valid time": 1,
        "missing speed": 1,
        "speed not a number": 1,
    }
    assert list(p.report.rejected)[0] == "missing user_id"  # most frequent first
    assert sum(p.report.rejected.values()) == 9 == p.report.n_rejected
    assert p.report.rejected_examples[0]["row"] == 1
    assert p.report.rejected_examples[0]["reason"] == "missing user_id"
    assert len(p.report.rejected_examples) == 5
    assert p.summaries[["user_id", "m", "s"]].values.tolist() == [["a", 1, 10.0]]


def test_text_speed_rejected_not_crash():
    raw = frame(
        [("a", LAT, LON, "2024-03-05 08:00", 12), ("a", LAT, LON, "2024-03-05 08:00", "fast")]
    )
    p = prepare(raw)
    assert p.report.rejected == {"speed not a number": 1}
    assert p.report.rejected_examples[0]["values"]["speed"] == "fast"
    assert p.summaries["s"].tolist() == [12.0]


def test_all_bad_rows():
    raw = frame(
        [("a", LAT, LON, "2024-03-05 08:00", "fast"), ("b", LAT, LON, "2024-03-05 08:00", "slow")]
    )
    with pytest.raises(
        HexplorerError,
        match=r"Every one of the 2 rows was rejected; most common reason: speed not a number",
    ):
        prepare(raw)


def test_empty_frame():
    with pytest.raises(HexplorerError, match="no rows"):
        prepare(frame([]))


def test_hour_of_day_pools_days_absolute_does_not():
    raw = frame(
        [
            ("a", LAT, LON, "2024-03-05 08:10", 10.0),
            ("a", LAT, LON, "2024-03-06 08:50", 20.0),
            ("a", LAT, LON, "2024-03-06 09:00", 30.0),
        ]
    )
    pooled = prepare(raw, config=PrepConfig(slot="hour-of-day")).summaries
    assert pooled["slot"].tolist() == ["h08", "h09"]
    assert pooled["m"].tolist() == [2, 1] and pooled["s"].tolist() == [30.0, 30.0]
    absolute = prepare(raw).summaries
    assert absolute["slot"].tolist() == ["2024-03-05T08:00", "2024-03-06T08:00", "2024-03-06T09:00"]
    assert absolute["m"].tolist() == [1, 1, 1]


@pytest.mark.parametrize(
    ("slot", "labels", "counts"),
    [
        ("30min", ["2024-03-05T08:00", "2024-03-05T08:30", "2024-03-05T09:00"], [2, 1, 1]),
        ("2h", ["2024-03-05T08:00"], [4]),
        (
            "10min",
            ["2024-03-05T08:00", "2024-03-05T08:10", "2024-03-05T08:50", "2024-03-05T09:00"],
            [1, 1, 1, 1],
        ),
    ],
)
def test_slot_lengths(slot, labels, counts):
    raw = frame(
        [
            ("a", LAT, LON, "2024-03-05 08:00", 1.0),
            ("a", LAT, LON, "2024-03-05 08:10", 1.0),
            ("a", LAT, LON, "2024-03-05 08:59", 1.0),
            ("a", LAT, LON, "2024-03-05 09:05", 1.0),
        ]
    )
    s = prepare(raw, config=PrepConfig(slot=slot)).summaries
    assert s["slot"].tolist() == labels and s["m"].tolist() == counts


def test_timestamp_types_agree():
    texts = ["2024-03-05 08:10:00", "2024-03-05 09:20:00"]
    stamps = pd.to_datetime(texts)
    epoch = [(t - pd.Timestamp("1970-01-01")).total_seconds() for t in stamps]
    expected = ["2024-03-05T08:00", "2024-03-05T09:00"]
    variants = [
        texts,
        stamps,
        [dt.datetime(2024, 3, 5, 8, 10), dt.datetime(2024, 3, 5, 9, 20)],
        epoch,
        [int(e) for e in epoch],
        ["2024-03-05T08:10:00+05:30", "2024-03-05T09:20:00+05:30"],  # wall clock kept
        stamps.tz_localize("Asia/Kolkata"),  # wall clock of its own zone
    ]
    for times in variants:
        raw = pd.DataFrame(
            {"user_id": ["a", "a"], "lat": LAT, "lon": LON, "timestamp": times, "speed": 5.0}
        )
        assert prepare(raw).summaries["slot"].tolist() == expected, times


def test_numeric_user_ids_become_strings():
    raw = pd.DataFrame(
        {
            "user_id": [7, 7, 12],
            "lat": LAT,
            "lon": LON,
            "timestamp": "2024-03-05 08:00",
            "speed": 1.0,
        }
    )
    s = prepare(raw).summaries
    assert s["user_id"].tolist() == ["12", "7"] and s["m"].tolist() == [1, 2]


@pytest.mark.parametrize("res", [0, 5, 7, 9, 15])
def test_cells_equal_h3(res):
    rng = np.random.default_rng(5)
    lat = rng.uniform(-89, 89, 40)
    lon = rng.uniform(-179, 179, 40)
    raw = pd.DataFrame(
        {
            "user_id": [f"u{i:02d}" for i in range(40)],
            "lat": lat,
            "lon": lon,
            "timestamp": "2024-03-05 08:00",
            "speed": 1.0,
        }
    )
    s = prepare(raw, config=PrepConfig(resolution=res)).summaries.set_index("user_id")
    for i in range(40):
        assert s.loc[f"u{i:02d}", "cell"] == h3.latlng_to_cell(lat[i], lon[i], res)


def test_column_map_names_in_reasons():
    raw = pd.DataFrame(
        {
            "bus": ["a", "b"],
            "y": [LAT, LAT],
            "x": [LON, LON],
            "t": ["2024-03-05 08:00"] * 2,
            "kmh": [3.0, "?"],
        }
    )
    p = prepare(raw, ColumnMap(user="bus", lat="y", lon="x", time="t", value="kmh"))
    assert p.report.rejected == {"kmh not a number": 1}


def test_aggregate_engine_contract():
    import polars as pl

    records = pl.DataFrame(
        {
            "cell": np.array([1, 1, 2], dtype=np.uint64),
            "slot": [0, 0, 0],
            "user": ["a", "a", "a"],
            "value": [1.0, 2.0, 3.0],
        }
    )
    out = aggregate(records).sort("cell")
    assert out.select("m", "s", "q").rows() == [(2, 3.0, 5.0), (1, 3.0, 9.0)]


def test_summaries_sorted_by_hat_then_user():
    rng = np.random.default_rng(3)
    n = 3000
    raw = pd.DataFrame(
        {
            "user_id": rng.choice(["b", "a10", "a9", "Z", "é", "a"], n),
            "lat": 21.19 + rng.uniform(-0.2, 0.2, n),
            "lon": 72.83 + rng.uniform(-0.2, 0.2, n),
            "timestamp": pd.Timestamp("2024-03-05")
            + pd.to_timedelta(rng.integers(0, 86400 * 2, n), "s"),
            "speed": rng.uniform(0.5, 60, n),
        }
    )
    for config in (
        PrepConfig(),
        PrepConfig(slot="hour-of-day", resolution=5),
        PrepConfig(slot="90s"),
    ):
        s = prepare(raw, config=config).summaries
        expected = s.sort_values(["hat", "user_id"], kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(s, expected)
        assert s["m"].sum() == n
        assert s["s"].sum() == pytest.approx(raw["speed"].sum())


def test_text_times_mixed_formats_and_blanks():
    times = [
        "2024-03-05 08:10:00",
        "2024-03-05 08:20:00.5",
        " 2024-03-05 09:00 ",
        "2024-03-05T10:05",
        "soon",
        " ",
    ]
    raw = pd.DataFrame({"user_id": "a", "lat": LAT, "lon": LON, "timestamp": times, "speed": 1.0})
    p = prepare(raw)
    assert p.summaries["slot"].tolist() == [
        "2024-03-05T08:00",
        "2024-03-05T09:00",
        "2024-03-05T10:00",
    ]
    assert p.summaries["m"].tolist() == [2, 1, 1]
    assert p.report.rejected == {"timestamp not a valid time": 1, "missing timestamp": 1}


def test_user_ids_are_trimmed_so_one_bus_is_one_user():
    raw = pd.DataFrame(
        {
            "user_id": ["a", " a", "a ", "b"],
            "lat": [21.2] * 4,
            "lon": [72.8] * 4,
            "timestamp": ["2024-03-05 08:00:00"] * 4,
            "speed": [10.0, 20.0, 30.0, 5.0],
        }
    )
    s = prepare(raw).summaries
    assert s["user_id"].tolist() == ["a", "b"]
    assert s["m"].tolist() == [3, 1]


def test_sums_are_identical_whatever_the_row_order():
    """Parallel float sums differ run to run; the fixed-point aggregation does not (reproducibility)."""
    rng = np.random.default_rng(5)
    n = 200_000
    raw = pd.DataFrame(
        {
            "user_id": rng.integers(0, 300, n).astype(str),
            "lat": 21.19 + rng.uniform(0, 0.05, n),
            "lon": 72.83 + rng.uniform(0, 0.05, n),
            "timestamp": pd.Timestamp("2024-03-05")
            + pd.to_timedelta(rng.integers(0, 6 * 3600, n), unit="s"),
            "speed": rng.uniform(0.1, 65.0, n),
        }
    )
    first = prepare(raw).summaries
    shuffled = prepare(raw.sample(frac=1.0, random_state=1).reset_index(drop=True)).summaries
    pd.testing.assert_frame_equal(first, shuffled, check_exact=True)
    # and they are the exact sums up to the fixed-point step (65 / 2**40 per record)
    total = first["s"].sum()
    assert total == pytest.approx(raw["speed"].sum(), rel=1e-12)
    assert first["q"].sum() == pytest.approx((raw["speed"] ** 2).sum(), rel=1e-12)
