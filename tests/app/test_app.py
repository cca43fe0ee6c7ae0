"""AppTest for every page and control, with numbers compared against core (the oracle).

The oracle prepares the demo city with core directly (not through the dashboard's cache) and
recomputes what each page shows for the same inputs.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.data import PrepConfig, hat_data, hat_table, load_demo, prepare
from core.errors import HexplorerError
from dashboard.city import state as cs
from dashboard.common import sidebar
from dashboard.common.session import state
from dashboard.common.source import compute, datadir, units
from tests.app.links import plain

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = {
    "data": "dashboard/data/page.py",
    "map": "dashboard/map/page.py",
    "one": "dashboard/hexagon/page.py",
    "learn": "dashboard/learn/page.py",
    "city": "dashboard/city/page.py",
    "publish": "dashboard/publish/page.py",
}
TIMEOUT = 120


@pytest.fixture(scope="module")
def oracle():
    """The demo city prepared by core with the default settings."""
    summaries = prepare(load_demo()).summaries
    return {"summaries": summaries, "hats": hat_table(summaries)}


def _app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    if page is not None:
        at.switch_page(PAGES[page]).run()
    _ok(at)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _frame(at: AppTest, first_column: str, second: str | None = None) -> pd.DataFrame:
    for df in at.dataframe:
        cols = list(df.value.columns)
        if cols and cols[0] == first_column and (second is None or second in cols):
            return df.value
    raise AssertionError(f"no table starting with {first_column!r}")


def _cell_box(at: AppTest):
    """The Map page's hexagon select box (its key names the data and the slot)."""
    boxes = [b for b in at.selectbox if str(b.key).startswith(f"{state.MAP_CELL}_")]
    assert len(boxes) == 1, [b.key for b in at.selectbox]
    return boxes[0]


def _hat(at: AppTest, oracle):
    return hat_data(oracle["summaries"], at.session_state[state.HAT], upper=65.0)


# --- default load ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_loads_without_exception_or_error(page):
    at = _app(page)
    assert not at.error, [e.value for e in at.error]
    assert (
        at.title[0].value
        == {
            "data": "Data",
            "map": "Map",
            "one": "One hexagon",
            "learn": "Learn",
            "city": "Whole city",
            "publish": "Publish",
        }[page]
    )


def test_learn_explains_every_page():
    at = _app("learn")
    headers = [h.value for h in at.header]
    assert "Many grids at once: the whole city" in headers
    assert any("CHOP-USER" in m.value for m in at.markdown)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs_on_its_own(page):
    at = AppTest.from_file(str(ROOT / PAGES[page]), default_timeout=TIMEOUT)
    at.run()
    _ok(at)


def test_app_opens_on_the_map_with_the_busiest_hat(oracle):
    at = _app()
    assert at.title[0].value == "Map"
    assert at.session_state[state.HAT] == oracle["hats"]["hat"].iloc[0]
    decks = at.get("deck_gl_json_chart")
    assert len(decks) == 1
    assert '"mapStyle": "__MAP_STYLE__"' in decks[0].proto.json
    # The legend is HTML, not a plotly chart: the first map needs no plotly.js in the browser.
    assert len(at.get("plotly_chart")) == 0
    legend = " ".join(h.proto.body for h in at.get("html") if "hexplorer-legend" in h.proto.body)
    assert "records" in legend and legend.count("hexplorer-legend-box") >= 2


def test_workbench_and_public_counts_are_stated():
    at = _app("data")
    text = " ".join(i.value for i in at.info)
    assert "true values" in text and "public" in text and "{m_ℓ}" in text


# --- Data page -------------------------------------------------------------------------------


def test_data_report_matches_core(oracle):
    at = _app("data")
    rep = prepare(load_demo()).report
    got = _metrics(at)
    assert got["Rows read"] == f"{rep.rows_read:,}"
    assert got["Rejected rows"] == f"{rep.n_rejected:,}"
    assert got["Clamped into [0, 65] km/h"] == f"{rep.clamped:,}"
    assert got["HATs"] == f"{rep.hats:,}"
    pd.testing.assert_frame_equal(
        _frame(at, "hat", "records").reset_index(drop=True), oracle["hats"]
    )
    assert any(b.label == "Download hats.csv" for b in at.get("download_button"))


def _csv(rows: list[str]) -> bytes:
    return ("user_id,lat,lon,timestamp,speed\n" + "\n".join(rows) + "\n").encode()


GOOD = _csv(
    [
        "a,21.2,72.8,2024-03-05 08:10,30",
        "a,21.2,72.8,2024-03-05 08:11,40",
        "b,21.2,72.8,2024-03-05 08:20,20",
        "b,95.0,72.8,2024-03-05 08:21,20",
        "c,21.2,72.8,not a time,20",
        "c,21.2,72.8,2024-03-05 08:40,80",
    ]
)


def test_upload_then_malformed_file_keeps_previous_data():
    at = _app("data")
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("good.csv", GOOD, "text/csv")).run()
    _ok(at)
    assert not at.error
    rep = prepare(pd.read_csv(io.BytesIO(GOOD))).report
    assert _metrics(at)["Rows read"] == f"{rep.rows_read:,}" == "6"
    assert _metrics(at)["Rejected rows"] == "2"
    reasons = _frame(at, "reason", "rows")
    assert reasons["rows"].sum() == 2
    assert not _frame(at, "row", "reason").empty  # examples of rejected rows

    at.sidebar.file_uploader(key=state.UPLOAD).set_value(
        ("bad.csv", b'\x00\x01 junk\n"unterminated', "text/csv")
    ).run()
    _ok(at)
    assert (
        len(at.error) == 1
        and "bad.csv" in plain(at.error[0].value)
        and "still using **good.csv**" in plain(at.error[0].value)
    )
    assert _metrics(at)["Rows read"] == "6"  # previous data still in use

    missing = b"user,lat,lon,timestamp,speed\nu1,21.2,72.8,2024-03-05 08:10,30\n"
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("nouser.csv", missing, "text/csv")).run()
    _ok(at)
    # "user" is detected as the user column; a text speed is the next error to try
    text_speed = _csv(["a,21.2,72.8,2024-03-05 08:10,fast"])
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("text.csv", text_speed, "text/csv")).run()
    _ok(at)
    assert at.error and "text.csv" in plain(at.error[0].value)
    assert _metrics(at)["Rows read"] != "0"


def test_upload_over_the_memory_budget_is_refused_and_data_kept(monkeypatch):
    from dashboard.common.source import limits

    monkeypatch.setenv(limits.MEMORY_BUDGET_ENV, "1")
    at = _app("data")
    assert any("more than 1 MB of memory" in c.value for c in at.sidebar.caption)
    rows_before = _metrics(at)["Rows read"]
    big = GOOD + b"a,21.2,72.8,2024-03-05 08:10,30\n" * 20_000
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("big.csv", big, "text/csv")).run()
    _ok(at)
    assert len(at.error) == 1 and "would need about" in at.error[0].value
    assert "still using **demo city**" in at.error[0].value
    assert _metrics(at)["Rows read"] == rows_before


def test_undetected_column_asks_for_a_choice_and_keeps_data():
    at = _app("data")
    rows_before = _metrics(at)["Rows read"]
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    odd = b"who,lat,lon,timestamp,speed\nu1,21.2,72.8,2024-03-05 08:10,30\n"
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("odd.csv", odd, "text/csv")).run()
    _ok(at)
    assert not at.error  # a choice not made yet is a prompt, not an error
    assert any("user id column" in i.value for i in at.info)
    assert not at.metric  # no numbers of the previous data under the prompt
    assert rows_before != "1"
    digest = compute.Source.upload("odd.csv", odd).digest
    at.sidebar.selectbox(key=state.column_key("user", digest)).set_value("who").run()
    _ok(at)
    assert not at.error and _metrics(at)["Rows read"] == "1"


def test_column_choices_are_drawn_only_while_open_and_kept_while_closed():
    """The sidebar's "Columns" draws its five select boxes only while open (about 1,200 of the
    browser's component renders on every first view otherwise): closed for a file whose
    columns were all detected, open by itself when one must be chosen; a choice made there
    stays in force once it is closed."""
    at = _app("data")
    digest = compute.Source.upload("ok.csv", GOOD).digest
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("ok.csv", GOOD, "text/csv")).run()
    _ok(at)
    columns = {state.column_key(role, digest) for role in sidebar.ROLE_LABELS}
    assert not columns & {s.key for s in at.sidebar.selectbox}  # all detected: closed
    at.session_state[state.COLUMNS_OPEN] = True
    at.run()
    assert columns <= {s.key for s in at.sidebar.selectbox}
    assert at.sidebar.selectbox(key=state.column_key("user", digest)).value == "user_id"

    odd = b"who,lat,lon,timestamp,speed\nu1,21.2,72.8,2024-03-05 08:10,30\n"
    digest = compute.Source.upload("odd.csv", odd).digest
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("odd.csv", odd, "text/csv")).run()
    user = state.column_key("user", digest)
    at.sidebar.selectbox(key=user).set_value("who").run()  # drawn: a column to choose
    _ok(at)
    at.session_state[state.COLUMNS_OPEN] = False
    at.run()
    at.run()
    _ok(at)
    assert user not in {s.key for s in at.sidebar.selectbox}
    assert not any("user id column" in i.value for i in at.info)  # no prompt: still chosen
    assert _metrics(at)["Rows read"] == "1"


def test_without_a_data_directory_no_control_names_a_server_file(monkeypatch):
    monkeypatch.delenv(datadir.ENV_VAR, raising=False)
    at = _app("data")
    assert at.sidebar.radio(key=state.SOURCE).options == [
        sidebar.SOURCE_LABELS["demo"],
        sidebar.SOURCE_LABELS["upload"],
    ]
    # the only text field besides the deck's title and note (words, never a path)
    assert [t.key for t in at.text_input] == [units.USER_NOUN, "deck_title", "deck_note"]


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../../etc/passwd", "records.csv"])
def test_a_crafted_server_source_is_refused_by_compute(tmp_path, monkeypatch, name):
    """Behind the widgets, the cached loaders resolve a "path" source again, so a session
    carrying a made-up path reads nothing outside the data directory (or anything at all
    when none is configured)."""
    monkeypatch.delenv(datadir.ENV_VAR, raising=False)
    source = compute.Source(kind="path", name=name, digest=f"{name}|crafted")
    spec = compute.DataSpec(source=source, columns=compute.DEFAULT_COLUMNS)
    (tmp_path / "records.csv").write_bytes(GOOD)
    for configured in (False, True):
        if configured:
            monkeypatch.setenv(datadir.ENV_VAR, str(tmp_path / "empty"))
            (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(HexplorerError, match="File not found in the data directory"):
            compute.table_columns(source)
        with pytest.raises(HexplorerError, match="File not found in the data directory"):
            compute.prepared(spec)


def test_data_directory_files_are_a_choice_and_prepared(tmp_path, monkeypatch):
    (tmp_path / "records.csv").write_bytes(GOOD)
    (tmp_path / "notes.md").write_text("not offered")
    (tmp_path / "escape.csv").symlink_to("/etc/passwd")
    monkeypatch.setenv(datadir.ENV_VAR, str(tmp_path))
    at = _app("data")
    at.sidebar.radio(key=state.SOURCE).set_value("path").run()
    _ok(at)
    box = at.sidebar.selectbox(key=state.PATH)
    assert box.options == ["records.csv"]
    # no path is typed (the deck's title and note are words)
    assert [t.key for t in at.sidebar.text_input] == [units.USER_NOUN, "deck_title", "deck_note"]
    box.set_value("records.csv").run()
    _ok(at)
    assert not at.error and _metrics(at)["Rows read"] == "6"


def test_data_directory_file_removed_is_refused_like_a_missing_file(tmp_path, monkeypatch):
    (tmp_path / "records.csv").write_bytes(GOOD)
    monkeypatch.setenv(datadir.ENV_VAR, str(tmp_path))
    at = _app("data")
    at.sidebar.radio(key=state.SOURCE).set_value("path").run()
    at.sidebar.selectbox(key=state.PATH).set_value("records.csv").run()
    _ok(at)
    (tmp_path / "records.csv").unlink()
    (tmp_path / "records.csv").symlink_to("/etc/passwd")
    at.run()
    _ok(at)
    # the listing no longer offers it; the data already prepared stays in use
    assert at.sidebar.selectbox(key=state.PATH).options == []
    assert _metrics(at)["Rows read"] == "6"


# --- Map page --------------------------------------------------------------------------------


def test_map_select_box_sets_the_hat_for_other_pages(oracle):
    at = _app("map")
    slot = at.session_state[state.MAP_SLOT]
    in_slot = oracle["hats"][oracle["hats"]["slot"] == slot]
    assert _cell_box(at).options == [
        f"{c} — {r:,} records, {u:,} buses"
        for c, r, u in zip(in_slot["cell"], in_slot["records"], in_slot["users"], strict=True)
    ]
    second = in_slot.iloc[1]
    _cell_box(at).set_value(second["cell"]).run()
    _ok(at)
    assert at.session_state[state.HAT] == second["hat"]
    at.switch_page(PAGES["one"]).run()
    _ok(at)
    h = hat_data(oracle["summaries"], second["hat"])
    shown = " ".join(c.value for c in at.sidebar.caption)
    assert f"{h.n_users:,} buses, {h.n_records:,} records" in shown


def test_map_table_of_the_slot_is_shown_on_request(oracle):
    from dashboard.map import state as ms

    at = _app("map")
    assert not [df for df in at.dataframe if list(df.value.columns)[:2] == ["hat", "cell"]]
    at.toggle(key=ms.TABLE_SHOWN).set_value(True).run()
    _ok(at)
    slot = at.session_state[state.MAP_SLOT]
    in_slot = oracle["hats"][oracle["hats"]["slot"] == slot]
    shown = _frame(at, "hat", "records")
    assert shown["hat"].tolist() == in_slot["hat"].tolist()
    assert shown["records"].tolist() == in_slot["records"].tolist()
    assert [b.key for b in at.get("download_button")] == ["download_map_cells"]


def test_map_colour_choice_and_slot_change(oracle):
    import json

    at = _app("map")
    at.radio(key=state.MAP_METRIC).set_value("true_mean").run()
    _ok(at)
    layers = json.loads(at.get("deck_gl_json_chart")[0].proto.json)["layers"]
    layer = next(x for x in layers if x["id"].startswith("hexagons"))
    slot = at.session_state[state.MAP_SLOT]
    for row in layer["data"][:5]:
        expected = hat_data(oracle["summaries"], row["hat"]).true_mean
        assert row["true_mean"] == pytest.approx(expected, rel=1e-12)
    other = [s for s in at.selectbox(key=state.MAP_SLOT).options if s != slot][0]
    at.selectbox(key=state.MAP_SLOT).set_value(other).run()
    _ok(at)
    busiest = oracle["hats"][oracle["hats"]["slot"] == other].iloc[0]
    assert at.session_state[state.HAT] == busiest["hat"]


# --- State across pages and reruns -----------------------------------------------------------


def test_upload_limit_is_stated_as_configured():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    limit = config["server"]["maxUploadSize"]
    assert limit <= 100 and config["server"]["enableXsrfProtection"] is True
    at = _app("data")
    assert any(f"up to {limit} MB" in c.value for c in at.sidebar.caption)
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    assert f"up to {limit} MB" in at.sidebar.file_uploader(key=state.UPLOAD).label


@pytest.mark.parametrize(
    ("key", "value", "config"),
    [
        (state.SLOT_KIND, "hour-of-day", {"slot": "hour-of-day"}),
        (state.RESOLUTION, 8, {"resolution": 8}),
        (state.KEEP_ZEROS, True, {"keep_zeros": True}),
        (state.SLOT_LENGTH, "2h", {"slot": "2h"}),
    ],
)
def test_sidebar_settings_reach_core(key, value, config):
    at = _app("data")
    widget = {
        state.SLOT_KIND: at.sidebar.radio,
        state.RESOLUTION: at.sidebar.slider,
        state.KEEP_ZEROS: at.sidebar.checkbox,
        state.SLOT_LENGTH: at.sidebar.selectbox,
    }[key](key=key)
    widget.set_value(value).run()
    _ok(at)
    assert not at.error
    rep = prepare(load_demo(), config=PrepConfig(**config)).report
    assert _metrics(at)["HATs"] == f"{rep.hats:,}"
    at.switch_page(PAGES["one"]).run()
    _ok(at)


def test_map_follows_a_hat_chosen_on_another_page(oracle):
    at = _app("one")
    other = oracle["hats"].iloc[3]
    at.selectbox(key=state.HAT_PICK).set_value(other["hat"]).run()
    _ok(at)
    assert at.session_state[state.HAT] == other["hat"]
    at.switch_page(PAGES["map"]).run()
    _ok(at)
    assert at.session_state[state.MAP_SLOT] == other["slot"]
    assert _cell_box(at).value == other["cell"]


def test_cli_compose_and_the_dashboard_open_on_the_same_slot(oracle, capsys):
    """``hexplorer compose``'s default grids and the Map/Whole city's default slot are one
    definition (core.data.default_slot): the busiest hexagon-hour's slot."""
    import json

    from core.cli import main
    from core.data import default_slot

    assert main(["compose", "--epsilon", "1", "--json"]) == 0
    cli_slot = json.loads(capsys.readouterr().out)["slot"]
    assert cli_slot == default_slot(oracle["hats"])
    at = _app("map")
    assert at.session_state[state.MAP_SLOT] == cli_slot
    at.switch_page(PAGES["city"]).run()
    _ok(at)
    assert at.session_state[cs.SLOT] == cli_slot
