"""What "busiest" means, defined once: the busiest hexagon-hour and the busiest hour.

Two different things carry the word, and both are named by what they are wherever they are
shown (the CLI, every page of the dashboard):

* the **busiest hexagon-hour** (:data:`BUSIEST_HEXAGON_HOUR`): the HAT with the most records N,
  ties by the HAT string, the first row of :func:`core.data.hat_table`. Every view opens on it
  (``hat_data`` with no HAT, ``hexplorer`` commands without ``--hat`` or ``--slot``, the
  dashboard's Map, One hexagon, Whole city and Publish), and its slot is the opening slot
  (:func:`default_slot`);
* the **busiest hour** (:data:`BUSIEST_HOUR`): the slot with the most records summed over all
  its hexagons (city-wide), ties by the slot string, the first row of :func:`slot_table`. It
  heads every list of slots sorted most records first.

On the demo city they differ (2024-03-04T14:00 has the most records city-wide; the busiest
hexagon-hour is in 2024-03-05T15:00), which is why neither is ever called just "the busiest".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import HexplorerError

if TYPE_CHECKING:  # tables come in as pandas; this module needs no pandas of its own
    import pandas as pd

BUSIEST_HEXAGON_HOUR = "busiest hexagon-hour"
"""The name shown for :func:`busiest_hexagon_hour` (and for its slot, :func:`default_slot`)."""
BUSIEST_HOUR = "busiest hour (most records city-wide)"
"""The name shown for :func:`busiest_hour`."""

SLOT_TABLE_COLUMNS = ["slot", "hexagons", "users", "records"]


def _check(table: pd.DataFrame) -> None:
    if len(table) == 0:
        raise HexplorerError("There are no HATs: the summaries are empty.")


def busiest_hexagon_hour(table: pd.DataFrame) -> str:
    """The busiest hexagon-hour of a :func:`core.data.hat_table`: the HAT with the most
    records, ties by the HAT string (the table's first row). The default HAT of every view.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"hat": ["a/h08", "b/h09", "c/h09"], "slot": ["h08", "h09", "h09"],
    ...                   "users": [2, 1, 1], "records": [3, 2, 2]})
    >>> busiest_hexagon_hour(t), default_slot(t), busiest_hour(t)
    ('a/h08', 'h08', 'h09')
    """
    _check(table)
    return str(table["hat"].iloc[0])


def default_slot(table: pd.DataFrame) -> str:
    """The slot every view opens on: the :func:`busiest_hexagon_hour`'s slot (``hexplorer
    compose`` without ``--slot``, the dashboard's Map, One hexagon, Whole city and Publish), so
    they open on the same hexagon-hour. Not :func:`busiest_hour`, which can differ."""
    _check(table)
    return str(table["slot"].iloc[0])


def slot_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per slot of a :func:`core.data.hat_table`, most records (city-wide) first, ties
    by the slot string: ``slot, hexagons, users, records`` (``users`` sums the HATs' users: a
    user in two hexagons counts twice).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"hat": ["a/h08", "b/h09", "c/h09"], "slot": ["h08", "h09", "h09"],
    ...                   "users": [2, 1, 1], "records": [3, 2, 2]})
    >>> slot_table(t).values.tolist()
    [['h09', 2, 2, 4], ['h08', 1, 2, 3]]
    """
    _check(table)
    return (
        table.groupby("slot", sort=True)
        .agg(hexagons=("hat", "size"), users=("users", "sum"), records=("records", "sum"))
        .reset_index()
        .sort_values("records", ascending=False, kind="stable")  # stable: ties by slot
        .reset_index(drop=True)[SLOT_TABLE_COLUMNS]
    )


def busiest_hour(table: pd.DataFrame) -> str:
    """The busiest hour: the slot with the most records over all its hexagons (city-wide), ties
    by the slot string; the first row of :func:`slot_table`."""
    return str(slot_table(table)["slot"].iloc[0])


def slot_names(table: pd.DataFrame) -> dict[str, str]:
    """{slot: what makes it notable}: the :func:`busiest_hour` and the :func:`default_slot`
    (the busiest hexagon-hour's), one name each, both in one when they are the same slot.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"hat": ["a/h08", "b/h09", "c/h09"], "slot": ["h08", "h09", "h09"],
    ...                   "users": [2, 1, 1], "records": [3, 2, 2]})
    >>> slot_names(t)
    {'h09': 'busiest hour (most records city-wide)', 'h08': 'holds the busiest hexagon-hour'}
    """
    hour, opening = busiest_hour(table), default_slot(table)
    if hour == opening:
        return {hour: f"{BUSIEST_HOUR}, holds the {BUSIEST_HEXAGON_HOUR}"}
    return {hour: BUSIEST_HOUR, opening: f"holds the {BUSIEST_HEXAGON_HOUR}"}
