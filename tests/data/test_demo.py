"""The demo city meets the targets of issue 2, item 7, at the default settings."""

import numpy as np
import pandas as pd
import pytest

from core.data import PrepConfig, hat_data, hat_table, load_demo, prepare
from core.data.demo import _generate


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_demo())


def test_columns_and_types():
    raw = load_demo()
    assert list(raw.columns) == ["user_id", "lat", "lon", "timestamp", "speed"]
    assert pd.api.types.is_datetime64_any_dtype(raw["timestamp"])
    assert len(raw) <= 3_000_000
    assert (raw["speed"] == 0).any() and (raw["speed"] > 65).any()  # stops and clamping exercised
    assert raw["timestamp"].dt.normalize().nunique() == 3
    # a copy: mutating it does not leak into the next call
    raw.loc[0, "speed"] = -1.0
    assert load_demo().loc[0, "speed"] != -1.0


def test_busiest_hat_targets(prepared):
    h = hat_data(prepared.summaries)
    n = h.n_records
    mean = h.sums.sum() / n
    var = h.sumsq.sum() / n - mean**2
    median = np.sort(h.counts)[::-1][(h.n_users + 1) // 2 - 1]
    assert h.hat.startswith("8742d9d69ffffff/")  # the hub cell around 21.195 N, 72.83 E
    assert 180 <= h.n_users <= 220
    assert 250 <= h.m_max <= 420
    assert 30 <= median <= 60
    assert 15_000 <= n <= 19_000
    assert 19.5 <= mean <= 22.0
    assert 95 <= var <= 135


def test_city_extent(prepared):
    table = hat_table(prepared.summaries)
    assert table["cell"].nunique() >= 30
    per_day = table.groupby(table["slot"].str[:10])["slot"].nunique()
    assert len(per_day) == 3 and (per_day >= 15).all()
    assert prepared.report.clamped_high > 0 and prepared.report.zeros_dropped > 0


def test_hour_of_day_pooling_runs(prepared):
    p = prepare(load_demo(), config=PrepConfig(slot="hour-of-day"))
    assert set(p.summaries["slot"]) <= {f"h{h:02d}" for h in range(24)}
    assert p.report.records == prepared.report.records


def test_deterministic():
    # a fresh generation equals the cached one, and a different seed differs
    pd.testing.assert_frame_equal(_generate(), load_demo())
    assert not _generate(seed=1)["lat"].head(1000).equals(load_demo()["lat"].head(1000))
