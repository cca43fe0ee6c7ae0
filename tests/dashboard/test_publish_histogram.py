"""The ledger histogram after a previewed release counts every user once (issue 27)."""

from __future__ import annotations

import numpy as np

from dashboard.common.source.units import Units
from dashboard.publish.charts import user_epsilon_histogram


def test_after_counts_each_user_once():
    totals = np.array([1.0, 1.0, 0.5])  # three users in the ledger
    before = np.array([1.0, 0.0])  # the release charges one of them and a new user
    after = before + 1.0
    fig = user_epsilon_histogram(totals, budget=3.0, units=Units(), after=after, before=before)
    recorded, whole = fig.data
    assert len(recorded.x) == 3
    assert sorted(whole.x) == [0.5, 1.0, 1.0, 2.0]  # four users, the charged one at 2 only
