"""The columns of a summaries file, and how the preparation writes them.

A leaf (Arrow and Parquet only): :mod:`core.data.summaries` reads and describes the file and
:mod:`core.data.dataset` writes a dataset's parts, and both take the layout from here.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["SCHEMA", "SUMMARY_COLUMNS", "WRITTEN", "summaries_writer"]

#: Arrow schema of the columns.
SCHEMA = pa.schema(
    [
        ("hat", pa.string()),
        ("cell", pa.string()),
        ("slot", pa.string()),
        ("user_id", pa.string()),
        ("m", pa.int64()),
        ("s", pa.float64()),
        ("q", pa.float64()),
    ]
)
#: :data:`core.data.prepare.SUMMARY_COLUMNS` (the same names in the same order, a test checks),
#: here without importing the preparation.
SUMMARY_COLUMNS = SCHEMA.names
#: :data:`SCHEMA` as the preparation hands its row groups to the writer: the text columns as
#: dictionaries (each row group's distinct labels once, an index per row), which Parquet stores
#: as its dictionary pages without hashing every row's text. The file holds no Arrow schema,
#: so every reader gets :data:`SCHEMA`'s strings back.
WRITTEN = pa.schema(
    [
        (f.name, pa.dictionary(pa.int32(), f.type) if f.type == pa.string() else f.type)
        for f in SCHEMA
    ]
)


def summaries_writer(
    path: str | os.PathLike, meta: dict[str, str] | None = None
) -> pq.ParquetWriter:
    """The writer of a summaries file or a dataset's part, for tables of :data:`WRITTEN`
    (``meta``: the footer entry, :func:`core.data.summaries.metadata`). ZSTD; statistics only for ``hat``, the
    column a reader may seek on (the others' min and max cost the writer a third of its time
    and no reader here asks for them); no Arrow schema, so the text reads back as text."""
    writer = pq.ParquetWriter(
        path, WRITTEN, compression="zstd", store_schema=False, write_statistics=["hat"]
    )
    if meta:  # the footer's entry (without an Arrow schema, the schema's metadata is not kept)
        writer.add_key_value_metadata(meta)
    return writer
