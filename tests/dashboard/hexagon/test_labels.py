"""dashboard.hexagon.labels: One hexagon's words, tested as strings (no Streamlit run)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from core.mechanisms import MECHANISMS
from dashboard.common.source.units import Units
from dashboard.hexagon import labels
from dashboard.hexagon import state as hs

SHIPS = Units(value="knots", user="ship")


def test_a_hat_option_is_short_and_names_the_users():
    row = {"slot": "2024-03-05T15:00", "users": 1205}
    assert labels.hat_option(row, 1, SHIPS) == "#1 · 03-05 15:00 · 1,205 ships"
    assert labels.hat_option({"slot": "15:00", "users": 3}, 7, Units()) == "#7 · 15:00 · 3 buses"


def test_numbers_have_three_digits_and_a_dash_where_there_is_none():
    assert [labels.num(v) for v in (12.3456, 0.001234, np.inf, np.nan, None)] == [
        "12.3",
        "0.00123",
        "—",
        "—",
        "—",
    ]


def test_the_headline_table_has_units_in_its_labels_and_a_row_per_mechanism():
    head = pd.DataFrame(
        [
            {"mechanism": "baseline", "title": "Baseline", "m_ub": np.nan, "typical": 1.234,
             "bound90": 2.5, "worst_case": 3.0, "worst_case_yours": 3.0, "note": ""},
            {"mechanism": "levy", "title": "Levy", "m_ub": 40, "typical": np.nan,
             "bound90": np.nan, "worst_case": np.nan, "worst_case_yours": np.nan,
             "note": "too few ships"},
        ]
    )  # fmt: skip
    lines = labels.headline_table(head, {"levy": "m^(L)"}, SHIPS, m_ub=12).splitlines()
    assert lines[0].startswith("| mechanism | records kept per ship | typical error (knots) ")
    assert lines[0].endswith("| at your m_UB = 12: worst case (knots) |")
    assert lines[2] == "| **Baseline** | all | 1.23 | ±2.5 | 3 | 3 |"
    assert lines[3] == "| **Levy** | too few ships | | | | |"


def test_a_plan_note_says_why_epsilon_was_not_set_exactly():
    plan = dict(mechanism="opt-arrayavg", target=2.0, floor=3.21, epsilon=None)
    title = MECHANISMS["opt-arrayavg"].title
    unreachable = labels.plan_note(SimpleNamespace(**plan, status="unreachable"), SHIPS)
    assert unreachable.startswith(f"No ε brings {title}'s worst case within 2 knots")
    assert "never gets below 3.21 knots" in unreachable
    assert labels.plan_note(SimpleNamespace(**plan, status="any"), SHIPS) == (
        f"Every ε meets 2 knots for {title}; ε is unchanged."
    )
    outside = {**plan, "epsilon": hs.EPSILON_MAX * 2}
    assert "outside this page's range" in labels.plan_note(
        SimpleNamespace(**outside, status="ok"), SHIPS
    )
    inside = {**plan, "epsilon": 1.0}
    assert labels.plan_note(SimpleNamespace(**inside, status="ok"), SHIPS) is None
