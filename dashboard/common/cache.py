"""One cache for every feature: ``@cached(max_entries=N)`` over a function of parameters.

Every cached call of the dashboard goes through :func:`cached`, so every feature's results
follow the same rules:

- **one key rule**: the arguments are parameters and form the key; an argument of a
  :func:`keyed` class (a data :class:`~dashboard.common.source.compute.Source`, a
  :class:`~dashboard.common.source.compute.DataSpec`) counts by its ``key()`` (its content),
  never by its fields, so an upload's bytes are not hashed on every call and two visitors share
  an entry only when their data are identical;
- **one expiry rule**: an entry expires :data:`~dashboard.common.source.limits.CACHE_TTL_S`
  seconds after it was made, on top of the function's own ``max_entries`` bound, so no result
  stays in the server's memory for good;
- ``st.cache_data`` (each caller gets its own copy) unless ``resource=True``:
  ``st.cache_resource`` hands every caller the same object, for values read and never changed
  (per-hexagon columns read on every ε step, figures), where a copy per call would cost more
  than the call.

Never mutate a cached value; ``_``-prefix an argument that must not be hashed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from dashboard.common.source import limits

T = TypeVar("T", bound=type)

HASH_FUNCS: dict[Any, Callable[[Any], Any]] = {}
"""How cached functions hash the :func:`keyed` classes (filled as they are defined)."""

CACHED: list[Callable[..., Any]] = []
"""Every function cached through :func:`cached`, in the order they were defined."""


def keyed(cls: T) -> T:
    """Class decorator: cached functions hash an argument of ``cls`` by its ``key()``."""
    HASH_FUNCS[cls] = cls.key
    return cls


def cached(*, max_entries: int, resource: bool = False) -> Callable[[Callable], Any]:
    """Cache a function of parameters with the shared key and expiry rules.

    Parameters
    ----------
    max_entries : the most entries kept (the oldest goes first), a whole number >= 1.
    resource : share one object between callers (``st.cache_resource``) instead of a copy each
        (``st.cache_data``); only for values that no caller changes.
    """
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise ValueError(f"max_entries must be a whole number >= 1; got {max_entries!r}")
    store = st.cache_resource if resource else st.cache_data

    def wrap(func: Callable) -> Any:
        out = store(
            func,
            max_entries=max_entries,
            ttl=limits.CACHE_TTL_S,
            show_spinner=False,
            hash_funcs=HASH_FUNCS,
        )
        CACHED.append(out)
        return out

    return wrap
