"""One numbering of the papers for every text that cites them (core.references)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from core import references
from core.errors import HexplorerError
from core.experiments import PAPERS as CATALOGUE_PAPERS

ROOT = Path(__file__).resolve().parent.parent


def test_numbers_are_one_to_n_and_keys_unique():
    assert [p.ref for p in references.PAPERS] == [
        f"[{i}]" for i in range(1, len(references.PAPERS) + 1)
    ]
    assert len({p.key for p in references.PAPERS}) == len(references.PAPERS)


def test_spec_lists_the_references_as_core_numbers_them():
    spec = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    section = spec.split("\n## References\n", 1)[1].strip()
    assert section == references.references_markdown().strip()


def test_paper_by_key_and_unknown_key():
    assert references.paper("real-world").ref == "[4]"
    assert CATALOGUE_PAPERS["bounding"][0] == references.paper("bounding").title
    with pytest.raises(HexplorerError, match="Unknown paper key 'nope'"):
        references.paper("nope")


def test_no_project_file_cites_a_paper_by_its_working_file_name():
    """Citations are [n] (core.references), never the developers' file names ("seed 003")."""
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    here = Path(__file__).name
    offenders = [
        f
        for f in files
        if Path(f).name != here
        and f != "dashboard/learn/text.py"  # turns those names into [n] for the Learn page
        and re.search(r"seeds? 00\d", (ROOT / f).read_text(encoding="utf-8"))
    ]
    assert offenders == []
