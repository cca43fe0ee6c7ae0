"""Shared test setup."""

import pytest


@pytest.fixture(autouse=True)
def _private_ledger(tmp_path_factory, monkeypatch):
    """No test writes to the user's real ledger of published releases (~/.hexplorer)."""
    monkeypatch.setenv("HEXPLORER_LEDGER", str(tmp_path_factory.mktemp("ledger") / "ledger.sqlite"))
