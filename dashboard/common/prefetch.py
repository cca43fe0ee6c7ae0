"""Start loading the map's JavaScript while the server still computes the first page.

Streamlit's browser side loads each element's code when the first such element arrives. The
map's (``st.pydeck_chart``: deck.gl and luma.gl) is one 3 MB module, which Chromium then
parses and compiles before it can draw a hexagon: about a second on a small machine, all of it
spent *after* the map's JSON has arrived. :func:`deck_gl` asks the browser to import that same
module at the start of a session's first run, so that work overlaps with the server's own.

The module is Streamlit's, found by name in the installed package (its file name carries a
content hash); the browser resolves it against the URL of Streamlit's own entry script, as
Streamlit itself does, so both imports are one module. Where the file is not found (another
Streamlit build) nothing is sent and the map simply loads its code when it arrives, as before.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit as st

CHUNKS = ("DeckGlJsonChart.*.js", "webgl-device.*.js")
"""Streamlit's modules for ``st.pydeck_chart``: the chart, then luma.gl's WebGL device."""


@functools.cache
def chunk_names() -> tuple[str, ...]:
    """File names of :data:`CHUNKS` in the installed Streamlit (each must match exactly one)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    names = []
    for pattern in CHUNKS:
        found = sorted(p.name for p in folder.glob(pattern))
        if len(found) == 1:
            names.append(found[0])
    return tuple(names)


ELEMENT_ID = "hexplorer-prefetch"


def script(names: tuple[str, ...]) -> str:
    """The ``<script>`` that imports ``names`` relative to Streamlit's entry module, and a style
    that hides its element (no gap in the page's layout)."""
    return (
        "<style>[data-testid='stElementContainer']:has(#" + ELEMENT_ID + "){display:none}</style>"
        f"<script id='{ELEMENT_ID}'>(() => {{"
        "const entry = document.querySelector('script[type=module][src*=\"static/js/index.\"]');"
        "if (!entry) return;"
        f"for (const name of {json.dumps(list(names))}) "
        "import(new URL(name, entry.src).href).catch(() => {});"
        "})();</script>"
    )


def deck_gl() -> None:
    """Before the page: start loading the map's code in the browser.

    Sent on every run, always as the run's first element: the browser runs the script once,
    when the element first appears, and keeps it while it is re-sent unchanged. Sending it only
    once would shift every later element by one on the next run, and Streamlit would then
    redraw them all, the map included.
    """
    names = chunk_names()
    if names:
        st.html(script(names), unsafe_allow_javascript=True)
