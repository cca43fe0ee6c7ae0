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

The key is made here, not by Streamlit's hasher: an argument of a :func:`keyed` class by its
``key()``, a ``str``, ``int``, ``float``, ``bool`` or ``None`` (and tuples, lists and
frozensets of them) by its ``repr``, so an ε step's forty-odd cached calls cost microseconds
each instead of about 0.3 ms (Streamlit looked up the function's signature for every
positional argument and hashed each value through its generic hasher). Any other argument is
handed to Streamlit's hasher as before. Every key also holds the names of the registered
mechanisms and m_UB rules (:mod:`core.mechanisms.registry`): a mechanism or rule registered
after a result was cached (a plug-in loaded later, a test) gets results that know it, never one
computed without it (marks, headlines, defaults). Streamlit's cache still holds the entries (its bound,
expiry, copies and locks).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import streamlit as st

from core.mechanisms import MECHANISMS, RULES
from dashboard.common.source import limits


class _Keyed(Protocol):
    def key(self) -> Any: ...


T = TypeVar("T", bound=type[_Keyed])

HASH_FUNCS: dict[Any, Callable[[Any], Any]] = {}
"""How cached functions hash the :func:`keyed` classes (filled as they are defined)."""

CACHED: list[Callable[..., Any]] = []
"""Every function cached through :func:`cached`, in the order they were defined."""


def keyed(cls: T) -> T:
    """Class decorator: cached functions hash an argument of ``cls`` by its ``key()``."""
    HASH_FUNCS[cls] = cls.key
    return cls


_PLAIN = (str, int, float, bool, type(None))


def _plain(value: Any, other: list[Any]) -> Any:
    """``value`` as a key part: its ``key()`` for a :func:`keyed` class, itself for a plain
    value, a tagged tuple for a tuple, list or frozenset; anything else goes to ``other`` (for
    Streamlit's hasher) and leaves a placeholder."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind in HASH_FUNCS:
        return (kind.__qualname__, HASH_FUNCS[kind](value))
    if kind in (tuple, list):
        return (kind.__name__, *(_plain(v, other) for v in value))
    if kind is frozenset:
        return ("frozenset", *sorted((_plain(v, other) for v in value), key=repr))
    other.append(value)
    return ("other", len(other) - 1)


class Cached:
    """A function cached by Streamlit under the key :func:`cached` makes (see the module)."""

    def __init__(self, func: Callable, store: Any, max_entries: int) -> None:
        functools.update_wrapper(self, func)
        self._names = [
            p.name if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None
            for p in inspect.signature(func).parameters.values()
        ]

        def entry(key: str, _args: tuple, _kwargs: dict, other: tuple = ()) -> Any:
            return func(*_args, **_kwargs)

        # Streamlit names a function's cache by its module, qualified name and source (read
        # through __wrapped__): each function keeps its own cache and bound.
        entry.__module__, entry.__qualname__ = func.__module__, func.__qualname__
        entry.__wrapped__ = func  # type: ignore[attr-defined]
        self._cached = store(
            entry,
            max_entries=max_entries,
            ttl=limits.CACHE_TTL_S,
            show_spinner=False,
            hash_funcs=HASH_FUNCS,
        )
        self._info = self._cached._info  # what Streamlit was given (its cache reads these)

    def key(self, args: tuple, kwargs: dict) -> tuple[str, tuple]:
        """The key of a call (as Streamlit's: each hashed argument by name, in call order,
        ``_``-prefixed ones left out) and the arguments left to Streamlit's hasher."""
        other: list[Any] = []
        parts = []
        names = self._names
        for i, value in enumerate(args):
            name = names[i] if i < len(names) else None
            if name is None or not name.startswith("_"):
                parts.append((name, _plain(value, other)))
        for name, value in kwargs.items():
            if not name.startswith("_"):
                parts.append((name, _plain(value, other)))
        return repr((tuple(MECHANISMS), tuple(RULES), parts)), tuple(other)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key, other = self.key(args, kwargs)
        if other:  # values only Streamlit's hasher reads: hashed with their name, as before
            return self._cached(key=key, _args=args, _kwargs=kwargs, other=other)
        # Most calls have none: not naming ``other`` at all spares Streamlit's hasher two of
        # its four passes (a name and a value, about 13 µs each) on every cached call.
        return self._cached(key=key, _args=args, _kwargs=kwargs)

    def clear(self) -> None:
        """Drop every entry of this function."""
        self._cached.clear()


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
        out = Cached(func, store, max_entries)
        CACHED.append(out)
        return out

    return wrap
