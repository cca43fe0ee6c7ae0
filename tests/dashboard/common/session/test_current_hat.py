"""``current_hat`` finds the HAT in the data once per (data, HAT), not on every rerun."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.runtime.state import SafeSessionState, SessionState, session_state_proxy

from dashboard.common.session import selection, state
from dashboard.common.source import compute
from dashboard.common.source.compute import DataSpec, Source

TABLE = pd.DataFrame(
    {"hat": ["b/08", "c/09", "a/08"], "cell": ["b", "c", "a"], "slot": ["08", "09", "08"],
     "records": [9, 7, 5], "users": [3, 2, 2]}
)  # fmt: skip
"""Three HATs, busiest first (as core.data.hat_table sorts them)."""


@pytest.fixture
def ss(monkeypatch):
    session = SafeSessionState(SessionState(), lambda: None)
    monkeypatch.setattr(session_state_proxy, "get_session_state", lambda: session)
    return session


@pytest.fixture
def searches(monkeypatch):
    calls: list[str] = []

    def hats(spec):
        calls.append(spec.key())
        return TABLE

    monkeypatch.setattr(compute, "hats", hats)
    return calls


def _spec(upper: float = 65.0) -> DataSpec:
    return DataSpec(source=Source.demo(), columns=compute.DEFAULT_COLUMNS, upper=upper)


def test_the_hat_is_searched_once_per_data_and_hat(ss, searches):
    assert selection.current_hat(_spec()) == "b/08"  # unset: the busiest
    assert selection.current_hat(_spec()) == "b/08"
    assert len(searches) == 1
    ss[state.HAT] = "c/09"  # picked on another page
    assert selection.current_hat(_spec()) == "c/09"
    assert selection.current_hat(_spec()) == "c/09"
    assert len(searches) == 2
    assert selection.current_hat(_spec(upper=80.0)) == "c/09"  # other data: searched again
    assert len(searches) == 3


def test_a_hat_absent_from_the_data_falls_back_to_the_busiest(ss, searches):
    ss[state.HAT] = "z/23"
    assert selection.current_hat(_spec()) == "b/08"
    ss[state.HAT] = "z/23"  # set again (a stale link): searched again, not taken as found
    assert selection.current_hat(_spec()) == "b/08"
    assert len(searches) == 2
