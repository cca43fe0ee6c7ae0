"""Files and folders written whole or not at all: :func:`staged`, :func:`staged_folder`.

A summaries file or a release table is written to a hidden file beside its target and moved onto
the target in one step (``os.replace``) once it is complete. An interrupted or failed write
(Ctrl-C, SIGTERM, a full disk, a bad row found late) removes the partial file and leaves a file
that was already at the target as it was: no reader, and no later run, ever sees half a file.

A folder (a summaries dataset, a Spark release) is written the same way by
:func:`staged_folder`: into a hidden sibling ``.<name>.partial-<tag>``; only when everything in it
is complete is an earlier target moved aside, the sibling renamed to the target and the earlier
one deleted. Spark alone would write in place: a job that fails leaves ``_temporary`` (and perhaps
some parts) in the target, and ``mode("overwrite")`` deletes an earlier folder before the new one
is written. A local path is renamed with the operating system (atomic on one file system). A URL
(``s3a://…``, ``hdfs://…``) goes through Hadoop's ``FileSystem``, the one Spark writes with:
HDFS renames atomically, object stores copy then delete, so there the move is not atomic, but the
target is still never half written by a failed job.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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


def is_url(target: str) -> bool:
    """Whether ``target`` is a URL (``scheme://...``) rather than a local path."""
    return "://" in target


class _Local:
    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def delete(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)


class _Hadoop:
    def __init__(self, spark: Any, url: str) -> None:
        jvm = spark._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self._fs = self._path(url).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def rename(self, src: str, dst: str) -> None:
        if not self._fs.rename(self._path(src), self._path(dst)):
            raise OSError(f"could not rename {src!r} to {dst!r}")

    def delete(self, path: str) -> None:
        if self._fs.exists(self._path(path)):
            self._fs.delete(self._path(path), True)


def siblings(target: str, tag: str) -> tuple[str, str]:
    """The hidden staging and set-aside names beside ``target`` for one run's ``tag``.

    >>> siblings("out/summaries", "7-ab")
    ('out/.summaries.partial-7-ab', 'out/.summaries.old-7-ab')
    >>> siblings("s3a://bucket/city/r.parquet/", "7-ab")
    ('s3a://bucket/city/.r.parquet.partial-7-ab', 's3a://bucket/city/.r.parquet.old-7-ab')
    """
    bare = target.rstrip("/")
    parent, _, name = bare.rpartition("/")
    prefix = f"{parent}/" if parent else ""
    return f"{prefix}.{name}.partial-{tag}", f"{prefix}.{name}.old-{tag}"


@contextlib.contextmanager
def staged_folder(spark: Any, target: str) -> Iterator[str]:
    """Yield a fresh hidden folder name beside ``target`` to write into; on a normal exit move it
    to ``target`` (replacing an earlier folder there), on an exception delete it and leave
    ``target`` as it was. The caller checks beforehand whether ``target`` may be replaced.
    ``spark`` (its Hadoop file system) is needed for a URL only.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     target = Path(d) / "s"
    ...     _ = target.mkdir(), (target / "part-0.parquet").write_text("old")
    ...     try:
    ...         with staged_folder(None, str(target)) as path:
    ...             _ = Path(path).mkdir(), (Path(path) / "part-0.parquet").write_text("half")
    ...             raise KeyboardInterrupt
    ...     except KeyboardInterrupt:
    ...         pass
    ...     kept = (target / "part-0.parquet").read_text(), sorted(os.listdir(d))
    ...     with staged_folder(None, str(target)) as path:
    ...         _ = Path(path).mkdir(), (Path(path) / "part-0.parquet").write_text("new")
    ...     kept, (target / "part-0.parquet").read_text(), sorted(os.listdir(d))
    (('old', ['s']), 'new', ['s'])
    """
    files = _Hadoop(spark, target) if is_url(target) else _Local()
    staging, old = siblings(target, f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield staging
        if not files.exists(target):
            files.rename(staging, target)
            return
        files.rename(target, old)
        try:
            files.rename(staging, target)
        except BaseException:
            files.rename(old, target)  # the earlier folder back where it was
            raise
        files.delete(old)
    except BaseException:
        files.delete(staging)
        raise
