"""``state.init`` while a new script run of the same session starts (issue 31's race).

With ``runner.fastReruns`` (Streamlit's default) a burst of slider key presses stops the running
script and starts a new ScriptRunner at once; the old script keeps running until its next
Streamlit call, and each runner guards the session's one ``SessionState`` with a lock of its
own. So the new run's ``on_script_will_rerun`` can resize the state's dicts while the old run's
``state.init`` walks them: "RuntimeError: dictionary changed size during iteration".
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.state import SafeSessionState, SessionState, session_state_proxy

from dashboard.common.session import state


@pytest.fixture
def two_runs(monkeypatch):
    """One session's state seen by two script runs (threads), each through its own lock."""
    shared = SessionState()
    runs: dict[int, SafeSessionState] = {}

    def current() -> SafeSessionState:
        return runs.setdefault(threading.get_ident(), SafeSessionState(shared, lambda: None))

    monkeypatch.setattr(session_state_proxy, "get_session_state", current)
    return current


def test_init_survives_a_new_run_starting_beside_it(two_runs):
    stop = threading.Event()
    failures: list[BaseException] = []

    def old_run() -> None:  # the stopped run, still in state.init
        try:
            while not stop.is_set():
                state.init()
        except BaseException as exc:  # noqa: BLE001 (the failure this test looks for)
            failures.append(exc)

    def new_runs() -> None:  # the fast reruns of a burst of key presses
        ss = two_runs()
        i = 0
        while not stop.is_set():
            ss[f"burst_{i % 50}"] = i
            try:
                ss.on_script_will_rerun(WidgetStates())
            except RuntimeError:  # Streamlit's own walk, resized by the old run's writes
                pass  # (not this test's subject: a run asked to stop writes nothing more)
            i += 1

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # many thread switches: the race shows within a second
    try:
        threads = [threading.Thread(target=old_run), threading.Thread(target=new_runs)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and not failures:
            time.sleep(0.01)
        stop.set()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert not failures, repr(failures[0])


def test_init_knows_every_files_column_widgets_without_walking_the_state(two_runs):
    ss = two_runs()
    first, second = state.column_widget("user", "ab" * 32), state.column_widget("lat", "cd" * 32)
    assert state.column_widget("user", "ab" * 32) == first == state.column_key("user", "ab" * 32)
    assert ss[state.COLUMN_KEYS] == (first, second)
    ss[first] = "bus"
    state.init()
    assert ss[first] == "bus" and ss[state.SOURCE] == "demo"
