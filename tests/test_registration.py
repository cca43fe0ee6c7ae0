"""A throwaway mechanism, registered at run time through the public API, reaches everything.

The module below is what a contributor writes: one mechanism (Array-Averaging with BestFit
arrays at m_UB = the 75th percentile of the counts, a new rule) and its cases. The tests check
that registering it adds it to the CLI's choices, ``evaluate``, the dashboard's picker and rule
marks (AppTest), the Learn page and the generated tables, with its own colour, and that no
other mechanism's seeded draws move — even when it is inserted at the front of the registry.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core import cli
from core.data import hat_data, load_demo, prepare
from core.errors import HexplorerError
from core.evaluation import monte_carlo
from core.hat import HatData
from core.mechanisms import (
    MECHANISMS,
    PALETTE,
    RULES,
    Mechanism,
    Rule,
    default_m_ub,
    docs,
    register,
    register_rule,
    run_mechanism,
    unregister,
    unregister_rule,
)
from core.mechanisms.array_averaging import arrayavg
from dashboard.common.session import state
from dashboard.common.source import compute
from dashboard.common.view.colours import mechanism_colour
from dashboard.hexagon import state as hs
from tests.mechanism_checks import (
    CASES,
    Cases,
    ExactCase,
    PrivacyCase,
    cases_for,
    check_exact,
    check_invalid,
    check_privacy,
)

ROOT = Path(__file__).resolve().parents[1]
NAME = "arrayavg-p75"
COLOUR = "#AA4499"


# --- the throwaway module ---------------------------------------------------------------------


def p75(counts, upper, epsilon, noise_measure) -> int:
    """The 75th percentile of the counts (a count: numpy's "higher" method)."""
    return int(np.percentile(np.asarray(counts), 75, method="higher"))


RULE = Rule(
    name="p75", label="p75", symbol=r"m_{(75\%)}", colour="#17BECF",
    help="the 75th percentile of the counts", fn=p75,
)  # fmt: skip
MECHANISM = Mechanism(
    name=NAME, title="Array-Averaging (BestFit, 75th percentile)", family="Array-Averaging",
    description="Array-Averaging (BestFit) at m_UB = the 75th percentile of the counts.",
    reference="a throwaway for the tests", spec="SPEC §3 (as arrayavg-best)",
    grouping="bestfit", m_ub_rule="p75", colour=COLOUR, run=arrayavg("bestfit", NAME),
)  # fmt: skip
THROWAWAY_CASES = Cases(
    # HAT A: counts (4, 2, 1), p75 = 4: BestFit K̄ = 2 (user 1; users 2 and 3), means (10, 5).
    exact=(
        ExactCase(
            counts=(4, 2, 1),
            sums=(40.0, 10.0, 5.0),
            upper=10.0,
            expect={"m_ub": 4, "n_arrays": 2, "noiseless": 7.5, "sensitivity": 5.0},
        ),
    ),  # fmt: skip
    # counts (4, 3, 2, 2, 1): p75 = 3; user 0 alone in a full array moves f_arr by U/K̄.
    privacy=PrivacyCase(counts=(4, 3, 2, 2, 1), means=(0.0, 5.0, 5.0, 5.0, 5.0), moved=0),
)


@pytest.fixture
def throwaway():
    """Register the throwaway (rule and mechanism) for one test, at the front of the registry."""
    register_rule(RULE)
    register(MECHANISM, before=next(iter(MECHANISMS)))
    st.cache_data.clear()  # results cached by an earlier test in this process lack it
    try:
        yield MECHANISM
    finally:
        unregister(NAME)
        unregister_rule("p75")
        CASES.pop(NAME, None)
        st.cache_data.clear()


def _hat() -> HatData:
    return HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)


def _cli(*args: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


# --- the registry and core ---------------------------------------------------------------------


def test_registration_is_checked():
    with pytest.raises(HexplorerError, match="already registered"):
        register(MECHANISMS["levy"])
    with pytest.raises(HexplorerError, match="colour"):
        register(
            Mechanism(
                **{**MECHANISM.__dict__, "m_ub_rule": "median", "colour": MECHANISMS["levy"].colour}
            )
        )
    with pytest.raises(HexplorerError, match="m_ub_rule"):
        register(Mechanism(**{**MECHANISM.__dict__, "m_ub_rule": "nope"}))
    with pytest.raises(HexplorerError, match="grouping"):
        Mechanism(**{**MECHANISM.__dict__, "grouping": None})
    assert NAME not in MECHANISMS


def test_default_m_ub_raises_on_an_unknown_rule():
    """No silent fallback: a mechanism whose rule vanished is an error, not the convex rule."""
    register_rule(RULE)
    register(MECHANISM)
    try:
        RULES.pop("p75")  # bypass unregister_rule's guard, as a broken registry would
        with pytest.raises(HexplorerError, match="m_ub_rule"):
            default_m_ub(NAME, _hat(), 1.0)
    finally:
        unregister(NAME)
        RULES.pop("p75", None)


def test_throwaway_runs_through_core_and_the_conformance_checks(throwaway, monkeypatch):
    assert default_m_ub(NAME, _hat(), 1.0) == 4
    assert run_mechanism(NAME, _hat(), 1.0, rng=np.random.default_rng(0), size=2).m_ub == 4
    # Without cases the conformance test fails for it ...
    with pytest.raises(pytest.fail.Exception, match="no exact-value and no privacy"):
        cases_for(NAME)
    # ... with its cases it passes exact-value and invalid-input checks.
    CASES[NAME] = THROWAWAY_CASES
    for case in cases_for(NAME).exact:
        with monkeypatch.context() as mp:
            check_exact(NAME, case, mp)
    check_invalid(NAME)


@pytest.mark.slow
def test_throwaway_passes_the_privacy_check(throwaway, monkeypatch):
    check_privacy(NAME, THROWAWAY_CASES.privacy, monkeypatch)


def test_cli_choices_and_evaluate(throwaway):
    parser = cli.build_parser()
    args = parser.parse_args(["release", "--mechanism", NAME, "--epsilon", "1", "--seed", "1"])
    assert args.mechanism == NAME
    out = _cli("release", "--mechanism", NAME, "--epsilon", "1", "--seed", "1")
    assert out["mechanism"] == NAME
    rows = _cli("evaluate", "--epsilon", "1", "--trials", "20", "--seed", "1")["results"]
    assert [r["mechanism"] for r in rows] == list(MECHANISMS)
    assert rows[0]["mechanism"] == NAME and rows[0]["mae"] is not None
    table = monte_carlo(_hat(), [1.0], n_runs=10, rng=np.random.default_rng(0))
    assert NAME in set(table["mechanism"])


def test_no_other_mechanism_s_seeded_draws_move():
    """Seeds keyed by name: inserting a mechanism at the front moves nobody else's numbers."""
    hat = _hat()
    before_mc = monte_carlo(hat, [0.5, 1.0], n_runs=50, rng=np.random.default_rng(3))
    before_rng = {n: compute.rng_for(7, "release", n).random(4) for n in MECHANISMS}
    register_rule(RULE)
    register(MECHANISM, before=next(iter(MECHANISMS)))
    try:
        assert next(iter(MECHANISMS)) == NAME
        after_mc = monte_carlo(hat, [0.5, 1.0], n_runs=50, rng=np.random.default_rng(3))
        others = after_mc[after_mc["mechanism"] != NAME].reset_index(drop=True)
        assert others.equals(before_mc)
        for name, draws in before_rng.items():
            np.testing.assert_array_equal(compute.rng_for(7, "release", name).random(4), draws)
    finally:
        unregister(NAME)
        unregister_rule("p75")


# --- colours and documents ---------------------------------------------------------------------


def test_own_colour_distinct_from_every_other(throwaway):
    colours = [mechanism_colour(n) for n in MECHANISMS]
    assert mechanism_colour(NAME) == COLOUR
    assert len(set(colours)) == len(colours) >= 13
    assert set(colours) <= set(PALETTE)


def test_generated_tables_follow_the_registry(throwaway):
    block = docs.render_block()
    assert f"| `{NAME}` | {MECHANISM.title} |" in block and "| p75 |" in block
    # the documents on disk were generated without it: the check sees the difference
    assert docs.outdated([ROOT / "README.md", ROOT / "CONTRIBUTING.md"]) == [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
    ]


# --- the dashboard (AppTest) ----------------------------------------------------------------------


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(f"dashboard/{name}/page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_dashboard_picker_marks_and_colours(throwaway):
    at = _page("hexagon")
    picker = at.multiselect(key=state.MECHANISMS)
    assert picker.options[0] == MECHANISM.title  # registry order: it was inserted first
    labels = [b.label for b in at.button if b.key and b.key.startswith("set_m_ub_")]
    hat = hat_data(prepare(load_demo()).summaries, at.session_state[state.HAT], upper=65.0)
    assert f"p75 = {p75(hat.counts, 0, 0, 'mean')}" in labels
    at.button(key="set_m_ub_p75").click().run()
    assert at.slider(key=state.M_UB).value == p75(hat.counts, 0, 0, "mean")
    picker.set_value([NAME, "levy"]).run()
    assert not at.exception, [e.value for e in at.exception]
    at.session_state[hs.TAB] = hs.TAB_TABLES  # only the open tab is drawn
    at.run()
    mc = next(df.value for df in at.dataframe if "n_runs" in df.value.columns)
    assert mc["mechanism"].unique().tolist() == [NAME, "levy"]
    at.session_state[hs.TAB] = hs.TAB_MAE
    at.run()
    colours = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for trace in spec.get("data", []):
            if trace.get("mode") == "lines+markers":
                colours[trace["name"]] = trace["line"]["color"]
    assert colours == {MECHANISM.title: COLOUR, MECHANISMS["levy"].title: MECHANISMS["levy"].colour}


def test_learn_lists_it_with_its_colour(throwaway):
    at = _page("learn")
    text = "\n".join(m.value for m in at.markdown)
    assert f"**{MECHANISM.title}** (`{NAME}`)" in text
    assert "the 75th percentile of the counts" in text
    legend = None
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        names = [t.get("name") for t in spec.get("data", [])]
        if NAME in names:
            legend = spec
    assert legend is not None
    by_name = {t["name"]: t["marker"]["color"] for t in legend["data"]}
    assert by_name[NAME] == COLOUR
    assert list(by_name) == list(MECHANISMS)
