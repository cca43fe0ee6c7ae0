"""Figures remembered by the digest of everything they are built from.

Building a plotly figure validates every property (tens of milliseconds for the distribution
chart's ridgelines), and a page that reruns on every ε step would rebuild the same figure each
time the slider comes back to a value. :func:`figure` calls a builder once per distinct input
and hands out the same ``go.Figure`` afterwards.

The key is a digest of the builder's name and of its arguments' *contents* (numpy arrays and
pandas frames by their bytes, dataclasses field by field), never of parameters the caller
lists by hand, so a remembered figure cannot be the figure of other numbers. An argument of
any other type is not remembered: the builder simply runs. Figures are shared between
sessions and must not be changed after they are built (``st.plotly_chart`` copies before it
serialises); they are :func:`~dashboard.common.view.liveplot.freeze`-d, so the chart that shows
one serialises it once.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from dashboard.common.cache import cached
from dashboard.common.view import liveplot


class _NotDigestible(TypeError):
    """An argument whose content :func:`digest` does not know how to read."""


def _plain_numeric(frame: pd.DataFrame, dtypes: np.ndarray) -> bool:
    """Whether every column of ``frame`` is a numpy bool, integer or float column and its index
    a ``RangeIndex``."""
    return isinstance(frame.index, pd.RangeIndex) and all(
        isinstance(d, np.dtype) and d.kind in "bifu" for d in dtypes
    )


def _feed(h: Any, value: Any) -> None:
    if value is None or isinstance(value, bool | int | float | str | bytes):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            raise _NotDigestible("object array")
        h.update(f"nd:{value.dtype.str}:{value.shape};".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.generic):
        _feed(h, value.item())
    elif isinstance(value, pd.DataFrame | pd.Series):
        h.update(f"pd:{type(value).__name__}:{value.shape};".encode())
        _feed(h, [str(c) for c in (value.columns if isinstance(value, pd.DataFrame) else [])])
        dtypes = np.atleast_1d(value.dtypes)
        _feed(h, [str(d) for d in dtypes])
        if isinstance(value, pd.DataFrame) and _plain_numeric(value, dtypes):
            # A numeric frame on a range index (the worst case against ε on every step): its
            # columns' bytes, ~10× quicker than pandas' row hashing.
            index = value.index
            h.update(f"range:{index.start}:{index.stop}:{index.step};".encode())
            if len(set(dtypes)) == 1:  # one block: one array
                _feed(h, value.to_numpy())
            else:
                for i in range(value.shape[1]):
                    _feed(h, value.iloc[:, i].to_numpy())
        else:
            h.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"dc:{type(value).__module__}.{type(value).__qualname__};".encode())
        for f in dataclasses.fields(value):
            _feed(h, f.name)
            _feed(h, getattr(value, f.name))
    elif isinstance(value, list | tuple):
        h.update(f"{type(value).__name__}[{len(value)}];".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, Mapping):
        h.update(f"map[{len(value)}];".encode())
        for k in sorted(value, key=repr):
            _feed(h, k)
            _feed(h, value[k])
    else:
        raise _NotDigestible(type(value).__name__)


def digest(build: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> str | None:
    """The key of ``build(*args, **kwargs)``, or None when it cannot be trusted: an argument
    that is not digestible, or a builder that is not a module-level function (a lambda, a
    partial or a nested function can depend on values its arguments do not show)."""
    qualname = getattr(build, "__qualname__", "<unknown>")
    if "<" in qualname or getattr(build, "__closure__", None):
        return None
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{build.__module__}.{qualname};".encode())
    try:
        _feed(h, list(args))
        _feed(h, dict(kwargs))
    except _NotDigestible:
        return None
    return h.hexdigest()


@cached(max_entries=256, resource=True)
def _remembered(key: str, _build: Callable[..., Any], _args: tuple, _kwargs: dict) -> Any:
    return liveplot.freeze(_build(*_args, **_kwargs))  # shared, never changed: sent as made once


def figure(build: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``build(*args, **kwargs)``, built once per distinct input and shared afterwards."""
    key = digest(build, args, kwargs)
    if key is None:
        return build(*args, **kwargs)
    return _remembered(key, build, args, kwargs)
