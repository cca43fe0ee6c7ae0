"""The operator's data directory: the only server files a visitor may open.

The dashboard is meant to be hosted for demos, so reading a file on the server is off unless the
operator names a directory, either with the ``HEXPLORER_DATA_DIR`` environment variable or with
``--data-dir DIR`` after ``streamlit run app.py --``. The sidebar then offers the CSV/Parquet files
in it as a choice (never a free-text path), and every name is resolved again here before it is
read: symlinks are followed and anything that lands outside the directory is refused with the
same message as a missing file, so a visitor learns nothing about the rest of the server.

Pure functions (no Streamlit), tested in ``tests/dashboard/common/source/test_datadir.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import HexplorerError

ENV_VAR = "HEXPLORER_DATA_DIR"
ARG = "--data-dir"
SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".parq")
"""Files offered: CSV-like text and Parquet (raw records or prepared summaries)."""
MAX_FILES = 500
"""At most this many files are listed (the first in name order), so a huge folder stays usable."""


def configured_dir(
    environ: Mapping[str, str] | None = None, argv: Sequence[str] | None = None
) -> Path | None:
    """The data directory the operator named, or ``None`` (server files off).

    ``--data-dir DIR`` (or ``--data-dir=DIR``) among the script's arguments wins over the
    ``HEXPLORER_DATA_DIR`` environment variable. The directory is resolved (symlinks followed);
    a name that is not an existing directory raises :class:`HexplorerError` for the operator.

    >>> configured_dir(environ={}, argv=["app.py"]) is None
    True
    """
    import sys

    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    named: str | None = None
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == ARG and i + 1 < len(args):
            named = args[i + 1]
        elif arg.startswith(ARG + "="):
            named = arg.split("=", 1)[1]
    if named is None:
        named = environ.get(ENV_VAR) or None
    if named is None or not named.strip():
        return None
    root = Path(named).expanduser().resolve()
    if not root.is_dir():
        raise HexplorerError(
            f"The data directory ({ARG} or {ENV_VAR}) must be an existing folder. "
            f"Got {named!r} instead."
        )
    return root


def not_found(name: str) -> HexplorerError:
    """The one message for a name that cannot be opened, whatever the reason."""
    return HexplorerError(f"File not found in the data directory: '{name}'.")


def resolve(root: Path, name: str) -> Path:
    """The file ``name`` (relative to ``root``) as a resolved path inside ``root``.

    Absolute names, ``..``, symlinks leading out of ``root``, folders, missing files and files
    of another type all raise the same :class:`HexplorerError` (:func:`not_found`), so the
    message says nothing about whether something exists outside the directory.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "a.csv").write_text("x\\n")
    ...     resolve(Path(d), "a.csv").name
    'a.csv'
    """
    text = str(name)
    if not text or "\x00" in text or Path(text).is_absolute():
        raise not_found(text)
    base = Path(root).resolve()
    try:
        target = (base / text).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a symlink loop, a name too long ...
        raise not_found(text) from None
    if not target.is_relative_to(base) or target == base:
        raise not_found(text)
    if not target.is_file() or target.suffix.lower() not in SUFFIXES:
        raise not_found(text)
    return target


def list_files(root: Path) -> list[str]:
    """Names (relative to ``root``, ``/``-separated) of the files a visitor may choose.

    Sub-folders are searched; hidden files and folders are skipped, and so is every entry that
    :func:`resolve` would refuse (e.g. a symlink leading out of ``root``). Sorted by name, at
    most :data:`MAX_FILES`.
    """
    base = Path(root).resolve()
    found: list[str] = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            if file.startswith(".") or Path(file).suffix.lower() not in SUFFIXES:
                continue
            name = (Path(folder) / file).relative_to(base).as_posix()
            try:
                resolve(base, name)
            except HexplorerError:
                continue
            found.append(name)
    return sorted(found)[:MAX_FILES]
