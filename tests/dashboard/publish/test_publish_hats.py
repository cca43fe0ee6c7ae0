"""The Publish page's ledger tables list an every-HAT release (``release --all``) with its HATs
and give its publishable table (noisy values clamped into [0, U], never a true value)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.citywide.batch import HatBatch
from core.publish import Ledger
from core.publish import batch as pb
from dashboard.publish import compute


def test_every_hat_release_in_the_ledger_tables(tmp_path):
    rows = [("a/s", "x", 2, 3.0), ("a/s", "y", 1, 9.0), ("b/s", "x", 3, 12.0)]
    frame = pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"])
    book = Ledger(tmp_path / "l.sqlite")
    out = pb.publish_all("baseline", HatBatch.from_summaries(frame, upper=10.0), 1.0, ledger=book)
    listed = compute.releases_table(book)
    assert listed["kind"].tolist() == ["hats"] and listed["hats"].tolist() == [2]
    table = compute.recorded_table(book, [out.release.release_id])
    assert table["hat"].tolist() == ["a/s", "b/s"] and table["m_ub"].isna().all()
    expected = np.clip(out.release.table["estimate"].to_numpy(), 0.0, 10.0)
    np.testing.assert_array_equal(table["noisy_mean"].to_numpy(), expected)
    assert table["privacy_loss"].tolist() == [2.0, 2.0]  # x is in both HATs
