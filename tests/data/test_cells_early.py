"""A batch's H3 cells found from the start, in pieces (core.data.cells), give the records that
cells found after the checks, from the kept rows only, give: same rows, same cells, same
report, whatever the coordinates that are rejected and however the batch is chunked."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from core.data import clean
from core.data.cells import PIECE_ROWS
from core.data.config import PrepConfig
from core.data.prepare import DEFAULT_COLUMNS


def _batch(rows: int, chunks: int) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    lat = 12.9 + rng.normal(0, 0.05, rows)
    lon = 77.6 + rng.normal(0, 0.05, rows)
    speed = np.clip(rng.normal(20, 10, rows), 0, 70)
    bad = rng.choice(rows, 60, replace=False)
    lat[bad[:10]] = np.nan
    lon[bad[10:20]] = np.inf
    lat[bad[20:30]] = 95.0  # out of range: rejected, though H3 takes it
    lon[bad[30:40]] = -200.0
    frame = pl.DataFrame(
        {
            "user_id": rng.integers(0, 300, rows).astype(str),
            "lat": lat,
            "lon": pl.Series(lon).scatter(bad[40:50].tolist(), None),  # missing longitudes
            "timestamp": pl.datetime_range(
                pl.datetime(2024, 1, 1), pl.datetime(2024, 1, 10), interval="1s", eager=True
            )[:rows],
            "speed": speed,
        }
    )
    step = -(-rows // chunks)
    return pl.concat([frame.slice(i, step) for i in range(0, rows, step)], rechunk=False)


def _cells_of(monkeypatch) -> list[int]:
    """How many rows each call of cells_of_pieces finds the cells of, as clean_records makes
    them: every row of the batch from the start, or only the kept rows after the checks."""
    rows: list[int] = []
    real = clean.cells_of_pieces
    monkeypatch.setattr(
        clean, "cells_of_pieces", lambda lat, *a, **k: rows.append(lat.len()) or real(lat, *a, **k)
    )
    return rows


@pytest.mark.parametrize("chunks", [1, 7])
def test_cells_found_from_the_start_equal_cells_found_after(monkeypatch, chunks):
    frame = _batch(2 * PIECE_ROWS + 12_345, chunks)
    config = PrepConfig(resolution=8)
    rows = _cells_of(monkeypatch)
    early = clean.clean_records(frame, DEFAULT_COLUMNS, config)
    assert rows == [frame.height]  # the early path was taken: every row's cells
    monkeypatch.setattr(clean, "_EARLY_ROWS", frame.height + 1)  # the cells of the kept rows
    late = clean.clean_records(frame, DEFAULT_COLUMNS, config)
    assert rows == [frame.height, late.records.height]  # and this time it was not
    assert early.records.height == late.records.height > 0
    assert early.records.equals(late.records)
    assert early.reason_counts.tolist() == late.reason_counts.tolist()
    assert early.reason_counts[1:].sum() == 50  # every bad coordinate rejected
    assert early.zeros_dropped == late.zeros_dropped > 0
    assert np.array_equal(early.row_hashes, late.row_hashes)


def test_a_batch_of_rejected_rows_has_no_cells(monkeypatch):
    frame = _batch(PIECE_ROWS + 1, 3).with_columns(pl.lit("not a time").alias("timestamp"))
    rows = _cells_of(monkeypatch)
    out = clean.clean_records(frame, DEFAULT_COLUMNS, PrepConfig(resolution=8))
    assert rows == [frame.height]
    assert out.records.height == 0 and out.reason_counts[0] == 0
