"""The ledger (SPEC section 7): per-user accounting, namespaces, salted hashes, the budget, damaged
and old files, the audit export, and the three-resolution repro of issue 8 through the CLI."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from core import publish
from core.cli import main
from core.errors import HexplorerError
from core.hat import HatData
from core.publish import BudgetExceeded, Ledger

U = 10.0
IDS = ["bus-7731-alpha", "bus-7731-bravo", "bus-7731-charlie", "bus-7731-delta"]


def _hat(ids=IDS, upper=U, label="cell/slot") -> HatData:
    counts = [4, 3, 2, 1][: len(ids)]
    sums = [20.0, 9.0, 4.0, 1.0][: len(ids)]
    return HatData.from_arrays(counts, sums, user_ids=list(ids), upper=upper, hat=label)


@pytest.fixture
def book(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


def _row_counts(path) -> tuple[int, int, int]:
    con = sqlite3.connect(path)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("releases", "charges", "users")
        )
    finally:
        con.close()


def test_a_missing_ledger_reads_as_empty_and_is_not_created(book):
    assert book.summary().as_dict() == {
        "releases": 0,
        "users": 0,
        "max_user_epsilon": 0.0,
        "budget": None,
        "users_near_budget": 0,
    }
    assert book.records() == [] and book.user_epsilons().size == 0
    assert not book.path.exists()


def test_the_same_users_under_other_labels_add_up(book):
    """Other resolution (HAT label), U changed by 1e-6, another mechanism: the same people."""
    publish.publish("baseline", _hat(label="a7/s"), 1.0, ledger=book)
    publish.publish("baseline", _hat(label="a8/s"), 1.0, ledger=book)
    out = publish.publish("baseline", _hat(label="a8/s", upper=U + 1e-6), 1.0, ledger=book)
    assert not out.reused
    np.testing.assert_allclose(book.user_epsilons(), [3.0] * 4)
    assert out.summary.max_user_epsilon == pytest.approx(3.0)
    assert out.summary.users == 4 and out.summary.releases == 3


def test_only_the_users_a_release_reads_are_charged(book):
    publish.publish("baseline", _hat(), 1.0, ledger=book)
    publish.publish("baseline", _hat(ids=IDS[:2], label="other/s"), 0.5, ledger=book)
    assert sorted(book.user_epsilons().tolist()) == [1.0, 1.0, 1.5, 1.5]


def test_namespaces_keep_fleets_apart(book):
    publish.publish("baseline", _hat(), 1.0, ledger=book, namespace="buses")
    publish.publish("baseline", _hat(label="x/s"), 1.0, ledger=book, namespace="taxis")
    assert book.user_epsilons("buses").tolist() == [1.0] * 4
    assert book.user_epsilons("taxis").tolist() == [1.0] * 4
    assert book.summary().users == 8
    with pytest.raises(HexplorerError, match="namespace"):
        publish.publish("baseline", _hat(), 2.0, ledger=book, namespace=" ")


def test_user_ids_are_stored_only_as_salted_hashes(tmp_path):
    a, b = Ledger(tmp_path / "a.sqlite"), Ledger(tmp_path / "b.sqlite")
    for bk in (a, b):
        publish.publish("baseline", _hat(), 1.0, ledger=bk)
    for bk in (a, b):
        raw = b"".join(p.read_bytes() for p in tmp_path.glob(bk.path.name + "*"))
        exported = json.dumps(bk.export())
        for uid in IDS:
            assert uid.encode() not in raw and uid not in exported
    hashes_a = {u["user"] for u in a.export()["users"]}
    hashes_b = {u["user"] for u in b.export()["users"]}
    assert len(hashes_a) == 4 and not hashes_a & hashes_b  # a different salt per ledger
    assert "salt" not in a.export()["settings"]


def test_budget_refusal_records_nothing_and_reuse_is_free(book):
    first = publish.publish("baseline", _hat(), 1.0, ledger=book, budget=2.0)
    publish.publish("levy", _hat(), 1.0, ledger=book)  # exactly at the budget: allowed
    before = _row_counts(book.path)
    with pytest.raises(BudgetExceeded) as info:
        publish.publish("baseline", _hat(), 0.5, ledger=book)
    msg = str(info.value)
    assert "\n" not in msg and "eps = 2" in msg and "4 of the 4 users" in msg
    assert "up to eps = 2.5" in msg and "No eps fits" in msg  # everyone is at the budget
    assert _row_counts(book.path) == before
    np.testing.assert_allclose(book.user_epsilons(), [2.0] * 4)
    # a recorded request is still answered, at no cost, although everyone is at the budget
    again = publish.publish("baseline", _hat(), 1.0, ledger=book)
    assert again.reused and again.release.estimate == first.release.estimate
    assert _row_counts(book.path) == before
    summary = book.summary()
    assert summary.budget == 2.0 and summary.users_near_budget == 4


def test_budget_is_the_operators_with_its_history(book):
    book.set_budget(1.5)
    assert Ledger(book.path).budget() == 1.5
    publish.publish("baseline", _hat(), 1.0, ledger=book)
    with pytest.raises(BudgetExceeded, match="eps <= 0.5 would fit"):
        publish.publish("baseline", _hat(), 0.75, ledger=book)
    # a publishing command can only confirm or lower it; raising needs --raise and a reason
    with pytest.raises(HexplorerError, match="can only confirm or lower") as info:
        publish.publish("baseline", _hat(), 0.75, ledger=book, budget=100.0)
    assert "\n" not in str(info.value) and book.budget() == 1.5
    with pytest.raises(HexplorerError, match="only its operator raises it"):
        book.set_budget(2.0)
    with pytest.raises(HexplorerError, match="--reason"):
        book.set_budget(2.0, raising=True)
    book.set_budget(2.0, raising=True, reason="pilot extended")
    publish.publish("baseline", _hat(), 0.75, ledger=book)
    book.set_budget(1.9)  # lowering is free (below the users' totals: nothing more fits)
    changes = book.budget_changes()
    assert [(c["budget"], c["previous"], c["reason"]) for c in changes] == [
        (1.5, None, "set"),
        (2.0, 1.5, "pilot extended"),
        (1.9, 2.0, "lowered"),
    ]
    assert all(c["namespace"] == "default" and c["at"] for c in changes)
    assert book.export()["budget_changes"] == changes
    with pytest.raises(HexplorerError, match="epsilon"):
        book.set_budget(-1.0)


def test_budget_sums_with_a_floating_point_tolerance(book):
    book.set_budget(0.3)
    publish.publish("baseline", _hat(), 0.1, ledger=book)
    publish.publish("baseline", _hat(), 0.2, ledger=book)  # 0.1 + 0.2 > 0.3 in floating point
    with pytest.raises(BudgetExceeded):
        publish.publish("baseline", _hat(), 0.001, ledger=book)


def test_near_budget_counts_users_from_ninety_percent(book):
    book.set_budget(1.0)
    publish.publish("baseline", _hat(ids=IDS[:2], label="x/s"), 0.9, ledger=book)
    publish.publish("baseline", _hat(ids=IDS[2:], label="y/s"), 0.5, ledger=book)
    assert book.summary().users_near_budget == 2


def test_integrity_check_and_export(book):
    publish.publish("baseline", _hat(), 1.0, ledger=book)
    book.check()
    data = book.export()
    (rel,) = data["releases"]
    assert rel["kind"] == "hat" and rel["request"][0] == "hat" and len(rel["charges"]) == 4
    assert data["summary"]["releases"] == 1
    con = sqlite3.connect(book.path)
    con.execute("UPDATE users SET epsilon = epsilon + 1 WHERE id = 1")
    con.commit()
    con.close()
    with pytest.raises(HexplorerError, match="disagree with their charges"):
        book.check()


def test_old_jsonl_ledger_is_refused_in_one_line(tmp_path):
    old = tmp_path / "ledger.jsonl"
    old.write_text('{"version": 1, "created": "2026-01-01T00:00:00+00:00"}\n')
    with pytest.raises(HexplorerError, match="JSON-lines ledger") as info:
        publish.publish("baseline", _hat(), 1.0, ledger=old)
    assert "\n" not in str(info.value)
    assert old.read_text().startswith('{"version": 1')  # untouched


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello, this is not a ledger\n" * 10, "not a hexplorer ledger"),
        (b"SQLite format 3\x00" + b"\xff" * 5000, "damaged or unreadable"),
    ],
)
def test_a_foreign_or_garbage_file_is_an_error_not_an_empty_ledger(tmp_path, content, message):
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(content)
    for call in (lambda: Ledger(path).summary(), lambda: publish.publish("baseline", _hat(), 1.0, ledger=path)):  # fmt: skip
        with pytest.raises(HexplorerError, match=message):
            call()
    assert path.read_bytes() == content


def test_another_programs_sqlite_file_is_not_a_ledger(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE songs (title TEXT)")
    con.commit()
    con.close()
    with pytest.raises(HexplorerError, match="not a hexplorer ledger"):
        Ledger(path).summary()


def test_damaged_pages_are_an_error(tmp_path):
    path = tmp_path / "ledger.sqlite"
    for k in range(30):
        ids = [f"user-{k}-{i}" for i in range(40)]
        hat = HatData.from_arrays([1] * 40, [1.0] * 40, user_ids=ids, upper=U, hat=f"c{k}/s")
        publish.publish("baseline", hat, 0.1, ledger=path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    assert len(data) > 4 * 4096
    data[4096 : len(data)] = np.random.default_rng(0).bytes(len(data) - 4096)
    path.write_bytes(bytes(data))
    with pytest.raises(HexplorerError, match=str(path)):
        Ledger(path).check()
    with pytest.raises(HexplorerError):
        Ledger(path).summary()
        publish.publish("baseline", _hat(), 1.0, ledger=path)


def test_an_empty_file_is_a_ledger_whose_creation_was_interrupted(tmp_path):
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"")
    out = publish.publish("baseline", _hat(), 1.0, ledger=path)
    assert not out.reused and Ledger(path).summary().releases == 1


# --------------------------------------------------------------------------------------------
# Through the command line: the repro of issue 8 and the budget refusal


def _cli(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def fleet_csv(tmp_path):
    """Five buses, all their records within a few metres: one HAT at resolutions 7, 8 and 9."""
    rows = []
    for b, m in zip("abcde", (9, 6, 4, 3, 2), strict=True):
        for i in range(m):
            rows.append(
                {
                    "user_id": f"bus-{b}",
                    "lat": 21.1950 + 1e-6 * i,
                    "lon": 72.8300,
                    "timestamp": f"2024-03-05 08:{i:02d}:00",
                    "speed": 20.0 + i,
                }
            )
    path = tmp_path / "fleet.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_three_resolutions_charge_three_epsilon(capsys, fleet_csv, tmp_path):
    ledger = tmp_path / "l.sqlite"
    outs = []
    for res in (7, 8, 9):
        status, out, err = _cli(
            capsys, "release", fleet_csv, "--resolution", res, "--mechanism", "baseline",
            "--epsilon", "1", "--ledger", ledger, "--json",
        )  # fmt: skip
        assert status == 0, err
        outs.append(json.loads(out))
    assert len({o["hat"] for o in outs}) == 3 and not any(o["reused"] for o in outs)
    assert [o["max_user_epsilon"] for o in outs] == pytest.approx([1.0, 2.0, 3.0])
    np.testing.assert_allclose(Ledger(ledger).user_epsilons(), [3.0] * 5)
    status, out, _ = _cli(capsys, "ledger", "--ledger", ledger, "--json")
    summary = json.loads(out)
    assert {k: summary[k] for k in ("releases", "users", "max_user_epsilon", "budget")} == {
        "releases": 3,
        "users": 5,
        "max_user_epsilon": 3.0,
        "budget": None,
    }


def test_cli_budget_refusal_is_one_line_status_2_and_records_nothing(capsys, fleet_csv, tmp_path):
    ledger = tmp_path / "l.sqlite"
    base = ("release", fleet_csv, "--mechanism", "baseline", "--ledger", ledger, "--json")
    status, out, err = _cli(capsys, *base, "--epsilon", "1", "--budget", "1.5")
    assert status == 0, err
    before = Ledger(ledger).export()
    status, out, err = _cli(capsys, *base, "--epsilon", "0.75")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "1.5" in err and "5 of the 5 users" in err
    assert Ledger(ledger).export() == before
    status, out, err = _cli(capsys, "ledger", "--ledger", ledger, "--budget", "3", "--json")
    assert status == 2 and "--raise --reason" in err and err.count("\n") == 1
    status, out, err = _cli(capsys, *base, "--epsilon", "0.75", "--budget", "3")
    assert status == 2 and "can only confirm or lower" in err and err.count("\n") == 1
    status, out, err = _cli(
        capsys, "ledger", "set-budget", "3", "--raise", "--reason", "a second survey",
        "--ledger", ledger, "--json",
    )  # fmt: skip
    report = json.loads(out)
    assert status == 0 and report["budget"] == 3.0
    assert report["budget_changes"][-1]["reason"] == "a second survey"
    assert report["namespaces"] == [
        {"namespace": "default", "budget": 3.0, "users": 5, "max_user_epsilon": 1.0,
         "users_near_budget": 0, "releases": 1, "ids": "keep"},
    ]  # fmt: skip
    status, out, err = _cli(capsys, *base, "--epsilon", "0.75")
    assert status == 0 and json.loads(out)["max_user_epsilon"] == 1.75


def test_cli_ledger_export_and_refusals(capsys, fleet_csv, tmp_path):
    ledger = tmp_path / "l.sqlite"
    _cli(capsys, "release", fleet_csv, "--mechanism", "baseline", "--epsilon", "1",
         "--ledger", ledger)  # fmt: skip
    target = tmp_path / "audit.json"
    status, out, err = _cli(capsys, "ledger", "--ledger", ledger, "--export", target, "--json")
    assert status == 0, err
    data = json.loads(target.read_text())
    assert data["summary"]["releases"] == 1 and len(data["releases"][0]["charges"]) == 5
    status, _, err = _cli(capsys, "ledger", "--ledger", ledger, "--export", target)
    assert status == 2 and "--force" in err
    old = tmp_path / "old.jsonl"
    old.write_text('{"version": 1}\n')
    status, out, err = _cli(capsys, "ledger", "--ledger", old, "--json")
    assert status == 2 and out == "" and "JSON-lines" in err and err.count("\n") == 1


def test_simulated_release_refuses_ledger_options(capsys, fleet_csv, tmp_path):
    status, _, err = _cli(
        capsys, "release", fleet_csv, "--mechanism", "baseline", "--epsilon", "1", "--seed", "1",
        "--output", tmp_path / "x.csv",
    )  # fmt: skip
    assert status == 2 and "--output is for published releases" in err
