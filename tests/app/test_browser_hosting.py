"""Hosting a demo, in a real browser: no visitor can name a file on the server.

Two ``streamlit run app.py`` servers: one as started by default (no data directory), one with
``HEXPLORER_DATA_DIR`` naming a folder that holds a CSV, a symlink to /etc/passwd and a symlink to
a file beside the folder. Chromium (Debian's, via Playwright) checks what a visitor can do; the
names a crafted request could carry (/etc/passwd, ../, the symlinks) go through the resolver the
loaders call, which must answer exactly as for a missing file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_server import CHROMIUM, CHROMIUM_ARGS, ROOT, streamlit_server
from browser_server import unavailable as _unavailable

from core.errors import HexplorerError
from dashboard.common.source import datadir

ARTIFACTS = ROOT / "test-artifacts"
RECORDS = (
    "user_id,lat,lon,timestamp,speed\n"
    "a,21.2,72.8,2024-03-05 08:10,30\n"
    "a,21.2,72.8,2024-03-05 08:11,40\n"
    "b,21.2,72.8,2024-03-05 08:20,20\n"
)

pytestmark = pytest.mark.browser


@contextlib.contextmanager
def _serve(env: dict[str, str], log_name: str) -> Iterator[str]:
    with streamlit_server(ARTIFACTS / log_name, env=env, timeout=120) as url:
        yield url


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("hosting")
    root = base / "data"
    root.mkdir()
    (root / "records.csv").write_text(RECORDS)
    (base / "beside.csv").write_text(RECORDS)
    (root / "passwd.csv").symlink_to("/etc/passwd")
    (root / "beside_link.csv").symlink_to(base / "beside.csv")
    return root


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != datadir.ENV_VAR}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()


def _data_page(browser, url: str):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/data", wait_until="domcontentloaded", timeout=60_000)
    expect(page.get_by_text("Rows read").first).to_be_visible(timeout=120_000)
    return page


def _text_inputs(page) -> list[str]:
    """The labels of every free-text field on the page."""
    fields = page.locator('[data-testid="stTextInput"]')
    return [
        fields.nth(i).locator('[data-testid="stWidgetLabel"]').inner_text().strip()
        for i in range(fields.count())
    ]


def test_without_a_data_directory_no_control_names_a_server_path(browser):
    from playwright.sync_api import expect

    with _serve(_env(), "streamlit-hosting-off.log") as url:
        page = _data_page(browser, url)
        try:
            sidebar = page.locator('[data-testid="stSidebar"]')
            source = sidebar.locator('[data-testid="stRadio"]').first
            expect(source).to_contain_text("Upload a file")
            assert source.get_by_role("radio").count() == 2
            assert "Demo city" in source.inner_text()
            assert page.get_by_text("server", exact=False).count() == 0
            assert set(_text_inputs(page)) <= {"One user is a"}  # the user noun, not a path
            assert page.locator('[data-testid="stTextArea"]').count() == 0
            # choosing "Upload" offers a file picker and still no path field
            source.get_by_text("Upload a file").click()
            expect(sidebar.locator('[data-testid="stFileUploader"]')).to_be_visible(timeout=60_000)
            assert set(_text_inputs(page)) <= {"One user is a"}
            assert page.locator('[data-testid="stException"]').count() == 0
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "hosting-off-failure.png"))
            raise


def test_with_a_data_directory_only_its_files_are_a_choice(browser, data_dir):
    from playwright.sync_api import expect

    with _serve(_env(**{datadir.ENV_VAR: str(data_dir)}), "streamlit-hosting-on.log") as url:
        page = _data_page(browser, url)
        try:
            sidebar = page.locator('[data-testid="stSidebar"]')
            sidebar.get_by_text("File in the server's data directory").first.click()
            box = sidebar.locator('[data-testid="stSelectbox"]').filter(
                has_text="File in the server's data directory"
            )
            expect(box).to_be_visible(timeout=60_000)
            assert set(_text_inputs(page)) <= {"One user is a"}  # the user noun only
            box.click()
            listed = page.locator('[role="option"]')
            expect(listed.first).to_be_visible(timeout=30_000)
            assert [t.strip() for t in listed.all_inner_texts()] == ["records.csv"]
            listed.first.click()
            metric = page.locator('[data-testid="stMetric"]').filter(has_text="Rows read")
            expect(metric).to_contain_text("3", timeout=120_000)
            expect(page.get_by_text("Report for records.csv")).to_be_visible(timeout=60_000)
            assert page.locator('[data-testid="stException"]').count() == 0
            page.screenshot(path=str(ARTIFACTS / "hosting-data-dir.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "hosting-on-failure.png"))
            raise

    # What a crafted request could name instead is refused as a missing file is.
    missing = datadir.not_found("NAME")
    for name in ("/etc/passwd", "../beside.csv", "../../../../etc/passwd", "passwd.csv",
                 "beside_link.csv", "no_such_file.csv"):  # fmt: skip
        with pytest.raises(HexplorerError) as info:
            datadir.resolve(data_dir, name)
        assert str(info.value).replace(repr(name)[1:-1], "NAME") == str(missing), name
    assert Path("/etc/passwd").exists() and (data_dir.parent / "beside.csv").exists()
