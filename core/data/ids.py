"""One id, one user: the canonical form of user ids, the same in every engine.

The same bus or ship written two ways must be one user, or it is counted (and charged by a
ledger) twice. Before records are grouped, every user id is written in one canonical form:

1. numbers as text: an integer-valued float as the integer (``366000000.0`` -> ``366000000``,
   what pandas writes for an integer column with a missing value), in a float column and in
   text alike (``"366000000.0"`` -> ``"366000000"``); other numbers as polars writes them;
2. surrounding white space stripped (``" a "`` -> ``"a"``);
3. Unicode NFC (``"Cafe\\u0301"``, e + combining accent, -> ``"Caf\\u00e9"``);
4. case kept, unless the operator asks for case-folding (``PrepConfig(ids="casefold")``,
   ``--ids casefold``): upper case then lower case, then NFC again, so ``"ß"``, ``"SS"`` and
   ``"ss"`` are one id (Python's ``str.casefold`` on the ids seen in practice).

Leading zeros are kept in text (``"017"`` is not ``"17"``); a column the reader parses as
integers has none to keep. :func:`canonical` is the only implementation: the in-memory engine,
the streaming engine and Spark's executors all reach it through
:func:`core.data.prepare.clean_records`, so the three give the same ids. Ids merged on the way
are counted for the data report (:class:`Spellings`).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from core.data.config import ID_MODES, check_mode  # noqa: F401 (re-exported: they live beside PrepConfig)

_FLOAT_INT = r"^([+-]?[0-9]+)\.0+$"
_INT64_LIMIT = 2.0**63


def as_text(column: pl.Series) -> pl.Series:
    """A raw id column as text before canonicalisation (its spellings): integer-valued floats
    are still ``"366000000.0"`` here."""
    return column.cast(pl.String)


def canonical(column: pl.Series, *, casefold: bool = False) -> pl.Series:
    """The canonical text form of a column of user ids (see the module doc); nulls stay null.

    Vectorised polars string kernels, each applied only when the column can need it (a
    number with a fraction, a non-ASCII character): the result is the same row by row, so a
    file cut into batches gives the ids of the whole file.

    >>> canonical(pl.Series([366000000.0, None, 1.5])).to_list()
    ['366000000', None, '1.5']
    >>> canonical(pl.Series([" 7.0 ", "Cafe\\u0301", "017", "Bus"])).to_list()
    ['7', 'Café', '017', 'Bus']
    >>> canonical(pl.Series(["Straße", "STRASSE", "Bus"]), casefold=True).to_list()
    ['strasse', 'strasse', 'bus']
    """
    if column.dtype.is_float():
        v = column.cast(pl.Float64)
        whole = v.is_finite() & (v == v.floor()) & (v.abs() < _INT64_LIMIT)
        text = (
            pl.select(
                pl.when(pl.lit(whole))
                .then(pl.lit(v).cast(pl.Int64, strict=False).cast(pl.String))
                .otherwise(pl.lit(v).cast(pl.String))
            )
            .to_series()
            .alias(column.name)
        )
    else:
        text = column.cast(pl.String)
    text = text.str.strip_chars()
    probe = text.gather(text.hash().arg_unique())  # the distinct ids decide what is needed
    if probe.str.contains(".", literal=True).any():
        text = text.str.replace(_FLOAT_INT, "${1}")
    ascii_only = bool((probe.str.len_bytes() == probe.str.len_chars()).all())
    if not ascii_only:
        text = text.str.normalize("NFC")
    if casefold:
        text = text.str.to_uppercase().str.to_lowercase()
        if not ascii_only:
            text = text.str.normalize("NFC")
    return text


def spellings(raw: pl.Series, *, casefold: bool = False) -> pl.DataFrame:
    """The distinct (canonical id, raw spelling) pairs of one batch's raw ids, as 64-bit hashes
    (``id``, ``spelling``): what :class:`Spellings` adds up. The canonical form is a function
    of the raw value, so only the distinct raw values are canonicalised here. A raw spelling
    equal to its canonical id hashes to the same value (both are text)."""
    present = raw.drop_nulls()
    distinct = present.gather(present.hash().arg_unique())  # 64-bit hashes: 5x a text unique
    return pl.DataFrame(
        {"id": canonical(distinct, casefold=casefold).hash(), "spelling": as_text(distinct).hash()}
    ).unique()


class Spellings:
    """Distinct (id, spelling) hash pairs over all batches of an input: how many raw ids
    canonicalisation merged, and into how many users.

    >>> s = Spellings()
    >>> s.add(spellings(pl.Series(["a", " a", "b", "b"])))
    >>> s.add(spellings(pl.Series(["a\\t"])))
    >>> s.merged()
    (3, 1)
    """

    def __init__(self) -> None:
        self.parts: list[pl.DataFrame] = []
        self.rows = 0
        self.compacted = 0

    def add(self, pairs: pl.DataFrame) -> None:
        """Add one batch's pairs (:func:`spellings`)."""
        if pairs.height == 0:
            return
        self.parts.append(pairs)
        self.rows += pairs.height
        if self.rows > 2 * self.compacted + 1_000_000:
            self.parts = [pl.concat(self.parts).unique()]
            self.rows = self.compacted = self.parts[0].height

    def merged(self) -> tuple[int, int]:
        """(raw ids merged, users they became): only ids with two or more spellings count."""
        if not self.parts:
            return 0, 0
        counts = pl.concat(self.parts).unique().group_by("id").len().get_column("len")
        many = counts.filter(counts > 1).to_numpy()
        return int(np.sum(many)), int(many.size)
