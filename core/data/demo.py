"""The embedded demo city (placeholder until the generator lands)."""

from __future__ import annotations

import pandas as pd


def load_demo() -> pd.DataFrame:
    """Raw demo records (user_id, lat, lon, timestamp, speed)."""
    raise NotImplementedError("the demo city is being written")
