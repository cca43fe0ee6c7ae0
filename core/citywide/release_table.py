"""The table ``release --all`` writes (one row per HAT, :data:`core.citywide.batch.RELEASE_COLUMNS`)
kept as the pieces it was released in, and written to Parquet without pandas.

The file is the one ``pandas.DataFrame.to_parquet`` wrote before, byte for byte: the same Arrow
table (text as ``large_string`` in one chunk per piece, as pandas' concatenation leaves it;
numbers in one chunk), the same ``pandas`` schema metadata (the JSON pyarrow's
``Table.from_pandas`` attaches, with the installed pandas' version read from its package
metadata, so pandas itself is not imported: ~0.4 s of a ``release --all`` process) and the same
writer settings (snappy). A column type or a pandas major version this module does not know
makes the table go through pandas, as before; a test compares the bytes with pandas'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["ReleaseTable"]

#: pandas' description of a column by numpy kind: (arrow type name, pandas_type, numpy_type) as
#: pyarrow's ``Table.from_pandas`` writes them under pandas 3 (text is pandas' ``str`` dtype).
_KINDS = {
    "i": ("int64", "int64", "int64"),
    "f": ("float64", "float64", "float64"),
    "U": ("large_string", "object", "str"),
}
#: The pandas major version whose metadata :data:`_KINDS` describes.
_PANDAS_MAJOR = 3


@dataclass(frozen=True, eq=False)
class ReleaseTable:
    """Every HAT's release as the pieces it was released in, in order.

    Attributes
    ----------
    pieces : sequence
        One mapping per piece, column name to a numpy array (one value per HAT) or a scalar
        (every row), as ``pandas.DataFrame`` takes them (:func:`core.citywide.batch.release_columns`),
        or a pandas DataFrame (the per-HAT loop's pieces).
    sort : bool
        The pieces' HATs may interleave (a summaries dataset's parts): the rows are sorted by HAT
        when they are not in order already.
    """

    pieces: Sequence[Any]
    sort: bool = False

    def __len__(self) -> int:
        return sum(_rows(piece) for piece in self.pieces)

    def to_pandas(self) -> pd.DataFrame:
        """The table as pandas (what :func:`core.citywide.pieces.release_batches` returns)."""
        import pandas as pd

        table = pd.concat(
            [p if isinstance(p, pd.DataFrame) else pd.DataFrame(p) for p in self.pieces],
            ignore_index=True,
        )
        if self.sort and not table["hat"].is_monotonic_increasing:
            table = table.sort_values("hat", kind="stable", ignore_index=True)
        return table

    @cached_property
    def _columns(self) -> dict[str, list[np.ndarray]] | None:
        """Every column as one numpy array per piece; None if a piece is not plain columns."""
        if not self.pieces or not all(isinstance(p, dict) for p in self.pieces):
            return None
        names = list(self.pieces[0])
        if any(list(p) != names for p in self.pieces):
            return None
        out: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for piece in self.pieces:
            n = _rows(piece)
            for name in names:
                value = np.asarray(piece[name])
                if value.ndim == 0:  # one value for every row: a view, no copies
                    value = np.broadcast_to(value, (n,))
                if value.shape != (n,) or value.dtype.kind not in _KINDS:
                    return None
                if value.dtype.kind in "if" and value.dtype.itemsize != 8:
                    return None
                out[name].append(value)
        return out

    def to_arrow(self) -> pa.Table | None:
        """The Arrow table ``pyarrow.Table.from_pandas(self.to_pandas(), preserve_index=False)``
        gives, built without pandas; None where this module cannot vouch for that (the caller
        then goes through pandas)."""
        columns = self._columns
        version = _pandas_version()
        if columns is None or version is None:
            return None
        import pyarrow as pa

        order: np.ndarray | None = None
        if self.sort:
            hats = np.concatenate(columns["hat"])
            if not bool((hats[1:] >= hats[:-1]).all()):
                order = np.argsort(hats, kind="stable")
        arrays: list[pa.ChunkedArray] = []
        described = []
        for name, chunks in columns.items():
            arrow_type, pandas_type, numpy_type = _KINDS[chunks[0].dtype.kind]
            kind = getattr(pa, arrow_type)()
            if order is not None:  # pandas' sort leaves every column in one chunk
                chunks = [np.concatenate(chunks)[order]]
            elif arrow_type != "large_string":  # pandas concatenates numbers into one array
                chunks = [np.concatenate(chunks)] if len(chunks) > 1 else chunks
            arrays.append(pa.chunked_array([_arrow(c, kind) for c in chunks], type=kind))
            described.append(
                {
                    "name": name,
                    "field_name": name,
                    "pandas_type": pandas_type,
                    "numpy_type": numpy_type,
                    "metadata": None,
                }
            )
        meta = {
            "index_columns": [],
            "column_indexes": [],
            "columns": described,
            "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": version,
        }
        return pa.table(arrays, names=list(columns), metadata={b"pandas": json.dumps(meta)})

    def write(self, path: str | Path) -> None:
        """Write the table to ``path``: ``.parquet`` as ``DataFrame.to_parquet(path,
        index=False)`` writes it (without pandas when :meth:`to_arrow` can), else CSV as
        ``DataFrame.to_csv(path, index=False)``."""
        if str(path).lower().endswith(".parquet"):
            table = self.to_arrow()
            if table is not None:
                import pyarrow.parquet as pq

                pq.write_table(table, str(path), compression="snappy")
                return
            self.to_pandas().to_parquet(path, index=False)
            return
        self.to_pandas().to_csv(path, index=False)


def _arrow(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of type ``kind``, built from its buffers (``pyarrow.array``
    imports pandas to ask whether its argument is a pandas object): numbers as they are, text
    as UTF-8 bytes and their offsets."""
    import pyarrow as pa

    if values.dtype.kind == "U" and values.size and values.strides == (0,):  # one value
        one = str(values[0]).encode()
        offsets = np.arange(values.size + 1, dtype=np.int64) * len(one)
        return pa.Array.from_buffers(
            kind, values.size, [None, pa.py_buffer(offsets), pa.py_buffer(one * values.size)]
        )
    if values.dtype.kind == "U" and values.size and values.dtype.itemsize:
        width = values.dtype.itemsize // 4
        codes = np.ascontiguousarray(values).view(np.uint32).reshape(values.size, width)
        if codes.min() > 0 and codes.max() < 128:  # ASCII, every value of the full width
            offsets = np.arange(values.size + 1, dtype=np.int64) * width
            data = pa.py_buffer(codes.astype(np.uint8).tobytes())
            return pa.Array.from_buffers(kind, values.size, [None, pa.py_buffer(offsets), data])
    if values.dtype.kind == "U":
        encoded = [v.encode() for v in values.tolist()]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(kind, values.size, buffers)
    data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(kind, values.size, [None, data])


def _rows(piece: Any) -> int:
    """The number of rows of a piece (its HAT column's length)."""
    return len(piece["hat"])


def _pandas_version() -> str | None:
    """The installed pandas' version (what pyarrow records), read from its package metadata
    without importing pandas; None unless its major version is the one :data:`_KINDS`
    describes."""
    version = _installed_version("pandas")
    if version is None:  # not found beside the package: ask importlib.metadata (~35 ms)
        from importlib import metadata

        try:
            version = metadata.version("pandas")
        except metadata.PackageNotFoundError:
            return None
    major = version.split(".", 1)[0]
    return version if major.isdigit() and int(major) == _PANDAS_MAJOR else None


def _installed_version(package: str) -> str | None:
    """The ``Version:`` of ``package``'s one ``<package>-*.dist-info/METADATA`` beside it (what
    ``importlib.metadata.version`` reads, without importing ``importlib.metadata``: its email
    and zip modules cost a ``release --all`` ~35 ms); None when the package or exactly one
    such folder with that line is not found there.

    >>> from importlib import metadata
    >>> _installed_version("pyarrow") == metadata.version("pyarrow")
    True
    >>> _installed_version("no_such_package_here") is None
    True
    """
    import importlib.util
    import os

    spec = importlib.util.find_spec(package)  # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    try:
        names = [
            n for n in os.listdir(site) if n.startswith(f"{package}-") and n.endswith(".dist-info")
        ]
        if len(names) != 1:
            return None
        with open(os.path.join(site, names[0], "METADATA"), encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip() or None
                if not line.strip():  # the headers end at the first blank line
                    return None
    except OSError:
        return None
    return None
