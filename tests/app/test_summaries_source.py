"""The dashboard reads a summaries file (``hexplorer prepare``) from a server path or an upload."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.data import load_demo, prepare
from core.data.summaries import write_summaries
from dashboard.common.session import state
from dashboard.common.source import datadir

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DATA_PAGE = "dashboard/data/page.py"


@pytest.fixture(scope="module")
def summaries_file(tmp_path_factory):
    prepared = prepare(load_demo().head(3000))
    path = tmp_path_factory.mktemp("summaries") / "s.parquet"
    write_summaries(prepared, path)
    return path, prepared.report


def _data_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(DATA_PAGE).run()
    assert not at.exception
    return at


def _rows_read(at: AppTest) -> str:
    return {m.label: m.value for m in at.metric}["Rows read"]


def test_server_path_summaries_file_is_used_without_columns(summaries_file, monkeypatch):
    path, report = summaries_file
    monkeypatch.setenv(datadir.ENV_VAR, str(path.parent))
    at = _data_page()
    at.sidebar.radio(key=state.SOURCE).set_value("path").run()
    at.sidebar.selectbox(key=state.PATH).set_value(path.name).run()
    assert not at.exception and not at.error
    assert _rows_read(at) == f"{report.rows_read:,}"


def test_uploaded_summaries_file_is_used(summaries_file):
    path, report = summaries_file
    at = _data_page()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    payload = ("s.parquet", path.read_bytes(), "application/octet-stream")
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(payload).run()
    assert not at.exception and not at.error
    assert _rows_read(at) == f"{report.rows_read:,}"


def test_other_settings_than_the_files_are_one_message_and_keep_data(summaries_file, monkeypatch):
    path, _ = summaries_file
    monkeypatch.setenv(datadir.ENV_VAR, str(path.parent))
    at = _data_page()
    before = _rows_read(at)
    at.sidebar.number_input(key=state.UPPER).set_value(80.0).run()
    at.sidebar.radio(key=state.SOURCE).set_value("path").run()
    at.sidebar.selectbox(key=state.PATH).set_value(path.name).run()
    assert not at.exception
    assert at.error and "prepared with U = 65" in at.error[0].value
    assert _rows_read(at) == before
