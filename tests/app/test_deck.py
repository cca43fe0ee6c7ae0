"""AppTest: "Add this view to the deck" on any page (one shared control), the Deck page's list,
link and loading, and presenter mode stepping through the views with their settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from links import plain
from streamlit.testing.v1 import AppTest

from dashboard.common.session import state
from dashboard.common.view import ui
from dashboard.course import state as cs
from dashboard.deck import codec, nav, store

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 180
PAGES = ["data", "hexagon_map", "one_hexagon", "city", "lesson", "course", "deck",
         "experiments", "publish", "learn"]  # fmt: skip


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _add(at: AppTest, title: str, note: str) -> None:
    at.sidebar.text_input(key="deck_title").input(title)
    at.sidebar.text_input(key="deck_note").input(note)
    next(b for b in at.sidebar.button if "deck_add" in str(b.key)).click().run()
    _ok(at)


@pytest.fixture(scope="module")
def built() -> AppTest:
    store.clear()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["eps"] = "0.5"
    at.run()  # the link is read on the first run; AppTest finds the pages after one
    at.switch_page("dashboard/hexagon/page.py").run()
    _ok(at)
    _add(at, "One hexagon at ε = 0.5", "Half the budget")
    at.session_state[state.EPSILON] = 2.0
    at.switch_page("dashboard/course/page.py").run()
    at.button(key="course_next").click().run()
    at.button(key="course_next").click().run()
    _add(at, "Course step 3", "Bias vs noise")
    at.switch_page("dashboard/lessons/page.py").run()
    _add(at, "", "Neighbours")
    at.switch_page("dashboard/deck/page.py").run()
    _ok(at)
    return at


def test_three_views_with_their_pages_settings_and_words(built):
    d = codec.Deck(views=tuple(codec.View(**v) for v in built.session_state[nav.DECK]))
    assert [v.page for v in d.views] == ["one_hexagon", "course", "lesson"]
    assert [v.title for v in d.views] == ["One hexagon at ε = 0.5", "Course step 3",
                                          "Lesson: neighbours"]  # fmt: skip
    assert [v.note for v in d.views] == ["Half the budget", "Bias vs noise", "Neighbours"]
    assert d.views[0].params["eps"] == "0.5" and d.views[1].params["step"] == "3"
    assert d.views[1].params["eps"] == "2"
    assert all(store.get(v.key()) for v in d.views)  # charts kept for the handout
    link = built.code[0].value
    assert codec.decode(link, PAGES) == d


def test_presenter_steps_through_the_views_with_their_settings(built):
    at = built
    at.button(key="deck_present").click().run()
    _ok(at)
    assert at.session_state[ui.PRESENTING] == 0
    assert at.session_state[state.EPSILON] == 0.5
    assert any("1 / 3 · One hexagon at ε = 0.5" in plain(m.value) for m in at.markdown)
    at.button(key="deck_next").click().run()
    _ok(at)
    assert at.session_state[ui.PRESENTING] == 1 and at.session_state[cs.STEP] == 3
    assert at.session_state[state.EPSILON] == 2.0
    assert at.header[0].value.startswith("Step 3:")
    at.button(key="deck_prev").click().run()
    assert at.session_state[ui.PRESENTING] == 0 and at.session_state[state.EPSILON] == 0.5
    at.button(key="deck_exit").click().run()
    assert at.session_state[ui.PRESENTING] is None


def test_a_deck_link_loads_and_a_bad_one_is_one_line():
    d = codec.Deck(views=(codec.View(page="learn", params={}, title="Learn"),))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()  # (AppTest finds a page with its own url_path only after a first run)
    at.query_params["deck"] = codec.encode(d)
    at.switch_page("dashboard/deck/page.py").run()
    _ok(at)
    assert at.session_state[nav.DECK] == [d.views[0].as_dict()]
    at.text_input(key="deck_code_in").input("not a deck").run()
    assert [e.value for e in at.error] == [
        "The deck link is broken (it does not decode): copy it again."
    ]
    assert at.session_state[nav.DECK] == [d.views[0].as_dict()]  # the deck in use is kept


def test_a_deck_links_words_are_shown_as_text_not_markdown():
    """A deck link is anyone's: its title and note reach the page as literal text (a live
    link or a remote image in the app's own list would be a phishing aid)."""
    hostile = "**[Sign in again](https://x.example/login)** ![](https://x.example/t.png)"
    d = codec.Deck(views=(codec.View(page="learn", params={}, title=hostile, note=hostile),))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.query_params["deck"] = codec.encode(d)
    at.switch_page("dashboard/deck/page.py").run()
    _ok(at)
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    with_words = [v for v in shown if "Sign in again" in v]
    assert with_words, shown
    assert not any("](https://" in v for v in with_words), with_words  # escaped: \]\(
