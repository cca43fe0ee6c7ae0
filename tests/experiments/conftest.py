"""A small city for the many-grid experiments, so their tests do not prepare the demo city."""

from __future__ import annotations

import pandas as pd
import pytest

from core.citywide.gridset import SUMMARY_COLUMNS, GridSet
from core.experiments import compute as cx


def small_city() -> GridSet:
    """Six grids on one day; bus 'a' is in all of them, so CHOP-USER has something to do."""
    rows = []
    for g in range(6):
        slot = f"2024-03-05T{8 + g:02d}:00"
        users = [("a", 1 + g % 2, 30.0)] + [(f"u{g}{k}", 3 + k, 20.0 + k) for k in range(4)]
        for user, m, mean in users:
            rows.append((f"c{g}/{slot}", f"c{g}", slot, user, m, mean * m, mean * mean * m))
    return GridSet.from_summaries(pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)))


@pytest.fixture
def small_city_grids(monkeypatch):
    """Replace the demo's busiest day by :func:`small_city` in core.experiments.compute."""
    grids = small_city()
    monkeypatch.setattr(cx, "busiest_day_grids", lambda: (grids, "2024-03-05"))
    return grids
