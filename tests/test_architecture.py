"""The house's shape, read from the source: core is UI-free and acyclic, modules stay short.

Every module of ``core/`` is parsed (``ast``) and every import it makes is collected, those
inside functions included (a lazy import is still a dependency):

- no import of ``dashboard``, ``streamlit``, ``plotly`` or ``pydeck`` from ``core``;
- no import cycle between core's modules, nor between its packages (``core.plan`` may read
  ``core.citywide``, never the other way too);
- no module of ``core/`` or ``dashboard/`` over 600 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI = ("dashboard", "streamlit", "plotly", "pydeck")
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def core_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p): p for p in sorted((root / "core").rglob("*.py"))}


def imports_of(path: Path, name: str, modules: dict[str, Path] | None = None) -> set[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved), at any depth.

    ``from pkg import sub`` with ``pkg.sub`` one of ``modules`` counts as an import of
    ``pkg.sub`` only (a package's ``__init__`` may list its own submodules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = {f"{module}.{alias.name}" for alias in node.names}
            if modules is not None and subs <= set(modules):
                found.update(subs)
            else:
                found.add(module)
                found.update(subs)
    return found


def graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """core module -> the core modules it imports."""
    return {
        name: {m for m in imports_of(path, name, modules) if m in modules and m != name}
        for name, path in modules.items()
    }


def ui_imports(modules: dict[str, Path]) -> list[str]:
    bad = []
    for name, path in modules.items():
        for m in sorted(imports_of(path, name)):
            if m.split(".")[0] in UI:
                bad.append(f"{name} imports {m}")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def package_of(module: str) -> str:
    """``core.plan.city`` -> ``core.plan``; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for v, ws in edges.items():
        pv = package_of(v)
        out.setdefault(pv, set()).update(package_of(w) for w in ws if package_of(w) != pv)
    return out


def long_modules(root: Path = ROOT) -> dict[str, int]:
    sizes = {}
    for folder in ("core", "dashboard"):
        for path in (root / folder).rglob("*.py"):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_LINES:
                sizes[path.relative_to(root).as_posix()] = n
    return sizes


# --- the checks ----------------------------------------------------------------------------------


def test_core_imports_no_ui_package_even_inside_a_function():
    assert ui_imports(core_modules()) == []


def test_core_has_no_import_cycle_between_modules():
    assert cycles(graph(core_modules())) == []


def test_core_has_no_import_cycle_between_packages():
    assert cycles(package_graph(graph(core_modules()))) == []


def test_the_checks_see_what_they_look_for(tmp_path):
    """The old faults, planted in a copy: a lazy UI import and the errors -> plan -> errors
    circle (the two fixed by issue 28) are both found."""
    (tmp_path / "core" / "cli").mkdir(parents=True)
    (tmp_path / "core" / "plan").mkdir()
    (tmp_path / "core" / "citywide").mkdir()
    for init in ("core", "core/cli", "core/plan", "core/citywide"):
        (tmp_path / init / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "core/cli/reproduce.py").write_text(
        "def f():\n    from dashboard.experiments.charts import experiment_figure\n",
        encoding="utf-8",
    )
    (tmp_path / "core/citywide/errors.py").write_text(
        "def parts():\n    from core.plan import m_rule\n", encoding="utf-8"
    )
    (tmp_path / "core/plan/__init__.py").write_text(
        "from core.plan.city import city_plan\n", encoding="utf-8"
    )
    (tmp_path / "core/plan/city.py").write_text(
        "from .pieces import x\nfrom ..citywide.errors import errors_at\n", encoding="utf-8"
    )
    (tmp_path / "core/plan/pieces.py").write_text("x = 1\n", encoding="utf-8")
    mods = {module_name_in(p, tmp_path): p for p in sorted((tmp_path / "core").rglob("*.py"))}
    assert ui_imports(mods) == [
        "core.cli.reproduce imports dashboard.experiments.charts",
        "core.cli.reproduce imports dashboard.experiments.charts.experiment_figure",
    ]
    assert cycles(graph(mods)) == [["core.citywide.errors", "core.plan", "core.plan.city"]]
    assert cycles(package_graph(graph(mods))) == [["core.citywide", "core.plan"]]
    (tmp_path / "core/long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "dashboard").mkdir()
    assert long_modules(tmp_path) == {"core/long.py": MAX_LINES + 1}


def module_name_in(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize(
    "path",
    sorted(
        q.relative_to(ROOT).as_posix()
        for folder in ("core", "dashboard")
        for q in (ROOT / folder).rglob("*.py")
    ),
)
def test_no_module_over_600_lines(path):
    n = len((ROOT / path).read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path} has {n} lines: split it along its ideas"
