"""Open the app as a visitor's link does: on a page named by its URL path.

A link's first run asks Streamlit for the page by its URL path (``/one_hexagon?eps=0.5``), and
``st.Page`` identifies a page by the hash of that path (``app.py``'s ``PAGES`` name it). Before
an AppTest's first run, ``AppTest.switch_page(file)`` can only hash the file's name, which is
``page`` for every ``dashboard/<feature>/page.py``; :func:`open_at` asks for the URL path instead.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash


def open_at(at: AppTest, url_path: str) -> AppTest:
    """Make ``at``'s next run (its first) open the page served at ``url_path``."""
    at._page_hash = calc_hash(url_path)  # what st.Page hashes; AppTest has no public way yet
    return at
