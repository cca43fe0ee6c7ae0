"""``hexplorer reproduce``: regenerate the papers' figures and check their claims.

``--list`` prints the catalogue (:data:`core.experiments.CATALOGUE`); ``reproduce ID --output
DIR`` writes ``figure.html`` (self-contained, plotly.js inline), ``data.csv`` and ``claim.json``
(``{"id", "claim", "holds", "evidence", ...}``) into DIR; ``reproduce all --output DIR`` does so
for every experiment into ``DIR/<id>/``, with a progress line on stderr, plus ``summary.json``
and ``reproduction.md`` (the table of docs/reproduction.md). ``--png`` also writes
``figure.png`` with an offline static exporter (kaleido if installed, else headless Chromium);
without one it says so and skips the PNG.

Figures are built by ``dashboard.experiments.charts`` (plotly), imported lazily here: ``core``
itself never imports a UI package.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from core.errors import HexplorerError

_FILES = ("figure.html", "data.csv", "claim.json")
_CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def register(sub: Any, data: argparse.ArgumentParser, names: list[str]) -> None:
    p = sub.add_parser(
        "reproduce",
        help="regenerate the papers' figures and check their claims",
        description="Regenerate a figure of the papers (or all of them) with its data and a "
        "numerical check of the paper's claim.",
    )
    p.add_argument("experiment", nargs="?", metavar="ID", help="an id from --list, or 'all'")
    p.add_argument("--list", action="store_true", help="list the experiments")
    p.add_argument("--output", metavar="DIR", help="folder to write into (created if missing)")
    p.add_argument(
        "--runs", type=int, metavar="N", help="Monte-Carlo runs per point [each experiment's own]"
    )
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed [0]")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="a new dataset on every run (the bounding paper's protocol; its figures only)",
    )
    p.add_argument("--png", action="store_true", help="also write figure.png (offline exporter)")
    p.add_argument("--force", action="store_true", help="overwrite files already in --output")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def listing() -> list[dict]:
    """``[{"id", "paper", "figure", "claim"}]`` for every experiment of the catalogue."""
    from core.experiments import CATALOGUE

    return [
        {"id": e.id, "paper": e.paper_title, "figure": e.figure, "claim": e.claim}
        for e in CATALOGUE
    ]


def _target(path: str | None, names: list[str], force: bool) -> Path:
    if path is None:
        raise HexplorerError("reproduce needs --output DIR (the folder to write into).")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise HexplorerError(f"--output {path!r} is a file; name a folder.")
    if not out.parent.is_dir():
        raise HexplorerError(f"--output's parent folder {str(out.parent)!r} does not exist.")
    if not force:
        taken = [n for n in names if (out / n).exists()]
        if taken:
            raise HexplorerError(
                f"--output {path!r} already has {taken[0]}; pass --force to overwrite."
            )
    return out


def png_exporter() -> str | None:
    """The offline static exporter available: "kaleido", "chromium" or None."""
    import importlib.util

    if importlib.util.find_spec("kaleido") is not None:
        return "kaleido"
    if _chromium() is not None:
        return "chromium"
    return None


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _write_png(fig, path: Path) -> str:
    """Write ``fig`` as PNG; returns "" or why it was skipped (never raises for a missing tool)."""
    from dashboard.experiments.charts import figure_page, write_image

    exporter = png_exporter()
    if exporter == "kaleido":
        try:
            write_image(fig, str(path))
            return ""
        except Exception as exc:  # noqa: BLE001 - kaleido's failures are not ours to type
            return f"kaleido failed ({type(exc).__name__})"
    if exporter == "chromium":
        browser = _chromium()
        assert browser is not None
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "figure.html"
            page.write_text(figure_page(fig), encoding="utf-8")
            try:
                subprocess.run(
                    [
                        browser,
                        *_CHROMIUM_ARGS,
                        "--window-size=1200,520",
                        f"--screenshot={path}",
                        page.as_uri(),
                    ],
                    capture_output=True,
                    timeout=120,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"Chromium failed ({type(exc).__name__})"
        return "" if path.is_file() else "Chromium wrote no PNG"
    return "no offline static exporter (kaleido or Chromium) is installed"


def write_outcome(outcome, folder: Path, *, png: bool) -> dict:
    """Write figure.html, data.csv, claim.json (and figure.png) for one computed experiment."""
    from dashboard.experiments.charts import experiment_figure, figure_html

    exp = outcome.experiment
    folder.mkdir(exist_ok=True)
    fig = experiment_figure(exp, outcome.table, runs=outcome.runs)
    (folder / "figure.html").write_text(
        figure_html(exp, fig, holds=outcome.holds, evidence=outcome.evidence), encoding="utf-8"
    )
    outcome.data_table().to_csv(folder / "data.csv", index=False)
    record = outcome.claim_record()
    files = list(_FILES)
    if png:
        skipped = _write_png(fig, folder / "figure.png")
        if skipped:
            print(f"hexplorer: note: PNG skipped for {exp.id}: {skipped}.", file=sys.stderr)
        else:
            files.append("figure.png")
    (folder / "claim.json").write_text(
        json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return {**record, "folder": str(folder), "files": files}


def markdown(records: list[dict], *, runs: int | None, seed: int, fresh: bool) -> str:
    """The reproduction table (docs/reproduction.md) from the claim records of a full run."""
    from core.cli import _version
    from core.experiments import CATALOGUE, ITMS_SUMMARY

    by_id = {e.id: e for e in CATALOGUE}
    held = sum(1 for r in records if r["holds"])
    size = "each experiment's full size" if runs is None else f"{runs:,} runs per point"
    lines = [
        "# Reproducing the papers",
        "",
        "Generated by `hexplorer reproduce all --output DIR"
        + ("" if runs is None else f" --runs {runs}")
        + f" --seed {seed}"
        + (" --fresh" if fresh else "")
        + f"` ({size}; dp-hexplorer {_version()}). Do not edit by hand: rerun the command "
        "and copy its `reproduction.md` here.",
        "",
        f"**{held} of {len(records)} claims hold.** Each row is one figure; the claim is the "
        "paper's sentence, checked point by point on the numbers (`claim.json`'s evidence). "
        "Where the papers' data is not public, a synthetic stand-in is used and said so: the "
        "ITMS-like HAT has exactly the published summary (L = "
        f"{ITMS_SUMMARY['users']}, N = {ITMS_SUMMARY['records']:,}, m* = "
        f"{ITMS_SUMMARY['m_max']}, m_* = {ITMS_SUMMARY['m_min']}, median "
        f"{ITMS_SUMMARY['median']}) and i.i.d. projected-Gaussian speeds with the published mean "
        f"{ITMS_SUMMARY['mean']} and variance {ITMS_SUMMARY['variance']}; it stands in for the "
        "real bus data, whose non-i.i.d. structure it does not have.",
        "",
        "| id | paper | figure | claim | holds | evidence / why not |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        e = by_id[r["id"]]
        why = r["evidence"]
        if not r["holds"]:
            why += " **Why:** " + (e.why_not or "not explained yet.")
        cells = [
            f"`{e.id}`",
            e.paper_title,
            e.figure,
            e.claim,
            "yes" if r["holds"] else "**no**",
            why,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "## Settings",
        "",
        "| id | data | computed by |",
        "|---|---|---|",
    ]
    for r in records:
        e = by_id[r["id"]]
        lines.append(
            f"| `{e.id}` | {e.setting.replace('|', '/')} | `{e.function.replace('|', '/')}` |"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> Any:
    from core.experiments import get_experiment, run_experiment

    if args.list:
        if args.experiment is not None:
            raise HexplorerError("Give either --list or an experiment ID, not both.")
        return listing()
    if args.experiment is None:
        raise HexplorerError("Name an experiment (see --list) or 'all'.")
    if args.experiment.strip().lower() == "all":
        return _run_all(args)
    exp = get_experiment(args.experiment)  # unknown id: one line before any work
    out = _target(args.output, list(_FILES), args.force)
    outcome = run_experiment(exp, runs=args.runs, seed=args.seed, fresh=args.fresh)
    return write_outcome(outcome, out, png=args.png)


def _run_all(args: argparse.Namespace) -> Any:
    from core.experiments import CATALOGUE, run_experiment

    if args.fresh:
        raise HexplorerError(
            "--fresh applies to the bounding figures only; run them one by one with --fresh."
        )
    out = _target(args.output, ["summary.json", "reproduction.md"], args.force)
    out.mkdir(exist_ok=True)
    records = []
    cache: dict = {}
    total = len(CATALOGUE)
    live = sys.stderr.isatty()  # one line rewritten in place; one line per step in a log
    for i, exp in enumerate(CATALOGUE, start=1):
        line = f"  [{i}/{total}] {exp.id} ..."
        print(f"\r{line:<60}" if live else line, end="" if live else "\n", file=sys.stderr)
        sys.stderr.flush()
        outcome = run_experiment(exp, runs=args.runs, seed=args.seed, cache=cache)
        records.append(write_outcome(outcome, out / exp.id, png=args.png))
    done = f"  [{total}/{total}] done: {sum(r['holds'] for r in records)} of {total} claims hold"
    print(f"\r{done:<60}" if live else done, file=sys.stderr)
    (out / "summary.json").write_text(
        json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "reproduction.md").write_text(
        markdown(records, runs=args.runs, seed=args.seed, fresh=False), encoding="utf-8"
    )
    return [
        {"id": r["id"], "holds": r["holds"], "folder": r["folder"], "evidence": r["evidence"]}
        for r in records
    ]
