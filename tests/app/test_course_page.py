"""AppTest: the Course page. For each of the six steps a right answer (core.course's, the
oracle) passes with the explanation and a wrong one gets the hint; the step lives in the URL;
the teacher's sheet lists the answers; an uploaded dataset gets its own questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core import course
from core.citywide.gridset import grid_set
from core.data import hat_data, load_demo, prepare
from core.lessons import user_table
from dashboard.common.session import state
from dashboard.common.source.units import Units
from dashboard.course import sheet
from dashboard.course import state as cs
from dashboard.course.steps import text

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = "dashboard/course/page.py"
TIMEOUT = 180
GRID = course.EPSILON_GRID


@pytest.fixture(scope="module")
def oracle() -> course.Course:
    summaries = prepare(load_demo()).summaries
    h = hat_data(summaries)  # the busiest hexagon-hour: the page's default
    return course.course(h, grid_set(summaries, slot=h.hat.split("/", 1)[1]))


@pytest.fixture(scope="module")
def demo_hat():
    return hat_data(prepare(load_demo()).summaries)


def _open(step: int | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if step is not None:
        at.query_params["step"] = str(step)
    at.run()  # the link is read on a session's first run; AppTest finds the page after one
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _largest_at_most(x: float) -> float:
    return max(e for e in GRID if e <= x)


def _smallest_at_least(x: float) -> float:
    return min(e for e in GRID if e >= x)


def _right_and_wrong(a: course.Answer, demo_hat) -> tuple[object, object]:
    if a.step == 1:
        return _largest_at_most(a.value), 2.0
    if a.step == 2:
        ids = [str(i) for i in user_table(demo_hat)[0][:100]]
        return a.value, next(i for i in reversed(ids) if i not in a.accepted)
    if a.step == 3:
        return a.value, next(m for m in (demo_hat.m_min, demo_hat.m_max) if m not in a.accepted)
    if a.step in (4, 5):
        right = _smallest_at_least(a.value)
        return right, GRID[GRID.index(right) - 1]
    return _largest_at_most(a.value), 1.0


def _set(at: AppTest, step: int, value) -> None:
    if step in cs.EPSILON:
        at.select_slider(key=cs.EPSILON[step]).set_value(value)
    elif step == 2:
        at.selectbox(key=cs.USER).set_value(value)
    else:
        at.slider(key=cs.M_UB).set_value(value)
    at.run()
    at.button(key=f"course_check_{step}").click().run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 6])
def test_each_step_right_passes_wrong_gets_the_hint(step, oracle, demo_hat):
    a = oracle.answer(step)
    t = text(a, Units())
    right, wrong = _right_and_wrong(a, demo_hat)
    assert a.accepts(right) and not a.accepts(wrong)
    at = _open(step)
    assert at.session_state[cs.STEP] == step
    assert at.header[0].value.startswith(f"Step {step}:")
    _set(at, step, wrong)
    assert not at.success and [w.value for w in at.warning] == [f"Not yet ({wrong}). {t.hint}"]
    _set(at, step, right)
    assert not at.warning and [s.value for s in at.success] == [f"Right ({right}). {t.explanation}"]


def test_step_in_the_url_and_next_previous(oracle):
    at = _open()
    assert at.session_state[cs.STEP] == 1 and at.query_params["step"] == "1"
    at.button(key="course_next").click().run()
    assert at.session_state[cs.STEP] == 2 and at.query_params["step"] == "2"
    assert at.query_params["source"] == "demo"  # the view's own parameters are still written
    at.button(key="course_prev").click().run()
    assert at.session_state[cs.STEP] == 1


def test_teacher_sheet_lists_every_exact_answer(oracle):
    doc = sheet.markdown(oracle, Units(), data="demo city", link="http://x/course?step=1")
    for a in oracle.answers:
        t = text(a, Units())
        assert f"## Step {a.step}: {t.title}" in doc and t.answer in doc and t.accepted in doc
    assert f"{oracle.answer(5).value:.4g}" in doc and str(oracle.answer(3).value) in doc


def _own_csv() -> bytes:
    """Thirty taxis over one hour in three hexagons' worth of space, speeds in km/h."""
    rng = np.random.default_rng(11)
    rows = []
    for taxi in range(30):
        for k in range(5 + 4 * (taxi % 7)):
            rows.append(
                {
                    "user_id": f"taxi-{taxi:02d}",
                    "lat": 52.37 + 0.03 * ((taxi + k) % 3),
                    "lon": 4.89 + 0.03 * (k % 2),
                    "timestamp": f"2024-05-01T09:{(k * 7 + taxi) % 60:02d}:00",
                    "speed": float(np.round(rng.uniform(5.0, 60.0), 1)),
                }
            )
    return pd.DataFrame(rows).to_csv(index=False).encode()


def test_an_uploaded_dataset_gets_its_own_questions():
    raw = _own_csv()
    summaries = prepare(pd.read_csv(__import__("io").BytesIO(raw))).summaries
    h = hat_data(summaries)
    expected = course.course(h, grid_set(summaries, slot=h.hat.split("/", 1)[1]))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.sidebar.radio(key=state.SOURCE).set_value("upload").run()
    at.sidebar.file_uploader(key=state.UPLOAD).set_value(("taxis.csv", raw, "text/csv")).run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.header[0].value.startswith("Step 1:")
    at.button(key="course_next").click().run()
    at.button(key="course_next").click().run()  # step 3: m_UB on this data's counts
    a = expected.answer(3)
    assert at.slider(key=cs.M_UB).min == h.m_min and at.slider(key=cs.M_UB).max == h.m_max
    _set(at, 3, a.value)
    assert [s.value for s in at.success] == [f"Right ({a.value}). {text(a, Units()).explanation}"]
