"""Every publish is all or nothing (issue 26): an output that cannot be written is refused before
anything is charged, a failure inside the ledger's transaction records nothing, a refused release
of many HATs records none of them, and a new namespace for users charged in another one is a
warning on stderr."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from core.citywide.batch import HatBatch
from core.cli import main
from core.errors import HexplorerError
from core.publish import BudgetExceeded, Ledger, files
from core.publish import batch as pb
from core.publish.parts import publish_parts
from tests.publish.test_ledger import fleet_csv  # noqa: F401  (a fixture)


def _cli(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("command", ["release", "all", "compose"])
def test_an_unwritable_output_is_refused_before_charging(capsys, fleet_csv, tmp_path, command):  # noqa: F811
    ledger = tmp_path / "l.sqlite"
    argv = {
        "release": ("release", fleet_csv, "--mechanism", "baseline", "--epsilon", "1"),
        "all": ("release", fleet_csv, "--all", "--mechanism", "baseline", "--epsilon", "1"),
        "compose": ("compose", fleet_csv, "--publish", "--epsilon", "1"),
    }[command]
    status, out, err = _cli(capsys, *argv, "--ledger", ledger, "--output", "/proc/x.csv")
    assert status == 2 and out == ""
    assert err.startswith("hexplorer: error: Cannot write /proc/x.csv (") and err.count("\n") == 1
    assert err.rstrip().endswith("; nothing was published or charged.")
    assert Ledger(ledger).summary().releases == 0 and Ledger(ledger).user_epsilons().size == 0


def test_a_failure_inside_the_transaction_records_nothing(tmp_path):
    """GeoJSON needs H3 cells: the file is written inside the ledger's transaction, so its
    failure rolls the release back (no release, no charge)."""
    rows = [("a/s", "x", 2, 3.0), ("a/s", "y", 1, 9.0), ("b/s", "x", 3, 12.0)]
    batch = HatBatch.from_summaries(pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"]))
    book = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(HexplorerError, match="not an H3 cell"):
        pb.publish_all(
            "baseline", batch, 1.0, ledger=book, budget=5.0,
            before_commit=lambda rel: files.to_bytes(files.hats_table(rel), ".geojson"),
        )  # fmt: skip
    assert book.records() == [] and book.user_epsilons().size == 0
    assert book.budget() is None  # the command's --budget went with it


def test_a_refused_release_of_many_hats_names_what_fits_and_records_none(tmp_path):
    # x is in a and b, y only in a, z only in c; x has 1.5 of 2 spent already
    rows = [("a/s", "x", 1, 1.0), ("a/s", "y", 1, 1.0), ("b/s", "x", 1, 1.0), ("c/s", "z", 1, 1.0)]
    batch = HatBatch.from_summaries(pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"]))
    book = Ledger(tmp_path / "l.sqlite")
    book.set_budget(2.0)
    first = HatBatch.from_summaries(pd.DataFrame([rows[0]], columns=["hat", "user_id", "m", "s"]))
    pb.publish_all("baseline", first, 1.5, ledger=book)
    before = book.export()
    with pytest.raises(BudgetExceeded) as info:
        pb.publish_all("baseline", batch, 1.0, ledger=book)  # x would reach 1.5 + 2
    msg = str(info.value)
    assert "1 of the 3 users" in msg and "up to eps = 3.5" in msg
    assert "eps <= 0.25 would fit" in msg  # x: 1.5 + 2 eps <= 2
    assert "1 of the 3 HATs (those without these users) would fit" in msg  # c only
    assert book.export() == before
    # the same release read part by part (a summaries dataset) is refused in the same words
    frame = pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"])
    pieces = [frame.iloc[:3], frame.iloc[3:]]  # a and b, then c

    def parts():
        return (HatBatch.from_summaries(p) for p in pieces)

    with pytest.raises(BudgetExceeded) as by_parts:
        publish_parts("baseline", parts, 1.0, ledger=book)
    assert str(by_parts.value) == msg
    assert book.export() == before
    # what it says fits, fits
    assert not pb.publish_all("baseline", batch, 0.25, ledger=book).reused


def test_a_new_namespace_for_users_charged_elsewhere_is_a_warning(capsys, fleet_csv, tmp_path):  # noqa: F811
    ledger = tmp_path / "l.sqlite"
    base = ("release", fleet_csv, "--mechanism", "baseline", "--ledger", ledger, "--json")
    status, out, err = _cli(capsys, *base, "--epsilon", "1")
    assert status == 0 and json.loads(out)["warnings"] == [] and "warning" not in err
    status, out, err = _cli(capsys, *base, "--epsilon", "0.5", "--namespace", "taxis")
    assert status == 0
    (warning,) = json.loads(out)["warnings"]
    assert (
        "namespace 'taxis' is new, but 5 of this release's users are already charged in "
        "namespace 'default'" in warning
    )
    assert f"hexplorer: warning: {warning}\n" in err
    status, out, err = _cli(capsys, *base, "--epsilon", "0.25", "--namespace", "taxis")
    assert status == 0 and json.loads(out)["warnings"] == []  # only when it opens
    status, out, _ = _cli(capsys, "ledger", "--ledger", ledger, "--json")
    listed = {
        n["namespace"]: (n["users"], n["max_user_epsilon"]) for n in json.loads(out)["namespaces"]
    }
    assert listed == {"default": (5, 1.0), "taxis": (5, 0.75)}


def test_a_namespace_keeps_the_id_form_of_its_first_release(tmp_path):
    """The operator's --ids casefold: a namespace whose ids were read one way refuses releases
    whose ids were read the other way (one user would count as two)."""
    rows = [("a/s", "Bus-1", 1, 1.0), ("a/s", "bus-2", 1, 1.0)]
    batch = HatBatch.from_summaries(pd.DataFrame(rows, columns=["hat", "user_id", "m", "s"]))
    book = Ledger(tmp_path / "l.sqlite")
    pb.publish_all("baseline", batch, 0.5, ledger=book, id_form="casefold")
    with pytest.raises(HexplorerError, match="holds ids read with --ids casefold") as info:
        pb.publish_all("baseline", batch, 0.25, ledger=book)  # --ids keep
    assert "\n" not in str(info.value) and len(book.records()) == 1
    pb.publish_all("baseline", batch, 0.25, ledger=book, namespace="kept")
    assert {n["namespace"]: n["ids"] for n in book.namespaces()} == {
        "default": "casefold",
        "kept": "keep",
    }
