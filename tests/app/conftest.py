"""``frames_app.py`` is a Streamlit app for the browser tests, not a test module: pytest's
``--doctest-modules`` would import it, and its import (``streamlit run``'s) turns the live
charts on process-wide (``liveplot.enable``), which every later AppTest in that worker would
then meet: One hexagon's Streamlit ε slider gone, its charts components, 28 failures in CI."""

collect_ignore = ["frames_app.py"]
