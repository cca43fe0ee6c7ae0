"""The report warns when clamping moved a large share of the values (U probably wrong for the
data): in its lines (the CLI's note, the Data page), in the CLI's JSON, and not for a few
outliers such as the demo city's."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.cli import main
from core.data import PrepConfig, prepare
from core.data.tally import CLAMPED_WARN_SHARE, PrepReport


def _report(*, records: int, high: int = 0, low: int = 0, upper: float = 65.0) -> PrepReport:
    return PrepReport(rows_read=records, rejected={}, rejected_examples=(), zeros_dropped=0,
                      clamped=high + low, clamped_low=low, clamped_high=high, records=records,
                      users=3, hats=1, cells=1, slots=1, upper=upper)  # fmt: skip


def _records(values: np.ndarray) -> pd.DataFrame:
    n = values.size
    return pd.DataFrame({
        "user_id": [f"u{i % 5}" for i in range(n)],
        "lat": 21.17 + 0.001 * (np.arange(n) % 3),
        "lon": 72.83 + 0.001 * (np.arange(n) % 4),
        "timestamp": pd.Timestamp("2024-03-05 08:00") + pd.to_timedelta(np.arange(n), unit="s"),
        "speed": values,
    })  # fmt: skip


def test_a_share_of_values_above_u_from_the_threshold_on_is_a_warning():
    n = 1000
    at = int(CLAMPED_WARN_SHARE * n)
    assert _report(records=n, high=at - 1).warnings == ()
    (warning,) = _report(records=n, high=at).warnings
    assert warning.startswith("10 % of the values were above U = 65 and set to U")
    assert "too low" in warning
    (warning,) = _report(records=n, high=n, upper=30).warnings
    assert warning.startswith("100 % of the values were above U = 30")
    (warning,) = _report(records=n, low=at).warnings
    assert warning.startswith("10 % of the values were negative and set to 0")
    assert len(_report(records=n, low=n // 2, high=n // 2).warnings) == 2
    assert _report(records=0).warnings == ()


def test_the_warning_is_in_the_lines_after_the_clamped_count():
    lines = _report(records=200, high=150).lines()
    clamped = next(i for i, line in enumerate(lines) if "values clamped into [0, 65]" in line)
    assert lines[clamped + 1].startswith("75 % of the values were above U = 65")


def test_prepared_data_warns_only_when_u_is_too_low_for_it():
    speeds = np.random.default_rng(1).uniform(100.0, 900.0, 600)  # aircraft in km/h
    rep = prepare(_records(speeds)).report  # U = 65
    assert rep.clamped_high == 600 and len(rep.warnings) == 1
    assert prepare(_records(speeds), config=PrepConfig(upper=1000.0)).report.warnings == ()


def test_the_demo_city_clamps_a_few_outliers_without_a_warning():
    from core.data import load_demo

    rep = prepare(load_demo()).report
    assert 0 < rep.clamped_high < CLAMPED_WARN_SHARE * rep.records
    assert rep.warnings == ()


@pytest.mark.parametrize("upper, warned", [(65, True), (1000, False)])
def test_cli_prepare_gives_the_clamped_count_and_the_warnings(tmp_path, capsys, upper, warned):
    src = tmp_path / "planes.csv"
    _records(np.random.default_rng(2).uniform(100.0, 900.0, 300)).to_csv(src, index=False)
    argv = ["prepare", str(src), "--output", str(tmp_path / "s.parquet"), "--json"]
    assert main([*argv, "--upper", str(upper)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["clamped"] == (300 if warned else 0)
    assert bool(out["warnings"]) is warned
    assert ("too low for this data" in captured.err) is warned
