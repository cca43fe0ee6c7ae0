"""Warm the server while the first visitor's browser loads: ``app.py``'s lifespan hook.

A fresh ``streamlit run`` used to leave everything to its first visitor: importing pandas,
pydeck and the dashboard's modules (about 1.3 s on a small machine), reading the demo city from
the disk cache (:mod:`dashboard.common.source.democache`) and computing its HATs and the first map's
hexagons. :func:`lifespan` starts that work in a background thread as the server starts, so it
overlaps with the browser loading Streamlit's page; a visitor who arrives before it ends waits
only for the rest (Python's import lock and Streamlit's per-key cache locks see to that).

The cached values are the very ones a new visitor's first run asks for
(:func:`dashboard.common.sidebar.default_spec`); an error here is logged and changes nothing:
the visitor's own run then computes (and reports) it as before.

One of Streamlit's own first-run costs is paid here too (:func:`_streamlit_first_run`): the
one-time "is this a REPL?" check of the first element (``inspect.stack()`` over every module),
which is skipped: under ``streamlit run`` its warning never shows. (The other, the emoji
catalogue behind an emoji ``page_icon``, is gone: ``app.py``'s icon is an SVG file.)

The warm-up is on the first map's critical path one for one: 0.2 s more of it made the first map
0.23 s later (an interleaved A/B), so what it need not do, it must not.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

_LOGGER = logging.getLogger(__name__)


def warm() -> None:
    """Import what the pages use and compute the demo city's first map (cached)."""
    from core.data import default_slot
    from dashboard.common.session import shown, url  # noqa: F401  (app.py's run)
    from dashboard.common.sidebar import default_spec
    from dashboard.common.source import compute
    from dashboard.map import compute as map_compute
    from dashboard.map import panels  # noqa: F401  (pydeck, the Map's builders)

    _streamlit_first_run()
    spec = default_spec()
    compute.report(spec)
    table = compute.hats(spec)
    slot = default_slot(table)
    compute.slot_cells(spec, slot)
    compute.cell_density(spec)
    map_compute.base(spec, slot)  # the Map's derived-mean panel, under the map
    import plotly.graph_objects  # noqa: F401  (the other pages' charts)


def _streamlit_first_run() -> None:
    """Streamlit's once-per-process work of a first run (see the module docstring). Private
    names are looked up defensively: another Streamlit simply pays it in the first run."""
    from streamlit import delta_generator, runtime

    if runtime.exists() and hasattr(delta_generator, "_use_warning_has_been_displayed"):
        # Under `streamlit run` the "use streamlit run" warning never shows; its check walks
        # every module (inspect.stack) on the first element. Marking it done skips the walk.
        delta_generator._use_warning_has_been_displayed = True


def _warm_logged() -> None:
    try:
        warm()
    except Exception:  # the visitor's own run computes it and shows any error
        _LOGGER.warning("warming the demo city failed", exc_info=True)


@contextlib.asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """``st.App`` lifespan: start :func:`warm` in the background, serve at once."""
    threading.Thread(target=_warm_logged, name="hexplorer-warmup", daemon=True).start()
    yield
