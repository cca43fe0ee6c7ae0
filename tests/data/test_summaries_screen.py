"""The readers' quick screen of summary values (core.data.summaries._plainly_valid): when it
passes, check_values' row-by-row checks pass too; it never lets a bad row through."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data.summaries import _plainly_valid, check_values
from core.errors import HexplorerError

U = 65.0


def _rows(m, s, q=None) -> pd.DataFrame:
    n = len(m)
    frame = {"hat": ["c/h"] * n, "user_id": [f"u{i}" for i in range(n)], "m": m, "s": s}
    if q is not None:
        frame["q"] = q
    return pd.DataFrame(frame)


def _refused(frame: pd.DataFrame) -> bool:
    try:
        check_values(frame, U, "f")
    except HexplorerError:
        return True
    return False


@pytest.mark.parametrize(
    ("m", "s", "q", "screen", "refused"),
    [
        ([1, 3], [65.0, 100.0], [0.0, 1.0], True, False),  # plainly valid
        ([2], [130.0 + 1e-8], None, False, False),  # above m·U within the rounding slack
        ([2], [-1e-8], None, False, False),  # below 0 within the slack
        ([2], [131.0], None, False, True),
        ([0], [0.0], None, False, True),
        ([1], [float("nan")], None, False, True),
        ([1], [1.0], [float("nan")], False, True),
        ([1], [1.0], [-1.0], False, True),
    ],
)
def test_the_screen_implies_the_checks(m, s, q, screen, refused):
    frame = _rows(m, s, q)
    qs = None if q is None else np.asarray(q, dtype=float)
    assert _plainly_valid(np.asarray(m), np.asarray(s, dtype=float), qs, U) is screen
    assert _refused(frame) is refused


def test_the_screen_never_passes_a_refused_table():
    rng = np.random.default_rng(4)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        m = rng.integers(-1, 4, n)
        s = m * U * rng.uniform(-0.01, 1.01, n)
        if _plainly_valid(m, s, None, U):
            assert not _refused(_rows(m, s))


def test_the_screen_looks_at_every_block():
    m = np.ones(600_000, dtype=np.int64)
    s = np.full(m.size, U)
    assert _plainly_valid(m, s, None, U)
    s[550_000] = U + 1.0  # in the third block of 2**18 rows
    assert not _plainly_valid(m, s, None, U)
