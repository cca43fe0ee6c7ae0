"""The H3 cells of a batch's rows, found in pieces by worker threads from the moment the batch
is read, while :func:`core.data.clean.clean_records` checks its rows on the calling thread:
the cells take every core (one thread each, at most 8) for most of a batch's time, the checks
one. The rejected rows' cells
are then dropped (:func:`kept_cells`), each piece by a worker as soon as it is found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import polars as pl

from core.data.aggregation import cell_ids_one_thread

__all__ = ["PIECE_ROWS", "cells_of_pieces", "kept_cells", "workers"]

#: Rows per piece (pieces are taken by the first free thread).
PIECE_ROWS = 250_000


def cells_of_pieces(
    lat: pl.Series, lon: pl.Series, resolution: int, pool: Executor
) -> list[Future[pl.Series]]:
    """H3 cells of every row of two float columns, as futures of ``pool``, one per piece of at
    most :data:`PIECE_ROWS` rows, in order (``pl.concat`` of their results, without rechunking,
    is the cells' column). Rows with a missing, NaN or infinite coordinate get some cell: the
    caller rejects them. This lets a batch's cells be found while the batch is still checked.

    >>> from core.data.aggregation import cell_ids_of
    >>> lat, lon = pl.Series([12.97, None, 12.98]), pl.Series([77.59, 77.6, float("inf")])
    >>> with workers() as pool:
    ...     cells = pl.concat([f.result() for f in cells_of_pieces(lat, lon, 8, pool)])
    >>> bool(cells[0] == cell_ids_of(np.array([12.97]), np.array([77.59]), 8)[0]), cells.len()
    (True, 3)
    """
    pieces = []
    for start in range(0, lat.len(), PIECE_ROWS):
        a, b = lat.slice(start, PIECE_ROWS), lon.slice(start, PIECE_ROWS)
        pieces.append(pool.submit(_piece_cells, a, b, resolution))
    return pieces


def _piece_cells(lat: pl.Series, lon: pl.Series, resolution: int) -> pl.Series:
    x = lat.to_numpy().astype(np.float64, copy=False)  # nulls read as NaN
    y = lon.to_numpy().astype(np.float64, copy=False)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.all():  # h3ronpy refuses NaN and infinity: those rows are rejected anyway
        x, y = np.where(ok, x, 0.0), np.where(ok, y, 0.0)
    return pl.Series("cell", cell_ids_one_thread(x, y, resolution), dtype=pl.UInt64)


@contextmanager
def workers() -> Iterator[ThreadPoolExecutor]:
    """A pool of one thread per core (at most 8) for a batch's H3 cells. Left when the batch
    is done; when its work fails (a refusal, Ctrl-C), the pieces not started are dropped and
    the ones under way are waited for, so that no thread outlives the call."""
    pool = ThreadPoolExecutor(max(1, min(os.cpu_count() or 1, 8)))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def kept_cells(
    pieces: list[Future[pl.Series]],
    keep: np.ndarray,
    pool: ThreadPoolExecutor,
    piece_rows: int = PIECE_ROWS,
) -> np.ndarray:
    """The cells of :func:`cells_of_pieces` where ``keep``, each piece compacted by the pool's
    threads into its place in one array, as soon as it is found.

    >>> with workers() as pool:
    ...     pieces = [pool.submit(pl.Series, [1, 2], dtype=pl.UInt64) for _ in range(3)]
    ...     keep = np.array([True, False, False, True, True, True])
    ...     kept_cells(pieces, keep, pool, piece_rows=2).tolist()
    [1, 2, 1, 2]
    """
    out = np.empty(int(np.count_nonzero(keep)), dtype=np.uint64)

    def compact(piece: Future[pl.Series], start: int, done: int) -> None:
        cells = piece.result()
        rows = np.flatnonzero(keep[start : start + cells.len()])
        np.take(cells.to_numpy(), rows, out=out[done : done + rows.size], mode="clip")

    # a piece's rows are known before it is found (piece_rows each, the last one the rest)
    bounds = np.minimum(np.arange(len(pieces) + 1) * piece_rows, keep.size)
    kept_before = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(np.add.reduceat(keep, bounds[:-1], dtype=np.int64), out=kept_before[1:])
    # queued behind every piece (the pool takes work in order), so a compaction that waits for
    # its piece waits for one that another thread has already started: no thread idles on
    # work still in the queue
    compacted = [
        pool.submit(compact, piece, int(bounds[i]), int(kept_before[i]))
        for i, piece in enumerate(pieces)
    ]
    for done in compacted:
        done.result()
    return out
