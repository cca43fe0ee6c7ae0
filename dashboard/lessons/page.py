"""Lesson: neighbouring datasets. Pick a user, change its values, see what one release reveals.

Read widgets → parameters → cached calls into core.lessons (dashboard.lessons.compute) →
figures (dashboard.lessons.charts).
"""

from __future__ import annotations

import math

import streamlit as st

from core import lessons as core_lessons
from core.mechanisms import MECHANISMS
from dashboard.common.report.panel import page_report_button
from dashboard.common.session import state
from dashboard.common.session.selection import current_hat
from dashboard.common.sidebar import require_data
from dashboard.common.source import compute, units
from dashboard.common.view import downloads, ui
from dashboard.lessons import charts
from dashboard.lessons import compute as lesson_compute
from dashboard.lessons import state as ls

MAX_USERS = 300

st.title("Lesson: neighbouring datasets")
ls.init()
spec = require_data()
ss = st.session_state
u = units.current()
st.markdown(
    f"Differential privacy promises that **one release barely depends on any one {u.user}**. "
    f"Take the data D of one hexagon-hour and a neighbour D′ in which a single {u.user}'s "
    f"values are different (its number of records stays: counts are public here). For every "
    "value x a release could take, the chance of seeing x from D and from D′ may differ by a "
    "factor of at most e^ε: the log-ratio of the two output densities stays within ±ε."
)

with ui.errors_shown():
    hat_label = current_hat(spec)
    h = compute.hat(spec, hat_label)
    st.caption(
        f"Hexagon-hour **{hat_label}**: {u.count(h.n_users)}, {h.n_records:,} records "
        "(choose another on the Map or One hexagon page)."
    )
    ids, counts, means = core_lessons.user_table(h)
    shown = [str(i) for i in ids[:MAX_USERS]]
    if ss.get(ls.USER) not in set(ids.tolist()):
        ss[ls.USER] = shown[0]
    if ss[ls.USER] not in shown:
        shown.append(str(ss[ls.USER]))
    row = {str(i): (int(c), float(m)) for i, c, m in zip(ids, counts, means, strict=True)}

    left, mid, right = st.columns([3, 3, 2])
    left.selectbox(
        f"The {u.user} that differs (busiest first)",
        options=shown,
        key=ls.USER,
        format_func=lambda i: f"{i} — {row[i][0]:,} records, mean {row[i][1]:.1f} {u.value}",
        help=f"Its m_ℓ records all take one new value in D′. A {u.user} with many records moves "
        "the mean the most: the busiest is the worst case.",
    )
    user = str(ss[ls.USER])
    count, old_mean = row[user]
    default_value = core_lessons.neighbours(h, user).value
    if ss.get(ls.VALUE_FOR) != (hat_label, user) or ss.get(ls.VALUE) is None:
        ss[ls.VALUE] = float(default_value)
        ss[ls.VALUE_FOR] = (hat_label, user)
    mid.slider(
        f"Its value in D′ ({u.value})",
        min_value=0.0,
        max_value=float(h.upper),
        step=0.5,
        key=ls.VALUE,
        help="Every one of its records takes this value in D′. The default is the end of "
        "[0, U] farthest from its mean: the change that moves a release most.",
    )
    right.selectbox(
        "Mechanism",
        options=list(MECHANISMS),
        key=ls.MECHANISM,
        format_func=lambda n: MECHANISMS[n].title,
    )
    c1, c2, c3 = st.columns([3, 3, 2])
    c1.number_input(
        "ε (privacy loss)",
        min_value=0.001,
        max_value=100.0,
        step=0.1,
        format="%g",
        key=ls.EPSILON,
        help="Shared with One hexagon. e^ε bounds how much one release can change an "
        "observer's odds.",
    )
    c2.toggle(
        "Too little noise: halve the Laplace scale",
        key=ls.HALF_NOISE,
        help="What a bug that adds half the noise would leak (exact mechanisms only). The "
        "log-ratio then leaves the ±ε band.",
    )
    value = float(ss[ls.VALUE])
    mechanism = str(ss[ls.MECHANISM])
    epsilon = float(ss[ls.EPSILON])
    exact = core_lessons.has_exact_density(mechanism)
    factor = 0.5 if (ss[ls.HALF_NOISE] and exact) else 1.0
    if ss[ls.HALF_NOISE] and not exact:
        c3.caption("Halving applies to exact (Laplace-only) mechanisms.")

    nb = lesson_compute.neighbours(spec, hat_label, user, value)
    ui.chart(charts.dataset_chart(nb, u), key="lesson_dataset")

    with st.spinner("Comparing the two output distributions…"):
        lr = lesson_compute.log_ratio(
            spec, hat_label, user, value, mechanism, epsilon, int(ss[state.SEED]),
            ls.SIMULATED_RUNS, factor,
        )  # fmt: skip
    a, b = st.columns(2)
    with a:
        ui.chart(charts.distributions_chart(lr, u), key="lesson_distributions")
    with b:
        ui.chart(charts.log_ratio_chart(lr, u), key="lesson_log_ratio")

    cols = st.columns(4)
    cols[0].metric("largest |log-ratio| (privacy loss, ε)", f"{lr.max_abs:.4f}")
    cols[1].metric("ε", f"{epsilon:g}")
    cols[2].metric("odds change at most e^ε", f"{math.exp(min(epsilon, 700)):.3g}×")
    if lr.exact:
        cols[3].metric(
            "noise scale b",
            f"{lr.scale:.4g} {u.value}",
            help="Laplace scale of the final noise, read from the mechanism's run.",
        )
        verdict = "within" if lr.max_abs <= epsilon * (1 + 1e-9) else "**outside**"
        st.markdown(
            f"**Exact** (the output is a fixed value plus Laplace noise): before noise the release "
            f"is {lr.noiseless:.4f} on D and {lr.noiseless_changed:.4f} on D′, the noise scale "
            f"is b = {lr.scale:.4g}, so the log-ratio is at most |difference| / b = "
            f"{lr.max_abs:.4f}, {verdict} ±ε."
            + (" Halving the noise doubles it." if factor != 1.0 else "")
        )
    else:
        cols[3].metric("bins outside ±ε beyond sampling error", str(int(lr.worst_excess_z > 4)))
        st.markdown(
            f"**Simulated** ({lr.n_runs:,} seeded runs on each dataset): {mechanism} chooses an "
            "interval privately before adding noise, so its output density has no closed form "
            "here. The dots are log-ratios of histogram bins with ±2 standard errors; they "
            "stay within ±ε up to that sampling error."
        )

    st.header("One record or one bus: the same release, two promises", anchor="record-vs-user")
    rv = lesson_compute.record_vs_user(spec, hat_label, user, value, epsilon)
    left, right = st.columns(2)
    with left:
        st.markdown(f"**Protecting one record** (record-level DP): one record moves the mean by at most U/N = {rv.sensitivity_record:.4g} {u.value}, so Laplace noise of scale b = {rv.scale_record:.4g} suffices.")  # fmt: skip
        st.metric("record-level noise: 90 % within ±", f"{rv.half_width_record:.4g} {u.value}")
    with right:
        st.markdown(f"**Protecting one {u.user}** (user-level DP): the busiest {u.user}'s m* = {h.m_max:,} records move it by up to U·m*/N = {rv.sensitivity_user:.4g} {u.value}: b = {rv.scale_user:.4g}, {rv.noise_ratio:.0f}× more.")  # fmt: skip
        st.metric(f"{u.user}-level noise: 90 % within ±", f"{rv.half_width_user:.4g} {u.value}")
    ui.chart(charts.record_user_chart(rv, u), key="lesson_record_user")
    record_text = (
        f"With record-level noise, {u.user} {user} ({count:,} records) would not be protected "
        f"at ε = {epsilon:g}: changing its values moves the mean by {rv.user_shift:.4g}, a "
        f"privacy loss of **{rv.loss_record_noise:.3g}** (odds changing by up to "
        f"e^{rv.loss_record_noise:.3g}), instead of {rv.loss_user_noise:.3g} ≤ ε with "
        f"user-level noise. Clipping each {u.user} to m_UB records (the mechanisms of One "
        "hexagon) is how the papers bring the user-level noise back down, at the price of bias."
    )
    st.markdown(record_text)
    ui.learn_link("Learn: user-level privacy, clipping and the two error models")
    verdict_text = (
        f"{MECHANISMS[mechanism].title} at ε = {epsilon:g}: the largest |log-ratio| between the "
        f"outputs on D and D′ is {lr.max_abs:.4f} ("
        + ("exact" if lr.exact else f"simulated, {lr.n_runs:,} runs on each")
        + f"); the promise is at most ε = {epsilon:g}."
    )
    prov = downloads.provenance(spec, u, hat=hat_label, mechanism=mechanism, epsilon=epsilon)
    page_report_button(
        f"Lesson: neighbouring datasets — {hat_label}",
        {
            "hexagon-hour": hat_label,
            f"the {u.user} that differs": f"{user} ({count:,} records, mean {old_mean:.2f})",
            f"its value in D′ ({u.value})": f"{value:g}",
            "mechanism": MECHANISMS[mechanism].title,
            "ε": f"{epsilon:g}",
            "noise": "halved (what a bug would leak)" if factor != 1.0 else "as the mechanism adds",
        },
        [verdict_text, record_text],
        {"data": spec.source.name, f"{u.users}": f"{h.n_users:,}", "records": f"{h.n_records:,}"},
        file_name=downloads.file_name("lesson", prov, ext="html"),
        key="lesson_report",
        captions={
            "lesson_dataset": "D and its neighbour D′",
            "lesson_distributions": "The two output distributions",
            "lesson_log_ratio": "Their log-ratio against ±ε",
            "lesson_record_user": "Noise for one record vs one user",
        },
    )
