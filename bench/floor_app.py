"""The floor of a first view: a bare Streamlit page with One hexagon's ε slider and captions.

``bench/bench_many_visitors.py --floor`` runs its class against this page instead of the app,
so the browsers' and the server's CPU per view of Streamlit itself (its shell, one session, one
slider, three lines of text) can be set beside the app's. No data, no charts, no project code.
"""

import streamlit as st

STOPS = [float(f"{k}e{e}") for e in (-3, -2, -1) for k in range(10, 100)] + [10.0]

st.title("One hexagon")
eps = st.sidebar.select_slider(
    "Privacy loss ε (log scale)", options=STOPS, value=1.0, format_func=lambda e: f"{e:g}"
)
st.caption(f"Where releases land at ε = {eps:g}")
st.write("Worst-case error against ε")
