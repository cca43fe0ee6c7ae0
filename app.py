"""dp-hexplorer dashboard: ``streamlit run app.py``.

Routing only; each page lives in ``dashboard/pages/`` and runs on its own as well. The view's
parameters live in the URL (``dashboard.common.url``): read once per session before the page
runs, written back after it.
"""

from __future__ import annotations

import streamlit as st

from dashboard.common import shown, url

PAGES = (
    ("dashboard/pages/data.py", "Data", ":material/table:"),
    ("dashboard/pages/hexagon_map.py", "Map", ":material/map:"),
    ("dashboard/pages/one_hexagon.py", "One hexagon", ":material/hexagon:"),
    ("dashboard/pages/city.py", "Whole city", ":material/location_city:"),
    ("dashboard/pages/lesson.py", "Lesson: neighbours", ":material/compare_arrows:"),
    ("dashboard/pages/experiments.py", "Experiments", ":material/science:"),
    ("dashboard/pages/publish.py", "Publish", ":material/publish:"),
    ("dashboard/pages/learn.py", "Learn", ":material/school:"),
)


def run() -> None:
    """Configure the page and route to the chosen page (the Map opens first)."""
    st.set_page_config(page_title="dp-hexplorer", page_icon="🚌", layout="wide")  # no icon fetch
    pages = [
        st.Page(path, title=title, icon=icon, default=(title == "Map"))
        for path, title, icon in PAGES
    ]
    url.read_once()
    page = st.navigation(pages)
    shown.reset()  # the figures of this run, for the report
    page.run()
    url.write()
    url.share_control(page.url_path)


if __name__ == "__main__":
    run()
