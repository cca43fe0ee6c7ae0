"""The ledger of published releases, with per-user privacy accounting and budgets (SPEC §7).

Every published release is recorded once, together with what it cost each user whose records it
read: a single-HAT release charges ε to each of its L users; an every-HAT or city-wide release
charges each user the loss of its accounting (``core.publish.batch``, ``core.publish.city``).
Users are identified within a *namespace* (default ``"default"``), so releases of the same fleet
at other H3 resolutions, slots, U or from other files add up. Ids are stored only as keyed
hashes (HMAC-SHA-256, key outside the file: :mod:`core.publish.keys`).

**Budgets belong to the operator.** Each namespace may have a budget capping every user's
cumulative ε: a request that would take any user past it is refused (:class:`BudgetExceeded`,
naming how many users, the largest ε they would reach, and the largest ε that would fit) and
nothing is recorded. A budget is set once (the first time, by ``hexplorer ledger set-budget`` or
a publishing command's ``--budget``), may be lowered freely, and is raised only with a reason
(:meth:`Ledger.set_budget`), every change kept with its time in the audit trail. A publishing
command's budget can only confirm or lower the namespace's.

**A publish is one transaction** (``BEGIN IMMEDIATE``): look up the request, check the budget,
draw the noise, record the release, its charges and the users' totals, stage its output file
(``before_commit``), commit. The same request asked again returns its recorded release at no
cost, whatever the budget. Storage, keys and the audit export live in :mod:`core.publish.store`,
:mod:`core.publish.keys` and :mod:`core.publish.audit`.

The ledger holds keyed hashes of the data and of user ids and the noisy values only (never a
true value); it is still a private file: publish the release files, not the ledger.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
from collections.abc import Callable, Sequence

import numpy as np

from core.errors import HexplorerError
from core.params import check_epsilon
from core.publish import keys
from core.publish.records import (
    BudgetExceeded,
    LedgerEntry,
    Outcome,
    Record,
    Summary,
    check_namespace,
    now,
)
from core.publish.store import (
    BUSY_TIMEOUT,
    DEFAULT_LEDGER,
    LEDGER_ENV,
    LEDGER_VERSION,
    Store,
    ledger_path,
)

__all__ = [
    "BUDGET_TOLERANCE",
    "ID_FORM",
    "BUSY_TIMEOUT",
    "DEFAULT_LEDGER",
    "LEDGER_ENV",
    "LEDGER_VERSION",
    "NEAR_BUDGET",
    "Ledger",
    "ledger_path",
]

#: How ids were canonicalised unless said (``core.data``'s ``--ids keep``: case kept).
ID_FORM = "keep"
#: A user is "near the budget" from this fraction of it on.
NEAR_BUDGET = 0.9
#: Relative tolerance of the budget check (sums of ε in floating point: 0.1 + 0.2 > 0.3).
BUDGET_TOLERANCE = 1e-9

#: Every release's row as :meth:`Ledger.record_of` reads it.
_SELECT_RECORDS = (
    "SELECT release_id, request, kind, created, namespace, epsilon, accounting, n_users, "
    "max_charge, body FROM releases"
)


class Ledger(Store):
    """The SQLite ledger of published releases (see the module docstring).

    Parameters
    ----------
    path : str or path-like, optional
        Ledger file; default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.sqlite``.
    key : bytes, optional
        Its secret key; default ``$HEXPLORER_LEDGER_KEY`` or ``<ledger>.key`` (made with it).
    """

    # ---------------------------------------------------------------------------------------
    # Reading

    def summary(self, namespace: str | None = None) -> Summary:
        """Releases, users and the largest cumulative ε of any user in the ledger; the budget of
        ``namespace`` (default ``"default"``) and its users near it."""
        ns = check_namespace(namespace)
        with self.connect(create=False) as con:
            if con is None:
                return Summary(
                    releases=0, users=0, max_user_epsilon=0.0, budget=None, users_near_budget=0
                )
            with self.guard():
                return self._summary(con, ns)

    def _summary(self, con: sqlite3.Connection, namespace: str) -> Summary:
        budget = self._budget(con, namespace)
        n_rel = con.execute("SELECT count(*) FROM releases").fetchone()[0]
        n_users, top = con.execute("SELECT count(*), max(epsilon) FROM users").fetchone()
        near = 0
        if budget is not None:
            near = con.execute(
                "SELECT count(*) FROM users WHERE namespace = ? AND epsilon >= ?",
                (namespace, NEAR_BUDGET * budget),
            ).fetchone()[0]
        return Summary(
            releases=int(n_rel),
            users=int(n_users),
            max_user_epsilon=float(top or 0.0),
            budget=budget,
            users_near_budget=int(near),
        )

    def namespaces(self) -> list[dict]:
        """Every namespace with a budget or users: its budget, users, largest user ε, users near
        the budget, releases; sorted by name."""
        with self.connect(create=False) as con:
            if con is None:
                return []
            with self.guard():
                return self._namespaces(con)

    def _namespaces(self, con: sqlite3.Connection) -> list[dict]:
        rows = con.execute(
            "SELECT n.namespace, b.budget, coalesce(u.n, 0), coalesce(u.top, 0), "
            "coalesce(r.n, 0), i.ids FROM (SELECT namespace FROM budgets UNION SELECT namespace "
            "FROM users UNION SELECT namespace FROM releases) n "
            "LEFT JOIN budgets b ON b.namespace = n.namespace "
            "LEFT JOIN namespace_ids i ON i.namespace = n.namespace "
            "LEFT JOIN (SELECT namespace, count(*) AS n, max(epsilon) AS top FROM users "
            "GROUP BY namespace) u ON u.namespace = n.namespace "
            "LEFT JOIN (SELECT namespace, count(*) AS n FROM releases GROUP BY namespace) r "
            "ON r.namespace = n.namespace ORDER BY n.namespace"
        ).fetchall()
        out = []
        for ns, budget, users, top, releases, ids in rows:
            near = 0
            if budget is not None:
                near = con.execute(
                    "SELECT count(*) FROM users WHERE namespace = ? AND epsilon >= ?",
                    (ns, NEAR_BUDGET * budget),
                ).fetchone()[0]
            out.append(
                {
                    "namespace": ns,
                    "budget": budget,
                    "users": int(users),
                    "max_user_epsilon": float(top),
                    "users_near_budget": int(near),
                    "releases": int(releases),
                    "ids": ids,
                }
            )
        return out

    def _budget(self, con: sqlite3.Connection, namespace: str) -> float | None:
        row = con.execute("SELECT budget FROM budgets WHERE namespace = ?", (namespace,)).fetchone()
        return None if row is None else float(row[0])

    def budget(self, namespace: str | None = None) -> float | None:
        """The budget of ``namespace`` (default ``"default"``), or None."""
        ns = check_namespace(namespace)
        with self.connect(create=False) as con:
            if con is None:
                return None
            with self.guard():
                return self._budget(con, ns)

    def budget_changes(self) -> list[dict]:
        """The budgets' audit trail, oldest first: at, namespace, budget, previous, reason."""
        with self.connect(create=False) as con:
            if con is None:
                return []
            with self.guard():
                return self._budget_changes(con)

    @staticmethod
    def _budget_changes(con: sqlite3.Connection) -> list[dict]:
        rows = con.execute(
            "SELECT at, namespace, budget, previous, reason FROM budget_changes ORDER BY seq"
        ).fetchall()
        names = ("at", "namespace", "budget", "previous", "reason")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def records(self, kind: str | None = None) -> list[Record]:
        """Every recorded release (of one ``kind`` if given), oldest first."""
        with self.connect(create=False) as con:
            if con is None:
                return []
            with self.guard():
                sql = _SELECT_RECORDS
                args: tuple = ()
                if kind is not None:
                    sql += " WHERE kind = ?"
                    args = (kind,)
                rows = con.execute(sql + " ORDER BY seq", args).fetchall()
        return [self.record_of(row) for row in rows]

    def find(self, request: str) -> Record | None:
        """The recorded release of this request key, if any (no lock taken)."""
        with self.connect(create=False) as con:
            if con is None:
                return None
            with self.guard():
                return self._find(con, request)

    def _find(self, con: sqlite3.Connection, request: str) -> Record | None:
        row = con.execute(_SELECT_RECORDS + " WHERE request = ?", (request,)).fetchone()
        return None if row is None else self.record_of(row)

    def record_of(self, row: Sequence) -> Record:
        """A :class:`Record` from a row of ``_SELECT_RECORDS`` (a damaged body: one line)."""
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
        with self.connect(create=False) as con:
            if con is None:
                return np.zeros(0)
            with self.guard():
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
        with self.connect(create=False) as con:
            if con is None:
                return np.zeros(len(user_ids))
            with self.guard():
                hashes = self.hashes(con, namespace, user_ids)
                known = dict(
                    con.execute(
                        "SELECT hash, epsilon FROM users WHERE namespace = ?", (namespace,)
                    ).fetchall()
                )
        return np.asarray([known.get(h, 0.0) for h in hashes], dtype=np.float64)

    def user_hashes(self, namespace: str, user_ids: Sequence) -> list[str]:
        """The keyed hash of each user id within ``namespace`` (creates the ledger if needed)."""
        with self.connect(create=True) as con:
            assert con is not None
            with self.guard():
                return self.hashes(con, namespace, user_ids)

    def seal(self, fingerprint: str) -> str:
        """A data fingerprint keyed with the ledger's key (creates the ledger if needed): what
        request keys and release bodies hold, never the unkeyed digest of true values."""
        with self.connect(create=True):
            return keys.seal(self._load_key(create=False), fingerprint)

    def check(self) -> None:
        """SQLite's integrity check, and every user's total equal to the sum of its charges."""
        from core.publish import audit

        audit.check(self)

    def export(self) -> dict:
        """The ledger for an auditor (:func:`core.publish.audit.export`)."""
        from core.publish import audit

        return audit.export(self)

    # ---------------------------------------------------------------------------------------
    # Budgets

    def set_budget(
        self,
        budget: float,
        *,
        namespace: str | None = None,
        reason: str | None = None,
        raising: bool = False,
    ) -> float:
        """Set the budget of ``namespace`` (default ``"default"``); returns the budget after.

        The first budget of a namespace, and any lower one, need nothing more; a higher one
        needs ``raising=True`` and a ``reason``. Every change is kept with its time and reason.

        Raises
        ------
        HexplorerError
            A budget that is not a positive finite ε, or a raise without ``raising`` and a reason.
        """
        value = check_epsilon(budget)
        ns = check_namespace(namespace)
        if raising and (reason is None or not reason.strip()):
            raise HexplorerError("Raising a budget needs --reason TEXT (kept in the audit trail).")
        with self.connect(create=True) as con:
            assert con is not None
            with self.guard(), self.transaction(con):
                previous = self._budget(con, ns)
                if previous is not None and value > previous * (1.0 + BUDGET_TOLERANCE):
                    if not raising:
                        raise HexplorerError(
                            f"The budget of namespace {ns!r} is eps = {previous:g}; only its "
                            f"operator raises it: hexplorer ledger set-budget {value:g} --raise "
                            "--reason TEXT."
                        )
                if previous != value:
                    why = reason.strip() if reason else ("set" if previous is None else "lowered")
                    self._change_budget(con, ns, value, previous, why)
        return value

    @staticmethod
    def _change_budget(con, namespace: str, value: float, previous, reason: str) -> None:
        con.execute("INSERT OR REPLACE INTO budgets VALUES (?, ?)", (namespace, value))
        con.execute(
            "INSERT INTO budget_changes (at, namespace, budget, previous, reason) "
            "VALUES (?, ?, ?, ?, ?)",
            (now(), namespace, value, previous, reason),
        )

    def confirm_budget(self, budget: float, namespace: str | None = None) -> float:
        """A publishing command's ``--budget``: sets the namespace's first budget or lowers it;
        a value above it is refused in one line (raising is :meth:`set_budget`'s, with a reason).
        """
        value = check_epsilon(budget)
        ns = check_namespace(namespace)
        with self.connect(create=True) as con:
            assert con is not None
            with self.guard(), self.transaction(con):
                self._confirm_in(con, ns, value)
        return value

    def _confirm_in(self, con: sqlite3.Connection, namespace: str, value: float) -> None:
        current = self._budget(con, namespace)
        if current is not None and value > current * (1.0 + BUDGET_TOLERANCE):
            raise HexplorerError(
                f"--budget {value:g} is above the budget eps = {current:g} of namespace "
                f"{namespace!r}: a publishing command can only confirm or lower it (the operator "
                f"raises it with hexplorer ledger set-budget {value:g} --raise --reason TEXT)."
            )
        if current != value:
            verb = "set" if current is None else "lowered"
            self._change_budget(con, namespace, value, current, f"{verb} by a publishing command")

    # ---------------------------------------------------------------------------------------
    # Recording

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
        before_commit: Callable[[Record], None] | None = None,
        id_form: str = ID_FORM,
    ) -> Outcome:
        """The release recorded under ``request``, or a new one drawn by ``draw()`` and charged.

        In one ``BEGIN IMMEDIATE`` transaction: ``budget`` (if given) confirms, sets (the
        namespace's first) or lowers the namespace's budget (:meth:`confirm_budget`). If
        ``request`` is recorded, it is the outcome (no charge, no budget check). Otherwise, if some user's
        total plus its charge would pass the namespace's budget, :class:`BudgetExceeded` (nothing
        recorded). Else ``draw()`` gives the release body, recorded with ``charges[i]`` charged
        to ``user_ids[i]`` (distinct ids). ``before_commit(record)`` runs last, inside the
        transaction (e.g. writing the output file to a temporary name): if it raises, nothing
        is recorded.

        Raises
        ------
        BudgetExceeded
            The request would take users past the budget (nothing recorded).
        HexplorerError
            A damaged ledger, an unwritable file, a budget above the namespace's, or an error
            from ``draw`` or ``before_commit`` (nothing recorded, no budget changed).
        """
        charges = np.asarray(charges, dtype=np.float64)
        if charges.shape != (len(user_ids),) or not np.all(np.isfinite(charges)):
            raise HexplorerError("charges must hold one finite ε per user")
        limit = None if budget is None else check_epsilon(budget)
        with self.connect(create=True) as con:
            assert con is not None
            with self.guard():
                hashes = self.hashes(con, namespace, user_ids)
                with self.transaction(con):
                    if limit is not None:
                        self._confirm_in(con, namespace, limit)
                    self._check_ids(con, namespace, id_form)
                    outcome = self._record_in(
                        con, request, kind, namespace, epsilon, accounting, hashes, charges, draw
                    )
                    if before_commit is not None:
                        before_commit(outcome.record)
        return outcome

    def _record_in(
        self, con, request, kind, namespace, epsilon, accounting, hashes, charges, draw
    ) -> Outcome:
        found = self._find(con, request)
        if found is not None:
            return Outcome(record=found, reused=True, summary=self._summary(con, namespace))
        con.execute(
            "CREATE TEMP TABLE IF NOT EXISTS req (pos INTEGER PRIMARY KEY, hash TEXT UNIQUE, "
            "charge REAL)"
        )
        con.execute("DELETE FROM req")
        con.executemany(
            "INSERT INTO req VALUES (?, ?, ?)",
            zip(range(len(hashes)), hashes, charges.tolist(), strict=True),
        )
        limit = self._budget(con, namespace)
        if limit is not None:
            self._check_budget(con, namespace, limit, epsilon, charges)
        warnings = self._new_namespace_warnings(con, namespace)
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
        return Outcome(
            record=record,
            reused=False,
            summary=self._summary(con, namespace),
            warnings=tuple(warnings),
        )

    @staticmethod
    def _check_ids(con: sqlite3.Connection, namespace: str, ids: str) -> None:
        """The namespace's id form: recorded by its first release, the same for every other."""
        row = con.execute(
            "SELECT ids FROM namespace_ids WHERE namespace = ?", (namespace,)
        ).fetchone()
        if row is None:
            con.execute("INSERT INTO namespace_ids VALUES (?, ?)", (namespace, ids))
        elif row[0] != ids:
            raise HexplorerError(
                f"Namespace {namespace!r} holds ids read with --ids {row[0]}; this release's are "
                f"--ids {ids}, so one user could count as two: publish with --ids {row[0]} or "
                "into another namespace."
            )

    def _check_budget(self, con, namespace: str, limit: float, epsilon: float, charges) -> None:
        """Raise :class:`BudgetExceeded` if a user of ``req`` would pass ``limit``: how many,
        the largest ε they would reach, and the largest ε of this request that would fit."""
        totals = np.asarray(
            [
                t
                for (t,) in con.execute(
                    "SELECT coalesce(u.epsilon, 0) FROM req r LEFT JOIN users u "
                    "ON u.namespace = ? AND u.hash = r.hash ORDER BY r.pos",
                    (namespace,),
                )
            ],
            dtype=np.float64,
        )
        after = totals + charges
        over = np.flatnonzero(after > limit * (1.0 + BUDGET_TOLERANCE))
        if over.size == 0:
            return
        per_eps = charges / float(epsilon)  # the charges scale with ε (same HATs, same users)
        room = (limit - totals) / np.where(per_eps > 0, per_eps, 1.0)
        fit = float(np.min(room[per_eps > 0])) if np.any(per_eps > 0) else math.inf
        if fit < 1e-6 * limit:  # within the tolerance of the budget: nothing left to spend
            fit = 0.0
        raise BudgetExceeded(
            over=over,
            n_users=int(charges.size),
            largest=float(after[over].max()),
            budget=limit,
            namespace=namespace,
            epsilon_fit=max(fit, 0.0),
        )

    def _new_namespace_warnings(self, con, namespace: str) -> list[str]:
        """A warning when this release opens ``namespace`` for users charged in another one
        (matched by keyed hash: one user has one hash in every namespace of a native ledger)."""
        if con.execute("SELECT 1 FROM users WHERE namespace = ? LIMIT 1", (namespace,)).fetchone():
            return []
        (n,) = con.execute(
            "SELECT count(DISTINCT r.hash) FROM req r JOIN users u ON u.hash = r.hash "
            "AND u.namespace != ?",
            (namespace,),
        ).fetchone()
        if not n:
            return []
        names = con.execute(
            "SELECT DISTINCT u.namespace FROM req r JOIN users u ON u.hash = r.hash "
            "AND u.namespace != ? ORDER BY u.namespace",
            (namespace,),
        ).fetchall()
        others = ", ".join(repr(str(name)) for (name,) in names)
        return [
            f"namespace {namespace!r} is new, but {n} of this release's users are already "
            f"charged in namespace {others} (same keyed ids): their budget there does not cover "
            "this release. Publish with that --namespace if they are the same people."
        ]
