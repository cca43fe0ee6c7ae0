"""Every page says "busiest" in one sense, from core's one definition (core.data.busiest).

The demo city has two different "busiest": the busiest hexagon-hour (the HAT with the most
records; every page opens on it) and the busiest hour (the slot with the most records
city-wide; it heads the slot lists). The pages open on the first, name both by what they are,
and their slot lists open at the top with the entry shown on opening.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.data import (
    BUSIEST_HEXAGON_HOUR,
    BUSIEST_HOUR,
    busiest_hexagon_hour,
    busiest_hour,
    default_slot,
    hat_table,
    load_demo,
    prepare,
)
from dashboard.city import state as cs
from dashboard.common.session import state
from dashboard.publish import state as ps

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def table():
    return hat_table(prepare(load_demo()).summaries)


@pytest.fixture(scope="module")
def at():
    app = AppTest.from_file(APP, default_timeout=180)
    app.run()
    assert not app.exception
    return app


def test_the_demo_has_two_different_busiest(table):
    assert busiest_hour(table) != default_slot(table)  # else this file tests nothing


@pytest.mark.parametrize(
    ("page", "key"),
    [
        ("dashboard/city/page.py", cs.SLOT),
        ("dashboard/publish/page.py", ps.SLOT),
    ],
)
def test_slot_lists_open_on_the_busiest_hexagon_hour_at_their_top_and_name_both(
    at, table, page, key
):
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[state.HAT] == busiest_hexagon_hour(table)
    box = next(b for b in at.selectbox if b.key == key)
    assert box.value == default_slot(table)
    assert box.options[0].startswith(default_slot(table))  # opens at its top, in view
    assert box.options[0].endswith(f"holds the {BUSIEST_HEXAGON_HOUR}")
    # then most records first: the busiest hour (most records city-wide) next, named
    assert box.options[1].startswith(busiest_hour(table))
    assert box.options[1].endswith(BUSIEST_HOUR)
    assert sum(BUSIEST_HOUR in o for o in box.options) == 1


@pytest.mark.parametrize(
    "page",
    ["dashboard/map/page.py", "dashboard/hexagon/page.py"],
)
def test_map_and_one_hexagon_open_on_the_busiest_hexagon_hour(at, table, page):
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[state.HAT] == busiest_hexagon_hour(table)
