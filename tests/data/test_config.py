import pytest

from core.data import ColumnMap, PrepConfig, slot_seconds
from core.errors import HexplorerError


def test_defaults():
    c = ColumnMap()
    assert c.as_tuple() == ("user_id", "lat", "lon", "timestamp", "speed")
    p = PrepConfig()
    assert (p.upper, p.resolution, p.slot, p.keep_zeros) == (65.0, 7, "1h", False)
    assert p.slot_seconds == 3600 and not p.hour_of_day


@pytest.mark.parametrize(
    ("slot", "seconds"),
    [
        ("10min", 600),
        ("30min", 1800),
        ("1h", 3600),
        ("2h", 7200),
        ("15min", 900),
        ("1d", 86400),
        ("90s", 90),
    ],
)
def test_slot_lengths(slot, seconds):
    assert slot_seconds(slot) == seconds
    assert PrepConfig(slot=slot).slot_seconds == seconds


def test_hour_of_day():
    p = PrepConfig(slot="Hour-of-day")
    assert p.slot == "hour-of-day" and p.hour_of_day and p.slot_seconds is None


@pytest.mark.parametrize("slot", ["0h", "h", "1 fortnight", "", 3600, None, "-1h"])
def test_bad_slot(slot):
    with pytest.raises(HexplorerError, match="'slot'"):
        PrepConfig(slot=slot)


@pytest.mark.parametrize("res", [-1, 16, 7.5, "7", True, float("nan")])
def test_bad_resolution(res):
    with pytest.raises(HexplorerError, match="'resolution'.*" + "Got"):
        PrepConfig(resolution=res)


@pytest.mark.parametrize("upper", [0, -3, float("inf"), "x"])
def test_bad_upper(upper):
    with pytest.raises(HexplorerError, match="'upper'"):
        PrepConfig(upper=upper)


def test_bad_keep_zeros():
    with pytest.raises(HexplorerError, match="'keep_zeros'"):
        PrepConfig(keep_zeros="yes")


def test_frozen_kw_only():
    with pytest.raises(TypeError):
        PrepConfig(65.0)  # noqa
    with pytest.raises(AttributeError):
        PrepConfig().upper = 3  # type: ignore[misc]


def test_column_map_errors():
    with pytest.raises(HexplorerError, match="'value' column name"):
        ColumnMap(value="")
    with pytest.raises(HexplorerError, match="must differ"):
        ColumnMap(lat="x", lon="x")
