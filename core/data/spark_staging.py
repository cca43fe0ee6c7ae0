"""A folder Spark writes, whole or not at all: staged beside its target, moved into place last.

Spark writes a folder of parts in place: a job that fails leaves ``_temporary`` (and perhaps some
parts) in the target, and ``mode("overwrite")`` deletes an earlier folder before the new one is
written, so a failed ``--force`` run would lose a good summaries dataset or release. With
:func:`staged_folder` the job writes into a hidden sibling (``.<name>.partial-<tag>``); only when
everything in it is complete is an earlier target moved aside, the sibling renamed to the target
and the earlier one deleted. On any exception, Ctrl-C and SIGTERM included, the sibling is deleted
and the target is left as it was.

A local path is renamed with the operating system (atomic on one file system). A URL
(``s3a://…``, ``hdfs://…``) goes through Hadoop's ``FileSystem``, the one Spark writes with: HDFS
renames atomically, object stores copy then delete, so there the move is not atomic, but the
target is still never half written by a failed job.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["staged_folder"]


def _is_url(target: str) -> bool:
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


@contextmanager
def staged_folder(spark: Any, target: str) -> Iterator[str]:
    """Yield a fresh hidden folder name beside ``target`` to write into; on a normal exit move it
    to ``target`` (replacing an earlier folder there), on an exception delete it and leave
    ``target`` as it was. The caller checks beforehand whether ``target`` may be replaced."""
    files = _Hadoop(spark, target) if _is_url(target) else _Local()
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
