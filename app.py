"""dp-hexplorer dashboard: ``streamlit run app.py``.

Routing only; each page lives in ``dashboard/pages/`` and runs on its own as well. The view's
parameters live in the URL (``dashboard.common.url``): read once per session before the page
runs, written back after it. The demo deck (:mod:`dashboard.deck.nav`) reads a ``?deck=`` link
before the page, draws the presenter's bar above it and "Add this view to the deck" after it.

This file is read twice. ``streamlit run app.py`` imports it as a module and finds ``app``, an
``st.App`` whose lifespan turns Nagle's algorithm off for its connections
(:mod:`dashboard.common.nodelay`) and warms the server in the background
(:mod:`dashboard.warmup`) while the first visitor's browser loads the page, and whose page links
the map's code for the browser to load at once (:mod:`dashboard.common.prefetch`). Then
Streamlit runs it as ``__main__`` for every visitor and every rerun: :func:`run` routes to the
page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from dashboard import warmup
from dashboard.common import liveplot, nodelay
from dashboard.common.prefetch import ModulePreload

PAGES = (
    ("dashboard/pages/data.py", "Data", ":material/table:"),
    ("dashboard/pages/hexagon_map.py", "Map", ":material/map:"),
    ("dashboard/pages/one_hexagon.py", "One hexagon", ":material/hexagon:"),
    ("dashboard/pages/city.py", "Whole city", ":material/location_city:"),
    ("dashboard/pages/lesson.py", "Lesson: neighbours", ":material/compare_arrows:"),
    ("dashboard/course/page.py", "Course", ":material/route:"),
    ("dashboard/deck/page.py", "Deck", ":material/slideshow:"),
    ("dashboard/pages/experiments.py", "Experiments", ":material/science:"),
    ("dashboard/pages/publish.py", "Publish", ":material/publish:"),
    ("dashboard/pages/learn.py", "Learn", ":material/school:"),
)


def run() -> None:
    """Configure the page and route to the chosen page (the Map opens first)."""
    # Imported here, not above: as a module (the launcher) this file imports only what the
    # server needs to start, so it answers at once and dashboard.warmup imports the rest.
    from dashboard.common import shown, state, url

    # A Material icon (no fetch), and ASCII: Streamlit then never imports its emoji catalogue
    # (`is_emoji` skips ASCII), which took ≈ 35 ms of the first page's critical path.
    st.set_page_config(
        page_title="dp-hexplorer", page_icon=":material/directions_bus:", layout="wide"
    )
    from dashboard.deck import nav as deck

    named = {
        page_name(path): st.Page(
            path, title=title, icon=icon, default=(title == "Map"), url_path=page_name(path)
        )
        for path, title, icon in PAGES
    }
    url.read_once()
    deck.register(named)
    page = st.navigation(list(named.values()))
    name = next(n for n, p in named.items() if p.title == page.title)
    deck.read_link()
    state.page_ran(page.url_path)  # a page's own widgets come back on its return
    shown.reset()  # the figures of this run, for the report
    deck.presenter_bar()
    page.run()
    url.write()
    url.share_control(page.url_path)
    deck.after_run(name)  # "Add this view to the deck"; a presented view's charts kept


def page_name(path: str) -> str:
    """A page's name (its URL path): the file's name, or its folder's for a ``page.py``."""
    p = Path(path)
    return p.parent.name if p.stem == "page" else p.stem


if __name__ == "__main__":  # a visitor's run
    run()
else:  # `streamlit run app.py` (or an ASGI server) imports this file to find the app
    app = st.App(
        Path(__file__).resolve(),
        lifespan=nodelay.lifespan(warmup.lifespan),  # responses sent at once, then warm
        middleware=[Middleware(ModulePreload)],  # the map's code loads with the page
        routes=liveplot.routes(),  # plotly.js for the charts that update in place
    )
    liveplot.enable()
