"""The Streamlit dashboard: thin pages over cached calls into :mod:`core`."""
