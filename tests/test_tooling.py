"""House rules a machine can check: lint, formatting, types (core/, dashboard/, app.py), and core's
independence of the UI."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI_PACKAGES = {"streamlit", "plotly", "pydeck"}


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; it is part of the [test] extra")
    return path


def test_core_never_imports_a_ui_package():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in UI_PACKAGES
            ]
    assert offenders == []


def test_ruff_lint_and_format():
    ruff = _tool("ruff")
    lint = _run(ruff, "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run(ruff, "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_on_core_and_the_dashboard():
    result = _run(_tool("mypy"), "core", "dashboard", "app.py")  # one run: one cache writer
    assert result.returncode == 0, result.stdout + result.stderr
