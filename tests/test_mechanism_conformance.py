"""Every registered mechanism through the same checks: exact values, invalid input, privacy.

Parametrised over ``core.mechanisms.MECHANISMS`` (the registry, not a copied list), so a new
mechanism whose test supplies no cases (``add_cases`` of ``tests/mechanism_checks.py``) fails
here. The privacy audits (2·10⁵ draws on each side of a tight pair, plus the failing companion)
are marked slow; CI runs them.
"""

from __future__ import annotations

import pytest

from core.mechanisms import MECHANISMS
from tests.mechanism_checks import cases_for, check_exact, check_invalid, check_privacy, discover

discover()
NAMES = list(MECHANISMS)


@pytest.mark.parametrize("name", NAMES)
def test_exact_values(name, monkeypatch):
    for case in cases_for(name).exact:
        with monkeypatch.context() as mp:
            check_exact(name, case, mp)


@pytest.mark.parametrize("name", NAMES)
def test_invalid_input(name):
    check_invalid(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_privacy(name, monkeypatch):
    case = cases_for(name).privacy
    assert case is not None
    check_privacy(name, case, monkeypatch)
