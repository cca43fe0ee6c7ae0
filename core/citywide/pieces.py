"""Releasing every HAT of summaries that come in pieces (a summaries file row group by row group,
or a summaries dataset part by part), a piece at a time: memory holds one piece, not the
summaries. By the per-HAT seed rule the table is bit for bit :func:`core.citywide.batch.release_all`
of the whole.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import polars as pl

from core.citywide.batch import HatBatch, release_all
from core.errors import HexplorerError

__all__ = ["release_batches"]


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
    if whole_hats:
        return _release_whole_pieces(name, frames, epsilon, seed=seed, upper=upper)
    parts: list[pd.DataFrame] = []
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
            parts.append(
                release_all(name, HatBatch.from_summaries(done, upper=upper), epsilon, seed=seed)
            )
    if held is not None and held.height:
        parts.append(
            release_all(name, HatBatch.from_summaries(held, upper=upper), epsilon, seed=seed)
        )
    if not parts:
        raise HexplorerError("There are no HATs to release: the summaries are empty.")
    return pd.concat(parts, ignore_index=True)


def _release_whole_pieces(
    name: str, frames: Iterable[pl.DataFrame], epsilon: float, *, seed: int, upper: float
) -> pd.DataFrame:
    """:func:`release_batches` of pieces that each hold whole HATs (a dataset's parts)."""
    parts = [
        release_all(name, HatBatch.from_summaries(frame, upper=upper), epsilon, seed=seed)
        for frame in frames
        if frame.height
    ]
    if not parts:
        raise HexplorerError("There are no HATs to release: the summaries are empty.")
    table = pd.concat(parts, ignore_index=True)
    if not table["hat"].is_monotonic_increasing:
        table = table.sort_values("hat", kind="stable", ignore_index=True)
    return table
