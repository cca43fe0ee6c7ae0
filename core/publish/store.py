"""Where a ledger lives and how its SQLite file is opened: path, schema, key check (SPEC §7).

Storage is SQLite in WAL mode with ``synchronous=FULL``; every change is one ``BEGIN
IMMEDIATE`` transaction (:meth:`Store.transaction`), so concurrent publishers (processes) are
serialised and a publisher killed at any point leaves a whole transaction or none of it. A file
that is not a hexplorer ledger, or a damaged one, is an error naming the file, never an empty
ledger; so are a ledger opened without its key or with another one (:mod:`core.publish.keys`),
the JSON-lines ledger of hexplorer < 0.2 and the unkeyed schema 2 (``hexplorer ledger migrate``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from core.errors import HexplorerError
from core.publish import keys
from core.publish.records import now

#: Environment variable that overrides the default ledger path.
LEDGER_ENV = "HEXPLORER_LEDGER"
#: Default ledger path (``~`` expanded at use).
DEFAULT_LEDGER = "~/.hexplorer/ledger.sqlite"
#: Version of the ledger schema (the ``schema`` setting): 3 = keyed ids, per-namespace budgets.
LEDGER_VERSION = 3
#: Seconds a publisher waits for another one's transaction before giving up.
BUSY_TIMEOUT = 120.0

FORMAT = "hexplorer-ledger"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The tables of schema 3 (``budget_changes`` is the budgets' audit trail).
SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS releases (
    seq INTEGER PRIMARY KEY,
    release_id TEXT NOT NULL UNIQUE,
    request TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    created TEXT NOT NULL,
    namespace TEXT NOT NULL,
    epsilon REAL NOT NULL,
    accounting TEXT NOT NULL,
    n_users INTEGER NOT NULL,
    max_charge REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    hash TEXT NOT NULL,
    epsilon REAL NOT NULL,
    UNIQUE (namespace, hash)
);
CREATE INDEX IF NOT EXISTS users_by_hash ON users (hash);
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER NOT NULL REFERENCES releases (seq),
    user INTEGER NOT NULL REFERENCES users (id),
    epsilon REAL NOT NULL,
    PRIMARY KEY (seq, user)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS budgets (namespace TEXT PRIMARY KEY, budget REAL NOT NULL);
CREATE TABLE IF NOT EXISTS namespace_ids (namespace TEXT PRIMARY KEY, ids TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS budget_changes (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    namespace TEXT NOT NULL,
    budget REAL,
    previous REAL,
    reason TEXT NOT NULL
);
"""


def ledger_path(ledger: str | os.PathLike | None = None) -> Path:
    """Where the ledger lives: ``ledger`` if given, else ``$HEXPLORER_LEDGER``, else the default.

    >>> str(ledger_path("/tmp/x.sqlite"))
    '/tmp/x.sqlite'
    """
    if ledger is None or str(ledger) == "":
        ledger = os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER
    return Path(ledger).expanduser()


def busy(exc: BaseException) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _corrupt(path: Path, exc: BaseException) -> HexplorerError:
    msg = str(exc).rstrip(".")
    if busy(exc):
        return HexplorerError(
            f"Ledger {path} stayed locked by another publisher for {BUSY_TIMEOUT:g} s; try again."
        )
    return HexplorerError(
        f"Ledger {path} is damaged or unreadable ({msg}); restore it from a backup or an export, "
        "or move it aside."
    )


def run_script(con: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement)


class Store:
    """A ledger file and its key: opening, checks, settings, transactions (no accounting).

    Parameters
    ----------
    path : str or path-like, optional
        Ledger file; default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.sqlite``.
    key : bytes, optional
        The ledger's secret key; default ``$HEXPLORER_LEDGER_KEY`` or the key file beside the
        ledger (made with the ledger).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, key: bytes | None = None) -> None:
        self.path = ledger_path(path)
        self._given_key = key
        self._key: bytes | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    @property
    def key_file(self) -> Path:
        """The key file beside the ledger (used unless a key is given or in the environment)."""
        return keys.key_path(self.path)

    # ---------------------------------------------------------------------------------------
    # Opening

    def exists(self) -> bool:
        """True if a ledger file with content exists; raises if it is not a SQLite ledger."""
        try:
            with self.path.open("rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            raise HexplorerError(f"Ledger {self.path} is a folder; name a file.") from None
        except OSError as exc:
            raise HexplorerError(f"Cannot read the ledger {self.path}: {exc.strerror}.") from None
        if head == b"":
            return False  # created but killed before its first commit: nothing was recorded
        if _SQLITE_MAGIC.startswith(head):  # (a prefix: another publisher is creating it)
            return True
        if head.lstrip()[:1] == b"{":
            raise HexplorerError(
                f"Ledger {self.path} is the JSON-lines ledger of hexplorer < 0.2, which has no "
                "per-user accounting: keep it for audit and publish into a new ledger "
                "(--ledger NEW.sqlite)."
            )
        raise HexplorerError(
            f"Ledger {self.path} is not a hexplorer ledger (not an SQLite database); fix or move "
            "the file."
        )

    def _load_key(self, *, create: bool) -> bytes:
        if self._key is None:
            key = keys.load_key(self.path, given=self._given_key, create=create)
            if key is None:
                raise HexplorerError(
                    f"Ledger {self.path} cannot be opened without its key: put its key file back "
                    f"at {self.key_file} (mode 0600) or set ${keys.KEY_ENV}."
                )
            self._key = key
        return self._key

    def open_raw(self) -> sqlite3.Connection:
        """A connection to the file, no check (for :mod:`core.publish.migrate`)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HexplorerError(f"Cannot open the ledger {self.path}: {exc}.") from None

    @contextlib.contextmanager
    def connect(self, *, create: bool) -> Iterator[sqlite3.Connection | None]:
        """An open, checked connection (None when there is no ledger and ``create`` is False)."""
        exists = self.exists()
        if not exists and not create:
            yield None
            return
        if not exists:  # the key first: whoever sees the file may expect its key beside it
            self._load_key(create=True)
        con = self.open_raw()
        try:
            with self.guard():
                self._set_up(con)
            yield con
        finally:
            con.close()

    def _set_up(self, con: sqlite3.Connection) -> None:
        """WAL mode, the pragmas, the schema (created if new), checked, then the key (so a
        foreign or damaged file says so, not that a key is missing). Retried while another
        publisher holds a lock: SQLite answers a change of journal mode, or a first read of a
        file being created, with "locked" at once rather than through its busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("PRAGMA foreign_keys=ON")
                if self.setting(con, "format") is None:
                    self._initialise(con, self._load_key(create=True))
                break
            except sqlite3.OperationalError as exc:
                if not busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.check_version(con)
        key = self._load_key(create=False)
        if self.setting(con, "key_check") != keys.key_check(key):
            where = (
                f"${keys.KEY_ENV}" if self._given_key is None and os.environ.get(keys.KEY_ENV)
                else str(self.key_file) if self._given_key is None else "the key given"
            )  # fmt: skip
            raise HexplorerError(
                f"Ledger {self.path} was made with another key than {where}; open it with its "
                "own key (its budgets and charges are kept under it)."
            )

    def check_version(self, con: sqlite3.Connection, *, migrating: bool = False) -> str:
        """The ``schema`` setting, checked: ours, or 2 (unkeyed) when ``migrating``."""
        if self.setting(con, "format") != FORMAT:
            raise HexplorerError(f"Ledger {self.path} is not a hexplorer ledger.")
        schema = self.setting(con, "schema")
        if schema == "2" and not migrating:
            raise HexplorerError(
                f"Ledger {self.path} stores user ids as unkeyed salted hashes (schema 2), which "
                f"anyone with the file can reverse; upgrade it once with `hexplorer ledger "
                f"migrate --ledger {self.path}` (it makes its key file)."
            )
        if schema != str(LEDGER_VERSION) and not (migrating and schema == "2"):
            raise HexplorerError(
                f"Ledger {self.path} has schema {schema!r}; this hexplorer reads "
                f"schema {LEDGER_VERSION}."
            )
        return str(schema)

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """SQLite errors as one line naming the ledger."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None

    @staticmethod
    @contextlib.contextmanager
    def transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception (all or nothing)."""
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    @staticmethod
    def setting(con: sqlite3.Connection, key: str) -> str | None:
        has = con.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'"
        ).fetchone()
        if has is None:
            if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return "?"  # an SQLite file with other tables: not ours
            return None
        row = con.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _initialise(self, con: sqlite3.Connection, key: bytes) -> None:
        with self.transaction(con):
            run_script(con, SCHEMA)
            for name, value in (
                ("format", FORMAT),
                ("schema", str(LEDGER_VERSION)),
                ("ids", "hmac-sha256"),
                ("key_check", keys.key_check(key)),
                ("created", now()),
            ):
                con.execute("INSERT OR IGNORE INTO settings VALUES (?, ?)", (name, value))

    def hashes(self, con: sqlite3.Connection, namespace: str, user_ids) -> list[str]:
        """The keyed hashes of ``user_ids`` in ``namespace`` (:func:`core.publish.keys.user_hashes`;
        a migrated ledger hashes its old salted digests)."""
        key = self._load_key(create=False)
        salt = self.setting(con, "salt")
        return keys.user_hashes(key, user_ids, salt=salt, namespace=namespace)
