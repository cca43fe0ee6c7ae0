"""AppTest for the Whole-city page, with every number compared against core.multigrid.

The oracle prepares the demo city with core directly (not through the dashboard's cache), picks
the same grids (``select_grids`` by slot or day) and recomputes CHOP-USER, the privacy losses
and the simulated release for the same inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core import multigrid, postprocess
from core.data import hat_table, load_demo, prepare
from core.errors import HexplorerError
from dashboard.city import compute as city_compute
from dashboard.city import state as cs
from dashboard.common.session import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dashboard" / "city" / "page.py")
TIMEOUT = 120
U = 65.0


@pytest.fixture(scope="module")
def summaries() -> pd.DataFrame:
    """The demo city's per-(HAT, user) summaries, prepared by core with the default settings."""
    return prepare(load_demo()).summaries


def _slots_by_records(summaries: pd.DataFrame) -> list[str]:
    """Slots, most records first (ties by label): the page's select-box order."""
    per_slot = summaries.groupby("slot")["m"].sum()
    return list(per_slot.sort_values(ascending=False, kind="stable").index)


def _busiest_hat_slot(summaries: pd.DataFrame) -> str:
    """The slot every page opens on: the busiest HAT's (most records as a hexagon-hour)."""
    return str(hat_table(summaries)["slot"].iloc[0])


def _layer(deck: dict, prefix: str) -> dict:
    """The deck's hexagon layer whose id starts with ``prefix`` (not its dots)."""
    return next(
        x for x in deck["layers"] if x["id"].startswith(prefix) and x["@@type"] == "H3HexagonLayer"
    )


def _page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _frame(at: AppTest, first_column: str, second: str) -> pd.DataFrame:
    """The table with these columns; unit suffixes of headers ('noisy_mean [km/h]') dropped."""
    for df in at.dataframe:
        value = df.value.rename(columns=lambda c: str(c).split(" [")[0])
        cols = list(value.columns)
        if cols and cols[0] == first_column and second in cols:
            return value
    raise AssertionError(f"no table starting with {first_column!r} holding {second!r}")


def _close(got, expected) -> None:
    """Equal up to float summation order: ``core.data.prepare`` sums speeds with polars in
    parallel, so two preparations of the same file may differ in the last bits of s and q."""
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float), 1e-12, 1e-9)


def _decks(at: AppTest) -> list[dict]:
    return [json.loads(d.proto.json) for d in at.get("deck_gl_json_chart")]


def _check(at: AppTest, summaries: pd.DataFrame, *, slot=None, day=None, eps=1.0, seed=0):
    """Every number of the page equals core's for these grids, ε and seed."""
    grids = multigrid.grid_set(summaries, slot=slot, day=day)
    chop = multigrid.chop_user(grids, eps, upper=U)
    loss = multigrid.privacy_loss(grids, eps, chop)
    got = _metrics(at)
    assert got["Grids G"] == f"{grids.n_grids:,}"
    assert got["Buses L"] == f"{grids.n_users:,}"
    assert got["max G_ℓ before"] == f"{grids.max_grids_per_user:,}"
    assert got["K after CHOP-USER"] == f"{chop.k_final:,}"
    assert got["Suppressed pairs"] == f"{chop.n_suppressed:,}"
    assert got["Basic G·ε"] == f"{grids.n_grids * eps:,.2f}" == f"{loss.basic:,.2f}"
    assert got["By users ε·max G_ℓ"] == f"{loss.by_users:,.2f}"
    assert got["After CHOP-USER K·ε"] == f"{chop.k_final * eps:,.2f}"
    assert got["E_thresh"] == f"{chop.threshold:,.1f}"
    assert got["max E_g after"] == f"{float(chop.errors_after.max()):,.1f}"

    sup = _frame(at, "user_id", "records_dropped")
    expected = chop.suppressed_pairs()
    assert sup["user_id"].tolist() == expected["user_id"].tolist()
    assert sup["hat"].tolist() == expected["hat"].tolist()
    assert sup["records_dropped"].tolist() == expected["m"].tolist()

    rel = _frame(at, "hat", "noisy_mean")
    oracle = multigrid.release_grids(
        grids, eps, upper=U, rng=np.random.default_rng(seed), retained=chop.retained
    )
    assert rel["hat"].tolist() == oracle["hat"].tolist()
    for column in ("records", "retained", "delta_mean", "delta_var", "error_bound"):  # counts only
        np.testing.assert_array_equal(rel[column].to_numpy(), oracle[column].to_numpy())
    for column in ("true_mean", "true_var"):
        _close(rel[column], oracle[column])
    _close(rel["noisy_mean_raw"], oracle["noisy_mean"])
    _close(rel["noisy_var_raw"], oracle["noisy_var"])
    # post-processed into range: means into [0, U], variances into [0, U²/4]
    _close(rel["noisy_mean"], postprocess.clamp_mean(oracle["noisy_mean"].to_numpy(), U))
    _close(rel["noisy_var"], postprocess.clamp_variance(oracle["noisy_var"].to_numpy(), U))
    np.testing.assert_array_equal(rel["error_before"].to_numpy(), chop.errors_before)
    return grids, chop, oracle


# --- default load ----------------------------------------------------------------------------


def test_default_load_matches_core(summaries):
    at = _page()
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Whole city"
    text = " ".join(c.value for c in at.caption)
    assert "true values" in text and "public" in text and "{m_ℓ}" in text
    slot = _busiest_hat_slot(summaries)
    assert at.session_state[cs.SLOT] == slot
    assert at.selectbox(key=cs.SLOT).options[0].startswith(_slots_by_records(summaries)[0])
    _, chop, oracle = _check(at, summaries, slot=slot)

    curve = _frame(at, "epsilon", "chop_loss")
    composed = multigrid.compose(multigrid.grid_set(summaries, slot=slot), cs.LOSS_EPSILONS, U)
    pd.testing.assert_frame_equal(curve.reset_index(drop=True), pd.DataFrame(composed["results"]))

    decks = _decks(at)
    assert len(decks) == 2 and all(d.get("mapStyle") == "__MAP_STYLE__" for d in decks)
    true_layer, noisy_layer = _layer(decks[0], "city-true"), _layer(decks[1], "city-noisy")
    assert [r["cell"] for r in true_layer["data"]] == oracle["cell"].tolist()
    _close([r["true"] for r in true_layer["data"]], oracle["true_mean"])
    _close(
        [r["noisy"] for r in noisy_layer["data"]], postprocess.clamp_mean(oracle["noisy_mean"], U)
    )
    assert len(at.get("plotly_chart")) == 5  # legend, G_ℓ, losses, coverage, per-grid errors
    labels = {b.label for b in at.get("download_button")}
    assert {"Download city_privacy_loss.csv"} <= labels
    assert f"Download city_suppressed_{slot.replace(':', '')}.csv" in labels
    assert chop.n_suppressed > 0  # the demo slot does exercise CHOP-USER


# --- controls change the numbers to core's ------------------------------------------------------


def test_epsilon_and_slot_change_the_numbers(summaries):
    at = _page()
    before = _metrics(at)
    at.select_slider(key=cs.EPSILON).set_value(0.3).run()
    _ok(at)
    slot = at.session_state[cs.SLOT]
    _check(at, summaries, slot=slot, eps=0.3)
    assert _metrics(at)["Basic G·ε"] != before["Basic G·ε"]
    assert _metrics(at)["E_thresh"] != before["E_thresh"]

    other = _slots_by_records(summaries)[-1]  # the quietest slot: fewer hexagons
    at.selectbox(key=cs.SLOT).set_value(other).run()
    _ok(at)
    _check(at, summaries, slot=other, eps=0.3)
    n_hats = summaries.loc[summaries["slot"] == other, "hat"].nunique()
    assert _metrics(at)["Grids G"] == f"{n_hats:,}" != before["Grids G"]


def test_new_noise_and_variance_maps(summaries):
    at = _page()
    slot = at.session_state[cs.SLOT]
    noisy_before = _frame(at, "hat", "noisy_mean")["noisy_mean"].to_numpy()
    at.button(key="city_new_noise").click().run()
    _ok(at)
    assert at.session_state[cs.SEED] == 1
    _, _, oracle = _check(at, summaries, slot=slot, seed=1)
    assert not np.array_equal(oracle["noisy_mean"].to_numpy(), noisy_before)

    at.radio(key=cs.STATISTIC).set_value("var").run()
    _ok(at)
    decks = _decks(at)
    true_layer, noisy_layer = _layer(decks[0], "city-true"), _layer(decks[1], "city-noisy")
    _close([r["true"] for r in true_layer["data"]], oracle["true_var"])
    _close(
        [r["noisy"] for r in noisy_layer["data"]],
        postprocess.clamp_variance(oracle["noisy_var"], U),
    )
    at.run()  # a rerun keeps the choices
    assert at.session_state[cs.SEED] == 1 and at.radio(key=cs.STATISTIC).value == "var"


def test_whole_day(summaries):
    at = _page()
    at.radio(key=cs.MODE).set_value("day").run()
    _ok(at)
    per_day = summaries.groupby(summaries["slot"].str[:10])["m"].sum()
    day = per_day.sort_values(ascending=False, kind="stable").index[0]
    assert at.session_state[cs.DAY] == day
    _, _, oracle = _check(at, summaries, day=day)
    # the maps show one slot of the day: by default its busiest
    busiest = [s for s in _slots_by_records(summaries) if s.startswith(day)][0]
    assert at.session_state[cs.MAP_SLOT] == busiest
    cells = oracle.loc[oracle["slot"] == busiest, "cell"].tolist()
    assert [r["cell"] for r in _layer(_decks(at)[0], "city-true")["data"]] == cells


# --- messages instead of tracebacks ------------------------------------------------------------


def test_hour_of_day_data_has_no_day_and_says_so(summaries):
    at = _page()
    at.sidebar.radio(key=state.SLOT_KIND).set_value("hour-of-day").run()
    _ok(at)
    assert at.session_state[cs.SLOT].startswith("h")  # a stale slot is replaced by a valid one
    assert not at.error
    at.radio(key=cs.MODE).set_value("day").run()
    _ok(at)
    assert at.warning and "hour-of-day" in at.warning[0].value
    assert not at.metric  # nothing is computed for an empty selection


def test_core_error_is_a_message_not_a_traceback(monkeypatch):
    def boom(spec):
        raise HexplorerError("slot='x' matches no HAT in the data")

    monkeypatch.setattr(city_compute, "slot_table", boom)
    at = _page()
    assert at.error and "matches no HAT" in at.error[0].value


def test_stale_slot_in_session_state_is_replaced(summaries):
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state[cs.SLOT] = "1999-01-01T00:00"
    at.session_state[state.EPSILON] = 0.75  # the shared ε (typed on One hexagon): kept exact
    at.run()
    _ok(at)
    assert at.session_state[cs.SLOT] == _busiest_hat_slot(summaries)
    assert at.session_state[cs.EPSILON] == 0.75
    assert at.select_slider(key=cs.EPSILON).value == 0.75


def test_choices_survive_a_visit_to_another_page():
    """Streamlit drops this page's widget values while the Map runs; they come back."""
    city, other = PAGE, str(ROOT / "dashboard" / "map" / "page.py")
    script = (
        "import streamlit as st\n"
        f"pages = [st.Page({city!r}, title='Whole city', url_path='city', default=True), "
        f"st.Page({other!r}, url_path='hexagon_map')]\n"
        "st.navigation(pages).run()\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    at.select_slider(key=cs.EPSILON).set_value(0.3).run()
    at.radio(key=cs.STATISTIC).set_value("var").run()
    at.switch_page(other).run()
    _ok(at)
    assert at.title[0].value == "Map"
    at.switch_page(city).run()
    _ok(at)
    assert at.select_slider(key=cs.EPSILON).value == 0.3
    assert at.radio(key=cs.STATISTIC).value == "var"
    assert _metrics(at)["Basic G·ε"] == f"{int(_metrics(at)['Grids G']) * 0.3:,.2f}"


def test_raw_toggle_shows_the_papers_values_on_the_noisy_map(summaries):
    at = _page()
    at.select_slider(key=cs.EPSILON).set_value(0.05).run()  # much noise: values leave [0, U]
    _ok(at)
    slot = at.session_state[cs.SLOT]
    grids, chop, oracle = _check(at, summaries, slot=slot, eps=0.05)
    raw = oracle["noisy_mean"].to_numpy()
    assert ((raw < 0) | (raw > U)).any()  # the case the post-processing is for
    noisy = [r["noisy"] for r in _layer(_decks(at)[1], "city-noisy")["data"]]
    _close(noisy, postprocess.clamp_mean(raw, U))
    assert all(0.0 <= v <= U for v in noisy)
    at.toggle(key=cs.RAW).set_value(True).run()
    _ok(at)
    noisy = [r["noisy"] for r in _layer(_decks(at)[1], "city-noisy")["data"]]
    _close(noisy, raw)
    assert any("shown raw" in c.value for c in at.caption)


def test_whole_city_opens_on_the_slot_chosen_on_the_map(summaries):
    city, other = PAGE, str(ROOT / "dashboard" / "map" / "page.py")
    script = (
        "import streamlit as st\n"
        f"pages = [st.Page({other!r}, title='Map', url_path='hexagon_map', default=True), "
        f"st.Page({city!r}, url_path='city')]\n"
        "st.navigation(pages).run()\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    quiet = _slots_by_records(summaries)[-1]
    at.selectbox(key=state.MAP_SLOT).set_value(quiet).run()
    _ok(at)
    hat = at.session_state[state.HAT]
    assert hat.endswith(f"/{quiet}")
    at.switch_page(city).run()
    _ok(at)
    assert at.session_state[cs.SLOT] == quiet and at.session_state[state.HAT] == hat
    # and back: a slot chosen here is the Map's
    busy = _slots_by_records(summaries)[0]
    at.selectbox(key=cs.SLOT).set_value(busy).run()
    _ok(at)
    assert at.session_state[state.HAT].endswith(f"/{busy}")
    at.switch_page(other).run()
    _ok(at)
    assert at.session_state[state.MAP_SLOT] == busy


def test_downloads_say_what_they_are(summaries):
    at = _page()
    slot = at.session_state[cs.SLOT]
    helps = {b.label: b.help for b in at.get("download_button")}
    saved = helps[f"Download city_release_{slot.replace(':', '')}.csv"]
    # hexplorer_<table>_<data>_<fingerprint>_<grids>_<mechanism>_eps<ε>_seed<seed>.csv
    assert saved.startswith("Saved as hexplorer_city_release_")
    assert "_demo-city_" in saved and f"slot-{slot.replace(':', '')}" in saved
    assert saved.endswith("_eps1_seed0.csv")
