"""Files written whole or not at all: :func:`staged`.

A summaries file or a release table is written to a hidden file beside its target and moved onto
the target in one step (``os.replace``) once it is complete. An interrupted or failed write
(Ctrl-C, SIGTERM, a full disk, a bad row found late) removes the partial file and leaves a file
that was already at the target as it was: no reader, and no later run, ever sees half a file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def staged(target: str | os.PathLike) -> Iterator[Path]:
    """A path to write ``target``'s content to, moved onto ``target`` when the block ends
    without an exception, removed when it raises.

    The staged name ends with the target's own name, so a writer that picks its format from the
    suffix (``.parquet``, ``.csv``) picks the same one.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     target = Path(d) / "out.csv"
    ...     _ = target.write_text("old")
    ...     try:
    ...         with staged(target) as path:
    ...             _ = path.write_text("half")
    ...             raise KeyboardInterrupt
    ...     except KeyboardInterrupt:
    ...         pass
    ...     kept = (target.read_text(), sorted(p.name for p in Path(d).iterdir()))
    ...     with staged(target) as path:
    ...         _ = path.write_text("new")
    ...     kept, target.read_text(), sorted(p.name for p in Path(d).iterdir())
    (('old', ['out.csv']), 'new', ['out.csv'])
    """
    target = Path(target)
    path = target.with_name(f".{os.getpid()}.partial.{target.name}")
    try:
        yield path
        os.replace(path, target)
    finally:
        path.unlink(missing_ok=True)
