"""Every number a person reads says what it counts or measures (issue 27, item 3).

Walks every page of the app (AppTest, the demo city): each metric (label or value), each
numeric column of each table and each plotly axis title must name a unit (km/h, (km/h)², ε)
or a count noun (records, buses, hexagons, …). Identifiers (hat, cell, slot, ids) are not
numbers a person reads as amounts and are skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = [
    "dashboard/data/page.py",
    "dashboard/map/page.py",
    "dashboard/hexagon/page.py",
    "dashboard/city/page.py",
    "dashboard/publish/page.py",
    "dashboard/lessons/page.py",
    "dashboard/course/page.py",
    "dashboard/deck/page.py",
    "dashboard/experiments/page.py",
    "dashboard/learn/page.py",
]
_B, _E = r"(?<![A-Za-z])", r"(?![A-Za-z])"  # word ends, "_" counting as a separator
_NOUNS = (
    "bus",
    "buses",
    "records?",
    "hexagons?",
    "HATs?",
    "grids?",
    "pairs?",
    "releases?",
    "users?",
    "slots?",
    "rows?",
    "days?",
    "cells?",
    "runs?",
    "values?",
    "m_UB",
    "K",
    "L",
    "N",
    "seed",
    "resolution",
    "rank",
    "epsilon",
    "eps",
)
UNIT = re.compile(
    r"km/h|\(km/h\)²|ε|%|share|count|per |probability|odds|fraction|×|G_ℓ|m_ℓ|m\*|m_\*|"
    + "|".join(f"{_B}{n}{_E}" for n in _NOUNS)
    + r"|^m(_max|_min|_median|_ub)?$",  # the papers' m: records of one user (Learn's glossary)
    re.IGNORECASE,
)
IDENTIFIERS = {"hat", "cell", "slot", "user_id", "release_id", "mechanism", "title", "day", "order"}


def _figures(at: AppTest) -> list[dict]:
    out = []
    for chart in at.get("plotly_chart"):
        try:
            out.append(json.loads(chart.proto.spec))
        except (AttributeError, ValueError):
            continue
    return out


def _axis_titles(fig: dict) -> list[str]:
    titles = []
    for name, axis in fig.get("layout", {}).items():
        if not re.fullmatch(r"[xy]axis\d*", name) or not isinstance(axis, dict):
            continue
        if axis.get("visible") is False or axis.get("showticklabels") is False:
            continue
        title = axis.get("title")
        text = title.get("text") if isinstance(title, dict) else title
        if text:
            titles.append(str(text))
    return titles


@pytest.fixture(scope="module")
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    assert not at.exception
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_number_on_the_page_has_a_unit_or_a_count_noun(app, page):
    at = app
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    missing: list[str] = []
    for m in at.metric:
        if not (UNIT.search(m.label) or UNIT.search(str(m.value))):
            missing.append(f"metric {m.label!r} = {m.value!r}")
    for df in at.dataframe:
        frame = df.value
        if not isinstance(frame, pd.DataFrame):
            continue
        for column in frame.columns:
            name = str(column)
            if name.lower() in IDENTIFIERS or not pd.api.types.is_numeric_dtype(frame[column]):
                continue
            if pd.api.types.is_bool_dtype(frame[column]):
                continue
            if not UNIT.search(name):
                missing.append(f"table column {name!r}")
    for fig in _figures(at):
        for title in _axis_titles(fig):
            if not UNIT.search(re.sub(r"<[^>]+>", " ", title)):
                missing.append(f"axis title {title!r}")
    assert not missing, "\n".join(missing)
