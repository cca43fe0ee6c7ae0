"""Benchmark: one user-level DP mean per HAT from the same raw records, side by side.

Tools (each in its own fresh process, interleaved round by round so the machine's drift falls
on all of them; CPU seconds of the process and its threads, wall seconds, peak resident
memory, and the 1-minute load average at the end):

- ``ours``: the CLI, ``hexplorer prepare`` (out of core, H3 resolution 8, 1 h slots) then
  ``hexplorer release --all --mechanism arrayavg-best --epsilon 1 --seed 1``, each command in
  its own process (imports included); its row adds the two up (peak: the larger).
- ``floor``: polars read + h3ronpy cells + one group-by to (HAT, user) count and sum: the
  least any pipeline of this shape does, with no privacy and no checks.
- ``opendp``: OpenDP's Polars API (``bench_scaling.py``'s query: truncate per HAT and user to
  the median count, truncate the HATs per user, ``dp.mean`` per HAT with the HATs as public
  keys), in its own virtual environment (``--opendp-python``, default
  ``$HEXPLORER_OPENDP_PYTHON``: OpenDP 0.16 pins an older polars; it needs h3ronpy too).
- ``pipelinedp``: PipelineDP's ``DPEngine.aggregate(MEAN)`` on its local backend, a list of
  tuples (``pip install -e ".[bench]"``); skipped with a note when not installed.

The records: ``bench/fleet.py``'s city fleet (5,000 vehicles, 3 days), one raw Parquet file per
size. Every tool starts from that file and computes its own H3 cells (resolution 8) and hour
slots inside its timed process: OpenDP and PipelineDP read it with pyarrow, compute the cells
with h3ronpy, drop zero speeds and clamp to [0, 65] as ours does, then number users and HATs.

Run by hand (one command; prints a JSON line per run, then the README-ready table with the
date, the machine and the ratios to the floor)::

    python bench/bench_peers.py --rows 1e6 1e7 --rounds 2 [--data-dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("ours", "floor", "opendp", "pipelinedp")
RESOLUTION = 8
EPSILON = 1.0


def _usage() -> dict:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_s": round(r.ru_utime + r.ru_stime, 2),
        "peak_mb": round(r.ru_maxrss / 1024.0, 1),
        "load_average": round(os.getloadavg()[0], 1),
    }


def write_inputs(folder: Path, rows: int) -> Path:
    """The raw fleet Parquet of ``rows`` records (written once, untimed)."""
    raw = folder / f"fleet_{rows}.parquet"
    if not raw.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        from fleet import write_fleet

        write_fleet(raw, rows)
    return raw


def _ours(step: str, raw: str, work: str) -> dict:
    """One of ours' two commands (``prepare`` or ``release``), as the CLI runs it."""
    from core.cli import main

    summaries, out = Path(work) / "s.parquet", Path(work) / "all.parquet"
    if step == "prepare":
        argv = ["prepare", raw, "--resolution", str(RESOLUTION), "--output", str(summaries)]
        if main([*argv, "--force", "--json"]) != 0:
            raise SystemExit("prepare failed")
        import pyarrow.parquet as pq

        return {"pairs": pq.read_metadata(summaries).num_rows}
    argv = ["release", str(summaries), "--all", "--mechanism", "arrayavg-best"]
    argv += ["--epsilon", str(EPSILON), "--seed", "1", "--output", str(out), "--force", "--json"]
    if main(argv) != 0:
        raise SystemExit("release --all failed")
    import pyarrow.parquet as pq

    return {"hats": pq.read_metadata(out).num_rows}


def _floor(raw: str) -> dict:
    import polars as pl

    from core.data.aggregation import cell_ids_of

    f = pl.read_parquet(raw)
    cells = cell_ids_of(f["lat"].to_numpy(), f["lon"].to_numpy(), RESOLUTION)
    agg = (
        f.lazy()
        .with_columns(
            pl.Series("cell", cells), (pl.col("timestamp").dt.epoch("s") // 3600).alias("slot")
        )
        .group_by("cell", "slot", "user_id")
        .agg(pl.len().alias("m"), pl.col("speed").sum().alias("s"))
        .collect()
    )
    return {"pairs": agg.height}


def _peer_input(raw: str) -> dict:
    """The peers' records from the raw file, made inside their timed process with pyarrow,
    numpy and h3ronpy only: H3 cells and hour slots, zero speeds dropped and speeds clamped to
    [0, 65] (as ours), users and HATs numbered; per_user: the most HATs a user visits; m_ub: the
    median records per (HAT, user)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from h3ronpy.vector import coordinates_to_cells

    def codes(values) -> np.ndarray:  # dense numbers by a hash table (pyarrow)
        encoded = pc.dictionary_encode(values)
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        return encoded.indices.to_numpy().astype(np.int64)

    t = pq.read_table(raw)
    t = t.filter(pc.greater(t["speed"], 0.0))
    lat, lon = (t[c].to_numpy() for c in ("lat", "lon"))
    cells = pa.array(coordinates_to_cells(lat, lon, RESOLUTION))  # via the Arrow C interface
    slot = pc.cast(t["timestamp"], "int64").to_numpy() // 3_600_000_000  # hours
    user = codes(t["user_id"])
    slot_code = slot - slot.min()
    hat = codes(pa.array(codes(cells) * (int(slot_code.max()) + 1) + slot_code))
    value = np.clip(t["speed"].to_numpy(), 0.0, 65.0)
    pair = hat.astype(np.int64) * (int(user.max()) + 1) + user
    uniq, counts = np.unique(pair, return_counts=True)
    pair_user = uniq % (int(user.max()) + 1)
    return {
        "user": user.astype(np.int64),
        "hat": hat.astype(np.int64),
        "value": value,
        "n_hats": int(hat.max()) + 1,
        "per_user": int(np.bincount(pair_user).max()),
        "m_ub": int(np.median(counts)),
        "pairs": int(uniq.size),
    }


def _opendp(raw: str) -> dict:
    import numpy as np
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    r = _peer_input(raw)
    records = pl.DataFrame({"user_id": r["user"], "hat": r["hat"], "value": r["value"]})
    keys = pl.DataFrame({"hat": np.arange(r["n_hats"], dtype=r["hat"].dtype)})
    context = dp.Context.compositor(
        data=records.lazy(),
        privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("user_id")),
        privacy_loss=dp.loss_of(epsilon=EPSILON * r["per_user"]),
        split_evenly_over=1,
        margins=[dp.polars.Margin(max_length=records.height)],
    )
    query = (
        context.query()
        .truncate_per_group(r["m_ub"], by=[pl.col("hat")])
        .truncate_num_groups(r["per_user"], by=[pl.col("hat")], keep="first")
        .group_by("hat")
        .agg(pl.col("value").dp.mean(bounds=(0.0, 65.0)))
        .with_keys(keys)
    )
    return {"hats": query.release().collect().height, "pairs": r["pairs"]}


def _pipelinedp(raw: str) -> dict:
    import pipeline_dp

    r = _peer_input(raw)
    records = list(zip(r["user"].tolist(), r["hat"].tolist(), r["value"].tolist(), strict=True))
    accountant = pipeline_dp.NaiveBudgetAccountant(
        total_epsilon=EPSILON * r["per_user"], total_delta=0.0
    )
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        metrics=[pipeline_dp.Metrics.MEAN],
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=r["per_user"],
        max_contributions_per_partition=r["m_ub"],
        min_value=0.0,
        max_value=65.0,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda x: x[0],
        partition_extractor=lambda x: x[1],
        value_extractor=lambda x: x[2],
    )
    result = engine.aggregate(records, params, extractors, public_partitions=range(r["n_hats"]))
    accountant.compute_budgets()
    return {"hats": len(list(result)), "pairs": r["pairs"]}


def child(tool: str, raw: str, work: str) -> dict:
    t0 = time.perf_counter()
    if tool.startswith("ours-"):
        out = _ours(tool.removeprefix("ours-"), raw, work)
    elif tool == "floor":
        out = _floor(raw)
    elif tool == "opendp":
        out = _opendp(raw)
    else:
        out = _pipelinedp(raw)
    return {"tool": tool, "work_wall_s": round(time.perf_counter() - t0, 2), **out, **_usage()}


def _run(tool: str, raw: Path, work: Path, python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [python, __file__, "--child", tool, str(raw), str(work)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = round(time.perf_counter() - t0, 2)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"tool": tool, "error": last}
    # the process's whole wall time (start and imports included, as its CPU seconds are)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall_s": wall}


def measure(tool: str, raw: Path, work: Path, python: str) -> dict:
    """One run of ``tool`` in fresh processes (ours: prepare, then release --all, added up)."""
    if tool != "ours":
        return _run(tool, raw, work, python)
    steps = [_run(f"ours-{step}", raw, work, python) for step in ("prepare", "release")]
    for step in steps:
        if "error" in step:
            return {"tool": "ours", "error": f"{step['tool']}: {step['error']}"}
    prep, rel = steps
    return {
        "tool": "ours",
        "pairs": prep["pairs"],
        "hats": rel["hats"],
        "cpu_s": round(prep["cpu_s"] + rel["cpu_s"], 2),
        "wall_s": round(prep["wall_s"] + rel["wall_s"], 2),
        "peak_mb": max(prep["peak_mb"], rel["peak_mb"]),
        "load_average": rel["load_average"],
        "prepare": {k: prep[k] for k in ("cpu_s", "wall_s", "peak_mb")},
        "release": {k: rel[k] for k in ("cpu_s", "wall_s", "peak_mb")},
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "RAW", "WORK"))
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--json", type=Path, help="write every result as JSON to this file")
    parser.add_argument(
        "--opendp-python", default=os.environ.get("HEXPLORER_OPENDP_PYTHON"), metavar="PYTHON"
    )
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return []
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.data_dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for rows in (int(r) for r in args.rows):
            raw = write_inputs(folder, rows)
            for round_ in range(args.rounds):
                for tool in args.tools:
                    python = sys.executable
                    if tool == "opendp":
                        if not args.opendp_python:
                            results.append(
                                {"tool": tool, "rows": rows, "error": "no --opendp-python"}
                            )
                            continue
                        python = args.opendp_python
                    r = {
                        "rows": rows,
                        "round": round_,
                        **measure(tool, raw, Path(tmp), python),
                    }
                    print(json.dumps(r), flush=True)
                    results.append(r)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


def machine() -> str:
    """The machine in a few words: CPU model and cores, OS."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()}"


def table(results: list[dict]) -> str:
    """README-ready rows, medians per (rows, tool): CPU s, wall s, peak MB, peak bytes per
    (HAT, user) pair, CPU and wall as multiples of the floor's, and the load average; headed by
    the date and the machine."""
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine()} (medians of "
        f"{max((r.get('round', 0) for r in results), default=0) + 1} round(s), interleaved).",
        "",
        "| records | tool | CPU s | wall s | peak MB | bytes / pair | CPU / floor | wall / floor "
        "| load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for rows in sorted({r["rows"] for r in results}):
        ok = [r for r in results if r["rows"] == rows and "error" not in r]
        floor = [r for r in ok if r["tool"] == "floor"]
        base_cpu = statistics.median(r["cpu_s"] for r in floor) if floor else None
        base_wall = statistics.median(r["wall_s"] for r in floor) if floor else None
        for tool in TOOLS:
            mine = [r for r in ok if r["tool"] == tool]
            errors = [
                r["error"]
                for r in results
                if r["rows"] == rows and r["tool"] == tool and "error" in r
            ]
            if not mine:
                if errors:
                    lines.append(f"| {rows:.0e} | {tool} | – | – | – | – | – | – | ({errors[0]}) |")
                continue
            cpu = statistics.median(r["cpu_s"] for r in mine)
            wall = statistics.median(r["wall_s"] for r in mine)
            peak = statistics.median(r["peak_mb"] for r in mine)
            pairs = [r["pairs"] for r in mine if r.get("pairs")]
            per_pair = f"{peak * 2**20 / pairs[0]:.0f}" if pairs else "–"
            cpu_ratio = f"{cpu / base_cpu:.2f}" if base_cpu else "–"
            wall_ratio = f"{wall / base_wall:.2f}" if base_wall else "–"
            lines.append(
                f"| {rows:.0e} | {tool} | {cpu:.2f} | {wall:.2f} | {peak:.0f} | {per_pair} | "
                f"{cpu_ratio} | {wall_ratio} | "
                f"{statistics.median(r['load_average'] for r in mine):.1f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
