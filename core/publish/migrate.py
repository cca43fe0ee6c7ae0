"""``hexplorer ledger migrate``: a schema 2 ledger (unkeyed salted ids) upgraded in place.

Schema 2 stored each user id as SHA-256(salt ‖ namespace ‖ 0 ‖ id) with the salt in the same
file, so anyone holding the file could test guessed ids (10⁶ ship MMSIs in a second). The ids
themselves are gone, so HMAC(key, id) cannot be computed for them; the migration keys what the
ledger holds instead: each user's hash becomes HMAC-SHA-256(key, old digest), each data
fingerprint is sealed with the key (:func:`core.publish.keys.seal`), and the ledger is marked
``ids = hmac-of-salted-sha256`` so that later releases hash new ids the same way (the salt stays,
useless without the key). Budgets, charges and releases are kept: the old ledger-wide budget
becomes the budget of every namespace, and its history is kept in the audit trail.

All in one transaction; then the file is vacuumed (with ``secure_delete``) so that the freed
pages no longer hold the old digests. Copies and backups of the old file still do: delete them.
A migrated ledger matches users across namespaces only within one namespace (the old digests
depend on it), so its cross-namespace warning never fires.
"""

from __future__ import annotations

import json
import re

from core.errors import HexplorerError
from core.publish import keys
from core.publish.records import DEFAULT_NAMESPACE, now
from core.publish.store import LEDGER_VERSION, SCHEMA, Store, run_script

_HEX64 = re.compile(r"[0-9a-f]{64}")


def migrate(store: Store) -> dict:
    """Upgrade the schema 2 ledger ``store`` in place (see the module docstring).

    Returns
    -------
    dict
        ``users`` and ``releases`` re-keyed, ``namespaces`` given the old budget, ``key`` (where
        the key lives: the key file's path or the environment variable).

    Raises
    ------
    HexplorerError
        No ledger, not a schema 2 ledger (a schema 3 one is already keyed), a damaged file.
    """
    if not store.exists():
        raise HexplorerError(f"Ledger {store.path} does not exist; nothing to migrate.")
    con = store.open_raw()
    try:
        with store.guard():
            schema = store.check_version(con, migrating=True)
            if schema != "2":
                raise HexplorerError(
                    f"Ledger {store.path} already has keyed ids (schema {schema})."
                )
            key = store._load_key(create=True)
            con.execute("PRAGMA secure_delete=ON")
            with store.transaction(con):
                out = _rekey(con, key)
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("VACUUM")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    where = f"${keys.KEY_ENV}" if store._given_key is None and _env_key() else str(store.key_file)
    return {**out, "key": where}


def _env_key() -> bool:
    import os

    return bool(os.environ.get(keys.KEY_ENV))


def _rekey(con, key: bytes) -> dict:
    if Store.setting(con, "schema") != "2":  # another process migrated it meanwhile
        raise HexplorerError("The ledger was migrated meanwhile; nothing to do.")
    users = con.execute("SELECT id, hash FROM users").fetchall()
    con.executemany(
        "UPDATE users SET hash = ? WHERE id = ?", [(keys.rekey(key, h), i) for i, h in users]
    )
    releases = con.execute("SELECT seq, request, body FROM releases").fetchall()
    updates = []
    for seq, request, body in releases:
        req = json.loads(request)
        if isinstance(req, list) and len(req) > 1 and _HEX64.fullmatch(str(req[1])):
            req[1] = keys.seal(key, req[1])
        data = json.loads(body)
        if isinstance(data, dict) and isinstance(data.get("fingerprint"), str):
            data["fingerprint"] = keys.seal(key, data["fingerprint"])
        updates.append((json.dumps(req), json.dumps(data, allow_nan=False, sort_keys=True), seq))
    con.executemany("UPDATE releases SET request = ?, body = ? WHERE seq = ?", updates)
    old_history = con.execute("SELECT at, budget FROM budget_changes ORDER BY rowid").fetchall()
    con.execute("DROP TABLE budget_changes")
    run_script(con, SCHEMA)
    con.executemany(
        "INSERT INTO budget_changes (at, namespace, budget, previous, reason) "
        "VALUES (?, '*', ?, NULL, 'ledger-wide budget (schema 2 history)')",
        old_history,
    )
    row = con.execute("SELECT value FROM settings WHERE key = 'budget'").fetchone()
    budget = None if row is None or row[0] == "" else float(row[0])
    names: list[str] = []
    if budget is not None:
        names = sorted(
            {DEFAULT_NAMESPACE}
            | {n for (n,) in con.execute("SELECT DISTINCT namespace FROM users")}
            | {n for (n,) in con.execute("SELECT DISTINCT namespace FROM releases")}
        )
        for ns in names:
            con.execute("INSERT INTO budgets VALUES (?, ?)", (ns, budget))
            con.execute(
                "INSERT INTO budget_changes (at, namespace, budget, previous, reason) "
                "VALUES (?, ?, ?, NULL, 'migrated from the schema 2 ledger-wide budget')",
                (now(), ns, budget),
            )
    con.execute("DELETE FROM settings WHERE key = 'budget'")
    for name, value in (
        ("schema", str(LEDGER_VERSION)),
        ("ids", "hmac-of-salted-sha256"),
        ("key_check", keys.key_check(key)),
        ("migrated", now()),
    ):
        con.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (name, value))
    return {"users": len(users), "releases": len(releases), "namespaces": names}
