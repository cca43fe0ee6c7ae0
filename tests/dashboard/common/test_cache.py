"""dashboard.common.cache: one cache helper, with one key rule and one expiry, for every feature."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dashboard
from dashboard.common import cache
from dashboard.common.source import limits
from dashboard.common.source.compute import DataSpec, Source

ROOT = Path(__file__).resolve().parents[3]
HELPER = ROOT / "dashboard" / "common" / "cache.py"


def _modules() -> list[str]:
    """Every module of the dashboard but the pages (scripts Streamlit runs, not libraries)."""
    return sorted(
        m.name
        for m in pkgutil.walk_packages(dashboard.__path__, "dashboard.")
        if not m.name.endswith(".page")
    )


def test_no_module_but_the_helper_calls_streamlits_caches():
    """``st.cache_data`` and ``st.cache_resource`` appear in dashboard/common/cache.py only."""
    offenders = []
    for path in sorted((ROOT / "dashboard").rglob("*.py")):
        if path == HELPER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(node, "attr", None) or getattr(node, "name", None)
            if name in {"cache_data", "cache_resource"}:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_every_features_cached_functions_go_through_the_helper_with_its_expiry():
    """Each feature's compute module (and every other module) caches only through
    :func:`cache.cached`, which sets the shared ttl, a bound and the shared hash rules."""
    found: dict[str, list[str]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, cache.Cached):
                assert value in cache.CACHED, f"{name}.{attr} is cached around the helper"
                found.setdefault(name, []).append(attr)
    for feature in ("city", "experiments", "hexagon", "lessons", "map", "publish"):
        assert found.get(f"dashboard.{feature}.compute"), feature
    assert found.get("dashboard.common.source.compute")
    for func in cache.CACHED:
        info = func._info  # what Streamlit was given (its cache reads these)
        assert info.ttl == limits.CACHE_TTL_S > 0
        assert isinstance(info.max_entries, int) and info.max_entries >= 1
        assert info.hash_funcs is cache.HASH_FUNCS


def test_a_source_and_a_data_spec_count_by_their_key_not_their_bytes():
    assert cache.HASH_FUNCS[Source] is Source.key and cache.HASH_FUNCS[DataSpec] is DataSpec.key
    calls = []

    @cache.cached(max_entries=2)
    def name_of(spec: DataSpec) -> str:
        calls.append(spec.source.name)
        return spec.source.name

    def spec(name: str, payload: bytes, digest: str) -> DataSpec:
        source = Source(kind="upload", name=name, digest=digest, payload=payload)
        return DataSpec(source=source, columns=("u", "la", "lo", "t", "v"))

    assert name_of(spec("a.csv", b"one", "d1")) == "a.csv"
    assert name_of(spec("b.csv", b"two", "d1")) == "a.csv"  # same key: the payload is not hashed
    assert name_of(spec("a.csv", b"one", "d2")) == "a.csv"  # another digest: computed anew
    assert calls == ["a.csv", "a.csv"]
    name_of.clear()


def test_the_key_tells_apart_what_streamlits_hasher_did_and_skips_underscored_arguments():
    """The helper's own key: plain values by type and value, containers by kind, a keyed
    class by its key, anything else through Streamlit's hasher; ``_``-prefixed arguments are
    not part of it."""
    calls = []

    @cache.cached(max_entries=64)
    def echo(value, _ignored=None, **kwargs) -> int:
        calls.append(value)
        return len(calls)

    values = [1, 1.0, True, "1", None, (1,), [1], frozenset({1}), (1, (2, "a")), -0.0, 0.0]
    first = [echo(v) for v in values]
    assert first == list(range(1, len(values) + 1))  # each a key of its own
    assert [echo(v, _ignored=object()) for v in values] == first  # all hits: _ignored unhashed
    assert echo(np.arange(3)) == echo(np.arange(3)) != echo(np.arange(4))  # Streamlit's hasher
    frame = pd.DataFrame({"a": [1, 2]})
    assert echo(frame) == echo(frame.copy()) != echo(frame.assign(a=[1, 3]))
    assert echo(1, extra=2) != echo(1, extra=3) != echo(1)  # keyword arguments count
    echo.clear()
    assert echo(1) == len(calls)  # cleared: computed anew


def test_a_mechanism_or_rule_registered_later_is_never_served_an_older_result():
    """Results cached before a plug-in (or a test) registers an m_UB rule or a mechanism are
    not handed out after it: the key holds the registry's names (One hexagon's rule buttons
    lacked a newly registered rule when an earlier page had cached its marks)."""
    from core.mechanisms import RULES, Rule, register_rule, unregister_rule

    @cache.cached(max_entries=64)
    def rules_now(value: int) -> tuple[str, ...]:
        return tuple(RULES)

    before = rules_now(1)
    rule = Rule(
        name="cache-test-rule", label="t", symbol="t", colour="#123456", help="a test rule",
        fn=lambda *a: 1,
    )  # fmt: skip
    register_rule(rule)
    try:
        assert rules_now(1) == (*before, "cache-test-rule")
    finally:
        unregister_rule("cache-test-rule")
    assert rules_now(1) == before


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_a_bound_is_a_whole_number_of_entries(bad):
    with pytest.raises(ValueError, match="max_entries must be a whole number >= 1"):
        cache.cached(max_entries=bad)
