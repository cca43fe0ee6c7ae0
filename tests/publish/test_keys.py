"""Ids nobody can reverse from the ledger alone (issue 26): the key outside the file, the ledger
refused without it or with another, the dictionary attack of 10⁶ ship MMSIs against a copied
ledger (which recovers every id from a schema 2 ledger, and nothing after ``ledger migrate``),
and an audit export with no key, no path and no unkeyed digest of true values."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat

import numpy as np
import pytest

from core import publish
from core.cli import main
from core.errors import HexplorerError
from core.hat import HatData
from core.publish import Ledger, keys
from core.publish.records import fingerprint

U = 30.0
#: The candidate MMSIs of the attack: 10⁶ nine-digit ids starting 366 (US ships).
FIRST, N_CANDIDATES = 366_000_000, 1_000_000


def _fleet(n: int = 40, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return [str(FIRST + int(v)) for v in rng.choice(N_CANDIDATES, size=n, replace=False)]


def _hat(ids, label="c/s", sums=None) -> HatData:
    counts = [1 + i % 4 for i in range(len(ids))]
    sums = [5.0 * c for c in counts] if sums is None else sums
    return HatData.from_arrays(counts, sums, user_ids=list(ids), upper=U, hat=label)


def _stored_hashes(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {h for (h,) in con.execute("SELECT hash FROM users")}
    finally:
        con.close()


def _settings(path) -> dict[str, str]:
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT key, value FROM settings"))
    finally:
        con.close()


def _dictionary_attack(stored: set[str], settings: dict[str, str]) -> set[str]:
    """What an attacker holding the file recovers: every candidate MMSI whose digest under an
    unkeyed scheme the file suggests is among the stored hashes: SHA-256 of the id with the
    ledger's prefix (or salted as schema 2 was, with the file's salt), and HMAC keyed by any
    setting of the file (a key hidden in plain sight)."""
    prefix = b"hexplorer-user\x00"
    if "salt" in settings:
        prefix = bytes.fromhex(settings["salt"]) + b"default\x00"
    sha = hashlib.sha256
    found = {
        c
        for c, d in zip(
            _CANDIDATES, [sha(prefix + c).hexdigest() for c in _CANDIDATES], strict=True
        )
        if d in stored
    }
    for value in settings.values():
        hashes = keys.user_hashes(value.encode(), [c.decode() for c in _CANDIDATES[:1000]])
        found |= {c for c, h in zip(_CANDIDATES, hashes, strict=False) if h in stored}
    return {c.decode() for c in found}


_CANDIDATES = [str(FIRST + i).encode() for i in range(N_CANDIDATES)]


def _as_schema_2(path, ids_by_namespace: dict[str, list[str]], fps: list[str], budget=None):
    """Rewrite a fresh ledger as hexplorer <= 0.2's schema 2 wrote it: users as SHA-256(salt ‖
    namespace ‖ 0 ‖ id) with the salt in the file, request keys and bodies with the unkeyed
    data fingerprint, one ledger-wide budget setting, budget_changes (at, budget)."""
    book = Ledger(path)
    salt = "ab" * 32
    con = sqlite3.connect(path)
    with con:
        for ns, ids in ids_by_namespace.items():
            new = book.user_hashes(ns, ids)
            old = keys.salted_digests(salt, ns, ids)
            con.executemany(
                "UPDATE users SET hash = ? WHERE hash = ? AND namespace = ?",
                [(o, n, ns) for o, n in zip(old, new, strict=True)],
            )
        for fp in fps:
            sealed = book.seal(fp)
            for seq, req, body in con.execute("SELECT seq, request, body FROM releases").fetchall():
                con.execute(
                    "UPDATE releases SET request = ?, body = ? WHERE seq = ?",
                    (req.replace(sealed, fp), body.replace(sealed, fp), seq),
                )
        con.execute("DROP TABLE budgets")
        con.execute("DROP TABLE budget_changes")
        con.execute("CREATE TABLE budget_changes (at TEXT NOT NULL, budget REAL)")
        con.execute("DELETE FROM settings WHERE key IN ('key_check', 'ids')")
        con.execute("UPDATE settings SET value = '2' WHERE key = 'schema'")
        con.execute("INSERT INTO settings VALUES ('salt', ?)", (salt,))
        if budget is not None:
            con.execute("INSERT INTO settings VALUES ('budget', ?)", (repr(budget),))
            con.execute(
                "INSERT INTO budget_changes VALUES ('2026-01-01T00:00:00+00:00', ?)", (budget,)
            )
    con.execute("VACUUM")
    con.close()
    book.key_file.unlink()  # schema 2 had no key


# ---------------------------------------------------------------------------------------------
# The key


def test_the_key_file_is_made_beside_the_ledger_owner_only(tmp_path):
    book = Ledger(tmp_path / "l.sqlite")
    publish.publish("baseline", _hat(_fleet(5)), 1.0, ledger=book)
    assert book.key_file == tmp_path / "l.sqlite.key"
    assert stat.S_IMODE(book.key_file.stat().st_mode) == 0o600
    assert book.key_file.read_bytes() not in book.path.read_bytes()
    assert len(bytes.fromhex(book.key_file.read_text().strip())) == 32


def test_a_ledger_refuses_to_open_without_its_key_or_with_another(tmp_path, monkeypatch):
    book = Ledger(tmp_path / "l.sqlite")
    publish.publish("baseline", _hat(_fleet(5)), 1.0, ledger=book)
    copy = tmp_path / "stolen" / "l.sqlite"
    copy.parent.mkdir()
    shutil.copy(book.path, copy)
    for call in (
        lambda: Ledger(copy).summary(),
        lambda: publish.publish("baseline", _hat(_fleet(5)), 1.0, ledger=copy),
    ):
        with pytest.raises(HexplorerError, match="cannot be opened without its key") as info:
            call()
        assert "\n" not in str(info.value)
    assert not keys.key_path(copy).exists()  # no fresh key (and fresh budgets) for an old file
    with pytest.raises(HexplorerError, match="made with another key"):
        Ledger(book.path, key=b"k" * 32).summary()
    monkeypatch.setenv(keys.KEY_ENV, "x" * 40)
    with pytest.raises(HexplorerError, match=r"another key than \$HEXPLORER_LEDGER_KEY"):
        Ledger(book.path).summary()
    monkeypatch.setenv(keys.KEY_ENV, "short")
    with pytest.raises(HexplorerError, match="at least 32 characters"):
        Ledger(tmp_path / "new.sqlite").user_hashes("default", ["a"])


def test_the_key_from_the_environment_makes_no_key_file(tmp_path, monkeypatch):
    monkeypatch.setenv(keys.KEY_ENV, "k" * 64)
    book = Ledger(tmp_path / "l.sqlite")
    publish.publish("baseline", _hat(_fleet(5)), 1.0, ledger=book)
    assert not book.key_file.exists()
    monkeypatch.delenv(keys.KEY_ENV)
    with pytest.raises(HexplorerError, match="without its key"):
        Ledger(book.path).summary()
    assert Ledger(book.path, key=b"k" * 64).summary().releases == 1


def test_a_key_file_others_may_read_is_refused(tmp_path):
    book = Ledger(tmp_path / "l.sqlite")
    publish.publish("baseline", _hat(_fleet(5)), 1.0, ledger=book)
    os.chmod(book.key_file, 0o644)
    with pytest.raises(HexplorerError, match="chmod 600"):
        Ledger(book.path).summary()


# ---------------------------------------------------------------------------------------------
# The dictionary attack on a copied ledger


@pytest.mark.slow
def test_a_copied_ledger_resists_a_million_guessed_mmsis_and_a_schema_2_one_does_not(tmp_path):
    ids = _fleet()
    hat = _hat(ids)
    path = tmp_path / "l.sqlite"
    publish.publish("baseline", hat, 1.0, ledger=path, budget=5.0)
    stored = _stored_hashes(path)
    assert len(stored) == len(ids)
    assert _dictionary_attack(stored, _settings(path)) == set()
    unkeyed = {hashlib.sha256(b"hexplorer-user\x00" + i.encode()).hexdigest() for i in ids}
    assert _dictionary_attack(unkeyed, _settings(path)) == set(ids)  # the attack can succeed
    # the same attack on the same ledger as schema 2 stored it: every ship recovered
    old = tmp_path / "old.sqlite"
    publish.publish("baseline", hat, 1.0, ledger=old, budget=5.0)
    _as_schema_2(old, {"default": ids}, [fingerprint(hat)], budget=5.0)
    assert _dictionary_attack(_stored_hashes(old), _settings(old)) == set(ids)
    # migrated once, it resists too (and the freed pages no longer hold the old digests)
    out = publish.Ledger(old)
    with pytest.raises(HexplorerError, match="ledger migrate") as info:
        out.summary()
    assert "\n" not in str(info.value)
    from core.publish.migrate import migrate

    report = migrate(out)
    assert report["users"] == len(ids) and report["releases"] == 1
    assert _dictionary_attack(_stored_hashes(old), _settings(old)) == set()
    raw = old.read_bytes()
    assert not any(d.encode() in raw for d in keys.salted_digests("ab" * 32, "default", ids))


def test_migration_keeps_the_accounting_reuse_and_budget(tmp_path, capsys):
    ids = _fleet(12)
    hat, other = _hat(ids), _hat(ids[:6], label="d/s")
    path = tmp_path / "l.sqlite"
    first = publish.publish("baseline", hat, 1.0, ledger=path)
    publish.publish("baseline", other, 0.5, ledger=path, namespace="taxis")
    _as_schema_2(
        path, {"default": ids, "taxis": ids[:6]}, [fingerprint(hat), fingerprint(other)], budget=2.0
    )
    status = main(["ledger", "migrate", "--ledger", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0 and out["users"] == 18 and out["key"] == str(keys.key_path(path))
    assert {n["namespace"]: n["budget"] for n in out["namespaces"]} == {
        "default": 2.0,
        "taxis": 2.0,
    }
    book = Ledger(path)
    book.check()
    again = publish.publish("baseline", hat, 1.0, ledger=book)  # the same request: reused
    assert again.reused and again.release.estimate == first.release.estimate
    np.testing.assert_allclose(book.user_totals("default", ids), [1.0] * 12)
    np.testing.assert_allclose(book.user_totals("taxis", ids[:6]), [0.5] * 6)
    more = publish.publish("levy", hat, 1.0, ledger=book)  # new request, same users: 2.0
    assert not more.reused
    np.testing.assert_allclose(book.user_totals("default", ids), [2.0] * 12)
    with pytest.raises(publish.BudgetExceeded):
        publish.publish("arrayavg-best", hat, 0.1, ledger=book)
    assert main(["ledger", "migrate", "--ledger", str(path)]) == 2
    assert "already has keyed ids" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The audit export


def test_the_export_has_no_key_no_path_and_no_unkeyed_digest_of_true_values(tmp_path, capsys):
    """Knowing 19 of 20 buses' sums, an attacker of today's export recovers the 20th from the
    unkeyed fingerprint by trying its possible sums; the keyed one matches no guess."""
    ids = [f"bus-{i}" for i in range(20)]
    sums = [10.0 * (1 + i % 4) for i in range(20)]
    hat = _hat(ids, sums=sums)
    data = tmp_path / "secret-folder" / "buses.csv"
    path = tmp_path / "l.sqlite"
    publish.publish("baseline", hat, 1.0, ledger=path, dataset=str(data), budget=3.0)
    target = tmp_path / "audit.json"
    assert main(["ledger", "--ledger", str(path), "--export", str(target)]) == 0
    text = target.read_text()
    exported = json.loads(text)
    key = keys.key_path(path).read_text().strip()
    for secret in (key, keys.key_check(bytes.fromhex(key)), "secret-folder", str(tmp_path)):
        assert secret not in text
    assert exported["releases"][0]["body"]["dataset"] == "buses.csv"
    assert "salt" not in exported["settings"] and "key_check" not in exported["settings"]
    # what each release cost each hashed user, the totals, the budget history
    (rel,) = exported["releases"]
    assert sorted(c["epsilon"] for c in rel["charges"]) == [1.0] * 20
    assert [c["budget"] for c in exported["budget_changes"]] == [3.0]
    assert exported["namespaces"][0]["budget"] == 3.0
    # the attack: every guess of the last bus's sum, fingerprinted as the data was
    counts = [1 + i % 4 for i in range(20)]
    guesses = np.arange(0.0, counts[19] * U + 1e-9, 0.25)
    digests = set()
    for guess in guesses:
        trial = _hat(ids, sums=[*sums[:19], float(guess)])
        digests.add(fingerprint(trial))
    assert fingerprint(hat) in digests  # the attack works on an unkeyed fingerprint
    assert not digests & set(_hex_strings(exported))


def _hex_strings(obj) -> list[str]:
    """Every string in a JSON value (fingerprints among them)."""
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _hex_strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _hex_strings(v)]
    return [obj] if isinstance(obj, str) else []


def test_migrate_refuses_what_it_cannot_migrate_in_one_line(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert main(["ledger", "migrate", "--ledger", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "does not exist; nothing to migrate" in err and err.count("\n") == 1
    assert not missing.exists() and not keys.key_path(missing).exists()
