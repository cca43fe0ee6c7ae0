"""Settings belong to their data, a page's own choices survive other pages, and a change made
on one page that moves another page's view is said there (issue 27, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from links import plain
from sample_files import flights_csv
from streamlit.testing.v1 import AppTest
from test_own_data import AIS

from dashboard.common.session import state
from dashboard.common.source import units

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = {
    "map": "dashboard/map/page.py",
    "one": "dashboard/hexagon/page.py",
    "experiments": "dashboard/experiments/page.py",
    "data": "dashboard/data/page.py",
}
TIMEOUT = 180


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _upload(at: AppTest, name: str, data: bytes) -> None:
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value((name, data, "text/csv")).run()
    _ok(at)


def _in_use(at: AppTest) -> str:
    return plain(" ".join(c.value for c in at.sidebar.caption if c.value.startswith("In use")))


@pytest.fixture()
def at() -> AppTest:
    app = AppTest.from_file(APP, default_timeout=TIMEOUT)
    app.run()
    app.switch_page(PAGES["data"]).run()
    _ok(app)
    return app


def test_each_data_set_keeps_its_own_settings(at):
    _upload(at, "ais.csv", AIS)
    at.sidebar.number_input(key=state.UPPER).set_value(30.0).run()
    _ok(at)
    assert "**ais.csv** · U = 30 knots" in _in_use(at)

    _upload(
        at, "flights.csv", flights_csv(300, 30, 3)
    )  # a new file: its own defaults, not ais.csv's U
    assert "**flights.csv** · U = 65 km/h" in _in_use(at)
    assert at.session_state[units.USER_NOUN] == "user" or at.session_state[units.USER_NOUN]
    assert any("starts from its own defaults" in c.value for c in at.sidebar.caption)

    at.sidebar.radio(key=state.SOURCE).set_value("demo").run()  # the demo city: as it was
    assert "**demo city** · U = 65 km/h" in _in_use(at)
    assert at.session_state[units.USER_NOUN] == "bus"

    _upload(at, "ais.csv", AIS)  # back to ais.csv: its U and unit come back
    assert "**ais.csv** · U = 30 knots" in _in_use(at)
    assert any("brought back" in c.value for c in at.sidebar.caption)


def test_mechanisms_and_colouring_survive_a_visit_to_experiments(at):
    at.switch_page(PAGES["one"]).run()
    chosen = ["levy", "opt-arrayavg"]
    at.sidebar.multiselect(key=state.MECHANISMS).set_value(chosen).run()
    at.switch_page(PAGES["map"]).run()
    at.radio(key=state.MAP_METRIC).set_value("users").run()
    for page in ("experiments", "one", "experiments", "map"):
        at.switch_page(PAGES[page]).run()
        _ok(at)
    assert at.radio(key=state.MAP_METRIC).value == "users"
    at.switch_page(PAGES["one"]).run()
    assert at.sidebar.multiselect(key=state.MECHANISMS).value == chosen


def test_a_hat_chosen_on_the_map_is_said_on_one_hexagon(at):
    from core.data import hat_table, load_demo, prepare

    at.switch_page(PAGES["one"]).run()
    at.switch_page(PAGES["map"]).run()
    before = at.session_state[state.HAT]
    table = hat_table(prepare(load_demo()).summaries)
    same_slot = table[table["slot"] == before.split("/")[1]]
    other = same_slot[same_slot["hat"] != before].iloc[0]
    box = next(b for b in at.selectbox if str(b.key).startswith(f"{state.MAP_CELL}_"))
    box.set_value(other["cell"]).run()
    _ok(at)
    assert at.session_state[state.HAT] == other["hat"]
    at.switch_page(PAGES["one"]).run()
    _ok(at)
    notes = [i.value for i in at.info if "HAT changed on the Map page" in i.value]
    assert notes and other["hat"] in notes[0] and before in notes[0]
    at.switch_page(PAGES["one"]).run()  # said once
    assert not [i.value for i in at.info if "HAT changed" in i.value]
