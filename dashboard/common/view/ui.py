"""Small rendering helpers shared by the pages (tables with CSV download, charts, links)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.errors import HexplorerError
from dashboard.common.markdown import escape
from dashboard.common.session import shown
from dashboard.common.source.units import Units
from dashboard.common.view import downloads, figures, liveplot
from dashboard.common.view.downloads import Provenance
from dashboard.common.view.figures import PNG_CONFIG

LEARN_PAGE = "dashboard/learn/page.py"


def workbench_note(u: Units | None = None) -> str:
    """What the workbench shows and what it treats as public, with the user noun in use."""
    u = u if u is not None else Units()
    return (
        "This is the data team's own workbench: it shows **true values** (true means, counts per "
        f"{u.user}) next to the private ones, which a public release would never show. As in the "
        f"papers, the number of {u.users} L and their record counts {{m_ℓ}} are treated as "
        "**public**; only the values are protected."
    )


def table(
    df: pd.DataFrame,
    *,
    name: str,
    key: str,
    height: int | None = None,
    hide_index: bool = True,
    provenance: Provenance | None = None,
) -> None:
    """Show a table and a button that downloads it as CSV (the CSV is made when clicked).

    With ``provenance`` (every table computed from data should pass one) the CSV carries the
    provenance columns and a file name saying what it is (:mod:`dashboard.common.view.downloads`);
    without, it is ``name``.csv as shown.
    """
    st.dataframe(df, hide_index=hide_index, height=height if height is not None else "auto")
    if provenance is None:
        file_name = f"{name}.csv"
    else:
        file_name = downloads.file_name(name, provenance)
    download(
        f"Download {name}.csv",
        csv_maker(df, provenance),
        file_name=file_name,
        key=f"download_{key}",
        help=f"Saved as {file_name}",
    )


def download(
    label: str,
    make: Callable[[], bytes],
    *,
    file_name: str,
    key: str,
    help: str,
    mime: str = "text/csv",
    column=None,
) -> None:
    """A deferred download button: ``make()`` runs only when it is clicked (a rerun pays
    nothing for files nobody takes), and the click does not rerun the page."""
    (column or st).download_button(
        label,
        data=make,
        file_name=file_name,
        mime=mime,
        key=key,
        icon=":material/download:",
        help=help,
        on_click="ignore",
    )


def csv_maker(df: pd.DataFrame, provenance: Provenance | None = None) -> Callable[[], bytes]:
    """The bytes a table's download button serves, made only when it is clicked (a deferred
    download: a rerun pays nothing for CSVs nobody takes). ``df`` is a cached value nobody
    mutates, so the bytes are those of the table shown."""
    if provenance is None:
        return lambda: downloads.csv_safe(df).to_csv(index=False).encode("utf-8")
    return lambda: downloads.csv_bytes(df, provenance)


def chart(
    fig: go.Figure,
    *,
    key: str,
    lite: bool = True,
    frames: str | None = None,
    group: str | None = None,
    stop: float | None = None,
) -> None:
    """Show a plotly figure, drawn by the chart that updates in place
    (:mod:`dashboard.common.view.liveplot`): a slider's step updates it rather than having the
    browser rebuild it. A figure :func:`liveplot.lite_ok` accepts is drawn with uPlot
    (``static/liteplot.js``: no plotly.js in the browser at all); any other with plotly.js's basic
    bundle when its traces allow (about 0.5 s of the browser's main thread against 1.6-2.2 s for
    Streamlit's full plotly element), else the full one, with the modebar's PNG export
    (``bench/bench_render.py``). ``lite=False``: never uPlot. ``frames`` and ``group``: a
    frames document's URL and the slider events it follows (:func:`liveplot.chart`); the
    document's patches for this chart are keyed ``"chart_" + key``; ``stop``: the slider's
    stop ``fig`` is drawn for (an older rerun's figure is not drawn over a later stop)."""
    liveplot.chart(
        fig,
        key=f"chart_{key}",
        config=PNG_CONFIG,
        lite=lite,
        frames=frames,
        group=group,
        stop=stop,
    )
    shown.add_figure(key, fig)  # the report hands out what the page drew


def legend_key(key: str) -> str:
    """The key of the container :func:`legend` draws the legend ``key`` in."""
    return f"legend_{key}"


def legend(entries, *, title: str, key: str, figure: Callable[[], go.Figure] | None = None) -> None:
    """A map legend (:func:`dashboard.common.view.figures.legend_html`) in a container keyed
    :func:`legend_key` ``(key)``; plain HTML, so a page with a map needs no plotly.js (Streamlit's plotly
    element for a strip of boxes cost the error map about 0.8 s of the browser's main thread,
    ``bench/bench_render.py``). ``figure``: the legend as a plotly figure for the report
    (built only if the report is downloaded), recorded under ``key``."""
    with st.container(key=legend_key(key)):
        st.html(figures.legend_html(entries, title=title))
    if figure is not None:
        shown.add_figure(key, figure)


def learn_link(label: str) -> None:
    """A link to the Learn page (only when the app runs with navigation; plain text otherwise)."""
    try:
        st.page_link(LEARN_PAGE, label=label, icon=":material/school:")
    except (StreamlitAPIException, KeyError):
        st.caption(f"{label}: see the Learn page.")


@contextmanager
def errors_shown() -> Iterator[None]:
    """Show a :class:`HexplorerError` raised inside the block as ``st.error``, never a traceback."""
    try:
        yield
    except HexplorerError as exc:
        st.error(escape(str(exc)), icon=":material/error:")  # quotes names from outside


PRESENTING = "deck_presenting"  # session key: index of the deck view being presented, or None


def presenting() -> bool:
    """Whether the deck's presenter mode is on (every page then uses the presenter's type)."""
    return st.session_state.get(PRESENTING) is not None


def presenter_style(*, full_screen: bool = False) -> None:
    """Larger type for a room (CSS only; charts get a larger font from their builders).
    ``full_screen`` also hides the sidebar and the app's header (the deck's presenter mode)."""
    hide = (
        "[data-testid='stSidebar'], [data-testid='stSidebarCollapsedControl'],"
        "[data-testid='stHeader'] {display: none;}"
        if full_screen
        else ""
    )
    st.html(
        "<style>"
        "section.main, [data-testid='stMain'] {font-size: 1.25rem;}"
        "[data-testid='stMain'] p, [data-testid='stMain'] li, [data-testid='stMain'] td,"
        "[data-testid='stMain'] th {font-size: 1.25rem;}"
        # the browser's ε slider (dashboard.common.view.slider): its label and value too
        "[data-testid='stMain'] .hexplorer-slider .hx-head,"
        "[data-testid='stMain'] .hexplorer-slider .hx-value {font-size: 1.25rem;}"
        "[data-testid='stSidebar'] label p,"
        "[data-testid='stSidebar'] .hexplorer-slider .hx-head {font-size: 1.1rem;}"
        + hide
        + "</style>"
    )
