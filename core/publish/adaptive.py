"""Publishing an adaptive cover (:mod:`core.citywide.adaptive`): hexagons of mixed resolutions.

Nothing new is published here: the cover's released cells become ordinary per-(HAT, user)
summaries (a coarse cell holds the records of the finer cells that have it as parent, summed per
user), and those go through the existing paths — :func:`core.publish.city.publish_grids` (noisy
mean and variance per cell, ``compose --publish --adaptive``) or
:func:`core.publish.batch.publish_all` (one mechanism per cell, ``release --adaptive``) — with
their ledger, budget, accounting and all-or-nothing recording. The cells are disjoint, so each
user is charged ε per released cell it enters (or ε · max G_ℓ, or K ε after CHOP-USER) as for
any set of grids. The files carry each cell's H3 resolution (:func:`with_resolution`).

The choice of cells reads the record counts only, which the papers treat as public (as for m_UB
and CHOP-USER); it costs no budget under that reading.
"""

from __future__ import annotations

import h3
import pandas as pd

from core.citywide.adaptive import Cover, adaptive_cover
from core.citywide.batch import HatBatch
from core.citywide.gridset import GridSet
from core.publish.batch import PublishedHats, publish_all
from core.publish.city import PublishedCity, publish_grids

__all__ = ["cover_summaries", "publish_adaptive_city", "publish_adaptive_hats", "with_resolution"]


def cover_summaries(summaries: pd.DataFrame, **cover_args) -> tuple[Cover, pd.DataFrame]:
    """The adaptive cover of ``summaries`` (``cover_args`` as :func:`adaptive_cover`) and its
    mixed-cell per-(HAT, user) summaries."""
    cover = adaptive_cover(summaries, **cover_args)
    return cover, cover.summaries()


def publish_adaptive_city(
    summaries: pd.DataFrame,
    *,
    cover_args: dict,
    accounting: str = "per-user",
    **options,
) -> tuple[Cover, PublishedCity]:
    """Publish every cell of the adaptive cover (noisy mean and variance, SPEC sections 5 and 7)
    at the cover's ε per cell, through :func:`core.publish.city.publish_grids` (``options``
    passed on to it unchanged)."""
    cover, mixed = cover_summaries(summaries, **cover_args)
    p = cover.params
    published = publish_grids(
        GridSet.from_summaries(mixed), p.epsilon, upper=p.upper, accounting=accounting, **options
    )
    return cover, published


def publish_adaptive_hats(
    summaries: pd.DataFrame,
    *,
    cover_args: dict,
    accounting: str = "per-user",
    **options,
) -> tuple[Cover, PublishedHats]:
    """Publish one release of the cover's mechanism for every cell of the adaptive cover at the
    cover's ε per cell, through :func:`core.publish.batch.publish_all` (``options`` passed on to
    it unchanged)."""
    cover, mixed = cover_summaries(summaries, **cover_args)
    p = cover.params
    published = publish_all(
        p.mechanism,
        HatBatch.from_summaries(mixed, upper=p.upper),
        p.epsilon,
        accounting=accounting,
        **options,
    )
    return cover, published


def with_resolution(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with a ``resolution`` column (each row's H3 cell's) after ``cell``.

    >>> c = h3.latlng_to_cell(21.19, 72.83, 5)
    >>> with_resolution(pd.DataFrame({"cell": [c], "noisy_mean": [30.0]})).columns.tolist()
    ['cell', 'resolution', 'noisy_mean']
    """
    out = table.copy()
    res = [h3.get_resolution(str(c)) for c in out["cell"].tolist()]
    out.insert(out.columns.get_loc("cell") + 1, "resolution", res)
    return out
