"""From per-HAT user summaries to the list of HATs and to one HAT's :class:`core.hat.HatData`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import h3
import polars as pl

from core.data.busiest import busiest_hexagon_hour
from core.errors import HexplorerError
from core.hat import HatData

if TYPE_CHECKING:  # summaries come in as pandas; importing core.data needs no pandas
    import pandas as pd

HAT_TABLE_COLUMNS = ["hat", "cell", "slot", "users", "records", "m_max", "m_min", "m_median"]


def split_hat(hat: str) -> tuple[str, str]:
    """Split a ``"CELL/SLOT"`` label into its H3 cell and its slot.

    Raises
    ------
    HexplorerError
        If ``hat`` is not a string of that form with a valid H3 cell.

    >>> split_hat("8742d9d69ffffff/2024-03-05T08:00")
    ('8742d9d69ffffff', '2024-03-05T08:00')
    """
    example = "e.g. '8742d9d69ffffff/2024-03-05T08:00' or '8742d9d69ffffff/h08'"
    if not isinstance(hat, str) or "/" not in hat:
        raise HexplorerError(
            f"The 'hat' parameter must look like CELL/SLOT ({example}). Got {hat!r} instead."
        )
    cell, slot = hat.strip().split("/", 1)
    if not slot or not h3.is_valid_cell(cell):
        raise HexplorerError(
            f"The 'hat' parameter must look like CELL/SLOT with a valid H3 cell ({example}). "
            f"Got {hat!r} instead."
        )
    return cell, slot


def _check_summaries(summaries: pd.DataFrame) -> None:
    missing = [
        c for c in ("hat", "cell", "slot", "user_id", "m", "s", "q") if c not in summaries.columns
    ]
    if missing:
        raise HexplorerError(
            "Summaries need the columns hat, cell, slot, user_id, m, s, q; "
            f"missing: {', '.join(missing)}."
        )
    if len(summaries) == 0:
        raise HexplorerError("There are no HATs: the summaries are empty.")


def hat_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """One row per HAT, busiest (most records) first, ties by the HAT string.

    Columns ``hat, cell, slot, users, records, m_max, m_min, m_median`` where ``m_median`` is
    the ceil(L/2)-th largest count (SPEC section 1, [4] Appendix B).

    >>> import pandas as pd
    >>> s = pd.DataFrame({"hat": ["c/x"] * 3, "cell": "c", "slot": "x", "user_id": ["a", "b", "c"],
    ...                   "m": [5, 1, 2], "s": [1.0, 1.0, 1.0], "q": [1.0, 1.0, 1.0]})
    >>> hat_table(s)[["users", "records", "m_max", "m_min", "m_median"]].values.tolist()
    [[3, 8, 5, 1, 2]]
    """
    _check_summaries(summaries)
    frame = pl.from_pandas(summaries[["hat", "cell", "slot", "m"]])
    m_desc = pl.col("m").sort(descending=True)
    table = (
        frame.group_by("hat")
        .agg(
            pl.col("cell").first().cast(pl.String),
            pl.col("slot").first().cast(pl.String),
            pl.len().cast(pl.Int64).alias("users"),
            pl.col("m").sum().cast(pl.Int64).alias("records"),
            pl.col("m").max().cast(pl.Int64).alias("m_max"),
            pl.col("m").min().cast(pl.Int64).alias("m_min"),
            # the ceil(L/2)-th largest count
            m_desc.gather((pl.len() + 1) // 2 - 1).first().cast(pl.Int64).alias("m_median"),
        )
        .with_columns(pl.col("hat").cast(pl.String))
        .sort(["records", "hat"], descending=[True, False])
    )
    return table.select(HAT_TABLE_COLUMNS).to_pandas()


def hat_means(summaries: pd.DataFrame) -> pd.DataFrame:
    """True (non-private) mean value per HAT, f = sum s / sum m (SPEC section 1).

    Returns a DataFrame with columns ``hat`` and ``mean`` in the order of :func:`hat_table`.

    >>> import pandas as pd
    >>> s = pd.DataFrame({"hat": ["c/x", "c/x"], "cell": "c", "slot": "x", "user_id": ["a", "b"],
    ...                   "m": [1, 3], "s": [10.0, 30.0], "q": [100.0, 300.0]})
    >>> hat_means(s).values.tolist()
    [['c/x', 10.0]]
    """
    _check_summaries(summaries)
    frame = pl.from_pandas(summaries[["hat", "m", "s"]])
    table = (
        frame.group_by("hat")
        .agg(pl.col("m").sum().alias("records"), pl.col("s").sum().alias("total"))
        .with_columns(
            pl.col("hat").cast(pl.String), (pl.col("total") / pl.col("records")).alias("mean")
        )
        .sort(["records", "hat"], descending=[True, False])
    )
    return table.select("hat", "mean").to_pandas()


def hat_rows(summaries: pd.DataFrame, hat: str) -> pd.DataFrame:
    """The per-user summary rows of one HAT; a HAT whose cell is coarser than the data's cells
    (an adaptive cover's, :mod:`core.citywide.adaptive`) resolves to the records of the slot's
    cells that have it as ancestor (``h3.cell_to_parent``), summed per user.

    >>> c = h3.latlng_to_cell(21.19, 72.83, 7)
    >>> import pandas as pd
    >>> s = pd.DataFrame({"hat": [c + "/x"] * 2, "cell": c, "slot": "x", "user_id": ["a", "a"],
    ...                   "m": [1, 3], "s": [10.0, 30.0], "q": [100.0, 300.0]})
    >>> hat_rows(s.iloc[:1], h3.cell_to_parent(c, 5) + "/x")[["cell", "m"]].values.tolist()
    [['8542d9d7fffffff', 1]]
    """
    cell, slot = split_hat(hat)
    rows = summaries[summaries["hat"] == hat]
    if len(rows) or len(summaries) == 0:
        return rows
    res = h3.get_resolution(cell)
    in_slot = summaries[summaries["slot"].astype(str) == slot]
    if len(in_slot) == 0 or h3.get_resolution(str(in_slot["cell"].iloc[0])) <= res:
        return rows
    cells = in_slot["cell"].astype(str).unique()
    mine = {c for c in cells.tolist() if h3.cell_to_parent(c, res) == cell}
    part = in_slot[in_slot["cell"].astype(str).isin(mine)]
    out = part.groupby("user_id", as_index=False, sort=True)[["m", "s", "q"]].sum()
    return out.assign(hat=hat, cell=cell, slot=slot)[
        ["hat", "cell", "slot", "user_id", "m", "s", "q"]
    ]


def hat_data(summaries: pd.DataFrame, hat: str | None = None, upper: float = 65.0) -> HatData:
    """The per-user summaries of one HAT as :class:`HatData` (the busiest hexagon-hour when
    ``hat`` is None, :func:`core.data.busiest.busiest_hexagon_hour`).

    Parameters
    ----------
    summaries : pandas.DataFrame
        ``Prepared.summaries``.
    hat : str, optional
        ``"CELL/SLOT"`` as listed by :func:`hat_table` (``hexplorer hats``).
    upper : float
        U, the bound the values were clamped to.

    Raises
    ------
    HexplorerError
        Malformed or unknown HAT.
    """
    _check_summaries(summaries)
    if hat is None:
        hat = busiest_hexagon_hour(hat_table(summaries))
    rows = hat_rows(summaries, hat)
    if len(rows) == 0:
        raise HexplorerError(
            f"Unknown HAT {hat!r}: it has no records. List the valid ones with `hexplorer hats` "
            f"or hat_table(summaries)."
        )
    return HatData.from_arrays(
        rows["m"].to_numpy(),
        rows["s"].to_numpy(),
        rows["q"].to_numpy(),
        rows["user_id"].to_numpy().astype(str),
        upper=upper,
        hat=hat,
    )
