"""Plain-language read-outs and the glossary: numbers in, sentences out, units everywhere."""

from __future__ import annotations

import math

import pytest

from dashboard.common.source.units import Units
from dashboard.hexagon import glossary as g
from dashboard.hexagon import readouts

KNOTS = Units(value="knots", user="ship")


def test_landing_and_share_sentences():
    text = readouts.landing(
        epsilon=1.0, title="Array-Averaging (BestFit)", bound90=1.234, units=KNOTS
    )
    assert text == (
        "At ε = 1 with Array-Averaging (BestFit), 90 % of releases land within ±1.23 knots "
        "of the true mean."
    )
    assert readouts.share_within(share=0.714, within=1.0, units=KNOTS) == (
        "71 % of releases within ±1 knots"
    )


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5])
def test_odds_is_e_to_the_epsilon(eps):
    text = readouts.odds(epsilon=eps, user="17", units=Units())
    assert f"e^ε = {math.exp(eps):.3g}×" in text and "bus 17 was in the data" in text
    assert "that bus-17 was" in readouts.odds(epsilon=eps, user="bus-17", units=Units())


def test_worst_case_and_bias_explanations_name_the_numbers():
    text = readouts.worst_vs_simulated(title="Baseline", worst=34.7, typical=0.3, units=KNOTS)
    assert "(34.7 knots)" in text and "(0.3 knots)" in text and "116×" in text
    assert "every* dataset" in text
    below = readouts.bias_vs_clipping(bias=1.0, clipping=2.0, m_ub=5, units=KNOTS)
    above = readouts.bias_vs_clipping(bias=3.0, clipping=2.0, m_ub=5, units=KNOTS)
    assert "is below" in below and "exceeds" in above and "full of m_UB records" in below
    assert "(1 knots)" in below and "E1 (2 knots)" in below


def test_degenerate_notes():
    one = readouts.degenerate_notes(m_min=1, m_max=1, units=KNOTS)
    assert len(one) == 1 and "user-level privacy equals record-level privacy" in one[0]
    assert "Every ship has one record" in one[0]
    same = readouts.degenerate_notes(m_min=4, m_max=4, units=KNOTS)
    assert len(same) == 1 and "same number of records (4)" in same[0]
    assert readouts.degenerate_notes(m_min=1, m_max=9, units=KNOTS) == []


def test_fmt_marks_missing_numbers():
    assert readouts.fmt(float("nan"), "km/h") == "—"
    assert readouts.fmt(0.012345, "km/h") == "0.0123 km/h"


def test_glossary_plain_first_symbol_and_formula_in_tip():
    assert g.plain("m_ub") == "records kept per bus"
    assert g.plain("m_ub", KNOTS) == "records kept per ship"
    assert g.plain("e1") == "clipping error" and g.plain("e2") == "noise error"
    assert g.plain("hat") == "hexagon-hour"
    assert g.tip("m_ub").startswith("m_UB — ") and "min(m_ℓ, m_UB)" in g.tip("m_ub")
    assert g.label("e1", KNOTS, unit=True) == "clipping error (E1), knots"
    for key, term in g.TERMS.items():
        assert term.plain and term.symbol and term.formula, key
        g.tip(key, KNOTS)  # every placeholder is known
