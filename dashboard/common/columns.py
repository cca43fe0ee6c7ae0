"""Guess which column of an uploaded table plays which role (user, lat, lon, time, value).

Only names are compared (case-insensitively); no record is read here. The guesses are
defaults for editable select boxes, never applied silently.
"""

from __future__ import annotations

from collections.abc import Iterable

CANDIDATES: dict[str, tuple[str, ...]] = {
    "user": (
        "user_id", "userid", "user", "vehicle_id", "vehicleid", "vehicle", "bus_id", "busid",
        "bus", "device_id", "deviceid", "id",
    ),
    "lat": ("lat", "latitude", "y"),
    "lon": ("lon", "lng", "long", "longitude", "x"),
    "time": ("timestamp", "time", "datetime", "date_time", "ts", "time_stamp"),
    "value": ("speed", "value", "speed_kmh", "velocity"),
}  # fmt: skip
"""Accepted names per role, best first."""


def detect_columns(names: Iterable[str]) -> dict[str, str | None]:
    """Map each role to the first column whose lower-cased, stripped name is a known candidate.

    Parameters
    ----------
    names : the table's column names, in file order.

    Returns
    -------
    dict role -> column name, or None when no column matches. A column is used for one role only.

    >>> detect_columns(["Bus_ID", "Latitude", "LNG", "Time", "Speed", "extra"])
    {'user': 'Bus_ID', 'lat': 'Latitude', 'lon': 'LNG', 'time': 'Time', 'value': 'Speed'}
    >>> detect_columns(["a", "b"])["lat"] is None
    True
    """
    names = [str(n) for n in names]
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.strip().lower(), name)
    used: set[str] = set()
    found: dict[str, str | None] = {}
    for role, candidates in CANDIDATES.items():
        found[role] = None
        for candidate in candidates:
            name = by_lower.get(candidate)
            if name is not None and name not in used:
                found[role] = name
                used.add(name)
                break
    return found
