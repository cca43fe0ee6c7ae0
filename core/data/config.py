"""Parameters of data preparation (SPEC section 1): which columns hold what, and how to bin.

Both are frozen keyword-only dataclasses that validate in ``__post_init__``; a bad value raises
:class:`core.errors.HexplorerError` naming the parameter and the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from core.errors import HexplorerError
from core.params import check_upper

ID_MODES = ("keep", "casefold")
"""``PrepConfig.ids``: ``"keep"`` keeps case (the default), ``"casefold"`` folds it
(:mod:`core.data.ids`, which imports polars, so it is not imported here)."""


def check_mode(ids: Any) -> str:
    """Validate ``PrepConfig.ids``.

    >>> check_mode("casefold")
    'casefold'
    """
    if ids not in ID_MODES:
        raise HexplorerError(
            f"The 'ids' parameter must be one of {', '.join(ID_MODES)}. Got {ids!r} instead."
        )
    return str(ids)


HOUR_OF_DAY = "hour-of-day"

_UNIT_SECONDS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
MAX_SLOT_SECONDS = 3650 * 86400
"""Longest absolute window (ten years); longer ones overflow the microsecond arithmetic."""
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zA-Z]+)\s*$")


def slot_seconds(slot: str) -> int | None:
    """Length of an absolute timeslot in seconds, or ``None`` for ``"hour-of-day"``.

    Parameters
    ----------
    slot : str
        A positive duration (``"10min"``, ``"30min"``, ``"1h"``, ``"2h"``, ``"1d"``, ``"90s"``) or
        ``"hour-of-day"`` (hours pooled over days, as the papers' bus data was binned).

    Raises
    ------
    HexplorerError
        If ``slot`` is not such a string or the duration is zero.

    >>> slot_seconds("1h"), slot_seconds("15min"), slot_seconds("hour-of-day")
    (3600, 900, None)
    """
    if not isinstance(slot, str):
        raise HexplorerError(
            f"The 'slot' parameter must be a duration like '1h' or '30min', or 'hour-of-day'. "
            f"Got {slot!r} instead."
        )
    if slot.strip().lower() == HOUR_OF_DAY:
        return None
    match = _DURATION.match(slot)
    unit = _UNIT_SECONDS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise HexplorerError(
            f"The 'slot' parameter must be a duration like '10min', '1h', '2h', or 'hour-of-day'. "
            f"Got {slot!r} instead."
        )
    seconds = int(match.group(1)) * unit
    if seconds <= 0:
        raise HexplorerError(
            f"The 'slot' parameter must be a positive duration. Got {slot!r} instead."
        )
    if seconds > MAX_SLOT_SECONDS:
        raise HexplorerError(
            f"The 'slot' parameter must be at most {MAX_SLOT_SECONDS // 86400} days. "
            f"Got {slot!r} instead."
        )
    return seconds


@dataclass(frozen=True, kw_only=True)
class ColumnMap:
    """Names of the raw-record columns (SPEC section 1: user, latitude, longitude, time, value).

    >>> ColumnMap(value="speed_kmh").value
    'speed_kmh'
    """

    user: str = "user_id"
    lat: str = "lat"
    lon: str = "lon"
    time: str = "timestamp"
    value: str = "speed"

    def __post_init__(self) -> None:
        names: dict[str, str] = {}
        for field_name in ("user", "lat", "lon", "time", "value"):
            name = getattr(self, field_name)
            if not isinstance(name, str) or not name.strip():
                raise HexplorerError(
                    f"The '{field_name}' column name must be a non-empty string. "
                    f"Got {name!r} instead."
                )
            if name in names:
                raise HexplorerError(
                    f"The '{field_name}' and '{names[name]}' columns must differ. "
                    f"Both are {name!r}."
                )
            names[name] = field_name

    def as_tuple(self) -> tuple[str, str, str, str, str]:
        """(user, lat, lon, time, value) column names, in SPEC order."""
        return (self.user, self.lat, self.lon, self.time, self.value)


@dataclass(frozen=True, kw_only=True)
class PrepConfig:
    """How raw records become per-HAT user summaries (SPEC section 1).

    Attributes
    ----------
    upper : float
        U: values are clamped into [0, U] (default 65 km/h).
    resolution : int
        H3 resolution, 0..15 (default 7, as the data exchange's pipeline uses).
    slot : str
        Absolute window length (``"1h"``, ``"30min"``, ...) giving slots ``floor(timestamp, slot)``,
        or ``"hour-of-day"`` pooling each clock hour over all days.
    keep_zeros : bool
        Keep zero values (stationary vehicles); dropped by default, as in the papers.
    ids : str
        ``"keep"`` (default) keeps the case of user ids, ``"casefold"`` folds it; either way ids
        are stripped, integer-valued floats written as integers and Unicode NFC-normalised
        (:mod:`core.data.ids`).

    >>> PrepConfig(slot="30min").slot_seconds
    1800
    """

    upper: float = 65.0
    resolution: int = 7
    slot: str = "1h"
    keep_zeros: bool = False
    ids: str = "keep"

    def __post_init__(self) -> None:
        object.__setattr__(self, "upper", check_upper(self.upper))
        res = self.resolution
        if isinstance(res, bool) or not isinstance(res, int | float) or not math.isfinite(res):
            raise HexplorerError(
                f"The 'resolution' parameter must be an integer in 0..15. Got {res!r} instead."
            )
        if res != int(res) or not 0 <= int(res) <= 15:
            raise HexplorerError(
                f"The 'resolution' parameter must be an integer in 0..15. Got {res!r} instead."
            )
        object.__setattr__(self, "resolution", int(res))
        slot_seconds(self.slot)  # validates
        if self.slot.strip().lower() == HOUR_OF_DAY:
            object.__setattr__(self, "slot", HOUR_OF_DAY)
        if not isinstance(self.keep_zeros, bool):
            raise HexplorerError(
                f"The 'keep_zeros' parameter must be True or False. "
                f"Got {self.keep_zeros!r} instead."
            )
        check_mode(self.ids)

    @property
    def slot_seconds(self) -> int | None:
        """Slot length in seconds, or ``None`` for hour-of-day."""
        return slot_seconds(self.slot)

    @property
    def hour_of_day(self) -> bool:
        """Whether slots pool each clock hour over days."""
        return self.slot == HOUR_OF_DAY
