"""The operator's data directory: listing and resolving names (dashboard.common.source.datadir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import HexplorerError
from dashboard.common.source import datadir


@pytest.fixture
def root(tmp_path):
    base = tmp_path / "data"
    (base / "sub").mkdir(parents=True)
    (base / "records.csv").write_text("user_id,lat\n")
    (base / "sub" / "summaries.parquet").write_bytes(b"PAR1")
    (base / "readme.md").write_text("not data")
    (base / ".hidden.csv").write_text("x\n")
    (base / "inside_link.csv").symlink_to(base / "records.csv")
    outside = tmp_path / "secret.csv"
    outside.write_text("secret\n")
    (base / "escape.csv").symlink_to(outside)
    (base / "passwd.csv").symlink_to("/etc/passwd")
    (base / "dirlink").symlink_to(tmp_path)
    (base / "loop.csv").symlink_to(base / "loop.csv")
    return base


def test_off_unless_the_operator_names_a_directory(tmp_path):
    assert datadir.configured_dir(environ={}, argv=["app.py"]) is None
    assert datadir.configured_dir(environ={datadir.ENV_VAR: ""}, argv=[]) is None
    env = {datadir.ENV_VAR: str(tmp_path)}
    assert datadir.configured_dir(environ=env, argv=["app.py"]) == tmp_path.resolve()
    other = tmp_path / "other"
    other.mkdir()
    for argv in (["app.py", "--data-dir", str(other)], ["app.py", f"--data-dir={other}"]):
        assert datadir.configured_dir(environ=env, argv=argv) == other.resolve()


def test_a_missing_data_directory_is_an_operator_error(tmp_path):
    with pytest.raises(HexplorerError, match="existing folder"):
        datadir.configured_dir(environ={datadir.ENV_VAR: str(tmp_path / "nope")}, argv=[])


def test_lists_only_data_files_inside(root):
    assert datadir.list_files(root) == ["inside_link.csv", "records.csv", "sub/summaries.parquet"]


def test_resolves_names_inside(root):
    assert datadir.resolve(root, "records.csv") == (root / "records.csv").resolve()
    assert datadir.resolve(root, "sub/summaries.parquet").name == "summaries.parquet"
    assert datadir.resolve(root, "sub/../records.csv").name == "records.csv"
    assert datadir.resolve(root, "inside_link.csv") == (root / "records.csv").resolve()


@pytest.mark.parametrize(
    "name",
    [
        "/etc/passwd",
        "../secret.csv",
        "../../../../etc/passwd",
        "sub/../../secret.csv",
        "escape.csv",  # symlink leading out
        "passwd.csv",  # symlink to /etc/passwd
        "dirlink/secret.csv",  # through a linked folder
        "loop.csv",
        "missing.csv",
        "readme.md",
        "sub",
        ".",
        "",
        "records.csv\x00.txt",
        "x" * 5000 + ".csv",
    ],
)
def test_every_refusal_is_the_missing_file_message(root, name):
    with pytest.raises(HexplorerError) as info:
        datadir.resolve(root, name)
    assert str(info.value) == f"File not found in the data directory: '{name}'."
    assert str(info.value) == str(datadir.not_found(name))


def test_outside_existing_and_missing_read_the_same(root, tmp_path):
    """The message for a file that exists outside equals that for one that does not."""
    assert (tmp_path / "secret.csv").exists()
    messages = set()
    for exists, missing in [("../secret.csv", "../nope.csv"), ("/etc/passwd", "/etc/nope")]:
        for name in (exists, missing):
            with pytest.raises(HexplorerError) as info:
                datadir.resolve(root, name)
            messages.add(str(info.value).replace(name, "NAME"))
    assert len(messages) == 1
    assert Path("/etc/passwd").exists()
