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


HOSTILE = ['=HYPERLINK("https://evil.example","x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "ok"]


def _cells(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def test_every_csv_download_neutralises_formula_cells_but_keeps_numbers():
    """Rejected-row examples carry user ids from the file; the data name is the file's:
    a spreadsheet must not run them. Negative numbers in numeric columns stay numbers."""
    df = pd.DataFrame(
        {"user_id": HOSTILE, "=cmd|' /C calc'!A0": ["a"] * 6, "error": [-1.5, 2, -3, 4, 5, 6]}
    )
    prov = Provenance(data="=evil.csv", fingerprint="abcdef123456", upper=65.0)
    from dashboard.common.view import ui

    for data in (downloads.csv_bytes(df, prov), ui.csv_maker(df)(), ui.csv_maker(df, prov)()):
        cells = _cells(data)
        assert cells["user_id"].tolist() == ["'" + h for h in HOSTILE[:-1]] + ["ok"]
        assert "'=cmd|' /C calc'!A0" in cells.columns  # a header from the file too
        assert cells["error"].tolist() == ["-1.5", "2.0", "-3.0", "4.0", "5.0", "6.0"]
    assert _cells(downloads.csv_bytes(df, prov))["data"].tolist() == ["'=evil.csv"] * 6
    carriage = pd.DataFrame({"user_id": ["\r=1+1"]})
    assert b"'\r=1+1" in ui.csv_maker(carriage)()


def test_the_publish_pages_csv_is_neutralised_too():
    from dashboard.publish import compute as publish

    table = pd.DataFrame({"hat": ["-x/h08", "c/h08"], "noisy_mean": [-1.0, 3.0]})
    cells = _cells(publish.file_bytes(table, ".csv"))
    assert cells["hat"].tolist() == ["'-x/h08", "c/h08"] and cells["noisy_mean"][0] == "-1.0"
