"""AppTest for the Publish page: the preview is a labelled simulation equal to core's, publishing
needs the confirmation, records one release in the ledger (the test's own, via HEXPLORER_LEDGER)
whose values the page shows without any true value, the files download, the ledger's histogram is
every user's cumulative ε, and a budget refusal is a message that records nothing."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from links import plain
from streamlit.testing.v1 import AppTest

from core import plan
from core.citywide.errors import error_table
from core.citywide.grids import grid_statistics, release_grids
from core.citywide.gridset import GridSet, select_grids
from core.data import default_slot, hat_table, load_demo, prepare
from core.publish import Ledger, ledger_path
from core.publish.city import user_charges
from dashboard.publish import operator
from dashboard.publish import state as ps

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dashboard" / "publish" / "page.py")
TIMEOUT = 180
U = 65.0


@pytest.fixture(scope="module")
def summaries() -> pd.DataFrame:
    return prepare(load_demo()).summaries


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


TABLES = {  # first column, a column only that table has
    "publish_preview_table": ("hat", "error_bound [km/h]"),
    "publish_recorded_table": ("release_id", "noisy_mean"),
    "publish_ledger_table": ("release_id", "kind"),
}


def _frame(at: AppTest, key: str) -> pd.DataFrame:
    first, other = TABLES[key]
    for df in at.dataframe:
        cols = list(df.value.columns)
        if cols and cols[0] == first and other in cols:
            return df.value
    raise AssertionError(f"no table {key!r}")


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def publishing_on(monkeypatch):
    """The operator turned publishing on and set a budget."""
    monkeypatch.setenv(operator.PUBLISH_ENV, "1")
    Ledger(ledger_path()).set_budget(100.0)  # the product's largest ε


def _page_text(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
             for e in at.get(kind)]  # fmt: skip
    parts += [w.label for kind in ("checkbox", "button", "text_input", "number_input")
              for w in at.get(kind)]  # fmt: skip
    parts += [m.label for m in at.metric] + [str(m.proto.help) for m in at.metric]
    return "\n".join(str(p) for p in parts)


def test_publishing_is_off_unless_the_operator_turns_it_on(summaries, monkeypatch):
    """A visitor sees the preview and what it would cost; no publish button, no budget or
    namespace to set, no server path."""
    monkeypatch.delenv(operator.PUBLISH_ENV, raising=False)
    book = Ledger(ledger_path())
    book.set_budget(5.0)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert any("Publishing is off on this server" in i.value for i in at.info)
    keys = {w.key for kind in ("button", "checkbox", "number_input", "text_input")
            for w in at.get(kind)}  # fmt: skip
    assert not keys & {"publish_button", ps.CONFIRM, "publish_set_budget"}
    assert not any(w.key and "namespace" in w.key for w in at.text_input)
    metrics = _metrics(at)
    assert metrics["Budget (ε per bus)"] == "5" and "Buses that would go over the budget" in metrics
    text = _page_text(at)
    assert str(book.path) not in text and str(book.path.parent) not in text
    assert book.summary().releases == 0 and book.budget() == 5.0


def test_without_a_budget_the_dashboard_does_not_publish(monkeypatch):
    monkeypatch.setenv(operator.PUBLISH_ENV, "1")
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert any("No budget is set" in w.value for w in at.warning)
    assert "publish_button" not in {b.key for b in at.button}


def test_a_ledger_error_does_not_show_the_server_path(monkeypatch):
    monkeypatch.setenv(operator.PUBLISH_ENV, "1")
    book = Ledger(ledger_path())
    book.set_budget(5.0)
    book.key_file.unlink()  # the key lost: the ledger refuses to open
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    (err,) = at.error
    text = plain(err.value)  # quoted names are escaped in the markdown
    assert "cannot be opened without its key" in text
    assert str(book.path.parent) not in text and "the server's ledger" in text


def test_preview_publish_ledger(summaries, publishing_on):
    book = Ledger(ledger_path())
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert at.title[0].value == "Publish"
    slot = default_slot(hat_table(summaries))
    assert at.session_state[ps.SLOT] == slot
    assert any("a simulation, nothing is published" in s.value for s in at.subheader)
    gs = GridSet.from_summaries(select_grids(summaries, slot=slot))
    # opens on the plan's recommendation for the slot, its preview mostly useful
    assert at.session_state[ps.MECHANISM] == plan.recommended_mechanism(
        error_table(gs, upper=U), 1.0
    )
    first = _frame(at, "publish_preview_table")
    useless = int((first["error_bound [km/h]"] >= U / 2).sum())
    assert useless < len(first) / 4
    assert any(f"{useless:,} of {len(first):,} hexagons" in w.value for w in at.warning)
    at.selectbox(key=ps.MECHANISM).set_value(ps.GRID_MECHANISM).run()
    oracle = release_grids(gs, 1.0, upper=U, rng=np.random.default_rng(0))
    preview = _frame(at, "publish_preview_table")
    assert preview["hat"].tolist() == oracle["hat"].tolist()
    np.testing.assert_allclose(
        preview["noisy_mean [km/h]"], np.clip(oracle["noisy_mean"], 0, U), rtol=1e-12, atol=1e-9
    )
    assert "true_mean" not in preview.columns
    charges = user_charges(gs, 1.0, "per-user")
    assert _metrics(at)["Largest charge ε"] == f"{charges.max():g}"
    # the button needs the confirmation
    assert at.button(key="publish_button").disabled
    assert book.summary().releases == 0
    at.checkbox(key=ps.CONFIRM).check().run()
    at.button(key="publish_button").click().run()
    _ok(at)
    (record,) = book.records()
    assert at.session_state[ps.LAST] == [record.release_id]
    recorded = _frame(at, "publish_recorded_table")
    assert (
        recorded["noisy_mean"].tolist()
        == np.clip(record.body["grids"]["noisy_mean"], 0, U).tolist()
    )
    assert set(recorded["release_id"]) == {record.release_id}
    true_mean, true_var = grid_statistics(gs, np.ones(gs.n_pairs, dtype=bool))
    shown = pd.concat([recorded, _frame(at, "publish_ledger_table")], axis=1).to_csv()
    numbers = set(re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", shown))  # whole numbers
    for value in [*true_mean.tolist(), *true_var.tolist()]:
        assert not ({repr(value), f"{value:.6g}"} & numbers), value
    labels = {b.label for b in at.get("download_button")}
    assert {"Download .csv", "Download .geojson", "Download .parquet"} <= labels
    # the ledger: one release, every user's ε in the histogram
    metrics = _metrics(at)
    assert metrics["Releases"] == "1" and metrics["Buses"] == f"{gs.n_users:,}"
    assert metrics["Largest ε of a bus"] == f"{charges.max():g}"
    fig = at.get("plotly_chart")[0].proto.spec
    assert '"type":"histogram"' in fig.replace(" ", "")
    np.testing.assert_allclose(np.sort(book.user_epsilons()), np.sort(charges))
    assert _frame(at, "publish_ledger_table")["release_id"].tolist() == [record.release_id]


def test_budget_refusal_is_a_message_and_records_nothing(monkeypatch):
    monkeypatch.setenv(operator.PUBLISH_ENV, "1")
    book = Ledger(ledger_path())
    book.set_budget(0.5)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    assert _metrics(at)["Budget (ε per bus)"] == "0.5"
    before = book.summary()
    at.checkbox(key=ps.CONFIRM).check().run()
    at.button(key="publish_button").click().run()
    assert not at.exception
    (err,) = at.error
    assert "budget" in err.value and "nothing was recorded" in err.value
    assert "would fit" in err.value
    assert book.summary() == before  # the ledger exactly as it was
    assert book.summary().releases == 0
    assert _metrics(at)["Releases"] == "0"


def test_each_click_says_what_it_recorded(monkeypatch):
    """A release, the same request again (given back, no new charge), then a refused one: each
    click's message says what that click recorded, and the refusal is not shown beside a
    "Published and recorded" of the earlier release."""
    monkeypatch.setenv(operator.PUBLISH_ENV, "1")
    book = Ledger(ledger_path())
    book.set_budget(3.0)  # ε = 0.25 per HAT fits every bus of the slot; ε = 1.5 does not
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    at.select_slider(key=ps.EPSILON).set_value(0.25).run()

    def click() -> None:
        at.checkbox(key=ps.CONFIRM).check().run()
        at.button(key="publish_button").click().run()
        assert not at.exception

    click()
    (record,) = book.records()
    assert [s.value for s in at.success] == [
        f"Published and recorded: release {record.release_id}."
    ]
    charged = book.user_epsilons()
    click()  # the same request: its record given back
    assert len(book.records()) == 1 and (book.user_epsilons() == charged).all()
    (again,) = at.success
    assert again.value.startswith(f"Already recorded: release {record.release_id}")
    assert "no one was charged again" in again.value
    before = book.summary()
    at.select_slider(key=ps.EPSILON).set_value(1.5).run()
    click()
    (err,) = at.error
    assert "nothing was recorded" in err.value
    assert book.summary() == before  # the ledger exactly as it was
    assert not at.success  # no "Published and recorded" beside the refusal
    (earlier,) = [i.value for i in at.info if "Earlier in this session" in i.value]
    assert record.release_id in earlier and "recorded nothing" in earlier
