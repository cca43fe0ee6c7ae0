"""The ledger of published releases, with per-user privacy accounting and a budget (SPEC §7).

Every published release is recorded once, together with what it cost each user whose records it
read: a single-HAT release charges ε to each of its L users; a city-wide release charges each
user the loss of its accounting (``core.publish.city``). Users are identified by their id within
a *namespace* (default ``"default"``: one per ledger), so releases of the same fleet at other H3
resolutions, slots, U or from other files add up. Ids are stored only as salted SHA-256 hashes;
the salt is drawn from OS entropy when the ledger is created and kept in it.

A *budget* (a ledger setting) caps every user's cumulative ε: a request that would take any user
past it is refused (:class:`BudgetExceeded`) and nothing is recorded. The same request asked
again returns its recorded release at no cost, whatever the budget.

Storage is SQLite in WAL mode with ``synchronous=FULL``. A release is one ``BEGIN IMMEDIATE``
transaction — look up the request, check the budget, draw the noise, record release, charges and
users' totals, commit — so concurrent publishers (processes) are serialised and draw noise for one
request only once, and a publisher killed at any point leaves either the whole release or none of
it (SQLite's atomic commit; nothing is printed before the commit). A file that is not a hexplorer
ledger, or a damaged one, is an error naming the file, never an empty ledger. The JSON-lines
ledger of earlier versions has no per-user accounting and is refused with a one-line message.

The ledger holds hashes of the data and of user ids and the noisy values only (never a true
value); it is still a private file: publish the release files, not the ledger.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from core.errors import HexplorerError
from core.params import check_epsilon
from core.publish.records import (
    BudgetExceeded,
    LedgerEntry,
    Outcome,
    Record,
    Summary,
    now,
)

#: Environment variable that overrides the default ledger path.
LEDGER_ENV = "HEXPLORER_LEDGER"
#: Default ledger path (``~`` expanded at use).
DEFAULT_LEDGER = "~/.hexplorer/ledger.sqlite"
#: Version of the ledger schema (the ``schema`` setting).
LEDGER_VERSION = 2
#: A user is "near the budget" from this fraction of it on.
NEAR_BUDGET = 0.9
#: Relative tolerance of the budget check (sums of ε in floating point: 0.1 + 0.2 > 0.3).
BUDGET_TOLERANCE = 1e-9
#: Seconds a publisher waits for another one's transaction before giving up.
BUSY_TIMEOUT = 120.0

_FORMAT = "hexplorer-ledger"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER NOT NULL REFERENCES releases (seq),
    user INTEGER NOT NULL REFERENCES users (id),
    epsilon REAL NOT NULL,
    PRIMARY KEY (seq, user)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS budget_changes (at TEXT NOT NULL, budget REAL);
"""


def ledger_path(ledger: str | os.PathLike | None = None) -> Path:
    """Where the ledger lives: ``ledger`` if given, else ``$HEXPLORER_LEDGER``, else the default.

    >>> str(ledger_path("/tmp/x.sqlite"))
    '/tmp/x.sqlite'
    """
    if ledger is None or str(ledger) == "":
        ledger = os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER
    return Path(ledger).expanduser()


def _corrupt(path: Path, exc: BaseException) -> HexplorerError:
    msg = str(exc).rstrip(".")
    if "locked" in msg or "busy" in msg:
        return HexplorerError(
            f"Ledger {path} stayed locked by another publisher for {BUSY_TIMEOUT:g} s; try again."
        )
    return HexplorerError(
        f"Ledger {path} is damaged or unreadable ({msg}); restore it from a backup or an export, "
        "or move it aside."
    )


class Ledger:
    """The SQLite ledger of published releases (see the module docstring).

    Parameters
    ----------
    path : str or path-like, optional
        Ledger file; default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.sqlite``.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = ledger_path(path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ---------------------------------------------------------------------------------------
    # Opening

    def _check_file(self) -> bool:
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

    @contextlib.contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection | None]:
        exists = self._check_file()
        if not exists and not create:
            yield None
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HexplorerError(f"Cannot open the ledger {self.path}: {exc}.") from None
        try:
            with self._guard():
                self._set_up(con)
            yield con
        finally:
            con.close()

    def _set_up(self, con: sqlite3.Connection) -> None:
        """WAL mode, the pragmas, the schema (created if new), checked. Retried while another
        publisher holds a lock: SQLite answers a change of journal mode, or a first read of a
        file being created, with "locked" at once rather than through its busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("PRAGMA foreign_keys=ON")
                fmt = self._setting(con, "format")
                if fmt is None:
                    self._initialise(con)
                break
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        fmt = self._setting(con, "format")
        if fmt != _FORMAT:
            raise HexplorerError(f"Ledger {self.path} is not a hexplorer ledger.")
        schema = self._setting(con, "schema")
        if schema != str(LEDGER_VERSION):
            raise HexplorerError(
                f"Ledger {self.path} has schema {schema!r}; this hexplorer reads "
                f"schema {LEDGER_VERSION}."
            )

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None

    @staticmethod
    def _setting(con: sqlite3.Connection, key: str) -> str | None:
        has = con.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings'"
        ).fetchone()
        if has is None:
            if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return "?"  # an SQLite file with other tables: not ours
            return None
        row = con.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _initialise(self, con: sqlite3.Connection) -> None:
        con.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    con.execute(statement)
            for key, value in (
                ("format", _FORMAT),
                ("schema", str(LEDGER_VERSION)),
                ("salt", secrets.token_hex(32)),
                ("created", now()),
            ):
                con.execute("INSERT OR IGNORE INTO settings VALUES (?, ?)", (key, value))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    # ---------------------------------------------------------------------------------------
    # Reading

    def summary(self) -> Summary:
        """Releases, users, the largest cumulative ε of any user, the budget, users near it."""
        with self._connect(create=False) as con:
            if con is None:
                return Summary(
                    releases=0, users=0, max_user_epsilon=0.0, budget=None, users_near_budget=0
                )
            with self._guard():
                return self._summary(con)

    def _summary(self, con: sqlite3.Connection) -> Summary:
        budget = self._budget(con)
        n_rel = con.execute("SELECT count(*) FROM releases").fetchone()[0]
        n_users, top = con.execute("SELECT count(*), max(epsilon) FROM users").fetchone()
        near = 0
        if budget is not None:
            near = con.execute(
                "SELECT count(*) FROM users WHERE epsilon >= ?", (NEAR_BUDGET * budget,)
            ).fetchone()[0]
        return Summary(
            releases=int(n_rel),
            users=int(n_users),
            max_user_epsilon=float(top or 0.0),
            budget=budget,
            users_near_budget=int(near),
        )

    def _budget(self, con: sqlite3.Connection) -> float | None:
        row = con.execute("SELECT value FROM settings WHERE key = 'budget'").fetchone()
        if row is None or row[0] == "":
            return None
        try:
            return check_epsilon(float(row[0]))
        except (ValueError, HexplorerError):
            raise HexplorerError(
                f"Ledger {self.path} has an invalid budget setting {row[0]!r}."
            ) from None

    def budget(self) -> float | None:
        """The budget setting (largest cumulative ε any user may reach), or None."""
        with self._connect(create=False) as con:
            if con is None:
                return None
            with self._guard():
                return self._budget(con)

    def set_budget(self, budget: float | None) -> None:
        """Persist the budget setting (None removes it); every change is kept for audit."""
        value = None if budget is None else check_epsilon(budget)
        with self._connect(create=True) as con:
            assert con is not None
            with self._guard():
                con.execute("BEGIN IMMEDIATE")
                try:
                    if self._budget(con) != value:
                        con.execute(
                            "INSERT OR REPLACE INTO settings VALUES ('budget', ?)",
                            ("" if value is None else repr(value),),
                        )
                        con.execute("INSERT INTO budget_changes VALUES (?, ?)", (now(), value))
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise

    def records(self, kind: str | None = None) -> list[Record]:
        """Every recorded release (of one ``kind`` if given), oldest first."""
        with self._connect(create=False) as con:
            if con is None:
                return []
            with self._guard():
                sql = (
                    "SELECT release_id, request, kind, created, namespace, epsilon, accounting, "
                    "n_users, max_charge, body FROM releases"
                )
                args: tuple = ()
                if kind is not None:
                    sql += " WHERE kind = ?"
                    args = (kind,)
                rows = con.execute(sql + " ORDER BY seq", args).fetchall()
        return [self._record(row) for row in rows]

    def find(self, request: str) -> Record | None:
        """The recorded release of this request key, if any (no lock taken)."""
        with self._connect(create=False) as con:
            if con is None:
                return None
            with self._guard():
                return self._find(con, request)

    def _find(self, con: sqlite3.Connection, request: str) -> Record | None:
        row = con.execute(
            "SELECT release_id, request, kind, created, namespace, epsilon, accounting, "
            "n_users, max_charge, body FROM releases WHERE request = ?",
            (request,),
        ).fetchone()
        return None if row is None else self._record(row)

    def _record(self, row: Sequence) -> Record:
        try:
            body = json.loads(row[9])
        except (TypeError, json.JSONDecodeError):
            body = None
        if not isinstance(body, dict):
            raise HexplorerError(f"Ledger {self.path}: release {row[0]!r} has a damaged body.")
        return Record(
            release_id=str(row[0]),
            request=str(row[1]),
            kind=str(row[2]),
            created=str(row[3]),
            namespace=str(row[4]),
            epsilon=float(row[5]),
            accounting=str(row[6]),
            n_users=int(row[7]),
            max_charge=float(row[8]),
            body=body,
        )

    def entries(self) -> list[LedgerEntry]:
        """Every single-HAT release, oldest first (city-wide ones: :meth:`records`)."""
        return [LedgerEntry.from_record(r, self.path) for r in self.records("hat")]

    def user_epsilons(self, namespace: str | None = None) -> np.ndarray:
        """Cumulative ε of every user (of one namespace if given), in no particular order."""
        with self._connect(create=False) as con:
            if con is None:
                return np.zeros(0)
            with self._guard():
                if namespace is None:
                    rows = con.execute("SELECT epsilon FROM users").fetchall()
                else:
                    rows = con.execute(
                        "SELECT epsilon FROM users WHERE namespace = ?", (namespace,)
                    ).fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.float64)

    def user_totals(self, namespace: str, user_ids: Sequence) -> np.ndarray:
        """Cumulative ε of each of ``user_ids`` in ``namespace`` (0 for a user never charged);
        reads only (a missing ledger gives zeros)."""
        with self._connect(create=False) as con:
            if con is None:
                return np.zeros(len(user_ids))
            with self._guard():
                hashes = _hashes(str(self._setting(con, "salt")), namespace, user_ids)
                known = dict(
                    con.execute(
                        "SELECT hash, epsilon FROM users WHERE namespace = ?", (namespace,)
                    ).fetchall()
                )
        return np.asarray([known.get(h, 0.0) for h in hashes], dtype=np.float64)

    def check(self) -> None:
        """SQLite's integrity check, and every user's total equal to the sum of its charges.

        Raises
        ------
        HexplorerError
            The file is damaged or the totals disagree with the charges.
        """
        with self._connect(create=False) as con:
            if con is None:
                return
            with self._guard():
                result = con.execute("PRAGMA integrity_check").fetchall()
                if result != [("ok",)]:
                    raise HexplorerError(
                        f"Ledger {self.path} fails SQLite's integrity check ({result[0][0]})."
                    )
                bad = con.execute(
                    "SELECT count(*) FROM users u LEFT JOIN (SELECT user, sum(epsilon) AS e "
                    "FROM charges GROUP BY user) c ON c.user = u.id "
                    "WHERE abs(u.epsilon - coalesce(c.e, 0)) > 1e-9 * max(1, u.epsilon)"
                ).fetchone()[0]
                if bad:
                    raise HexplorerError(
                        f"Ledger {self.path}: {bad} user totals disagree with their charges."
                    )

    def export(self) -> dict:
        """The whole ledger as JSON-ready data, for audit: settings (not the salt), budget
        changes, releases with their per-user charges (hashed ids), users' totals."""
        with self._connect(create=False) as con:
            if con is None:
                return {"format": _FORMAT, "schema": LEDGER_VERSION, "releases": [], "users": []}
            with self._guard():
                settings = dict(con.execute("SELECT key, value FROM settings").fetchall())
                settings.pop("salt", None)
                changes = con.execute("SELECT at, budget FROM budget_changes ORDER BY rowid")
                budget_changes = [{"at": at, "budget": b} for at, b in changes.fetchall()]
                users = {
                    uid: (ns, h, e)
                    for uid, ns, h, e in con.execute(
                        "SELECT id, namespace, hash, epsilon FROM users ORDER BY id"
                    ).fetchall()
                }
                charges: dict[int, list] = {}
                for seq, uid, e in con.execute(
                    "SELECT seq, user, epsilon FROM charges ORDER BY seq, user"
                ).fetchall():
                    charges.setdefault(seq, []).append({"user": users[uid][1], "epsilon": e})
                rows = con.execute(
                    "SELECT seq, release_id, request, kind, created, namespace, epsilon, "
                    "accounting, n_users, max_charge, body FROM releases ORDER BY seq"
                ).fetchall()
                summary = self._summary(con)
        releases = []
        for row in rows:
            rec = self._record(row[1:])
            releases.append(
                {
                    "release_id": rec.release_id,
                    "request": json.loads(rec.request),
                    "kind": rec.kind,
                    "created": rec.created,
                    "namespace": rec.namespace,
                    "epsilon": rec.epsilon,
                    "accounting": rec.accounting,
                    "n_users": rec.n_users,
                    "max_charge": rec.max_charge,
                    "body": rec.body,
                    "charges": charges.get(row[0], []),
                }
            )
        return {
            "format": _FORMAT,
            "schema": LEDGER_VERSION,
            "settings": settings,
            "budget_changes": budget_changes,
            "summary": summary.as_dict(),
            "releases": releases,
            "users": [{"namespace": ns, "user": h, "epsilon": e} for ns, h, e in users.values()],
        }

    # ---------------------------------------------------------------------------------------
    # Recording

    def user_hashes(self, namespace: str, user_ids: Sequence) -> list[str]:
        """Salted SHA-256 of each user id within ``namespace`` (creates the ledger if needed)."""
        with self._connect(create=True) as con:
            assert con is not None
            with self._guard():
                salt = self._setting(con, "salt")
        return _hashes(str(salt), namespace, user_ids)

    def record_once(
        self,
        *,
        request: str,
        kind: str,
        namespace: str,
        epsilon: float,
        accounting: str,
        user_ids: Sequence,
        charges: np.ndarray,
        draw: Callable[[], dict],
        budget: float | None = None,
    ) -> Outcome:
        """The release recorded under ``request``, or a new one drawn by ``draw()`` and charged.

        In one ``BEGIN IMMEDIATE`` transaction: if ``request`` is recorded, return it (no
        charge, no budget check). Otherwise, if ``budget`` is given, persist it as the ledger's
        budget; if a budget is set and some user's total plus its charge would exceed it, raise
        :class:`BudgetExceeded` (nothing recorded). Else call ``draw()`` for the release body and
        record it with ``charges[i]`` charged to ``user_ids[i]`` (distinct ids).

        Raises
        ------
        BudgetExceeded
            The request would take users past the budget.
        HexplorerError
            A damaged ledger, an unwritable file, or an error from ``draw``.
        """
        charges = np.asarray(charges, dtype=np.float64)
        if charges.shape != (len(user_ids),) or not np.all(np.isfinite(charges)):
            raise HexplorerError("charges must hold one finite ε per user")
        if budget is not None:
            self.set_budget(budget)  # a setting: kept even if this request is then refused
        with self._connect(create=True) as con:
            assert con is not None
            with self._guard():
                salt = str(self._setting(con, "salt"))
                hashes = _hashes(salt, namespace, user_ids)
                con.execute("BEGIN IMMEDIATE")
                try:
                    outcome = self._record_in(
                        con, request, kind, namespace, epsilon, accounting, hashes, charges, draw
                    )
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
        return outcome

    def _record_in(
        self, con, request, kind, namespace, epsilon, accounting, hashes, charges, draw
    ) -> Outcome:
        found = self._find(con, request)
        if found is not None:
            return Outcome(record=found, reused=True, summary=self._summary(con))
        limit = self._budget(con)
        con.execute("CREATE TEMP TABLE IF NOT EXISTS req (hash TEXT PRIMARY KEY, charge REAL)")
        con.execute("DELETE FROM req")
        con.executemany("INSERT INTO req VALUES (?, ?)", zip(hashes, charges.tolist(), strict=True))
        if limit is not None:
            over, top = con.execute(
                "SELECT sum(t > ?), max(t) FROM (SELECT r.charge + coalesce(u.epsilon, 0) AS t "
                "FROM req r LEFT JOIN users u ON u.namespace = ? AND u.hash = r.hash)",
                (limit * (1.0 + BUDGET_TOLERANCE), namespace),
            ).fetchone()
            if over:
                raise BudgetExceeded(
                    f"Refused: this release would take {over} of its {len(hashes)} users past "
                    f"the budget eps = {limit:g} (up to {top:.6g}); nothing was recorded."
                )
        body = draw()
        record = Record(
            release_id=secrets.token_hex(8),
            request=request,
            kind=kind,
            created=str(body.get("created") or now()),
            namespace=namespace,
            epsilon=float(epsilon),
            accounting=accounting,
            n_users=len(hashes),
            max_charge=float(charges.max()) if charges.size else 0.0,
            body=body,
        )
        cur = con.execute(
            "INSERT INTO releases (release_id, request, kind, created, namespace, epsilon, "
            "accounting, n_users, max_charge, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.release_id,
                record.request,
                record.kind,
                record.created,
                record.namespace,
                record.epsilon,
                record.accounting,
                record.n_users,
                record.max_charge,
                json.dumps(body, allow_nan=False, sort_keys=True),
            ),
        )
        seq = cur.lastrowid
        con.execute(
            "INSERT INTO users (namespace, hash, epsilon) SELECT ?, hash, charge FROM req "
            "WHERE true ON CONFLICT (namespace, hash) DO UPDATE SET epsilon = epsilon + "
            "excluded.epsilon",
            (namespace,),
        )
        con.execute(
            "INSERT INTO charges (seq, user, epsilon) SELECT ?, u.id, r.charge FROM req r "
            "JOIN users u ON u.namespace = ? AND u.hash = r.hash",
            (seq, namespace),
        )
        con.execute("DELETE FROM req")
        return Outcome(record=record, reused=False, summary=self._summary(con))


def _hashes(salt: str, namespace: str, user_ids: Sequence) -> list[str]:
    prefix = bytes.fromhex(salt) + namespace.encode() + b"\x00"
    out = [hashlib.sha256(prefix + str(u).encode()).hexdigest() for u in user_ids]
    if len(set(out)) != len(out):
        raise HexplorerError("user ids of one release must be distinct")
    return out
