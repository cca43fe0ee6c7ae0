"""dp-hexplorer dashboard: ``streamlit run app.py``.

Routing only; each page lives in its feature's folder (``dashboard/<feature>/page.py``) and runs
on its own as well; its URL path is named here, so links shared before the move still work. The
view's parameters live in the URL (``dashboard.common.session.url``): read once per session before
the page runs, written back after it.

This file is read twice. ``streamlit run app.py`` imports it as a module and finds ``app``, an
``st.App`` whose lifespan turns Nagle's algorithm off for its connections
(:mod:`dashboard.server.nodelay`) and warms the server in the background
(:mod:`dashboard.server.warmup`) while the first visitor's browser loads the page, and whose page
links the map's code for the browser to load at once (:mod:`dashboard.server.prefetch`). Then
Streamlit runs it as ``__main__`` for every visitor and every rerun: :func:`run` routes to the
page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from dashboard.common.view import frames, livemap, liveplot, slider  # noqa: F401 (scripts served)
from dashboard.server import nodelay, warmup
from dashboard.server.prefetch import ModulePreload
from dashboard.server.statics import StaticCache

FAVICON = Path(__file__).parent / "assets" / "favicon.svg"

PAGES = (  # (page file, URL path, title, icon): each page lives in its feature's folder
    ("dashboard/data/page.py", "data", "Data", ":material/table:"),
    ("dashboard/map/page.py", "hexagon_map", "Map", ":material/map:"),
    ("dashboard/hexagon/page.py", "one_hexagon", "One hexagon", ":material/hexagon:"),
    ("dashboard/city/page.py", "city", "Whole city", ":material/location_city:"),
    ("dashboard/lessons/page.py", "lesson", "Lesson: neighbours", ":material/compare_arrows:"),
    ("dashboard/course/page.py", "course", "Course", ":material/route:"),
    ("dashboard/deck/page.py", "deck", "Deck", ":material/slideshow:"),
    ("dashboard/experiments/page.py", "experiments", "Experiments", ":material/science:"),
    ("dashboard/publish/page.py", "publish", "Publish", ":material/publish:"),
    ("dashboard/learn/page.py", "learn", "Learn", ":material/school:"),
)


def run() -> None:
    """Configure the page and route to the chosen page (the Map opens first)."""
    # Imported here, not above: as a module (the launcher) this file imports only what the
    # server needs to start, so it answers at once and dashboard.server.warmup imports the rest.
    from dashboard.common.session import shown, state, url

    # Our own SVG, sent inline as a data URL: a Material icon made the browser fetch the favicon
    # from fonts.gstatic.com (failing offline, and telling Google of each visit). Its path is
    # ASCII, so Streamlit never imports its emoji catalogue (≈ 35 ms of the first page's run).
    st.set_page_config(page_title="dp-hexplorer", page_icon=FAVICON, layout="wide")
    from dashboard.deck import nav as deck

    named = {
        url_path: st.Page(path, title=title, icon=icon, url_path=url_path, default=(title == "Map"))
        for path, url_path, title, icon in PAGES
    }
    url.read_once()
    # Every run keeps the shared settings, whatever page runs: a page that drew none of them
    # (Experiments) let Streamlit drop them all at its end, and the next page started from the
    # defaults (One hexagon's mechanisms, the Map's colouring, the data source).
    state.init()
    deck.register(named)
    page = st.navigation(list(named.values()))
    name = next(n for n, p in named.items() if p.title == page.title)
    deck.read_link()
    state.page_ran(page.url_path, page.title)  # a page's own widgets come back on its return
    shown.reset()  # the figures of this run, for the report
    deck.presenter_bar()
    page.run()
    url.write()
    url.share_control(page.url_path)
    deck.after_run(name)  # "Add this view to the deck"; a presented view's charts kept


if __name__ == "__main__":  # a visitor's run
    run()
else:  # `streamlit run app.py` (or an ASGI server) imports this file to find the app
    app = st.App(
        Path(__file__).resolve(),
        lifespan=nodelay.lifespan(warmup.lifespan),  # responses sent at once, then warm
        middleware=[
            Middleware(ModulePreload),  # the map's code loads with the page
            # Streamlit's code and plotly.js served from memory, read and gzipped once
            Middleware(
                StaticCache,
                routes=liveplot.static_files(),
            ),
        ],
        # uPlot and plotly.js for the charts that update in place, the charts' and the ε
        # slider's scripts; the frames documents they repaint from on a slider's step before
        # the rerun (computed on their first GET)
        routes=[*liveplot.routes(), *frames.routes()],
    )
    liveplot.enable()
