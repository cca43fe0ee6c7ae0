"""The mechanism tables of README.md and CONTRIBUTING.md, generated from the registry.

Each document holds one marked block::

    <!-- mechanisms:start -->
    ... generated, do not edit ...
    <!-- mechanisms:end -->

``python -m core.mechanisms.docs`` rewrites the block of each document from
:data:`core.mechanisms.MECHANISMS`; ``python -m core.mechanisms.docs --check`` only reports (exit
status 1) a document whose block differs, and ``tests/test_docs_tables.py`` fails the same way, so
a document can never disagree with the registry. :func:`markdown_sections` is the longer text of
the Learn page's "Mechanisms" section.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path

from core.errors import HexplorerError
from core.mechanisms.registry import MECHANISMS, Mechanism, get_rule

__all__ = [
    "END",
    "START",
    "DOCUMENTS",
    "markdown_sections",
    "markdown_table",
    "outdated",
    "render_block",
    "update_text",
]

START = "<!-- mechanisms:start -->"
END = "<!-- mechanisms:end -->"
_ROOT = Path(__file__).resolve().parents[2]
#: The documents holding a generated block (relative to the repository root).
DOCUMENTS: tuple[str, ...] = ("README.md", "CONTRIBUTING.md")


def _mechanisms(mechanisms: Iterable[Mechanism] | None) -> list[Mechanism]:
    return list(MECHANISMS.values()) if mechanisms is None else list(mechanisms)


def _rule_label(mech: Mechanism) -> str:
    return "–" if mech.m_ub_rule is None else get_rule(mech.m_ub_rule).label


def _share(x: float) -> str:
    f = Fraction(x).limit_denominator(100)
    return "ε" if f == 1 else f"{f.numerator}ε/{f.denominator}".replace("1ε", "ε")


def _budget(mech: Mechanism) -> str:
    if mech.laplace_share == 1.0:
        return "ε Laplace"
    return f"{_share(1 - mech.laplace_share)} private step, {_share(mech.laplace_share)} Laplace"


def markdown_table(mechanisms: Iterable[Mechanism] | None = None) -> str:
    """One row per mechanism, in registry order: name, plain name, family, default m_UB, budget,
    paper, SPEC.

    >>> print(markdown_table([MECHANISMS["baseline"]]).splitlines()[2])
    | `baseline` | Baseline | Baseline | – | ε Laplace | [1] section III-B | SPEC §3 |
    """
    rows = [
        "| name | plain name | family | default m_UB | budget | paper | SPEC |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in _mechanisms(mechanisms):
        cells = (
            f"`{m.name}`",
            m.title,
            m.family,
            _rule_label(m),
            _budget(m),
            m.reference,
            m.spec,
        )
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def render_block(mechanisms: Iterable[Mechanism] | None = None) -> str:
    """The whole marked block, markers included."""
    return "\n".join(
        [
            START,
            "<!-- generated from core.mechanisms.MECHANISMS by `python -m core.mechanisms.docs`;"
            " do not edit by hand -->",
            "",
            markdown_table(mechanisms),
            "",
            END,
        ]
    )


def _bounds(text: str, where: str) -> tuple[int, int]:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start or text.count(START) != 1 or text.count(END) != 1:
        raise HexplorerError(
            f"{where} must hold exactly one '{START}' ... '{END}' block for the mechanism table."
        )
    return start, end + len(END)


def current_block(text: str, where: str = "the document") -> str:
    """The marked block of ``text`` as it stands."""
    start, end = _bounds(text, where)
    return text[start:end]


def update_text(text: str, where: str = "the document") -> str:
    """``text`` with its marked block replaced by :func:`render_block`."""
    start, end = _bounds(text, where)
    return text[:start] + render_block() + text[end:]


def outdated(paths: Sequence[Path]) -> list[Path]:
    """The documents whose block differs from the registry."""
    return [
        p for p in paths if current_block(p.read_text(encoding="utf-8"), str(p)) != render_block()
    ]


def markdown_sections() -> str:
    """The Learn page's "Mechanisms" text: per family, each mechanism's plain name, name,
    description, default m_UB rule, budget and references (registry order)."""
    out: list[str] = []
    family = None
    for m in MECHANISMS.values():
        if m.family != family:
            family = m.family
            out.append(f"\n**{family}**\n")
        rule = (
            "no arrays (a chosen m_UB is ignored)"
            if m.m_ub_rule is None
            else f"default m_UB {get_rule(m.m_ub_rule).label}: {get_rule(m.m_ub_rule).help}"
        )
        out.append(
            f"* **{m.title}** (`{m.name}`): {m.description} "
            f"*{rule}; {_budget(m)}; {m.reference}; {m.spec}.*"
        )
    return "\n".join(out).strip()


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only verify) the mechanism tables of the documents."""
    parser = argparse.ArgumentParser(
        prog="python -m core.mechanisms.docs",
        description="Regenerate the mechanism tables of README.md and CONTRIBUTING.md.",
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, help="documents (default: README, CONTRIBUTING)"
    )
    parser.add_argument("--check", action="store_true", help="report differences, change nothing")
    args = parser.parse_args(argv)
    paths = args.paths or [_ROOT / name for name in DOCUMENTS]
    try:
        stale = outdated(paths)
        if args.check:
            for p in stale:
                print(f"{p}: mechanism table differs from the registry", file=sys.stderr)
            return 1 if stale else 0
        for p in stale:
            p.write_text(update_text(p.read_text(encoding="utf-8"), str(p)), encoding="utf-8")
            print(f"{p}: mechanism table rewritten")
    except (HexplorerError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
