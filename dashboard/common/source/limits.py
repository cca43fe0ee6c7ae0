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

UPLOADS_BUDGET_ENV = "HEXPLORER_UPLOADS_BUDGET_MB"
DEFAULT_UPLOADS_BUDGET_MB = 2048
"""The uploads every session keeps together may need at most this many MB once read
(:mod:`dashboard.common.source.uploads`); one more is refused with a line until some are
released."""

UPLOAD_IDLE_S = 15 * 60
"""A session's upload unused for this long is released (the visitor uploads it again)."""

CACHE_TTL_S = 3600
"""Cached data and results expire after an hour (on top of each cache's ``max_entries``)."""


def memory_budget_mb(environ: dict[str, str] | None = None) -> int:
    """The memory budget of one file, in MB (``HEXPLORER_MEMORY_BUDGET_MB`` or 1024; a value
    that is not a whole number >= 1 is logged for the operator and the default used).

    >>> memory_budget_mb({}), memory_budget_mb({"HEXPLORER_MEMORY_BUDGET_MB": "256"})
    (1024, 256)
    """
    return _megabytes(environ, MEMORY_BUDGET_ENV, DEFAULT_MEMORY_BUDGET_MB)


def uploads_budget_mb(environ: dict[str, str] | None = None) -> int:
    """The memory budget of all sessions' uploads together, in MB
    (``HEXPLORER_UPLOADS_BUDGET_MB`` or 2048; a bad value is logged and the default used).

    >>> uploads_budget_mb({}), uploads_budget_mb({"HEXPLORER_UPLOADS_BUDGET_MB": "x"})
    (2048, 2048)
    """
    return _megabytes(environ, UPLOADS_BUDGET_ENV, DEFAULT_UPLOADS_BUDGET_MB)


def _megabytes(environ: dict[str, str] | None, name: str, default: int) -> int:
    environ = dict(os.environ) if environ is None else environ
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        logging.getLogger(__name__).warning(
            "%s must be a whole number of MB >= 1; got %r, using %d.", name, text, default
        )
        return default
    return value
