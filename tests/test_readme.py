"""README.md is what a newcomer reads in five minutes; the rest lives in docs/ and stays reachable."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 160
LINK = re.compile(r"\]\(([\w./-]+\.[a-z]+)(?:#[^)]*)?\)")  # to a file: a name.suffix


def _commands(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)


def test_the_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_the_set_up_commands_are_the_two_lines_and_ci_runs_the_same_tests():
    text = README.read_text(encoding="utf-8")
    commands = _commands(text)
    assert "pip install -e . && streamlit run app.py" in commands
    assert 'pip install -e ".[test]" && python -m pytest -n 2' in commands
    assert "`bash .ci/run`" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    line = ci[ci.index('# Keep this line identical to the README\'s "Run the tests" command.') + 1]
    assert line.replace("pip install -q ", "pip install ") in commands  # -q: quiet CI log only


def test_every_page_of_the_app_has_its_line():
    text = README.read_text(encoding="utf-8")
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    titles = re.findall(r'\("dashboard/[^"]+", "[^"]+", "([^"]+)", "[^"]+"\)', app)
    assert len(titles) >= 8
    for title in titles:
        assert f"- **{title}**" in text, title


def test_every_link_of_the_readme_and_docs_reaches_a_file():
    broken = []
    for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if "://" not in target and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_readme_links_the_guides_and_a_small_screenshot():
    text = README.read_text(encoding="utf-8")
    for guide in ("dashboard", "publishing-and-hosting", "city-scale", "cli", "benchmarks"):
        assert f"(docs/{guide}.md)" in text, guide
    (shot,) = re.findall(r"!\[[^\]]+\]\(([^)]+\.png)\)", text)
    png = (ROOT / shot).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) < 400_000
