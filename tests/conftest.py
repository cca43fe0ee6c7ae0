"""Shared test setup."""

import pytest

# ``app/frames_app.py`` is a Streamlit app for the browser tests, not a test module: pytest's
# ``--doctest-modules`` would import it, and its import (``streamlit run``'s) turns the live
# charts on process-wide (``liveplot.enable``), which every later AppTest in that worker would
# then meet (One hexagon's Streamlit ε slider gone, its charts components: 28 failures in CI).
# Here, not in a conftest.py of ``app/``: two conftest.py files collide under --doctest-modules.
collect_ignore = ["app/frames_app.py"]


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path_factory, monkeypatch):
    """No test writes to the user's real ledger of published releases (~/.hexplorer)."""
    monkeypatch.setenv("HEXPLORER_LEDGER", str(tmp_path_factory.mktemp("ledger") / "ledger.sqlite"))
