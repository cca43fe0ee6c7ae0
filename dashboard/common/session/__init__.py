"""One visitor's session: the widget keys and defaults (``state``), the URL, the selected HAT
and what the current run has shown."""
