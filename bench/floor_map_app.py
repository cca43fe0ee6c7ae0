"""The floor of the Map: a bare Streamlit page with one deck.gl map and the Map's ε slider.

``bench/bench_browser.py --floor`` opens this page the way it opens the app's Map (a fresh server
each time, timed from opening the page to the map drawn and the page idle), and
``bench/bench_render.py --pages floor-map`` measures its first render and one ε step in
Chromium, as ``bench/bench_map.py --floor`` times that step: Streamlit's shell and one deck.gl
map, with no data, no sidebar and no project code, to set beside the Map.

The map has as many hexagons as the Map's error map of the demo city (58 of resolution 7 around
its centre, a disk), each row with the error map's properties (cell, fill, trust code, the
tooltip's texts) and the same tooltip lines; the slider has the Map's 24 stops and, as on the
Map, reruns a fragment that re-sends the whole map with new colours, and a caption names the
new ε (``ε = …, …``, what ``bench_map.py`` waits for). Nothing else.
"""

import h3
import pydeck as pdk
import streamlit as st

STOPS = [0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2, 1.5,
         2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]  # fmt: skip
CELLS = sorted(h3.grid_disk(h3.latlng_to_cell(21.20, 72.82, 7), 4))[:58]
TOOLTIP = "\n".join(
    f"{label}: {{{key}}}"
    for key, label in (("cell", "hexagon"), ("u", "vehicles"), ("r", "records"), ("m", "m_UB"),
                       ("e", "worst-case error (±km/h)"), ("t", "true mean (km/h)"),
                       ("k", "trust"))
)  # fmt: skip

st.set_page_config(page_title="floor", layout="wide")
st.title("Map")


@st.fragment
def error_map() -> None:
    eps = st.select_slider(
        "ε per hexagon (log scale)", options=STOPS, value=1.0, format_func=lambda e: f"{e:g}"
    )
    rows = []
    for i, cell in enumerate(CELLS):
        error = (2.0 + i % 7) / eps
        shade = min(255, int(20 * error))
        rows.append({"cell": cell, "fill": [shade, 120, 255 - shade], "q": int(error > 5),
                     "u": f"{3 + i % 5}", "r": f"{10 + i:,}", "m": f"{1 + i % 9}",
                     "e": f"{error:.2f}", "t": f"{20 + i % 11:.2f}",
                     "k": "over target" if error > 5 else "within target"})  # fmt: skip
    layer = pdk.Layer(
        "H3HexagonLayer",
        data=rows,
        get_hexagon="cell",
        get_fill_color="fill",
        get_line_color=[255, 255, 255, 140],
        stroked=True,
        pickable=True,
    )
    view = pdk.ViewState(latitude=21.20, longitude=72.82, zoom=10.5)
    deck = pdk.Deck(  # no basemap, as the app
        layers=[layer], initial_view_state=view, map_provider=None, tooltip={"text": TOOLTIP}
    )
    st.pydeck_chart(deck, height=480)
    within = sum(r["q"] == 0 for r in rows)
    st.caption(f"ε = {eps:g}, {within} of {len(rows)} hexagons within target.")


error_map()
st.success("Selected HAT: the floor has none.")  # what bench_browser.py's first map waits for
