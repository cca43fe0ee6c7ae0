"""dp-hexplorer dashboard: ``streamlit run app.py``.

Routing only; each page lives in ``dashboard/pages/`` and runs on its own as well.
"""

from __future__ import annotations

import streamlit as st

PAGES = (
    ("dashboard/pages/data.py", "Data", ":material/table:"),
    ("dashboard/pages/hexagon_map.py", "Map", ":material/map:"),
    ("dashboard/pages/one_hexagon.py", "One hexagon", ":material/hexagon:"),
    ("dashboard/pages/city.py", "Whole city", ":material/location_city:"),
    ("dashboard/pages/learn.py", "Learn", ":material/school:"),
)


def run() -> None:
    """Configure the page and route to the chosen page (the Map opens first)."""
    st.set_page_config(page_title="dp-hexplorer", page_icon="🚌", layout="wide")  # no icon fetch
    pages = [
        st.Page(path, title=title, icon=icon, default=(title == "Map"))
        for path, title, icon in PAGES
    ]
    st.navigation(pages).run()


if __name__ == "__main__":
    run()
