"""The demo city's summaries on disk: read back equal to a fresh preparation, keyed by settings."""

from __future__ import annotations

import pandas as pd
import pytest

from core.data import ColumnMap, PrepConfig, load_demo, prepare
from dashboard.common.source import compute, democache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(democache.ENV_VAR, str(tmp_path))
    return tmp_path


def test_first_build_is_kept_and_read_back_equal(cache):
    columns, config = ColumnMap(), PrepConfig(resolution=6)
    built = democache.load_or_build(columns, config, lambda: prepare(load_demo(), columns, config))
    files = sorted(p.suffix for p in cache.iterdir())
    assert files == [".json", ".parquet"]

    def refuse():
        raise AssertionError("the cache was not used")

    again = democache.load_or_build(columns, config, refuse)
    pd.testing.assert_frame_equal(again.summaries, built.summaries)
    assert again.report == built.report
    assert again.config == config and again.columns == columns


def test_other_settings_build_anew(cache):
    calls = []

    def build(config):
        def run():
            calls.append(config)
            return prepare(load_demo().head(20_000), ColumnMap(), config)

        return run

    for config in (PrepConfig(upper=65.0), PrepConfig(upper=80.0), PrepConfig(upper=65.0)):
        democache.load_or_build(ColumnMap(), config, build(config))
    assert calls == [PrepConfig(upper=65.0), PrepConfig(upper=80.0)]
    assert democache.cache_key(ColumnMap(), PrepConfig(upper=65.0)) != democache.cache_key(
        ColumnMap(), PrepConfig(upper=80.0)
    )


def test_the_cache_is_bounded(cache, monkeypatch):
    monkeypatch.setattr(democache, "MAX_ENTRIES", 2)
    small = prepare(load_demo().head(2_000), ColumnMap(), PrepConfig())
    for upper in (10.0, 20.0, 30.0):
        democache.load_or_build(ColumnMap(), PrepConfig(upper=upper), lambda: small)
    names = sorted(p.name for p in cache.iterdir())
    keys = {democache.cache_key(ColumnMap(), PrepConfig(upper=u)) for u in (20.0, 30.0)}
    assert names == sorted(f"demo-{k}{ext}" for k in keys for ext in (".json", ".parquet"))


def test_a_damaged_or_unwritable_cache_is_not_used(cache, monkeypatch):
    config = PrepConfig()
    small = prepare(load_demo().head(5_000), ColumnMap(), config)
    base = cache / f"demo-{democache.cache_key(ColumnMap(), config)}"
    base.with_suffix(".parquet").write_bytes(b"not parquet")
    base.with_suffix(".json").write_text("{}")
    got = democache.load_or_build(ColumnMap(), config, lambda: small)
    assert got is small
    monkeypatch.setenv(democache.ENV_VAR, "/proc/no-such-dir")  # cannot be created
    assert democache.load_or_build(ColumnMap(), config, lambda: small) is small


def test_demo_column_names_need_no_generation():
    assert compute.table_columns(compute.Source.demo()) == [str(c) for c in load_demo().columns]
