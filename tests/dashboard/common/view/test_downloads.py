"""Downloads tested as data: provenance columns, unit headers and file names."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from dashboard.common.source.compute import DataSpec, Source
from dashboard.common.source.units import Units
from dashboard.common.view import downloads
from dashboard.common.view.downloads import PROVENANCE_COLUMNS, Provenance


def _spec(payload: bytes = b"a,b\n1,2\n", upper: float = 65.0, resolution: int = 7) -> DataSpec:
    return DataSpec(
        source=Source.upload("ships.csv", payload),
        columns=("MMSI", "LAT", "LON", "BaseDateTime", "SOG"),
        upper=upper,
        resolution=resolution,
    )


def test_fingerprint_follows_content_and_preparation():
    base = downloads.fingerprint(_spec())
    assert len(base) == 12 and int(base, 16) >= 0
    assert downloads.fingerprint(_spec()) == base
    assert downloads.fingerprint(_spec(payload=b"a,b\n1,3\n")) != base
    assert downloads.fingerprint(_spec(upper=30.0)) != base
    assert downloads.fingerprint(_spec(resolution=8)) != base


def test_every_provenance_column_is_present_in_the_csv():
    prov = downloads.provenance(
        _spec(upper=30.0),
        Units(value="knots", user="ship"),
        hat="872830828ffffff/2024-03-05T15:00",
        epsilon=0.5,
        m_ub=12,
        seed=7,
        mechanism="levy",
    )
    df = pd.DataFrame({"estimate": [1.0, 2.0], "m": [3, 4]})
    back = pd.read_csv(io.BytesIO(downloads.csv_bytes(df, prov)))
    assert list(back.columns) == ["estimate", "m", *PROVENANCE_COLUMNS]
    row = back.iloc[1]
    assert row["hat"] == "872830828ffffff/2024-03-05T15:00"
    assert row["mechanism"] == "levy"
    assert row["epsilon"] == 0.5 and row["m_ub"] == 12 and row["seed"] == 7
    assert row["U"] == 30.0 and row["value_unit"] == "knots"
    assert row["data"] == "ships.csv"
    assert row["data_fingerprint"] == downloads.fingerprint(_spec(upper=30.0))
    assert row["hexplorer_version"] == downloads.VERSION


def test_a_per_row_column_wins_over_the_provenance_value():
    prov = Provenance(data="demo city", fingerprint="abcdef123456", upper=65.0, mechanism="levy")
    df = pd.DataFrame({"mechanism": ["baseline", "akmv"], "estimate": [1.0, 2.0]})
    out = downloads.with_provenance(df, prov)
    assert out["mechanism"].tolist() == ["baseline", "akmv"]
    assert set(PROVENANCE_COLUMNS) <= set(out.columns)
    assert list(df.columns) == ["mechanism", "estimate"]  # the input is not modified


def test_unit_headers():
    df = pd.DataFrame({"true_mean": [1.0], "noisy_var": [2.0], "users": [3]})
    out = downloads.with_units(
        df, Units(value="mph"), values=["true_mean", "absent"], squared=["noisy_var"]
    )
    assert list(out.columns) == ["true_mean [mph]", "noisy_var [(mph)²]", "users"]


def test_file_name_says_what_it_is_and_is_safe():
    prov = Provenance(
        data="/data/my ships (2024).parquet",
        fingerprint="0123456789ab",
        upper=30.0,
        hat="slot 2024-03-05T15:00",
        mechanism="opt-arrayavg",
        epsilon=1.0,
        m_ub=40,
        seed=0,
    )
    name = downloads.file_name("city release", prov)
    assert name == (
        "hexplorer_city-release_my-ships-2024_0123456789ab_slot-2024-03-05T1500_opt-arrayavg"
        "_eps1_mub40_seed0.csv"
    )
    assert "/" not in name and ":" not in name and " " not in name


@pytest.mark.parametrize(
    "bad",
    [
        dict(data="", fingerprint="abcdef", upper=1.0),
        dict(data="x", fingerprint="not hex!", upper=1.0),
        dict(data="x", fingerprint="abcdef", upper=0.0),
        dict(data="x", fingerprint="abcdef", upper=1.0, epsilon=-1.0),
    ],
)
def test_provenance_refuses_bad_fields(bad):
    with pytest.raises(ValueError):
        Provenance(**bad)
