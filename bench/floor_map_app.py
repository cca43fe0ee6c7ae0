"""The floor of a first map: a bare Streamlit page with one deck.gl map of seven hexagons.

``bench/bench_browser.py --floor`` opens this page the way it opens the app's Map (a fresh server
each time, timed from opening the page to the map drawn and the page idle): Streamlit's shell and
one frame of deck.gl, with no data, no sidebar and no project code, to set beside the first map.
"""

import h3
import pydeck as pdk
import streamlit as st

st.title("Map")
centre = h3.latlng_to_cell(21.17, 72.83, 8)
rows = [{"cell": c, "fill": [30, 120, 200, 160]} for c in h3.grid_disk(centre, 1)]
layer = pdk.Layer("H3HexagonLayer", data=rows, get_hexagon="cell", get_fill_color="fill")
view = pdk.ViewState(latitude=21.17, longitude=72.83, zoom=12)
deck = pdk.Deck(
    layers=[layer], initial_view_state=view, map_provider=None
)  # no basemap, as the app
st.pydeck_chart(deck, height=500)
st.success("Selected HAT: the floor has none.")
