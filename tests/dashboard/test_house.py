"""The dashboard's house shape (CONTRIBUTING, "The house shape"): one feature, one folder.

A feature folder (its page included) reads ``core`` and ``dashboard.common``, never another
feature's folder; ``dashboard.common`` reads no feature and not the server; every page is the
``page.py`` of its feature's folder; no module is longer than 600 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboard"
MAX_LINES = 600
NOT_FEATURES = {"common", "server", "__pycache__"}


def _features() -> list[str]:
    """The folders of dashboard/ that hold code, but common/ and server/."""
    return sorted(
        p.name
        for p in DASHBOARD.iterdir()
        if p.is_dir() and p.name not in NOT_FEATURES and any(p.glob("*.py"))
    )


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function (``from a import b``
    counts as ``a.b`` too, since ``b`` may be a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _reaches(path: Path, folder: str) -> list[str]:
    """The imports of ``path`` into ``dashboard.<folder>`` (or the bare ``from dashboard
    import <folder>``)."""
    prefix = f"dashboard.{folder}"
    return sorted(m for m in _imports(path) if m == prefix or m.startswith(prefix + "."))


def test_the_features_are_the_folders_of_the_pages():
    assert {"map", "hexagon", "city", "lessons", "experiments", "publish", "learn", "data"} <= set(
        _features()
    )
    app = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    (pages,) = [
        ast.literal_eval(node.value)
        for node in app.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PAGES"
    ]
    files = [Path(page[0]) for page in pages]
    assert all(f.name == "page.py" and f.parts[:1] == ("dashboard",) for f in files), files
    assert sorted(f.parts[1] for f in files) == _features()  # one page per feature folder
    assert not (DASHBOARD / "pages").exists()


def test_a_feature_reads_core_and_common_never_another_feature():
    features = _features()
    crossings = []
    for feature in features:
        for path in sorted((DASHBOARD / feature).rglob("*.py")):
            for other in features + ["server"]:
                if other != feature:
                    crossings += [f"{path.relative_to(ROOT)} -> {m}" for m in _reaches(path, other)]
    assert crossings == []


def test_common_reads_no_feature_and_not_the_server():
    crossings = []
    for path in sorted((DASHBOARD / "common").rglob("*.py")):
        for folder in _features() + ["server"]:
            crossings += [f"{path.relative_to(ROOT)} -> {m}" for m in _reaches(path, folder)]
    assert crossings == []


def test_no_dashboard_module_is_longer_than_600_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted(DASHBOARD.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


LAYERS = (("source", "cache", "markdown"), ("session",), ("view",), ("report", "sidebar"))
"""common/'s ideas from the ground up: a layer reads the layers below it, never one above."""


def test_common_is_layered_source_session_view_report():
    def layer(name: str) -> int:
        return next(i for i, names in enumerate(LAYERS) if name in names)

    upward = []
    for path in sorted((DASHBOARD / "common").rglob("*.py")):
        part = path.relative_to(DASHBOARD / "common").parts[0].removesuffix(".py")
        if part == "__init__":
            continue
        for module in _imports(path):
            words = module.split(".")
            if words[:2] == ["dashboard", "common"] and len(words) > 2 and words[2] != part:
                if layer(words[2]) > layer(part):
                    upward.append(f"{path.relative_to(ROOT)} -> {module}")
    assert upward == []
