"""AppTest: a link reproduces a view (numbers equal core's), bad links never break a page, and the
lesson page shows core.lessons' numbers."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import lessons, worstcase
from core.data import hat_data, hat_table, load_demo, prepare
from dashboard.common.session import state, url
from dashboard.hexagon import state as hs
from tests.app.links import open_at, plain

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
ONE = "one_hexagon"  # URL paths (app.py's PAGES): a link opens the page by its path
LESSON = "lesson"
TIMEOUT = 180


@pytest.fixture(scope="module")
def demo():
    summaries = prepare(load_demo()).summaries
    return {"summaries": summaries, "hats": hat_table(summaries)}


def _open(params: dict[str, str], page: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in params.items():
        at.query_params[k] = v
    if page is not None:
        open_at(at, page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _numbers(at: AppTest) -> list[float]:
    out = []
    for m in at.metric:
        for tok in re.findall(r"-?\d[\d,]*\.?\d*(?:e[-+]?\d+)?", str(m.value)):
            out.append(float(tok.replace(",", "")))
    return out


def test_a_link_reproduces_the_one_hexagon_view(demo):
    row = demo["hats"].iloc[3]  # not the busiest: the link must select it
    hat = hat_data(demo["summaries"], row["hat"], upper=65.0)
    m_ub = int(np.unique(hat.counts)[len(np.unique(hat.counts)) // 3])
    params = {"hat": row["hat"], "eps": "0.5", "m_ub": str(m_ub), "noise": "std", "seed": "3"}
    at = _open(params, ONE)
    ss = at.session_state
    assert ss[state.HAT] == row["hat"] and ss[state.EPSILON] == 0.5
    assert ss[state.M_UB] == m_ub and ss[state.NOISE_MEASURE] == "std" and ss[state.SEED] == 3
    parts = worstcase.worst_case_error(hat.counts, 65.0, m_ub, 0.5, noise_measure="std")
    at.session_state[hs.TAB] = hs.TAB_DETAIL  # the worst case in detail: E1, E2, E
    at.run()
    shown = _numbers(at)
    for value in (float(parts.total), float(parts.clipping), float(parts.noise)):
        assert any(math.isclose(value, s, rel_tol=1e-3, abs_tol=1e-3) for s in shown), value
    # The URL written back is the same view, and the share box shows it on this page.
    assert at.query_params["hat"] == [row["hat"]] or at.query_params["hat"] == row["hat"]
    link = at.sidebar.code[0].value
    assert "/one_hexagon?" in link and "eps=0.5" in link and f"m_ub={m_ub}" in link
    values, bad = url.parse(dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&")))
    assert bad == [] and values[state.HAT] == row["hat"] and values[state.M_UB] == m_ub


def test_moving_a_control_updates_the_link(demo):
    at = _open({}, ONE)
    assert at.session_state[state.EPSILON] == 1.0
    at.select_slider(key=hs.EPSILON_SLIDER).set_value(2.0).run()
    assert not at.exception
    assert "eps=2" in at.sidebar.code[0].value
    qp = at.query_params["eps"]
    assert (qp[0] if isinstance(qp, list) else qp) == "2"


def test_bad_link_values_are_ignored_with_one_message():
    at = _open({"eps": "lots", "res": "99", "mech": "baseline,magic", "hat": "x/y"}, ONE)
    assert not at.error, [e.value for e in at.error]
    infos = [plain(i.value) for i in at.info if "ignored" in i.value]
    assert len(infos) == 1 and "eps='lots'" in infos[0] and "res='99'" in infos[0]
    assert at.session_state[state.EPSILON] == 1.0
    assert at.session_state[state.RESOLUTION] == 7


def test_a_hat_missing_from_the_data_falls_back_with_a_message(demo):
    at = _open({"hat": "8742d9d69ffffff/1999-01-01T00:00"}, ONE)
    assert at.session_state[state.HAT] == demo["hats"]["hat"].iloc[0]
    assert any("not in this data" in i.value for i in at.sidebar.info)


def test_a_link_to_an_uploaded_file_asks_for_the_same_file():
    at = _open({"source": "upload", "file": "0123456789abcdef", "name": "ships.csv"}, ONE)
    assert at.session_state[state.SOURCE] == "upload"
    assert any("ships.csv" in plain(i.value) and "Upload the same file" in i.value for i in at.info)
    assert at.query_params["file"] in ("0123456789abcdef", ["0123456789abcdef"])


@pytest.mark.parametrize("mechanism", ["baseline", "arrayavg-best", "levy"])
def test_lesson_page_shows_core_numbers_for_the_linked_view(demo, mechanism):
    row = demo["hats"].iloc[1]
    hat = hat_data(demo["summaries"], row["hat"], upper=65.0)
    user = str(hat.user_ids[2])
    at = _open(
        {"hat": row["hat"], "eps": "0.5", "user": user, "lmech": mechanism, "seed": "0"}, LESSON
    )
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    nb = lessons.neighbours(hat, user)
    if lessons.has_exact_density(mechanism):
        lr = lessons.exact_log_ratio(mechanism, nb, 0.5)
        assert float(metrics["largest |log-ratio| (privacy loss, ε)"]) == pytest.approx(
            lr.max_abs, abs=1e-4
        )
        assert lr.max_abs <= 0.5 + 1e-9
    else:
        lr = lessons.simulated_log_ratio(
            mechanism, nb, 0.5, n_runs=200_000, rng=np.random.default_rng([0, 7, 0])
        )
        assert float(metrics["largest |log-ratio| (privacy loss, ε)"]) == pytest.approx(
            lr.max_abs, abs=1e-4
        )
        assert lr.worst_excess_z <= 5.0
    rv = lessons.record_vs_user(nb, 0.5)
    assert metrics["record-level noise: 90 % within ±"] == f"{rv.half_width_record:.4g} km/h"
    assert at.session_state[url.LESSON_USER] == user
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download a report of this view (HTML, opens offline)" in labels


def test_lesson_half_noise_switch_leaves_the_band(demo):
    at = _open({"lmech": "baseline", "eps": "1"}, LESSON)
    before = float({m.label: m.value for m in at.metric}["largest |log-ratio| (privacy loss, ε)"])
    assert before <= 1.0
    at.toggle(key="lesson_half_noise").set_value(True).run()
    after = float({m.label: m.value for m in at.metric}["largest |log-ratio| (privacy loss, ε)"])
    assert after == pytest.approx(2 * before, rel=1e-3) and after > 1.0
    assert any("outside" in m.value for m in at.markdown)


def test_learn_page_cites_papers_and_keeps_spec_and_file_names_out():
    at = _open({}, "learn")
    text = "\n".join(m.value for m in at.markdown)
    assert "Mean Estimation with User-Level Privacy for Spatio-Temporal IoT Datasets" in text
    assert "Two different questions" in text and "post-processing" in text
    assert not re.search(r"SPEC|seed 00\d|seeds 00\d", text)
    headers = [h.value for h in at.header]
    for wanted in ("Two error models: worst case vs this dataset", "Glossary", "The papers"):
        assert wanted in headers


def test_a_link_to_an_upload_restores_its_view_once_the_same_file_is_loaded():
    """The link holds the file's digest; loading that file (as the uploader does, through
    state.APPLIED) brings back the link's hexagon-hour and settings."""
    from core.data import ColumnMap
    from core.data import hat_table as table_of
    from core.data import prepare as prepare_raw
    from dashboard.common.source import uploads
    from dashboard.common.source.compute import DataSpec, Source

    raw = load_demo().head(4_000)
    payload = raw.to_csv(index=False).encode("utf-8")
    source = Source.upload("small.csv", payload)
    second = str(table_of(prepare_raw(raw).summaries)["hat"].iloc[1])
    link = {"source": "upload", "file": source.digest[:16], "name": "small.csv", "hat": second,
            "eps": "2"}  # fmt: skip
    at = _open(link, ONE)
    assert any("small.csv" in plain(i.value) for i in at.info)  # asks for the file
    spec = DataSpec(source=source, columns=ColumnMap().as_tuple())
    at.session_state[state.APPLIED] = spec.to_state()  # what the sidebar stores after an upload
    uploads.put("a-link-test", "small.csv", source.digest, payload)  # and its bytes
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("small.csv" in plain(i.value) for i in at.info)
    assert at.session_state[state.HAT] == second and at.session_state[state.EPSILON] == 2.0
    link_now = at.sidebar.code[0].value
    assert f"file={source.digest[:16]}" in link_now and "name=small.csv" in link_now
    uploads.drop("a-link-test")
