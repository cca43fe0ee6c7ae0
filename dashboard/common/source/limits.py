"""What one visitor may cost the server: the memory budget of a file and how long caches keep it.

The upload size itself is Streamlit's ``server.maxUploadSize`` (``.streamlit/config.toml``);
the sidebar states it and the budget below. Files in the operator's data directory have no
upload limit, so the memory budget is what bounds them.
"""

from __future__ import annotations

import logging
import os

MEMORY_BUDGET_ENV = "HEXPLORER_MEMORY_BUDGET_MB"
DEFAULT_MEMORY_BUDGET_MB = 1024
"""A file whose reading and preparation would peak above this many MB is refused before it is
read (``core.data.io.estimate_memory``); the operator may change it with the variable above."""

CACHE_TTL_S = 3600
"""Cached data and results expire after an hour (on top of each cache's ``max_entries``)."""


def memory_budget_mb(environ: dict[str, str] | None = None) -> int:
    """The memory budget of one file, in MB (``HEXPLORER_MEMORY_BUDGET_MB`` or 1024; a value
    that is not a whole number >= 1 is logged for the operator and the default used).

    >>> memory_budget_mb({}), memory_budget_mb({"HEXPLORER_MEMORY_BUDGET_MB": "256"})
    (1024, 256)
    """
    environ = dict(os.environ) if environ is None else environ
    text = environ.get(MEMORY_BUDGET_ENV, "").strip()
    if not text:
        return DEFAULT_MEMORY_BUDGET_MB
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        logging.getLogger(__name__).warning(
            "%s must be a whole number of MB >= 1; got %r, using %d.",
            MEMORY_BUDGET_ENV,
            text,
            DEFAULT_MEMORY_BUDGET_MB,
        )
        return DEFAULT_MEMORY_BUDGET_MB
    return value
