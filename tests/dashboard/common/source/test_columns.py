"""Column auto-detection: case-insensitive matches of common names, one column per role."""

from __future__ import annotations

import pytest

from dashboard.common.source.columns import detect_columns, detect_noun, detect_unit


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


# --- the names of public mobility data ---------------------------------------------------------

KNOWN_TABLES = {
    # AIS ship positions (US Marine Cadastre): speed over ground in knots
    "ais": (
        ["MMSI", "BaseDateTime", "LAT", "LON", "SOG", "COG", "Heading", "VesselName", "IMO"],
        ("MMSI", "LAT", "LON", "BaseDateTime", "SOG"),
        ("knots", "ship"),
    ),
    # GTFS-realtime vehicle positions, flattened with the specification's field names (m/s)
    "gtfs_rt": (
        ["trip_id", "route_id", "vehicle_id", "latitude", "longitude", "bearing", "speed",
         "timestamp"],
        ("vehicle_id", "latitude", "longitude", "timestamp", "speed"),
        (None, "vehicle"),
    ),
    "gtfs_rt_nested": (
        ["id", "vehicle.trip.trip_id", "vehicle.vehicle.id", "vehicle.position.latitude",
         "vehicle.position.longitude", "vehicle.position.speed", "vehicle.timestamp"],
        ("vehicle.vehicle.id", "vehicle.position.latitude", "vehicle.position.longitude",
         "vehicle.timestamp", "vehicle.position.speed"),
        (None, "vehicle"),
    ),
    # NYC taxi trips
    "taxi": (
        ["medallion", "hack_license", "pickup_datetime", "pickup_longitude", "pickup_latitude",
         "trip_distance", "speed_mph"],
        ("medallion", "pickup_latitude", "pickup_longitude", "pickup_datetime", "speed_mph"),
        ("mph", "taxi"),
    ),
    # flights with positions (nycflights-like names) and ADS-B state vectors (OpenSky)
    "flights": (
        ["year", "month", "tailnum", "time_hour", "lat", "lon", "groundspeed"],
        ("tailnum", "lat", "lon", "time_hour", "groundspeed"),
        ("knots", "plane"),
    ),
    "opensky": (
        ["time", "icao24", "lat", "lon", "velocity", "heading", "callsign", "baroaltitude"],
        ("icao24", "lat", "lon", "time", "velocity"),
        ("m/s", "plane"),
    ),
    # buses with units in the header
    "bus": (
        ["Bus ID", "GPS Lat", "GPS Lon", "Recorded At", "Speed (km/h)"],
        ("Bus ID", "GPS Lat", "GPS Lon", "Recorded At", "Speed (km/h)"),
        ("km/h", "bus"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(KNOWN_TABLES))
def test_public_mobility_tables_are_detected(name):
    columns, expected, (unit, noun) = KNOWN_TABLES[name]
    got = detect_columns(columns)
    assert tuple(got[r] for r in ("user", "lat", "lon", "time", "value")) == expected
    assert detect_unit(got["value"]) == unit
    assert detect_noun(got["user"]) == noun


@pytest.mark.parametrize(
    ("column", "unit"),
    [
        ("SOG", "knots"),
        ("speed_knots", "knots"),
        ("Speed kts", "knots"),
        ("speed_mph", "mph"),
        ("MPH", "mph"),
        ("speed_kmh", "km/h"),
        ("Speed (km/h)", "km/h"),
        ("kph", "km/h"),
        ("speed_mps", "m/s"),
        ("speed_m_s", "m/s"),
        ("speed", None),
        ("value", None),
        (None, None),
    ],
)
def test_unit_from_the_value_column_name(column, unit):
    assert detect_unit(column) == unit
