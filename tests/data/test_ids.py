"""One id, one user (core.data.ids): ids written two ways are one user in every engine."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pytest

from core.cli import main
from core.data import PrepConfig, prepare, prepare_file
from core.data.ids import Spellings, canonical, spellings
from core.data.stream import prepare_to_file
from core.data.summaries import read_summaries
from core.errors import HexplorerError

NFD = "Cafe\u0301"  # e + combining acute accent
NFC = "Caf\u00e9"


def _records(users, n_each=3):
    """n_each records per id, all in one HAT, speeds 10, 11, ..."""
    n = len(users) * n_each
    return pd.DataFrame(
        {
            "user_id": [u for u in users for _ in range(n_each)],
            "lat": [21.2] * n,
            "lon": [72.8] * n,
            "timestamp": pd.Timestamp("2024-03-05 08:10") + pd.to_timedelta(np.arange(n), "s"),
            "speed": 10.0 + np.arange(n, dtype=float),
        }
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([366000000.0, 7.0, None, 1.5, -0.0], ["366000000", "7", None, "1.5", "0"]),
        (
            ["366000000.0", "366000000", "7.000", "1.50", "017"],
            ["366000000"] * 2 + ["7", "1.50", "017"],
        ),
        ([" a", "a ", "\ta\n", "a"], ["a"] * 4),
        ([NFD, NFC], [NFC, NFC]),
        (["Bus", "bus", "BUS"], ["Bus", "bus", "BUS"]),  # case kept by default
    ],
)
def test_canonical_forms(values, expected):
    assert canonical(pl.Series(values)).to_list() == expected


def test_casefold_folds_case_and_sharp_s():
    got = canonical(
        pl.Series(["Bus", "bus", " BUS ", "Straße", "STRASSE", NFD.upper()]), casefold=True
    )
    assert got.to_list() == ["bus", "bus", "bus", "strasse", "strasse", NFC.lower()]


def test_spellings_count_merges_over_batches():
    acc = Spellings()
    for batch in (["a", "b", "b"], [" a", "c"], ["a\t", "b"]):
        acc.add(spellings(pl.Series(batch)))
    assert acc.merged() == (3, 1)  # "a", " a", "a\t" -> "a"; b and c were written one way


def test_float_and_int_ids_are_the_same_users():
    """An MMSI column with one missing value becomes float in pandas: 366000000.0."""
    ints = _records([366000000, 366000001])
    floats = ints.copy()
    floats["user_id"] = floats["user_id"].astype(float)
    floats.loc[len(floats)] = [np.nan, 21.2, 72.8, pd.Timestamp("2024-03-05 08:30"), 20.0]
    a, b = prepare(ints), prepare(floats)
    assert b.summaries["user_id"].tolist() == ["366000000", "366000001"]
    pd.testing.assert_frame_equal(a.summaries, b.summaries)


@pytest.mark.parametrize(
    ("users", "config", "expected_users", "merged"),
    [
        (["bus7", " bus7", "bus7 "], PrepConfig(), ["bus7"], (3, 1)),
        ([NFD, NFC], PrepConfig(), [NFC], (2, 1)),
        (["7", "7.0", "8"], PrepConfig(), ["7", "8"], (2, 1)),
        (["Bus7", "bus7"], PrepConfig(), ["Bus7", "bus7"], (0, 0)),
        (["Bus7", "bus7", "BUS7 "], PrepConfig(ids="casefold"), ["bus7"], (3, 1)),
    ],
)
def test_spellings_of_one_id_are_one_user_and_counted(users, config, expected_users, merged):
    p = prepare(_records(users), config=config)
    assert sorted(p.summaries["user_id"].unique()) == expected_users
    assert p.summaries["m"].sum() == 3 * len(users)
    assert (p.report.ids_merged, p.report.ids_merged_into) == merged
    line = f"{merged[0]} ids merged into {merged[1]} by canonicalisation"
    assert any(line in s for s in p.report.lines()) == bool(merged[0])
    assert p.report.worth_noting == bool(merged[0])


def _mixed(n=900):
    """Spellings of the same ids spread over 100-row batches (text column)."""
    rng = np.random.default_rng(2)
    forms = ["u{}", " u{}", "u{} ", "U{}"]
    users = [forms[rng.integers(4)].format(rng.integers(12)) for _ in range(n)]
    users[:12] = [f"{k}.0" for k in range(12)]
    users[12:24] = [str(k) for k in range(12)]
    users[500] = NFD
    users[800] = NFC
    raw = _records(users, n_each=1)
    raw["lat"] += rng.uniform(0, 0.05, n)
    return raw


@pytest.mark.parametrize("ids", ["keep", "casefold"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_streaming_engine_canonicalises_as_in_memory(tmp_path, fmt, ids):
    src = tmp_path / f"m.{fmt}"
    raw = _mixed()
    raw.to_csv(src, index=False) if fmt == "csv" else raw.to_parquet(src)
    config = PrepConfig(ids=ids)
    expected = prepare_file(src, config=config)
    report = prepare_to_file(src, tmp_path / "s.parquet", config=config, batch_rows=100)
    got = read_summaries(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(got.summaries, expected.summaries)
    assert report == got.report == expected.report
    assert report.ids_merged > report.ids_merged_into > 0
    users = set(expected.summaries["user_id"])
    assert "0" in users and "0.0" not in users and NFD not in users
    assert ("U1" in users) == (ids == "keep")


def test_cli_ids_casefold(tmp_path, capsys):
    src = tmp_path / "r.csv"
    _records(["Bus7", "bus7", " BUS7"]).to_csv(src, index=False)
    assert main(["hats", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["users"] == 3  # case kept
    assert main(["hats", str(src), "--ids", "casefold", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["users"] == 1 and "3 ids merged into 1" in err
    target = tmp_path / "s.parquet"
    assert main(["prepare", str(src), "--ids", "casefold", "--output", str(target)]) == 0
    assert read_summaries(target).config.ids == "casefold"
    assert read_summaries(target).summaries["user_id"].unique().tolist() == ["bus7"]
    assert main(["hats", str(target), "--ids", "keep"]) == 0  # the default: nothing to refuse
    capsys.readouterr()


def test_bad_ids_mode_is_one_line():
    with pytest.raises(HexplorerError, match="The 'ids' parameter must be one of keep, casefold"):
        PrepConfig(ids="lower")
