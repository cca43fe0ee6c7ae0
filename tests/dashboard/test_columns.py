"""Column auto-detection: case-insensitive matches of common names, one column per role."""

from __future__ import annotations

from dashboard.common.columns import detect_columns


def test_defaults_detected():
    assert detect_columns(["user_id", "lat", "lon", "timestamp", "speed"]) == {
        "user": "user_id",
        "lat": "lat",
        "lon": "lon",
        "time": "timestamp",
        "value": "speed",
    }


def test_common_aliases_any_case():
    got = detect_columns(["VEHICLE_ID", " Latitude", "lng", "DateTime", "Value"])
    assert got == {
        "user": "VEHICLE_ID",
        "lat": " Latitude",
        "lon": "lng",
        "time": "DateTime",
        "value": "Value",
    }
    assert detect_columns(["bus_id", "x", "y", "time", "speed"])["user"] == "bus_id"


def test_best_candidate_wins_and_no_column_twice():
    got = detect_columns(["id", "user_id", "latitude", "longitude", "time", "timestamp", "speed"])
    assert got["user"] == "user_id" and got["time"] == "timestamp"
    assert len({v for v in got.values() if v is not None}) == 5


def test_unknown_names_give_none():
    assert detect_columns(["a", "b", "c"]) == {
        r: None for r in ("user", "lat", "lon", "time", "value")
    }
