"""Guess which column of an uploaded table plays which role, and what its values are measured in.

Only names are compared; no record is read here. The guesses are defaults for editable select
boxes and text fields, never applied silently. The tables below know the usual names of public
mobility data:

* AIS ship positions (e.g. the US Marine Cadastre): ``MMSI, BaseDateTime, LAT, LON, SOG`` (speed
  over ground, knots);
* GTFS-realtime vehicle positions, flattened: ``vehicle_id`` (or ``vehicle.vehicle.id``),
  ``timestamp``, ``latitude``, ``longitude``, ``speed`` (m/s in the specification);
* taxi trip tables: ``medallion`` / ``hack_license`` / ``taxi_id``, ``pickup_datetime``,
  ``pickup_latitude``, ``pickup_longitude``;
* flight tables and ADS-B state vectors: ``tailnum`` / ``icao24`` / ``callsign``, ``time_hour``,
  ``velocity`` (m/s), ``groundspeed`` / ``gs`` (knots);
* bus and generic GPS traces: ``bus_id``, ``device_id``, ``lat``/``lng``, ``ts``, ``speed_kmh``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CANDIDATES: dict[str, tuple[str, ...]] = {
    "user": (
        "user_id", "userid", "user", "vehicle_id", "vehicleid", "vehicle_vehicle_id",
        "vehicle", "bus_id", "busid", "bus", "device_id", "deviceid", "mmsi", "imo",
        "tailnum", "tail_number", "icao24", "callsign", "medallion", "hack_license",
        "taxi_id", "taxiid", "car_id", "driver_id", "ship_id", "vessel_id", "entity_id",
        "track_id", "object_id", "agent_id", "imei", "uid", "id",
    ),
    "lat": (
        "lat", "latitude", "y", "lat_deg", "position_latitude", "vehicle_position_latitude",
        "pickup_latitude", "start_lat", "gps_lat",
    ),
    "lon": (
        "lon", "lng", "long", "longitude", "x", "lon_deg", "position_longitude",
        "vehicle_position_longitude", "pickup_longitude", "start_lon", "start_lng", "gps_lon",
    ),
    "time": (
        "timestamp", "time", "datetime", "date_time", "ts", "time_stamp", "basedatetime",
        "base_date_time", "time_hour", "vehicle_timestamp", "position_timestamp",
        "pickup_datetime", "tpep_pickup_datetime", "lpep_pickup_datetime", "recorded_at",
        "event_time", "gps_time", "fix_time", "utc_time", "time_utc", "epoch", "unix_time",
    ),
    "value": (
        "speed", "value", "speed_kmh", "speed_kph", "speed_mph", "speed_knots", "speed_ms",
        "speed_mps", "velocity", "sog", "speed_over_ground", "groundspeed", "ground_speed",
        "gs", "vehicle_position_speed", "position_speed", "kmh", "kph", "mph", "knots",
        "avg_speed",
    ),
}  # fmt: skip
"""Accepted names per role, best first, in :func:`normalise`\\ d form."""

FALLBACK_WORDS: dict[str, tuple[str, ...]] = {
    "lat": ("latitude", "lat"),
    "lon": ("longitude", "lon", "lng"),
    "time": ("timestamp", "datetime", "time"),
    "value": ("speed", "velocity", "sog"),
}
"""Second pass, for roles no exact name matched: a word of the name (split at ``_``)."""

UNIT_HINTS: tuple[tuple[str, str], ...] = (
    ("kmh", "km/h"), ("kph", "km/h"), ("km_h", "km/h"), ("mph", "mph"), ("knots", "knots"),
    ("knot", "knots"), ("kts", "knots"), ("kn", "knots"), ("sog", "knots"),
    ("groundspeed", "knots"), ("gs", "knots"), ("mps", "m/s"), ("m_s", "m/s"),
    ("ms", "m/s"), ("velocity", "m/s"),
)  # fmt: skip
"""(word of the value column's name, unit): AIS speed over ground and ADS-B ground speed are in
knots, ADS-B/OpenSky ``velocity`` in m/s."""

NOUN_HINTS: tuple[tuple[str, str], ...] = (
    ("mmsi", "ship"), ("imo", "ship"), ("ship", "ship"), ("vessel", "ship"),
    ("tailnum", "plane"), ("tail_number", "plane"), ("icao24", "plane"), ("callsign", "plane"),
    ("flight", "plane"), ("medallion", "taxi"), ("hack_license", "taxi"), ("taxi", "taxi"),
    ("bus", "bus"), ("vehicle", "vehicle"), ("car", "car"), ("driver", "driver"),
    ("device", "device"), ("user", "user"),
)  # fmt: skip
"""(word or name of the user column, noun for one user)."""


def normalise(name: str) -> str:
    """Lower case, every run of other characters than letters and digits one ``_``.

    >>> normalise(" Vehicle.Position.Latitude "), normalise("speed (km/h)")
    ('vehicle_position_latitude', 'speed_km_h')
    """
    return re.sub(r"[^a-z0-9]+", "_", str(name).strip().lower()).strip("_")


def detect_columns(names: Iterable[str]) -> dict[str, str | None]:
    """Map each role to a column: first by a known name, then by a word of the name.

    Parameters
    ----------
    names : the table's column names, in file order.

    Returns
    -------
    dict role -> column name, or None when no column matches. A column is used for one role only.

    >>> detect_columns(["Bus_ID", "Latitude", "LNG", "Time", "Speed", "extra"])
    {'user': 'Bus_ID', 'lat': 'Latitude', 'lon': 'LNG', 'time': 'Time', 'value': 'Speed'}
    >>> detect_columns(["MMSI", "BaseDateTime", "LAT", "LON", "SOG", "COG"])
    {'user': 'MMSI', 'lat': 'LAT', 'lon': 'LON', 'time': 'BaseDateTime', 'value': 'SOG'}
    >>> detect_columns(["a", "b"])["lat"] is None
    True
    """
    names = [str(n) for n in names]
    by_norm: dict[str, str] = {}
    for name in names:
        by_norm.setdefault(normalise(name), name)
    used: set[str] = set()
    found: dict[str, str | None] = dict.fromkeys(CANDIDATES)
    for role, candidates in CANDIDATES.items():
        for candidate in candidates:
            hit = by_norm.get(candidate)
            if hit is not None and hit not in used:
                found[role] = hit
                used.add(hit)
                break
    for role, words in FALLBACK_WORDS.items():
        if found[role] is not None:
            continue
        for word in words:
            hit = next(
                (n for n in names if n not in used and word in normalise(n).split("_")), None
            )
            if hit is not None:
                found[role] = hit
                used.add(hit)
                break
    return found


def _words(name: str) -> list[str]:
    norm = normalise(name)
    return [norm, *norm.split("_")]


def _hinted(column: str | None, hints) -> str | None:
    """The answer of the first (hint, answer) pair whose hint the column's name contains."""
    if not column:
        return None
    norm = normalise(column)
    words = _words(column)
    for hint, answer in hints:
        if hint in words or ("_" in hint and hint in norm):
            return answer
    return None


def detect_unit(value_column: str | None) -> str | None:
    """The value unit the column's name states, or None.

    >>> detect_unit("SOG"), detect_unit("speed_mph"), detect_unit("Speed (km/h)"), detect_unit("v")
    ('knots', 'mph', 'km/h', None)
    """
    return _hinted(value_column, UNIT_HINTS)


def detect_noun(user_column: str | None) -> str | None:
    """The noun for one user the column's name suggests, or None.

    >>> detect_noun("MMSI"), detect_noun("tailnum"), detect_noun("bus_id"), detect_noun("who")
    ('ship', 'plane', 'bus', None)
    """
    return _hinted(user_column, NOUN_HINTS)
