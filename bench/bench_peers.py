"""Benchmark: one user-level DP mean per HAT from the same raw records, side by side.

Tools (each in its own fresh process, interleaved round by round so the machine's drift falls
on all of them; CPU seconds of the process and its threads, wall seconds, peak resident
memory, and the 1-minute load average at the end):

- ``ours``: ``hexplorer prepare`` (out of core, H3 resolution 8, 1 h slots) and ``hexplorer
  release --all --mechanism arrayavg-best --epsilon 1 --seed 1`` in one process (the library
  route of the two commands).
- ``floor``: polars read + h3ronpy cells + one group-by to (HAT, user) count and sum: the
  least any pipeline of this shape does, with no privacy and no checks.
- ``opendp``: OpenDP's Polars API (``bench_scaling.py``'s query: truncate per HAT and user to
  the median count, truncate the HATs per user, ``dp.mean`` per HAT with the HATs as public
  keys), in its own virtual environment (``--opendp-python``, default
  ``$HEXPLORER_OPENDP_PYTHON``: OpenDP 0.16 pins an older polars).
- ``pipelinedp``: PipelineDP's ``DPEngine.aggregate(MEAN)`` on its local backend, a list of
  tuples (``pip install -e ".[bench]"``); skipped with a note when not installed.

The records: ``bench/fleet.py``'s city fleet (5,000 vehicles, 3 days). ``ours`` and ``floor``
read the raw Parquet and compute their own H3 cells; OpenDP and PipelineDP get the records
with their HAT already computed (integer user, integer HAT, speed: written untimed next to the
raw file), so their rows leave out the H3 step that ours pays (about 4 s CPU at 10⁷).

Run by hand::

    python bench/bench_peers.py --rows 1e6 1e7 --rounds 2 [--data-dir DIR] [--json OUT]

Prints one JSON line per (size, round, tool) and a table of the medians per tool and size.
"""

from __future__ import annotations

import argparse
import json
import os
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


def write_inputs(folder: Path, rows: int) -> tuple[Path, Path]:
    """The raw fleet Parquet and the peers' precomputed (user, hat, value) Parquet (untimed)."""
    raw = folder / f"fleet_{rows}.parquet"
    peers = folder / f"fleet_{rows}_hats.parquet"
    if not raw.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        from fleet import write_fleet

        write_fleet(raw, rows)
    if not peers.exists():
        import polars as pl

        from core.data.aggregation import cell_ids_of

        f = pl.read_parquet(raw).filter(pl.col("speed") > 0)  # as ours: zeros dropped
        import numpy as np

        cells = cell_ids_of(f["lat"].to_numpy(), f["lon"].to_numpy(), RESOLUTION)
        slot = (f["timestamp"].dt.epoch("s") // 3600).to_numpy()
        cell_rank = np.searchsorted(np.unique(cells), cells)
        slot_rank = slot - slot.min()
        _, hat = np.unique(cell_rank * (int(slot_rank.max()) + 1) + slot_rank, return_inverse=True)
        pl.DataFrame(
            {
                "user_id": f["user_id"].rank("dense").cast(pl.Int64) - 1,
                "hat": hat.astype(np.int64),
                "value": f["speed"].clip(0.0, 65.0),
            }
        ).write_parquet(peers)
    return raw, peers


def _ours(raw: str, work: str) -> dict:
    from core.cli import main

    summaries, out = Path(work) / "s.parquet", Path(work) / "all.parquet"
    argv = ["prepare", raw, "--resolution", str(RESOLUTION), "--output", str(summaries)]
    if main([*argv, "--force", "--json"]) != 0:
        raise SystemExit("prepare failed")
    argv = ["release", str(summaries), "--all", "--mechanism", "arrayavg-best"]
    argv += ["--epsilon", str(EPSILON), "--seed", "1", "--output", str(out), "--force", "--json"]
    if main(argv) != 0:
        raise SystemExit("release --all failed")
    import pyarrow.parquet as pq

    return {"hats": pq.read_metadata(out).num_rows, "pairs": pq.read_metadata(summaries).num_rows}


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


def _peer_input(peers: str) -> dict:
    """The peers' records and parameters (per_user: the most HATs a user visits; m_ub: the
    median records per (HAT, user)), read with pyarrow and numpy only."""
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(peers)
    user, hat, value = (t[c].to_numpy() for c in ("user_id", "hat", "value"))
    pair = hat.astype(np.int64) * (int(user.max()) + 1) + user
    uniq, counts = np.unique(pair, return_counts=True)
    pair_user = uniq % (int(user.max()) + 1)
    return {
        "user": user,
        "hat": hat,
        "value": value,
        "n_hats": int(hat.max()) + 1,
        "per_user": int(np.bincount(pair_user).max()),
        "m_ub": int(np.median(counts)),
    }


def _opendp(peers: str) -> dict:
    import numpy as np
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    r = _peer_input(peers)
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
    return {"hats": query.release().collect().height}


def _pipelinedp(peers: str) -> dict:
    import pipeline_dp

    r = _peer_input(peers)
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
    return {"hats": len(list(result))}


def child(tool: str, raw: str, peers: str, work: str) -> dict:
    t0 = time.perf_counter()
    if tool == "ours":
        out = _ours(raw, work)
    elif tool == "floor":
        out = _floor(raw)
    elif tool == "opendp":
        out = _opendp(peers)
    else:
        out = _pipelinedp(peers)
    return {"tool": tool, "work_wall_s": round(time.perf_counter() - t0, 2), **out, **_usage()}


def measure(tool: str, raw: Path, peers: Path, work: Path, python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [python, __file__, "--child", tool, str(raw), str(peers), str(work)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = round(time.perf_counter() - t0, 2)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"tool": tool, "error": last}
    # the process's whole wall time (start and imports included, as its CPU seconds are)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall_s": wall}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=4, metavar=("TOOL", "RAW", "PEERS", "WORK"))
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
            raw, peers = write_inputs(folder, rows)
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
                        **measure(tool, raw, peers, Path(tmp), python),
                    }
                    print(json.dumps(r), flush=True)
                    results.append(r)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


def table(results: list[dict]) -> str:
    """Medians per (rows, tool): CPU s, wall s, peak MB, CPU s per (HAT, user) pair of ``ours``
    (µs), the ratio to the floor's CPU, and the load average."""
    lines = [
        "| rows | tool | CPU s | wall s | peak MB | CPU / floor | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for rows in sorted({r["rows"] for r in results}):
        ok = [r for r in results if r["rows"] == rows and "error" not in r]
        floor = [r["cpu_s"] for r in ok if r["tool"] == "floor"]
        base = statistics.median(floor) if floor else None
        for tool in TOOLS:
            mine = [r for r in ok if r["tool"] == tool]
            errors = [
                r["error"]
                for r in results
                if r["rows"] == rows and r["tool"] == tool and "error" in r
            ]
            if not mine:
                if errors:
                    lines.append(f"| {rows:.0e} | {tool} | – | – | – | – | ({errors[0]}) |")
                continue
            cpu = statistics.median(r["cpu_s"] for r in mine)
            ratio = f"{cpu / base:.2f}" if base else "–"
            lines.append(
                f"| {rows:.0e} | {tool} | {cpu:.2f} | {statistics.median(r['wall_s'] for r in mine):.2f} | "
                f"{statistics.median(r['peak_mb'] for r in mine):.0f} | {ratio} | "
                f"{statistics.median(r['load_average'] for r in mine):.1f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
