"""The slider's test of Streamlit's run state (``runEnded`` in ``dashboard/common/view/slider.py``),
on a blank Chromium page with the performance marks Streamlit makes (``running``,
``notRunning``, ``rerunRequested``): a held download is replayed only once the latest of them
says the run has ended, and a page without such marks (another Streamlit) leaves the choice to
the status icons (``True`` here). The browser test of the whole hold only sees this under load;
these orders are the ones a loaded machine gives, made one by one."""

from __future__ import annotations

import re

import pytest
from browser_server import ROOT, chromium_page

from dashboard.common.view import slider

pytestmark = pytest.mark.browser

ORDERS = [
    ([], True),  # no marks at all: the icons alone decide
    (["running"], False),
    (["running", "notRunning"], True),
    (["notRunning", "running"], False),  # a new run began after the last end
    (["running", "notRunning", "rerunRequested"], False),  # a rerun asked, not yet begun
    (["running", "notRunning", "rerunRequested", "running", "notRunning"], True),
    (["rerunRequested"], False),
]


def _run_ended_source() -> str:
    match = re.search(r"const lastMark = .*?\nconst runEnded = .*?\n};\n", slider.JS, re.S)
    assert match, "slider.JS no longer defines lastMark and runEnded"
    return match.group(0)


def test_a_held_download_waits_for_the_latest_run_state_mark():
    source = _run_ended_source()
    with chromium_page(ROOT / "test-artifacts" / "slider-run-state.png") as (page, _expect):
        page.set_content("<html><body></body></html>")
        page.add_script_tag(content=source + "\nwindow.runEnded = runEnded;")
        for marks, ended in ORDERS:
            got = page.evaluate(
                """async (marks) => {
                    performance.clearMarks();
                    for (const name of marks) {
                        performance.mark(name);
                        await new Promise((r) => setTimeout(r, 5));  // distinct times
                    }
                    return window.runEnded();
                }""",
                marks,
            )
            assert got is ended, (marks, got)
