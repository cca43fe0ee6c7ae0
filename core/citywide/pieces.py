"""Releasing every HAT of summaries that come in pieces (a summaries file row group by row group,
or a summaries dataset part by part), a piece at a time: memory holds one piece, not the
summaries. By the per-HAT seed rule the table is bit for bit :func:`core.citywide.batch.release_all`
of the whole.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.citywide.batch import HatBatch, release_all, release_columns
from core.citywide.release_table import ReleaseTable
from core.errors import HexplorerError
from core.mechanisms import MECHANISMS

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from core.data.runs import SummaryRuns

__all__ = ["release_batches", "release_runs", "release_table"]


def release_batches(
    name: str,
    frames: Iterable[pl.DataFrame],
    epsilon: float,
    *,
    seed: int,
    upper: float = 65.0,
    whole_hats: bool = False,
) -> pd.DataFrame:
    """:func:`release_all` of summaries that come in pieces sorted by HAT (a summaries file read
    row group by row group), a piece at a time: memory holds one piece, not the summaries.

    The rows of a piece's last HAT wait for the next piece (a HAT may straddle two). By the
    seed rule a HAT's release depends on its own rows only, so the table is bit for bit
    :func:`release_all` of the whole. Pieces whose HATs are not in ascending order are refused
    (:class:`HexplorerError`): read such summaries whole.

    ``whole_hats``: every piece holds all the rows of its HATs (the parts of a summaries
    dataset, :mod:`core.data.dataset`), sorted by HAT inside the piece but in any order across
    pieces: each piece is released on its own and the table sorted by HAT at the end (one row
    per HAT, small), again bit for bit :func:`release_all` of the whole.
    """
    return release_table(
        name, frames, epsilon, seed=seed, upper=upper, whole_hats=whole_hats
    ).to_pandas()


def release_table(
    name: str,
    frames: Iterable[pl.DataFrame],
    epsilon: float,
    *,
    seed: int,
    upper: float = 65.0,
    whole_hats: bool = False,
) -> ReleaseTable:
    """:func:`release_batches` as a :class:`ReleaseTable` (its pieces, not yet one frame): what
    ``release --all`` writes, without pandas for the vectorised mechanisms."""
    import polars as pl

    release = _releaser(name, epsilon, seed)
    parts: list[Any] = []
    if whole_hats:
        parts = [release(HatBatch.from_summaries(f, upper=upper)) for f in frames if f.height]
        frames = ()
    held: pl.DataFrame | None = None
    last: str | None = None
    for frame in frames:
        if frame.height == 0:
            continue
        if held is not None:
            frame = pl.concat([held, frame], how="vertical_relaxed")
        hats = frame.get_column("hat")
        first = hats[0]
        if (last is not None and first < last) or not hats.is_sorted():
            raise HexplorerError(
                "The summaries are not sorted by HAT, so they cannot be released piece by piece."
            )
        tail = hats[-1]
        cut = int(hats.search_sorted(tail, side="left"))  # sorted: the tail HAT's first row
        done, held = frame.slice(0, cut), frame.slice(cut)  # views, no copy
        last = tail
        if done.height:
            parts.append(release(HatBatch.from_summaries(done, upper=upper)))
    if held is not None and held.height:
        parts.append(release(HatBatch.from_summaries(held, upper=upper)))
    if not parts:
        raise HexplorerError("There are no HATs to release: the summaries are empty.")
    return ReleaseTable(parts, sort=whole_hats)


def _releaser(name: str, epsilon: float, seed: int):
    """One piece's release: its columns (vectorised mechanisms), else the loop's frame."""
    if name in MECHANISMS and MECHANISMS[name].release_all is not None:
        return lambda batch: release_columns(name, batch, epsilon, seed=seed)
    return lambda batch: release_all(name, batch, epsilon, seed=seed)


def release_runs(
    name: str,
    windows: Iterable[SummaryRuns],
    epsilon: float,
    *,
    seed: int,
    upper: float = 65.0,
) -> ReleaseTable:
    """:func:`release_table` of a summaries file read as runs of one HAT
    (:func:`core.data.runs.summary_runs`), for a vectorised mechanism: the same pieces (a
    window's last HAT waits for the next window), so the same table, bit for bit, and the same
    refusal of HATs out of order."""
    from core.data.runs import joined

    if name not in MECHANISMS or MECHANISMS[name].release_all is None:
        raise HexplorerError(f"{name} has no all-HATs release form: release it piece by piece.")
    parts: list[Any] = []
    held = None  # the last HAT so far (its rows may go on in the next window)
    for window in windows:
        if window.rows == 0:
            continue
        if held is not None and window.labels[0] == held.labels[0]:  # held's rows go on
            if len(window.labels) == 1:  # the whole window is held's HAT
                held = joined([held, window])
                continue
            head, window = window.split(int(window.starts[1]))
            held = joined([held, head])  # one HAT's rows: the only copy
        labels = window.labels if held is None else [held.labels[0], *window.labels]
        if not all(map(operator.lt, labels, labels[1:])):  # strictly ascending
            raise HexplorerError(
                "The summaries are not sorted by HAT, so they cannot be released piece by piece."
            )
        cut = int(window.starts[-1])  # the window's last HAT waits for the next window
        done = [] if held is None else [held]
        if cut:
            body, window = window.split(cut)
            done.append(body)
        held = window
        if done:
            parts.append(_release_runs(name, done, epsilon, seed, upper))
    if held is not None:
        parts.append(_release_runs(name, [held], epsilon, seed, upper))
    if not parts:
        raise HexplorerError("There are no HATs to release: the summaries are empty.")
    return ReleaseTable(parts)


#: Rows released at once inside a window (whole HATs): arrays of a few MB stay in the cache and
#: are reused by the allocator, where a window's 16 MB arrays are paged in afresh each time.
BATCH_ROWS = 1 << 18


def _release_runs(
    name: str, segments: list[SummaryRuns], epsilon: float, seed: int, upper: float
) -> dict[str, Any]:
    """One piece's columns (:func:`release_columns`): its segments of whole HATs, each
    released in batches of about :data:`BATCH_ROWS` rows, put end to end. By the seed rule a
    HAT's row depends on its own rows only, so the columns are those of the piece released at
    once."""
    import numpy as np

    columns: list[dict[str, Any]] = []
    for runs in segments:
        cuts = np.searchsorted(runs.starts, np.arange(BATCH_ROWS, runs.rows, BATCH_ROWS))
        bounds = np.concatenate(([0], cuts, [len(runs.labels)]))  # ascending
        bounds = bounds[np.flatnonzero(np.diff(bounds, prepend=-1))]  # np.unique imports np.ma
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            first = int(runs.starts[lo])
            last = int(runs.starts[hi]) if hi < len(runs.labels) else runs.rows
            batch = HatBatch.from_runs(
                runs.labels[lo:hi],
                runs.starts[lo:hi] - first,
                runs.counts[first:last],
                runs.sums[first:last],
                upper=upper,
            )
            columns.append(release_columns(name, batch, epsilon, seed=seed))
    if len(columns) == 1:
        return columns[0]
    return {
        key: np.concatenate([c[key] for c in columns]) if np.ndim(value) else value
        for key, value in columns[0].items()
    }
