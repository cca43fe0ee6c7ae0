"""The Experiments page's feature folder: ``charts`` (pure plotly builders, also used by
``hexplorer reproduce``), ``compute`` (cached calls into :mod:`core.experiments`), ``state``.

Importing this package does not import Streamlit; ``compute`` and ``state`` do.
"""
