"""Outputs bit-equal to the code before issue 29's speed work: the summaries of a small fleet
city and the demo city, and the seeded ``release_all`` of every vectorised mechanism on both.

The digests below were computed on the code before that work (commit da0f31b). A change that
moves any bit of a summary (hat, cell, slot, user_id, m, s, q, their order) or of a seeded
release (every column of every HAT) fails here. The fleet is the shape of ``bench/fleet.py``
(many users per HAT, few records per pair); the demo city has tens of records per pair, so
BestFit and m^(ε) have real work to do.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.citywide.batch import HatBatch, release_all
from core.data import PrepConfig, load_demo, prepare, prepare_file

ROOT = Path(__file__).resolve().parents[2]


def _fleet_module():
    spec = importlib.util.spec_from_file_location("fleet", ROOT / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's columns: names, text values, and numbers as little-endian bytes."""
    h = hashlib.sha256()
    for name in frame.columns:
        col = frame[name]
        h.update(f"|{name}|".encode())
        if col.dtype.kind in "iuf":
            kind = "<f8" if col.dtype.kind == "f" else "<i8"
            h.update(np.ascontiguousarray(col.to_numpy(), dtype=kind).tobytes())
        else:
            h.update("\x1f".join(str(v) for v in col.tolist()).encode())
    return h.hexdigest()


@pytest.fixture(scope="module")
def cities(tmp_path_factory) -> dict[str, pd.DataFrame]:
    path = tmp_path_factory.mktemp("fleet") / "fleet.parquet"
    _fleet_module().write_fleet(path, 60_000, seed=5, n_users=300)
    fleet = prepare_file(path, config=PrepConfig(resolution=8)).summaries
    demo = prepare(load_demo()).summaries
    return {"fleet": fleet, "demo": demo}


SUMMARIES = {
    "fleet": "ab1527190e5e732fd0500ca7bc24726f2f937e24db86a85e92ec842906f607cb",
    "demo": "fe6b4ace07f31d91c1b8b78fe046fb9d992af525baa893f80f2e8c7122da5186",
}

RELEASES = {
    ("fleet", "baseline"): "0a5097bc22df5be0bf88a4742e1fce4859295eb84ff57f1a01249fe18774f334",
    ("fleet", "arrayavg-wrap"): "bb3b2cfd543344b4f7025eb7b6d67536a902354f832ff32e66a616887d1afcea",
    ("fleet", "arrayavg-best"): "51141c709300f299b156a01a1d43d8154a8b00c1c9556e31690cf82a6bdbac22",
    ("fleet", "opt-arrayavg"): "ec6548a6e3484514105bdf43ef6e98497515a3a3588b66e161f3ecd80b968754",
    ("fleet", "opt-arrayavg-convex"): (
        "3e16075fa8d7a268bd1dc2e85dc4d99cf8ef78532cd2d47784984b62463004bd"
    ),
    ("fleet", "opt-bounding"): "2d512ebef690a5e5f5a5930024e1ea4abd3b404f7803c18296921e7cf3145bf1",
    ("demo", "baseline"): "4a5a7faf94b21efcbec5eb9ea03b018003695bae3c813e0c3c080dce4137d9d7",
    ("demo", "arrayavg-wrap"): "4a15d83fea4b93356f2b8c7ece8aa0f2cc192fc07cb63aa45b9534c95ff7f5aa",
    ("demo", "arrayavg-best"): "aecf732ce49692366c88e789c56858d9ac2b51c4bf35a7172616f58cda4a911c",
    ("demo", "opt-arrayavg"): "e81dcb168ceb5a8d2d3522886e677ea301cdfb5f0f61bd18c42813f68e5b0b37",
    ("demo", "opt-arrayavg-convex"): (
        "dcf4a7acae185a867dc3cb47154337b6e86213eeb6449803f18885ef549a2770"
    ),
    ("demo", "opt-bounding"): "17a48bb770748268982c7d0dffb8a4e749254c057502649728fbcd16078e9acc",
}


@pytest.mark.parametrize("city", sorted(SUMMARIES))
def test_summaries_are_bit_equal_to_before(cities, city):
    summaries = cities[city]
    assert digest(summaries.reset_index(drop=True)) == SUMMARIES[city]


@pytest.mark.parametrize(("city", "name"), sorted(RELEASES))
def test_seeded_release_all_is_bit_equal_to_before(cities, city, name):
    batch = HatBatch.from_summaries(cities[city])
    table = release_all(name, batch, 0.7, seed=20261126)
    assert digest(table) == RELEASES[(city, name)]


def test_the_batch_is_the_same_from_polars_and_from_any_row_order(cities):
    """The fast path (rows sorted by hat, user_id: a stable sort by count on integers) and the
    text sort of any other order build the same batch."""
    import polars as pl

    summaries = cities["demo"]
    sorted_batch = HatBatch.from_summaries(summaries)
    shuffled = summaries.sample(frac=1.0, random_state=3)
    for other in (
        HatBatch.from_summaries(pl.from_pandas(summaries)),
        HatBatch.from_summaries(shuffled),
    ):
        assert other.hats.tolist() == sorted_batch.hats.tolist()
        assert other.offsets.tolist() == sorted_batch.offsets.tolist()
        assert other.counts.tolist() == sorted_batch.counts.tolist()
        assert other.sums.tobytes() == sorted_batch.sums.tobytes()
        assert other.user_ids.tolist() == sorted_batch.user_ids.tolist()
    assert sorted_batch.user_rows is not None  # the demo's rows are in file order: fast path
    assert HatBatch.from_summaries(shuffled).user_rows is None


def test_the_streamed_summaries_file_is_bit_equal_to_before(tmp_path):
    """``hexplorer prepare``'s engine (out of core, sorted on one integer key): the summaries
    file it writes reads back to the same digest as the in-memory summaries above."""
    from core.data.stream import prepare_to_file
    from core.data.summaries import read_summaries

    raw = tmp_path / "fleet.parquet"
    _fleet_module().write_fleet(raw, 60_000, seed=5, n_users=300)
    target = tmp_path / "s.parquet"
    prepare_to_file(raw, target, config=PrepConfig(resolution=8), batch_rows=25_000)
    assert digest(read_summaries(target).summaries) == SUMMARIES["fleet"]


@pytest.mark.parametrize("name", ["arrayavg-best", "opt-arrayavg-convex"])
def test_release_piece_by_piece_is_bit_equal_to_the_whole(cities, tmp_path, name):
    """``release --all`` on a summaries file releases it row group by row group (HATs that
    straddle two pieces wait for the next): the same table, bit for bit."""
    from core.citywide.pieces import release_batches
    from core.data import load_demo, prepare
    from core.data.summaries import summary_pieces, write_summaries

    path = write_summaries(prepare(load_demo()), tmp_path / "s.parquet")
    pieces = summary_pieces(path, ["hat", "user_id", "m", "s"], rows=997)
    table = release_batches(name, pieces, 0.7, seed=20261126)
    pd.testing.assert_frame_equal(
        table, release_all(name, HatBatch.from_summaries(cities["demo"]), 0.7, seed=20261126)
    )
    assert digest(table) == RELEASES[("demo", name)]


def test_release_piece_by_piece_refuses_unsorted_pieces():
    import polars as pl

    from core.citywide.pieces import release_batches
    from core.errors import HexplorerError

    piece = pl.DataFrame(
        {"hat": ["b/1", "a/1"], "user_id": ["u", "u"], "m": [1, 2], "s": [1.0, 2.0]}
    )
    with pytest.raises(HexplorerError, match="not sorted by HAT"):
        release_batches("baseline", [piece], 1.0, seed=1)
