"""Course: differential privacy in six steps, each one screen, one live control, one question.

Read the step (the URL's ``?step=``) → the data's exact answers (``dashboard.course.compute``,
from :mod:`core.course`) → the step's control, chart and question → the check (hint after a
wrong try, explanation after a right one). The teacher's sheet lists every answer.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from core.course import EPSILON_GRID, Answer
from core.lessons import user_table
from dashboard.common.session import state, url
from dashboard.common.session.selection import current_hat, current_slot
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute, units
from dashboard.common.view import downloads, slider, ui
from dashboard.course import charts, frames, sheet, steps
from dashboard.course import compute as cc
from dashboard.course import state as cs

MAX_USERS = 100  # the users step 2 offers (core's answer is among the same busiest users)

st.title("Course: differential privacy in six steps")
cs.init()
spec = require_data()
ss = st.session_state
u = units.current()


def _epsilon(step: int) -> float:
    """The step's ε control (the course's ε stops): drawn by the browser where it can be (the
    step's chart then follows each ε step before the rerun), else ``st.select_slider``. Both
    leave the ε under ``cs.EPSILON[step]``, where the answer check reads it."""
    key = cs.EPSILON[step]
    if ss.get(key) not in EPSILON_GRID:
        ss[key] = 1.0
    if slider.available():
        slider.epsilon_slider(
            "Privacy loss ε",
            stops=EPSILON_GRID,
            value=float(ss[key]),
            key=cs.EPSILON_RANGE[step],
            group=cs.EPSILON_GROUP[step],
            help="",
            on_change=lambda eps: cs.set_epsilon(step, eps),
        )
    else:
        st.select_slider(
            "Privacy loss ε", options=EPSILON_GRID, key=key, format_func=lambda e: f"{e:g}"
        )
    return float(ss[key])


def _step1(a: Answer) -> float:
    eps = _epsilon(1)
    st.metric("odds change at most", f"×{math.exp(eps):.3f}")
    ui.chart(
        charts.odds_chart(eps, a.given["factor"]),
        key="course_odds",
        frames=frames.odds_url(),
        group=cs.EPSILON_GROUP[1],
    )
    return eps


def _step2(a: Answer, label: str) -> str:
    h = compute.hat(spec, label)
    ids, counts, means = user_table(h)
    shown = [str(i) for i in ids[:MAX_USERS]]
    row = {str(i): (int(c), float(m)) for i, c, m in zip(ids, counts, means, strict=True)}
    if ss.get(cs.USER) not in shown:
        ss[cs.USER] = shown[-1]
    st.selectbox(
        f"The {u.user} whose records change (busiest first)",
        options=shown,
        key=cs.USER,
        format_func=lambda i: f"{i} — {row[i][0]:,} records, mean {row[i][1]:.1f} {u.value}",
    )
    user = str(ss[cs.USER])
    rv = cc.user_loss(spec, label, user, float(a.given["epsilon"]))
    left, right = st.columns(2)
    left.metric("privacy loss with record-level noise", f"{rv.loss_record_noise:.4g}")
    right.metric(f"with {u.user}-level noise", f"{rv.loss_user_noise:.3g}")
    return user


def _step3(a: Answer, label: str) -> int:
    h = compute.hat(spec, label)
    if ss.get(cs.M_UB) is None or not h.m_min <= int(ss[cs.M_UB]) <= h.m_max:
        ss[cs.M_UB] = int(a.found["median"])
    if h.m_min < h.m_max:
        st.slider("m_UB (records kept per user)", h.m_min, h.m_max, key=cs.M_UB)
    m = int(ss[cs.M_UB])
    eps = float(a.given["epsilon"])
    parts = cc.error_curve(spec, label, eps)
    i = m - h.m_min
    c1, c2, c3 = st.columns(3)
    c1.metric("clipping E1", f"{float(parts.clipping[i]):.3g} {u.value}")
    c2.metric("noise E2", f"{float(parts.noise[i]):.3g} {u.value}")
    c3.metric("worst case E", f"{float(parts.total[i]):.4g} {u.value}")
    ms = np.arange(h.m_min, h.m_max + 1)
    ui.chart(charts.error_chart(ms, parts, m, u), key="course_error")
    return m


def _step4(a: Answer, label: str) -> float:
    eps = _epsilon(4)
    within = float(a.given["within"])
    seed = int(ss[state.SEED])
    values, s = cc.share(spec, label, eps, within, seed)
    h = compute.hat(spec, label)
    st.metric(f"releases within ±{within:g} {u.value}", f"{s.share_within:.1%}")
    title = charts.releases_title(eps, s.share_within, within, u)
    ui.chart(
        charts.releases_chart(values, h.true_mean, within, u, title=title),
        key="course_releases",
        frames=frames.releases_url(spec, label, within=within, seed=seed, u=u),
        group=cs.EPSILON_GROUP[4],
    )
    return eps


def _step5(label: str) -> float:
    eps = _epsilon(5)
    m, err = cc.optimal(spec, label, eps)
    c1, c2 = st.columns(2)
    c1.metric("m^(ε)", f"{m:,}")
    c2.metric("worst case E(m^(ε))", f"{err:.4g} {u.value}")
    ui.chart(
        charts.staircase_chart(
            cc.staircase(spec, label), eps, m, title=charts.staircase_title(eps, m, err, u)
        ),
        key="course_staircase",
        frames=frames.staircase_url(spec, label, u=u),
        group=cs.EPSILON_GROUP[5],
    )
    return eps


def _step6(a: Answer, slot: str) -> float:
    eps = _epsilon(6)
    loss = cc.loss(spec, slot, eps)
    c1, c2, c3 = st.columns(3)
    c1.metric("basic composition G·ε", f"{loss.basic:.3g}")
    c2.metric(f"by {u.users}: ε·max G_ℓ", f"{loss.by_users:.3g}")
    c3.metric("after CHOP-USER: K·ε", f"{loss.after_chop:.3g}")
    g = cc.grids(spec, slot)
    budget = float(a.given["budget"])
    ui.chart(
        charts.composition_chart(
            eps, grids=g.n_grids, max_grids=g.max_grids_per_user, budget=budget, u=u
        ),
        key="course_composition",
        frames=frames.composition_url(spec, slot, budget=budget, u=u),
        group=cs.EPSILON_GROUP[6],
    )
    return eps


with ui.errors_shown():
    label = current_hat(spec)
    slot = current_slot(spec)
    with st.spinner("Working out this data's answers…"):
        course = cc.answers(spec, label, slot, int(ss[state.SEED]))
    st.caption(
        f"The questions are computed from **{spec.source.name}**, hexagon-hour **{label}** "
        "(choose another on the Map or One hexagon page) and the hexagons of its hour."
    )
    titles = [steps.text(a, u).title for a in course.answers]
    st.radio(
        "Step", options=list(cs.STEPS), key=cs.STEP, horizontal=True, captions=titles,
        label_visibility="collapsed",
    )  # fmt: skip
    step = int(ss[cs.STEP])

    @state.fragment
    def step_box(step: int) -> None:
        """The step's screen: its control, chart, question and check. Moving the control or
        checking an answer reruns this alone, not the data sidebar (``bench/bench_render.py``)."""
        a = course.answer(step)
        t = steps.text(a, u)
        with ui.errors_shown():
            with st.container(border=True, key="course_step_box"):
                st.header(f"Step {step}: {t.title}", anchor=False)
                st.markdown(t.intro)
                if step == 1:
                    value: object = _step1(a)
                elif step == 2:
                    value = _step2(a, label)
                elif step == 3:
                    value = _step3(a, label)
                elif step == 4:
                    value = _step4(a, label)
                elif step == 5:
                    value = _step5(label)
                else:
                    value = _step6(a, slot)
                st.markdown(f"**Question.** {t.question}")
                if st.button("Check my answer", key=f"course_check_{step}", type="primary"):
                    cs.record(step, value, a.accepts(value))
                last = cs.last_try(step)
                if last is not None and last[1]:
                    st.success(
                        f"Right ({last[0]}). {t.explanation}", icon=":material/check_circle:"
                    )
                elif last is not None:
                    st.warning(f"Not yet ({last[0]}). {t.hint}", icon=":material/lightbulb:")
        url.write()  # a fragment rerun skips app.py's write: keep the URL on the step shown

    step_box(step)
    prev, _, nxt = st.columns([1, 3, 1])
    prev.button("← Previous step", key="course_prev", on_click=cs.go, args=(step - 1,),
                disabled=step == 1, width="stretch")  # fmt: skip
    nxt.button("Next step →", key="course_next", on_click=cs.go, args=(step + 1,),
               disabled=step == 6, width="stretch")  # fmt: skip

    with st.expander("For the teacher", icon=":material/school:"):
        st.markdown(
            "Start a class at any step with the link's `?step=` (e.g. `?step=3`). The sheet lists "
            "the six questions with the exact answers for the data and hexagon-hour in use."
        )
        link = url.current_link("course").split("?")[0] + "?step=1"
        doc = sheet.markdown(course, u, data=spec.source.name, link=link, version=downloads.VERSION)
        st.download_button(
            "Download the teacher's sheet (Markdown)",
            data=doc.encode("utf-8"),
            file_name="dp-hexplorer-course-answers.md",
            mime="text/markdown",
            key="course_sheet",
            icon=":material/download:",
            on_click="ignore",
        )
