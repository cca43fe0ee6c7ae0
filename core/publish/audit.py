"""Checking a ledger and exporting it for an auditor (``hexplorer ledger --check``, ``--export``).

The export is what an auditor may be handed: every release with what it cost each (keyed-hash)
user, the users' totals, the namespaces with their budgets and the budgets' history with times
and reasons. It holds no key, no key check value, no salt, no file path (a recorded dataset is
its file name only) and no unkeyed digest of a true value: the data fingerprints in the request
keys and bodies are keyed (:func:`core.publish.keys.seal`), so they cannot be checked against
guessed data without the key.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import PurePath
from typing import Any

from core.errors import HexplorerError
from core.publish.store import FORMAT, LEDGER_VERSION

#: A :class:`core.publish.ledger.Ledger` (which imports this module when asked to check or
#: export; typed loosely here so that the two modules do not import each other).
Ledger = Any

#: Settings never exported (secret, or of use to an attacker only).
PRIVATE_SETTINGS = ("salt", "key_check")


def check(book: Ledger) -> None:
    """SQLite's integrity check, and every user's total equal to the sum of its charges, and
    every release's charges as many as its users.

    Raises
    ------
    HexplorerError
        The file is damaged or the totals disagree with the charges.
    """
    with book.connect(create=False) as con:
        if con is None:
            return
        with book.guard():
            _check(book, con)


def _check(book: Ledger, con: sqlite3.Connection) -> None:
    result = con.execute("PRAGMA integrity_check").fetchall()
    if result != [("ok",)]:
        raise HexplorerError(f"Ledger {book.path} fails SQLite's integrity check ({result[0][0]}).")
    bad = con.execute(
        "SELECT count(*) FROM users u LEFT JOIN (SELECT user, sum(epsilon) AS e "
        "FROM charges GROUP BY user) c ON c.user = u.id "
        "WHERE abs(u.epsilon - coalesce(c.e, 0)) > 1e-9 * max(1, u.epsilon)"
    ).fetchone()[0]
    if bad:
        raise HexplorerError(f"Ledger {book.path}: {bad} user totals disagree with their charges.")
    partial = con.execute(
        "SELECT count(*) FROM releases r LEFT JOIN (SELECT seq, count(*) AS n FROM charges "
        "GROUP BY seq) c ON c.seq = r.seq WHERE coalesce(c.n, 0) != r.n_users"
    ).fetchone()[0]
    if partial:
        raise HexplorerError(
            f"Ledger {book.path}: {partial} releases have charges for other than their users."
        )


def _public_body(body: dict) -> dict:
    out = dict(body)
    if isinstance(out.get("dataset"), str):
        out["dataset"] = PurePath(out["dataset"]).name  # a name, never where it lives
    return out


def export(book: Ledger) -> dict:
    """The whole ledger as JSON-ready data for an auditor (see the module docstring)."""
    from core.publish.records import DEFAULT_NAMESPACE

    with book.connect(create=False) as con:
        if con is None:
            return {
                "format": FORMAT,
                "schema": LEDGER_VERSION,
                "settings": {},
                "namespaces": [],
                "budget_changes": [],
                "releases": [],
                "users": [],
            }
        with book.guard():
            settings = dict(con.execute("SELECT key, value FROM settings").fetchall())
            for name in PRIVATE_SETTINGS:
                settings.pop(name, None)
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
            summary = book._summary(con, DEFAULT_NAMESPACE)
            namespaces = book._namespaces(con)
            budget_changes = book._budget_changes(con)
    releases = []
    for row in rows:
        rec = book.record_of(row[1:])
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
                "body": _public_body(rec.body),
                "charges": charges.get(row[0], []),
            }
        )
    return {
        "format": FORMAT,
        "schema": LEDGER_VERSION,
        "settings": settings,
        "summary": summary.as_dict(),
        "namespaces": namespaces,
        "budget_changes": budget_changes,
        "releases": releases,
        "users": [{"namespace": ns, "user": h, "epsilon": e} for ns, h, e in users.values()],
    }
