"""Benchmark: ``hexplorer release --all`` as its own process on the city fleet's summaries.

Target (issue 29, item 2): <= 1 CPU s (user + sys of the process, imports included) at 10^7
records: ``bench/fleet.py``'s fleet, prepared once (H3 resolution 8, 1 h slots: ~143,600 HATs,
5.8M (HAT, user) pairs), then ``release --all --mechanism arrayavg-best --epsilon 1 --seed 1
--output all.parquet``, each run a fresh ``python`` process. The raw Parquet and the summaries
are made once, untimed, into ``--data-dir`` (kept there for later runs).

Prints one JSON line per run (CPU s, wall s, peak MB, load average, the output's sha256: it must
not change between versions; it changed once, in wave 21, when the windows became the file's row
groups: the text columns are chunked per released piece, as pandas leaves them, and the pieces
moved; the values are the same), then a README-ready line with the median. ``--ab DIR`` runs the
checkout in DIR interleaved with this one (the same data, alternating runs), for an A/B in the
same hour::

    python bench/bench_release_all.py --rows 1e7 --runs 5 [--data-dir DIR] [--ab OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One ``release --all`` in this process; prints its own CPU, wall and peak.
_CHILD = """
import json, os, resource, sys, time
t0 = time.perf_counter()
from core.cli import main
argv = ["release", sys.argv[1], "--all", "--mechanism", "arrayavg-best", "--epsilon", "1",
        "--seed", "1", "--output", sys.argv[2], "--force", "--json"]
with open(os.devnull, "w") as sink:
    out, sys.stdout = sys.stdout, sink
    status = main(argv)
    sys.stdout = out
if status != 0:
    raise SystemExit(status)
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": round(r.ru_utime + r.ru_stime, 3), "user_s": round(r.ru_utime, 3),
                  "sys_s": round(r.ru_stime, 3), "in_process_wall_s": round(time.perf_counter() - t0, 3),
                  "peak_mb": round(r.ru_maxrss / 1024, 1)}))
"""


def summaries_file(folder: Path, rows: int, python: str) -> Path:
    """The fleet's summaries at ``rows`` records (made once: the raw Parquet, then prepare)."""
    target = folder / f"summaries_{rows}.parquet"
    if target.exists():
        return target
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_peers import write_inputs

    raw = write_inputs(folder, rows)
    code = "import sys; from core.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [python, "-c", code, "prepare", str(raw), "--resolution", "8", "--output", str(target)]
    subprocess.run(argv, check=True, cwd=folder, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return target


def run_once(code_root: Path, summaries: Path, out: Path, python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code_root))
    done = subprocess.run(
        [python, "-c", _CHILD, str(summaries), str(out)],
        cwd=out.parent,  # not a checkout: PYTHONPATH alone says which code runs
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average"] = round(os.getloadavg()[0], 2)
    result["sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--ab", type=Path, default=None, metavar="DIR", help="another checkout")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    rows = int(args.rows)
    folder = args.data_dir or Path(tempfile.gettempdir()) / "hexplorer-bench-release"
    folder.mkdir(parents=True, exist_ok=True)
    summaries = summaries_file(folder, rows, args.python)
    roots = {"this": ROOT, **({"other": args.ab.resolve()} if args.ab else {})}
    results: dict[str, list[dict]] = {name: [] for name in roots}
    for i in range(args.runs):
        for name, root in roots.items():
            result = run_once(root, summaries, folder / f"all_{name}.parquet", args.python)
            print(json.dumps({"code": name, "run": i, **result}), flush=True)
            if "error" not in result:
                results[name].append(result)
    import pyarrow.parquet as pq

    meta = pq.read_metadata(summaries)
    for name, runs in results.items():
        if not runs:
            continue
        cpu = statistics.median(r["cpu_s"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        load = statistics.median(r["load_average"] for r in runs)
        digests = sorted({r["sha256"][:12] for r in runs})
        print(
            f"{name}: release --all at {rows:.0e} records ({meta.num_rows:,} pairs): "
            f"{cpu:.2f} CPU s (median of {len(runs)}; {min(r['cpu_s'] for r in runs):.2f}-"
            f"{max(r['cpu_s'] for r in runs):.2f}), peak {peak:,.0f} MB, load {load:.1f}, "
            f"output sha256 {', '.join(digests)} (target <= 1 CPU s)"
        )


if __name__ == "__main__":
    main()
