"""dashboard.lessons.charts and learn_text, tested as data."""

from __future__ import annotations

import re

import numpy as np
import pytest

from core import lessons
from core.hat import HatData
from dashboard.common.source.units import Units
from dashboard.common.view.colours import mechanism_colour
from dashboard.learn import text as learn_text
from dashboard.lessons import charts

SHIPS = Units(value="knots", user="ship")


@pytest.fixture(scope="module")
def nb():
    counts = np.array([30, 12, 8, 5, 3, 2, 1])
    hat = HatData.from_arrays(counts, counts * np.linspace(5, 25, counts.size), upper=40.0)
    return lessons.neighbours(hat, hat.user_ids[0])


def test_dataset_chart_marks_the_changed_user_in_both_datasets(nb):
    fig = charts.dataset_chart(nb, SHIPS)
    others, before, after = fig.data
    assert len(others.x) == nb.original.n_users - 1
    assert list(before.y) == [nb.old_mean] and list(after.y) == [nb.value] == [40.0]
    assert "ship" in fig.layout.title.text and "knots" in fig.layout.yaxis.title.text
    assert [s.y0 for s in fig.layout.shapes] == [nb.original.true_mean, nb.changed.true_mean]


def test_exact_distribution_and_log_ratio_charts(nb):
    lr = lessons.exact_log_ratio("baseline", nb, 0.5)
    dist = charts.distributions_chart(lr, SHIPS)
    assert [t.name for t in dist.data] == ["output on D", "output on D′"]
    assert dist.data[0].line.color == mechanism_colour("baseline")
    assert np.allclose(dist.data[1].y, lr.density_changed)
    assert "knots" in dist.layout.xaxis.title.text and "exact" in dist.layout.title.text
    ratio = charts.log_ratio_chart(lr, SHIPS)
    assert np.allclose(ratio.data[0].y, lr.log_ratio) and ratio.data[0].error_y.array is None
    band = sorted(s.y0 for s in ratio.layout.shapes if s.type == "line")
    assert band == [-0.5, 0.5]


def test_simulated_log_ratio_chart_has_error_bars(nb):
    lr = lessons.simulated_log_ratio("levy", nb, 1.0, n_runs=20_000, rng=np.random.default_rng(1))
    fig = charts.log_ratio_chart(lr, SHIPS)
    assert fig.data[0].mode == "markers"
    assert np.allclose(fig.data[0].error_y.array, np.nan_to_num(2 * lr.stderr))
    assert "simulated" in charts.distributions_chart(lr, SHIPS).layout.title.text


def test_record_user_chart(nb):
    rv = lessons.record_vs_user(nb, 1.0)
    fig = charts.record_user_chart(rv, SHIPS)
    assert list(fig.data[0].x) == [rv.half_width_record, rv.half_width_user]
    assert "ship" in fig.data[0].y[1] and fig.layout.xaxis.type == "log"


def test_glossary_has_plain_names_symbols_and_no_broken_table_cells():
    rows = learn_text.glossary_markdown(SHIPS).splitlines()
    assert all(r.count("|") == 5 for r in rows), [r for r in rows if r.count("|") != 5]
    text = "\n".join(rows)
    for plain in ("hexagon-hour", "records kept per ship", "clipping error", "noise error",
                  "CHOP-USER", "m^{(O,2)}", "m^{(L)}", r"m^{(\varepsilon)}"):  # fmt: skip
        assert plain in text, plain


def test_papers_are_cited_by_title_and_author_never_by_file():
    refs = learn_text.papers_markdown()
    assert "Mean Estimation with User-Level Privacy for Spatio-Temporal IoT Datasets" in refs
    assert (
        "Bounding User Contributions for User-Level Differentially Private Mean Estimation" in refs
    )
    assert refs.count("Rameshwar") >= 5
    for text in (refs, learn_text.error_models(SHIPS), learn_text.post_processing(SHIPS)):
        assert not re.search(r"SPEC|seed 00\d|\.txt", text)
    assert "knots" in learn_text.error_models(SHIPS) and "ships" in learn_text.error_models(SHIPS)
