"""Draw the figures of ``hexplorer reproduce``: ``python -m dashboard.experiments.render DIR``.

``hexplorer reproduce`` (in ``core``, which never imports a UI package) writes each experiment's
``data.csv`` (columns named after the axes) and ``claim.json``; this module reads them back and
writes ``figure.html`` beside them (self-contained, plotly.js inline), and with ``--png`` also
``figure.png`` with an offline static exporter (kaleido if installed, else headless Chromium;
without one it says so and skips the PNG). DIR is one experiment's folder or the folder of
``reproduce all`` (every sub-folder holding a ``claim.json``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from core.errors import HexplorerError
from core.experiments import get_experiment, tidy_table
from dashboard.experiments.charts import (
    experiment_figure,
    figure_html,
    figure_page,
    write_image,
)

__all__ = ["folders", "main", "png_exporter", "render_folder"]

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


def png_exporter() -> str | None:
    """The offline static exporter available: "kaleido", "chromium" or None."""
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
    exporter = png_exporter()
    if exporter == "kaleido":
        try:
            write_image(fig, str(path))
            return ""
        except Exception as exc:  # noqa: BLE001 - kaleido's failures are not ours to type
            return f"kaleido failed ({type(exc).__name__})"
    browser = _chromium()
    if exporter == "chromium" and browser is not None:
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


def render_folder(folder: Path, *, png: bool = False) -> list[str]:
    """Write ``figure.html`` (and ``figure.png``) from one experiment folder's data.csv and
    claim.json; returns the files written."""
    try:
        record = json.loads((folder / "claim.json").read_text(encoding="utf-8"))
        data = pd.read_csv(folder / "data.csv", keep_default_na=False, na_values=[""])
    except (OSError, ValueError) as exc:
        raise HexplorerError(f"{folder} is not a reproduce folder: {exc}.") from None
    exp = get_experiment(record["id"])
    fig = experiment_figure(exp, tidy_table(exp, data), runs=record.get("runs"))
    (folder / "figure.html").write_text(
        figure_html(exp, fig, holds=bool(record["holds"]), evidence=str(record["evidence"])),
        encoding="utf-8",
    )
    written = ["figure.html"]
    if png:
        skipped = _write_png(fig, folder / "figure.png")
        if skipped:
            print(f"render: note: PNG skipped for {exp.id}: {skipped}.", file=sys.stderr)
        else:
            written.append("figure.png")
    return written


def folders(path: Path) -> list[Path]:
    """The experiment folders at ``path``: itself if it holds a claim.json, else its
    sub-folders that do (``reproduce all``), in name order."""
    if (path / "claim.json").is_file():
        return [path]
    found = sorted(p.parent for p in path.glob("*/claim.json"))
    if not found:
        raise HexplorerError(f"{path} holds no claim.json (run hexplorer reproduce first).")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboard.experiments.render",
        description="Draw figure.html (and figure.png) from hexplorer reproduce's data.csv and "
        "claim.json.",
    )
    parser.add_argument("folder", metavar="DIR", help="an experiment folder or reproduce all's")
    parser.add_argument("--png", action="store_true", help="also write figure.png (offline)")
    args = parser.parse_args(argv)
    try:
        done = [(f, render_folder(f, png=args.png)) for f in folders(Path(args.folder))]
    except HexplorerError as exc:
        print(f"render: error: {exc}", file=sys.stderr)
        return 2
    for folder, files in done:
        print(f"{folder}: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
