"""Reading a release back from the ledger: the fields every release carries, and a damaged body
as a one-line error naming the release (for the HAT-batch and the city releases alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import HexplorerError
from core.publish.batch import HatsRelease
from core.publish.city import CityRelease
from core.publish.records import Record

COMMON = {
    "created": "2026-11-24T00:00:00Z",
    "version": "1.0",
    "mechanism": "baseline",
    "epsilon": 1,
    "accounting": "sequential",
    "upper": 65,
    "privacy_loss": 2,
}


def _record(body: dict) -> Record:
    return Record(release_id="abc123", request="{}", kind="city", created=COMMON["created"],
                  namespace="default", epsilon=1.0, accounting="sequential", n_users=1,
                  max_charge=1.0, body=body)  # fmt: skip


def test_the_common_fields_are_read_and_typed():
    fields = _record(dict(COMMON)).release_fields()
    assert fields == {**COMMON, "release_id": "abc123", "epsilon": 1.0, "upper": 65.0,
                      "privacy_loss": 2.0}  # fmt: skip
    assert isinstance(fields["epsilon"], float) and isinstance(fields["upper"], float)


def test_a_city_release_reads_back():
    """(Every batch release is read back by ``publish_all``: tests/publish/test_publish_batch.py.)"""
    grids = {"hat": ["c/s"], "cell": ["c"], "slot": ["s"], "noisy_mean": [1.5],
             "noisy_var": [0.5]}  # fmt: skip
    body = {**COMMON, "k": 3, "suppressed_pairs": 0, "grids": grids}
    release = CityRelease.from_record(_record(body), Path("l.sqlite"))
    assert release.release_id == "abc123" and release.epsilon == 1.0 and release.k == 3
    assert release.table["noisy_mean"].tolist() == [1.5]


@pytest.mark.parametrize("cls", [HatsRelease, CityRelease])
@pytest.mark.parametrize("damage", ["missing", "mistyped"])
def test_a_damaged_body_is_one_line_naming_the_release(cls, damage):
    body = dict(COMMON)
    if damage == "mistyped":  # every field there, one of them unreadable
        hats = {"hat": ["c/s"], "m_ub": [1], "n_arrays": [1], "sensitivity": [1.0],
                "noise_scale": [1.0], "estimate": [1.0]}  # fmt: skip
        grids = {"hat": ["c/s"], "cell": ["c"], "slot": ["s"], "noisy_mean": [1.0],
                 "noisy_var": [0.0]}  # fmt: skip
        body.update(epsilon="one", hats=hats, grids=grids, k=1, suppressed_pairs=0)
    with pytest.raises(HexplorerError) as info:
        cls.from_record(_record(body), Path("ledger.sqlite"))
    message = str(info.value)
    assert "ledger.sqlite" in message and "abc123" in message and "damaged body" in message
    assert "\n" not in message
