"""Picking a hexagon on the map, and the data-spec keys the caches rely on."""

from __future__ import annotations

import dataclasses

from dashboard.common.session import state
from dashboard.common.session.selection import picked_row
from dashboard.common.source.compute import DataSpec, Source


def test_picked_row_reads_the_hexagon_layer_only():
    sel = {
        "selection": {
            "indices": {"hexagons": [3], "other": [0]},
            "objects": {"hexagons": [{"hat": "c/s", "cell": "c"}], "other": [{"x": 1}]},
        }
    }
    assert picked_row(sel, "hexagons") == {"hat": "c/s", "cell": "c"}
    assert picked_row(sel, "missing") is None
    assert picked_row({"selection": {"indices": {}, "objects": {}}}, "hexagons") is None
    assert picked_row(None, "hexagons") is None


def _spec(**changes) -> DataSpec:
    base = DataSpec(source=Source.demo(), columns=("user_id", "lat", "lon", "timestamp", "speed"))
    return dataclasses.replace(base, **changes)


def test_every_preparation_parameter_is_in_the_cache_key():
    base = _spec()
    variants = [
        _spec(upper=80.0),
        _spec(resolution=8),
        _spec(slot="hour-of-day"),
        _spec(keep_zeros=True),
        _spec(columns=("bus", "lat", "lon", "timestamp", "speed")),
        _spec(source=Source.upload("a.csv", b"x")),
    ]
    keys = {base.key(), *(v.key() for v in variants)}
    assert len(keys) == len(variants) + 1


def test_upload_identity_is_its_content_not_its_name():
    assert Source.upload("a.csv", b"1").key() == Source.upload("b.csv", b"1").key()
    assert Source.upload("a.csv", b"1").key() != Source.upload("a.csv", b"2").key()
    assert Source.upload("a.csv", b"1").key() != Source.upload("a.tsv", b"1").key()  # read apart


def test_spec_round_trips_through_session_state():
    spec = _spec(source=Source.upload("a.csv", b"abc"), upper=70.0, slot="30min")
    back = DataSpec.from_state(spec.to_state())
    assert back.key() == spec.key() and back.source.payload == b"abc"


def test_state_defaults_cover_every_persistent_widget():
    missing = [
        k for k in state.PERSISTENT_WIDGETS if k not in state.DEFAULTS and k != state.MAP_SLOT
    ]
    assert missing == []
    assert state.DEFAULTS[state.EPSILON] in state.EPSILON_OPTIONS
    assert state.EPSILON_OPTIONS[0] == 0.05 and state.EPSILON_OPTIONS[-1] == 10.0
    assert list(state.EPSILON_OPTIONS) == sorted(state.EPSILON_OPTIONS)
