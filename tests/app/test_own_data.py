"""AppTest: a user's own file through every page (issue 7).

An AIS-like upload (MMSI, BaseDateTime, LAT, LON, SOG in knots) must stay in use across page
changes and reruns, follow every change of U and resolution (report, caption, HAT ids), and
speak of ships and knots; numbers are compared with core on the same bytes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import h3
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.data import ColumnMap, PrepConfig, hat_table, prepare
from dashboard.common.session import state
from dashboard.common.source import units
from dashboard.common.view import maps
from tests.app.links import plain

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = {
    "data": "dashboard/data/page.py",
    "map": "dashboard/map/page.py",
    "one": "dashboard/hexagon/page.py",
    "city": "dashboard/city/page.py",
    "learn": "dashboard/learn/page.py",
}
TIMEOUT = 180
AIS_COLUMNS = ColumnMap(user="MMSI", lat="LAT", lon="LON", time="BaseDateTime", value="SOG")


def _ais_csv() -> bytes:
    """Twelve ships over two hours in a harbour, a few records each, speeds in knots (some
    above 30, so that U = 30 clamps)."""
    rng = np.random.default_rng(7)
    rows = []
    for ship in range(12):
        lat0, lon0 = 29.70 + 0.02 * (ship % 4), -95.00 - 0.02 * (ship // 4)
        for k in range(20 + 3 * ship):
            minute = (7 * k + ship) % 120
            rows.append(
                {
                    "MMSI": 366_000_000 + ship,
                    "BaseDateTime": f"2023-01-01T{8 + minute // 60:02d}:{minute % 60:02d}:00",
                    "LAT": lat0 + 0.001 * (k % 5),
                    "LON": lon0 - 0.001 * (k % 7),
                    "SOG": float(np.round(rng.uniform(0.5, 36.0), 1)),
                    "COG": float(rng.uniform(0, 360)),
                }
            )
    return pd.DataFrame(rows).to_csv(index=False).encode()


AIS = _ais_csv()


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _hats_frame(at: AppTest) -> pd.DataFrame:
    for df in at.dataframe:
        if list(df.value.columns)[:2] == ["hat", "cell"]:
            return df.value
    raise AssertionError("no HAT table")


def _oracle(**config) -> tuple:
    prepared = prepare(pd.read_csv(io.BytesIO(AIS)), AIS_COLUMNS, PrepConfig(**config))
    return prepared.report, hat_table(prepared.summaries)


def _caption(at: AppTest) -> str:
    return plain(" ".join(c.value for c in at.sidebar.caption if c.value.startswith("In use")))


@pytest.fixture(scope="module")
def uploaded() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(PAGES["data"]).run()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("ais.csv", AIS, "text/csv")).run()
    _ok(at)
    return at


def test_upload_survives_pages_and_follows_u_and_resolution(uploaded):
    at = uploaded
    assert not at.error and not at.info or all("workbench" in i.value for i in at.info)
    rep, hats = _oracle()
    assert _metrics(at)["Rows read"] == f"{rep.rows_read:,}"
    assert "In use: **ais.csv**" in _caption(at)

    # another page: Streamlit empties the uploader, the file stays in use
    at.switch_page(PAGES["map"]).run()
    _ok(at)
    assert at.session_state[state.HAT] in set(hats["hat"])
    assert "In use: **ais.csv**" in _caption(at)
    assert any("Kept for this session: **ais.csv**" in plain(c.value) for c in at.sidebar.caption)

    # U and resolution changed elsewhere still apply to the upload
    at.sidebar.number_input(key=state.UPPER).set_value(30.0).run()
    at.sidebar.slider(key=state.RESOLUTION).set_value(8).run()
    _ok(at)
    rep, hats = _oracle(upper=30.0, resolution=8)
    assert rep.clamped > 0
    caption = _caption(at)
    assert "ais.csv" in caption and "U = 30 knots" in caption and "resolution 8" in caption
    hat = at.session_state[state.HAT]
    assert hat in set(hats["hat"]) and h3.get_resolution(hat.split("/")[0]) == 8

    at.switch_page(PAGES["data"]).run()
    _ok(at)
    got = _metrics(at)
    assert got["Clamped into [0, 30] knots"] == f"{rep.clamped:,}"
    assert got["HATs"] == f"{rep.hats:,}"
    assert any("[0, 30]" in plain(m.value) for m in at.markdown if "lamp" in m.value)
    shown = _hats_frame(at)
    assert shown["hat"].tolist() == hats["hat"].tolist()
    assert all(h3.get_resolution(c) == 8 for c in shown["cell"])

    # a rerun and a visit to every page keep it
    for page in ("one", "city", "learn", "data"):
        at.switch_page(PAGES[page]).run()
        _ok(at)
        assert page == "learn" or "ais.csv" in _caption(at)  # Learn has no Data sidebar
    assert _metrics(at)["Rows read"] == f"{rep.rows_read:,}"


def test_units_and_noun_are_detected_and_used_in_labels(uploaded):
    at = uploaded
    at.switch_page(PAGES["data"]).run()
    assert at.session_state[units.VALUE_UNIT] == "knots"
    assert at.session_state[units.USER_NOUN] == "ship"
    assert "knots" in at.sidebar.number_input(key=state.UPPER).label
    assert "Ships (users)" in _metrics(at)
    at.switch_page(PAGES["map"]).run()
    _ok(at)
    radio = at.radio(key=state.MAP_METRIC)
    assert radio.options[:4] == ["records", "ships", "true mean (knots)", "error at ε (knots)"]
    texts = " ".join(s.value for s in at.success) + " ".join(c.value for c in at.caption)
    assert "ships" in texts and "buses" not in texts and "km/h" not in texts
    # the user renames the noun: every label follows
    at.sidebar.text_input(key=units.USER_NOUN).input("vessel").run()
    _ok(at)
    radio = at.radio(key=state.MAP_METRIC)
    assert radio.options[1] == "vessels"
    at.switch_page(PAGES["city"]).run()
    _ok(at)
    assert "Vessels L" in _metrics(at)
    assert not any("km/h" in c.value or "buses" in c.value for c in at.caption)


def test_map_selection_keeps_fills_and_labels_follow_settings(uploaded):
    at = uploaded
    at.switch_page(PAGES["map"]).run()
    _ok(at)

    def hex_layer() -> dict:
        deck = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
        return next(
            x
            for x in deck["layers"]
            if x["id"].startswith(maps.HEX_LAYER_ID) and x["@@type"] == "H3HexagonLayer"
        )

    before = {r["cell"]: r["fill"] for r in hex_layer()["data"]}
    boxes = [b for b in at.selectbox if str(b.key).startswith(f"{state.MAP_CELL}_")]
    other = boxes[0].options[-1].split(" — ")[0]
    boxes[0].set_value(other).run()
    _ok(at)
    assert at.session_state[state.HAT].startswith(other)
    after = {r["cell"]: r["fill"] for r in hex_layer()["data"]}
    assert after == before  # the fill keeps the legend's colours
    deck = json.loads(at.get("deck_gl_json_chart")[0].proto.json)
    outline = next(x for x in deck["layers"] if x["id"] == maps.SELECTED_LAYER_ID)
    assert outline["data"] == [{"cell": other}] and outline["filled"] is False

    # keep-zeros changes the counts: the hexagon box shows the new ones at once
    at.sidebar.number_input(key=state.UPPER).set_value(30.0).run()  # whichever test ran first
    at.sidebar.slider(key=state.RESOLUTION).set_value(8).run()
    at.sidebar.checkbox(key=state.KEEP_ZEROS).check().run()
    at.sidebar.radio(key=state.SLOT_KIND).set_value("hour-of-day").run()
    _ok(at)
    cells = at.session_state[state.MAP_SLOT]
    box = [b for b in at.selectbox if str(b.key).startswith(f"{state.MAP_CELL}_")][0]
    _, hats = _oracle(upper=30.0, resolution=8, keep_zeros=True, slot="hour-of-day")
    in_slot = hats[hats["slot"] == cells]
    noun = units.Units(user=at.session_state[units.USER_NOUN])  # ship (or as renamed)
    assert box.options == [
        f"{c} — {r:,} records, {u:,} {noun.user if u == 1 else noun.users}"
        for c, r, u in zip(in_slot["cell"], in_slot["records"], in_slot["users"], strict=True)
    ]
    assert (in_slot["users"] == 1).any()  # "1 ship", not "1 ships": the case is here


def test_a_column_not_given_away_is_a_prompt_not_an_error():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    odd = b"who,where_lat,where_lon,when,how_fast\nu1,21.2,72.8,2024-03-05 08:10,30\n"
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("odd.csv", odd, "text/csv")).run()
    _ok(at)
    assert not at.error
    assert at.info and "user id column" in at.info[0].value
    assert not at.get("deck_gl_json_chart")  # no map of the previous data under the prompt


def _planes_csv() -> bytes:
    """Aircraft over one hour, speeds in km/h (100–900): every value is above the default U."""
    rng = np.random.default_rng(5)
    n = 400
    return pd.DataFrame({
        "callsign": [f"AB{i % 20:03d}" for i in range(n)],
        "latitude": 48.35 + 0.01 * rng.integers(0, 4, n),
        "longitude": 11.78 + 0.01 * rng.integers(0, 4, n),
        "timestamp": [f"2024-05-01 09:{m:02d}:00" for m in rng.integers(0, 60, n)],
        "speed_kmh": rng.uniform(100.0, 900.0, n).round(1),
    }).to_csv(index=False).encode()  # fmt: skip


def _clamp_warnings(at: AppTest) -> list[str]:
    return [plain(w.value) for w in at.warning if "above U =" in plain(w.value)]


def test_a_u_far_below_the_values_is_a_warning_on_every_page_until_u_is_raised():
    """Aircraft speeds against the default U = 65 km/h: every value becomes 65 and every mean
    with it. Each page says so above its numbers, with what to do; a U that fits ends it."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert _clamp_warnings(at) == []  # the demo city: a few outliers only
    at.switch_page(PAGES["data"]).run()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("planes.csv", _planes_csv(), "text/csv"))
    at.run()
    _ok(at)
    (warning,) = _clamp_warnings(at)
    assert plain(warning).startswith("100 % of the values were above U = 65 and set to U")
    assert "Set U under Data in the sidebar" in warning
    # the Data page's report lists what was read and clamped, not the warning again
    assert any("values clamped into [0, 65]" in plain(m.value) for m in at.markdown)
    assert not [m for m in at.markdown if "of the values were above U" in plain(m.value)]
    for page in ("map", "one", "city"):
        at.switch_page(PAGES[page]).run()
        _ok(at)
        assert len(_clamp_warnings(at)) == 1, page
    at.sidebar.number_input(key=state.UPPER).set_value(1000.0).run()
    _ok(at)
    assert _clamp_warnings(at) == []
