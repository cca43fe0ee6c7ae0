"""Benchmark: prepare + release-all at 10⁶, 10⁷, 10⁸ records (time and peak memory).

The task: raw bus records (Parquet) -> summaries file (``hexplorer prepare``, the out-of-core
polars engine) -> one simulated arrayavg-best release for every HAT (``release --all``,
:mod:`core.citywide.batch`). Also, where asked: the same preparation with the Spark engine on
``local[2]`` (``--spark-rows``), the per-HAT Python loop (``--loop-rows``), and PipelineDP on the
same records (``--compare-rows``; ``pip install -e ".[bench]"``).

Targets (issue 11): 10⁸ records prepare with peak memory below 4 GB; all HATs of a 10⁷-record
file released with arrayavg-best in ≤ 1 s after preparation.

Every measurement runs in its own Python process, so its peak resident memory
(``ru_maxrss``, the interpreter and libraries included) is its own. The records are generated
on the fly into a temporary folder (``--data-dir`` keeps them; nothing is committed): the
vehicles of ``bench_prepare.make_records``, written in chunks of 10⁷ records (each chunk its own
200 vehicles), so the generator never holds 10⁸ records.

Run by hand::

    python bench/bench_scaling.py --rows 1e6 1e7 1e8 --spark-rows 1e7 --compare-rows 1e6 1e7

Spark's peak memory is the Python driver's only (the JVM is a separate process), and its CPU
seconds likewise. Each result also has the process's CPU seconds and the 1-minute load average
at its end: on a shared machine the wall-clock times grow with the load, the CPU seconds much
less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 10_000_000
USERS_PER_CHUNK = 200


def write_records(path: Path, n: int, users_per_chunk: int = USERS_PER_CHUNK) -> None:
    """``n`` records as Parquet, written chunk by chunk (``users_per_chunk`` vehicles each)."""
    import polars as pl
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_prepare import make_records

    writer = None
    done = 0
    for i in range(-(-n // CHUNK)):
        size = min(CHUNK, n - done)
        users = max(1, round(users_per_chunk * size / CHUNK))
        frame = make_records(size, seed=i, n_users=users).with_columns(
            (pl.col("user_id") + f"-{i:03d}").alias("user_id")
        )
        table = frame.to_arrow()
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1_000_000)
        done += size
    assert writer is not None
    writer.close()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds() -> float:
    """User + system CPU time of this process (all its threads): on a shared machine it moves
    much less with the load than the wall-clock time does."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(stage: str, source: str, target: str) -> dict:
    """One measurement (in its own process)."""
    out: dict = {"stage": stage}
    import core.citywide.batch  # noqa: F401  (imports are not timed)
    import core.data.stream  # noqa: F401

    t0 = time.perf_counter()
    c0 = cpu_seconds()
    if stage == "prepare":
        from core.data.stream import prepare_to_file

        timings: dict[str, float] = {}
        report = prepare_to_file(source, target, timings=timings)
        out.update(seconds=time.perf_counter() - t0, records=report.records, hats=report.hats)
        out["phases"] = {k: round(v, 2) for k, v in timings.items()}
    elif stage == "spark":
        from core.data.spark import prepare_spark, session

        spark = session("local[2]")
        t1 = time.perf_counter()
        report = prepare_spark(source, target, spark=spark)
        out.update(seconds=time.perf_counter() - t1, session_seconds=t1 - t0, hats=report.hats)
        spark.stop()
    elif stage in ("release-all", "loop"):
        from core.citywide.batch import HatBatch, hat_keys, release_all, release_loop
        from core.data.summaries import read_summaries

        prepared = read_summaries(source)
        t1, c1 = time.perf_counter(), cpu_seconds()
        batch = HatBatch.from_summaries(prepared.summaries, upper=prepared.config.upper)
        t2 = time.perf_counter()
        run = release_all if stage == "release-all" else release_loop
        table = run("arrayavg-best", batch, 1.0, seed=0)
        t3, c3 = time.perf_counter(), cpu_seconds()
        keys0 = time.perf_counter()
        hat_keys(0, "arrayavg-best", batch.hats.tolist())
        out["hat_keys_seconds"] = round(time.perf_counter() - keys0, 3)
        out.update(
            read_seconds=t1 - t0,
            batch_seconds=t2 - t1,
            release_seconds=t3 - t2,
            seconds=t3 - t1,  # after preparation: summaries in memory -> one value per HAT
            cpu_seconds_after_preparation=round(c3 - c1, 3),
            hats=len(table),
            pairs=int(batch.counts.size),
        )
    elif stage == "pipelinedp":
        out.update(_pipelinedp(source))
    out["cpu_seconds"] = round(cpu_seconds() - c0, 2)
    out["load_average"] = round(os.getloadavg()[0], 1)
    out["peak_mb"] = round(peak_mb(), 1)
    return out


def _pipelinedp(summaries: str) -> dict:
    """PipelineDP's DPEngine.aggregate(MEAN) per HAT on the prepared records (see
    bench_pipelinedp.py for the parameters). Its input, one tuple per record (user, HAT, value
    = the user's mean, mean replacement as ours), is built from the summaries and not timed."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_pipelinedp as bp

    from core.data.summaries import read_summaries

    s = read_summaries(summaries).summaries
    hat_names, codes = np.unique(s["hat"].to_numpy().astype(str), return_inverse=True)
    user_codes = np.unique(s["user_id"].to_numpy().astype(str), return_inverse=True)[1]
    m = s["m"].to_numpy()
    mean = (s["s"] / s["m"]).to_numpy()
    records = list(
        zip(
            np.repeat(user_codes, m).tolist(),
            np.repeat(codes, m).tolist(),
            np.repeat(mean, m).tolist(),
            strict=True,
        )
    )
    per_user = s.groupby("user_id")["hat"].nunique().max()
    m_ub = int(np.median(m))
    t0 = time.perf_counter()
    result = bp.run_pipelinedp(records, list(range(hat_names.size)), int(per_user), m_ub)
    return {"seconds": time.perf_counter() - t0, "hats": len(result), "records": len(records)}


def measure(stage: str, source: Path, target: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--child", stage, str(source), str(target)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"stage": stage, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="*", default=[1e6, 1e7, 1e8])
    parser.add_argument("--spark-rows", type=float, nargs="*", default=[])
    parser.add_argument("--loop-rows", type=float, nargs="*", default=[])
    parser.add_argument("--compare-rows", type=float, nargs="*", default=[])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument(
        "--users-per-chunk",
        type=int,
        default=USERS_PER_CHUNK,
        help="vehicles per 10^7 records (2000 gives bench_prepare.py's file: 14k HATs at 10^7)",
    )
    parser.add_argument("--child", nargs=3, metavar=("STAGE", "SOURCE", "TARGET"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="hexplorer-scaling-"))
    folder.mkdir(parents=True, exist_ok=True)
    every = sorted(
        {int(r) for r in [*args.rows, *args.spark_rows, *args.loop_rows, *args.compare_rows]}
    )
    for n in every:
        raw = folder / f"records-{n}.parquet"
        if not raw.exists():
            t0 = time.perf_counter()
            write_records(raw, n, args.users_per_chunk)
            print(f"# generated {n:,} records in {time.perf_counter() - t0:.1f} s", flush=True)
        summaries = folder / f"summaries-{n}.parquet"
        if summaries.exists():
            summaries.unlink()
        result = measure("prepare", raw, summaries)
        print(json.dumps({"rows": n, **result}), flush=True)
        stages = []
        if n in {int(r) for r in args.rows}:
            stages.append("release-all")
        if n in {int(r) for r in args.loop_rows}:
            stages.append("loop")
        if n in {int(r) for r in args.compare_rows}:
            stages.append("pipelinedp")
        for stage in stages:
            print(json.dumps({"rows": n, **measure(stage, summaries, folder / "x")}), flush=True)
        if n in {int(r) for r in args.spark_rows}:
            out = folder / f"spark-{n}.parquet"
            if out.exists():
                out.unlink()
            print(json.dumps({"rows": n, **measure("spark", raw, out)}), flush=True)


if __name__ == "__main__":
    main()
