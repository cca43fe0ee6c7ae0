"""Benchmark: prepare + release-all at 10⁶, 10⁷, 10⁸ records (time and peak memory).

The task: raw bus records (Parquet) -> summaries file (``hexplorer prepare``, the out-of-core
polars engine) -> one simulated arrayavg-best release for every HAT (``release --all``,
:mod:`core.citywide.batch`). Also, where asked: the same preparation with the Spark engine on
```local[2]`` (``--spark-rows``), the per-HAT Python loop (``--loop-rows``), and PipelineDP and
OpenDP's Polars API on the same task (``--compare-rows``; see "The comparison" below).

Targets (issue 11): 10⁸ records prepare with peak memory below 4 GB; all HATs of a 10⁷-record
file released with arrayavg-best in ≤ 1 s after preparation.

Every measurement runs in its own Python process, so its peak resident memory
(``ru_maxrss``, the interpreter and libraries included) is its own. The records are generated
on the fly into a temporary folder (``--data-dir`` keeps them; nothing is committed): the
vehicles of ``bench_prepare.make_records``, written in chunks of 10⁷ records (each chunk its own
200 vehicles), so the generator never holds 10⁸ records.

Run by hand::

    python bench/bench_scaling.py --rows 1e6 1e7 1e8 --spark-rows 1e7 --compare-rows 1e6 1e7 \
        --opendp-python .venv-opendp/bin/python

Issue 29's scale check (the city-fleet shape of ``bench/fleet.py``, the summaries as a dataset,
``release --all --seed`` as the CLI runs it, part by part), one line per stage with its peak::

    python bench/bench_scaling.py --shape fleet --layout dataset --rows 1e7 --data-dir /tmp/x

``--layout`` ``file`` (default) or ``dataset``: ``prepare`` writes through
:func:`core.data.outofcore.prepare_summaries` (what ``hexplorer prepare`` runs; a dataset, or a
single file through buckets on disk when the input is large). The ``release-cli`` stage is
``release --all --seed`` as the CLI runs it (a file read piece by piece, a dataset part by part);
``release-all`` reads the summaries whole and times the release alone. Each stage prints one
JSON line and a README-ready summary line (``#``) with its wall and CPU seconds, peak resident
memory and the load average.

``--rows`` with no values means no release-all measurement (the other stages still prepare).

The comparison (``--compare-rows``): a user-level DP bounded mean per HAT over the same records,
each library its own estimator. The input is built from the summaries file and not timed: one
record per original record, ``(user, HAT, value)`` with value = that user's mean in that HAT
(mean replacement, as ours), user and HAT as integer codes. Both get the HATs as public keys,
per_user = the most HATs any user visits (so no cross-HAT sampling changes anything), m_UB = the
median records per (HAT, user), values in [0, U] (U from the file's preparation settings, the
default maximum speed 65), Laplace noise, δ = 0 and total ε = 1 × per_user (our per-HAT releases
at ε = 1 compose to the same user-level loss, SPEC section 5).

- PipelineDP (``pip install -e ".[bench]"``): ``DPEngine.aggregate`` with ``Metrics.MEAN`` on a
  Python list of tuples, its local backend's native input (``bench_pipelinedp.run_pipelinedp``);
  public partitions = the HAT list.
- OpenDP's Polars API (``stage opendp``): ``dp.Context.compositor`` over the records as an
  in-memory ``pl.LazyFrame`` with privacy unit ``dp.unit_of(contributions=1,
  identifier=pl.col("user_id"))`` and a margin ``max_length`` = the record count (a loose public
  bound that float sums need), then ``truncate_per_group(m_UB, by=["hat"])`` (a random sample of
  each user's records per HAT), ``truncate_num_groups(per_user, by=["hat"], keep="first")``,
  ``group_by("hat").agg(pl.col("value").dp.mean((0, U)))`` and ``with_keys`` (the HAT list as
  explicit public keys; an ``invariant="keys"`` margin does not survive the truncation filters).
  Timed: the context (``context_seconds``), ``resolve()`` (the privacy analysis and the
  Context's binary search for the noise scale, which builds the whole measurement ≈ 1,130 times
  whatever ε; ``plan_seconds``) and the release collected (``run_seconds``).
  OpenDP 0.16's Polars API needs the polars it was built against (``opendp[polars]`` pins
  polars 1.36.1) while this project uses polars 2, so the stage runs in its own virtual
  environment, ``--opendp-python``, which needs only ``pip install "opendp[polars]==0.16.0"``
  (it reads the summaries with pyarrow and imports nothing from ``core``).

What differs: PipelineDP's and OpenDP's means are noisy sum / noisy count of the bounded records
(each half of the budget; the count's noise can make it ≤ 0, so some HATs come out infinite or
negative), ours is arrayavg-best (BestFit array averaging, SPEC sections 2–3). OpenDP samples
the m_UB records kept per (user, HAT) at random, but as they all carry the user's mean this
keeps min(m, m_UB) × that mean, as ours does (SPEC section 1, mean replacement); its
``truncate_num_groups`` keeps a user's first HATs (``keep="sample"`` fails in 0.16 when grouping
by one column: its sort key struct repeats the field name) — with per_user the maximum it keeps
all of them anyway. Compared is the cost of one user-level DP mean per HAT over the same
records, not the accuracy.

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
import shutil
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
    if stage != "opendp":  # that stage runs in OpenDP's own environment, without core's deps
        import core.citywide.batch  # noqa: F401  (imports are not timed)
        import core.data.outofcore  # noqa: F401

    t0 = time.perf_counter()
    c0 = cpu_seconds()
    if stage in ("prepare", "prepare-dataset"):
        from core.data import PrepConfig
        from core.data.outofcore import prepare_summaries

        timings: dict[str, float] = {}
        config = PrepConfig(resolution=int(os.environ.get("HEXPLORER_BENCH_RESOLUTION", "7")))
        layout = "dataset" if stage == "prepare-dataset" else "file"
        report = prepare_summaries(
            source, target, config=config, layout=layout, force=True, timings=timings
        )
        out.update(seconds=time.perf_counter() - t0, records=report.records, hats=report.hats)
        out["phases"] = {k: round(v, 2) for k, v in timings.items()}
    elif stage == "release-cli":
        from core.citywide.pieces import release_batches
        from core.data.summaries import is_dataset, read_metadata, summary_pieces

        upper = read_metadata(source)["config"].upper
        pieces = summary_pieces(source, ["hat", "user_id", "m", "s"])
        table = release_batches(
            "arrayavg-best", pieces, 1.0, seed=0, upper=upper, whole_hats=is_dataset(source)
        )
        out.update(seconds=time.perf_counter() - t0, hats=len(table))
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
    elif stage == "opendp":
        out.update(_opendp(source))
    out["cpu_seconds"] = round(cpu_seconds() - c0, 2)
    out["load_average"] = round(os.getloadavg()[0], 1)
    out["peak_mb"] = round(peak_mb(), 1)
    return out


def mean_records(summaries: str) -> dict:
    """The comparison's input, built from a summaries file (not timed).

    One record per original record: integer user and HAT codes and the user's mean in the HAT,
    each (HAT, user) summary repeated ``m`` times. Reads with pyarrow and numpy only, so OpenDP's
    own environment can run it too.

    Returns
    -------
    dict
        ``user``, ``hat``, ``value`` (arrays of one entry per record), ``n_hats``, ``per_user``
        (the most HATs any user visits), ``m_ub`` (the median records per (HAT, user)) and
        ``upper`` (U from the file's preparation settings).
    """
    import pyarrow.parquet as pq

    table = pq.read_table(summaries, columns=["hat", "user_id", "m", "s"])
    hat_names, hat = np.unique(table["hat"].to_numpy().astype(str), return_inverse=True)
    user = np.unique(table["user_id"].to_numpy().astype(str), return_inverse=True)[1]
    m = table["m"].to_numpy()
    mean = table["s"].to_numpy() / m
    settings = json.loads(pq.read_schema(summaries).metadata[b"hexplorer.summaries"])
    return {
        "user": np.repeat(user, m),
        "hat": np.repeat(hat, m),
        "value": np.repeat(mean, m),
        "n_hats": int(hat_names.size),
        "per_user": int(np.bincount(user).max()),  # one summary row per (HAT, user)
        "m_ub": int(np.median(m)),
        "upper": float(settings["config"]["upper"]),
    }


def _pipelinedp(summaries: str) -> dict:
    """PipelineDP's DPEngine.aggregate(MEAN) per HAT on the prepared records (see
    bench_pipelinedp.py for the parameters; its U is the same default 65). Its input, one tuple
    per record (:func:`mean_records`), is built from the summaries and not timed."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_pipelinedp as bp

    r = mean_records(summaries)
    records = list(zip(r["user"].tolist(), r["hat"].tolist(), r["value"].tolist(), strict=True))
    t0 = time.perf_counter()
    result = bp.run_pipelinedp(records, list(range(r["n_hats"])), r["per_user"], r["m_ub"])
    return {"seconds": time.perf_counter() - t0, "hats": len(result), "records": len(records)}


def _opendp(summaries: str, epsilon: float = 1.0) -> dict:
    """OpenDP's Polars API: a user-level DP mean per HAT on the prepared records (module
    docstring, "The comparison"). Its input, an in-memory ``pl.LazyFrame`` of
    :func:`mean_records`, is built and not timed; timed are the context (``context_seconds``:
    OpenDP takes the in-memory frame across to Rust), the query's ``resolve()``
    (``plan_seconds``) and its release collected (``run_seconds``)."""
    import polars as pl

    _check_opendp_polars()
    import opendp.prelude as dp

    dp.enable_features("contrib")
    r = mean_records(summaries)
    records = pl.DataFrame({"user_id": r["user"], "hat": r["hat"], "value": r["value"]})
    keys = pl.DataFrame({"hat": np.arange(r["n_hats"], dtype=r["hat"].dtype)})
    t0 = time.perf_counter()
    context = dp.Context.compositor(
        data=records.lazy(),
        privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("user_id")),
        privacy_loss=dp.loss_of(epsilon=epsilon * r["per_user"]),
        split_evenly_over=1,
        margins=[dp.polars.Margin(max_length=records.height)],
    )
    query = (
        context.query()
        .truncate_per_group(r["m_ub"], by=[pl.col("hat")])
        .truncate_num_groups(r["per_user"], by=[pl.col("hat")], keep="first")
        .group_by("hat")
        .agg(pl.col("value").dp.mean(bounds=(0.0, r["upper"])))
        .with_keys(keys)
    )
    t1 = time.perf_counter()
    measurement = query.resolve()
    t2 = time.perf_counter()
    result = context(measurement).collect()
    t3 = time.perf_counter()
    return {
        "seconds": t3 - t0,
        "context_seconds": round(t1 - t0, 2),
        "plan_seconds": round(t2 - t1, 2),
        "run_seconds": round(t3 - t2, 2),
        "hats": result.height,
        "records": records.height,
    }


def _check_opendp_polars() -> None:
    """One line if this Python's polars is not the one OpenDP's Polars API was built against."""
    from importlib.metadata import requires, version

    wanted = [
        r.split(";")[0].split("==")[1].strip()
        for r in requires("opendp") or []
        if r.startswith("polars==")
    ]
    if wanted and version("polars") != wanted[0]:
        raise SystemExit(
            f"OpenDP {version('opendp')}'s Polars API needs polars {wanted[0]} (this Python has "
            f"{version('polars')}): pass --opendp-python, a virtual environment with "
            f'pip install "opendp[polars]=={version("opendp")}"'
        )


def summary_line(rows: int, result: dict) -> str:
    """The README-ready line of one stage."""
    if "error" in result:
        return f"# {rows:.0e} {result['stage']}: failed ({result['error']})"
    return (
        f"# {rows:.0e} records, {result['stage']}: {result.get('seconds', 0):.1f} s wall, "
        f"{result['cpu_seconds']:.1f} s CPU, peak {result['peak_mb'] / 1024:.2f} GB "
        f"(load {result['load_average']})"
    )


def measure(
    stage: str, source: Path, target: Path, python: str = sys.executable, resolution: int = 7
) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HEXPLORER_BENCH_RESOLUTION=str(resolution))
    cmd = [python, __file__, "--child", stage, str(source), str(target)]
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
        "--opendp-python",
        default=os.environ.get("HEXPLORER_OPENDP_PYTHON", sys.executable),
        help="Python of an environment with opendp[polars] for the OpenDP stage "
        "(default: $HEXPLORER_OPENDP_PYTHON, else this one)",
    )
    parser.add_argument(
        "--users-per-chunk",
        type=int,
        default=USERS_PER_CHUNK,
        help="vehicles per 10^7 records (2000 gives bench_prepare.py's file: 14k HATs at 10^7)",
    )
    parser.add_argument(
        "--shape",
        choices=["bus", "fleet"],
        default="bus",
        help="bus: bench_prepare.make_records (resolution 7); fleet: bench/fleet.py, issue 29's "
        "city fleet (5,000 vehicles, resolution 8)",
    )
    parser.add_argument(
        "--layout",
        choices=["file", "dataset"],
        default="file",
        help="the summaries prepare writes: one file or a dataset folder",
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
    resolution = 8 if args.shape == "fleet" else 7
    for n in every:
        raw = folder / f"{'fleet' if args.shape == 'fleet' else 'records'}-{n}.parquet"
        if not raw.exists():
            t0 = time.perf_counter()
            if args.shape == "fleet":
                sys.path.insert(0, str(ROOT / "bench"))
                from fleet import write_fleet

                write_fleet(raw, n)
            else:
                write_records(raw, n, args.users_per_chunk)
            print(f"# generated {n:,} records in {time.perf_counter() - t0:.1f} s", flush=True)
        dataset = args.layout == "dataset"
        summaries = folder / f"summaries-{args.shape}-{n}{'' if dataset else '.parquet'}"
        if summaries.is_file():
            summaries.unlink()
        stage = "prepare-dataset" if dataset else "prepare"
        result = measure(stage, raw, summaries, resolution=resolution)
        print(json.dumps({"rows": n, **result}), flush=True)
        print(summary_line(n, result), flush=True)
        stages = []
        if n in {int(r) for r in args.rows}:
            stages.append("release-cli")
            if not dataset:
                stages.append("release-all")
        if n in {int(r) for r in args.loop_rows}:
            stages.append("loop")
        if n in {int(r) for r in args.compare_rows}:
            stages += ["pipelinedp", "opendp"]
        for stage in stages:
            python = args.opendp_python if stage == "opendp" else sys.executable
            result = measure(stage, summaries, folder / "x", python, resolution)
            print(json.dumps({"rows": n, **result}), flush=True)
            print(summary_line(n, result), flush=True)
        if n in {int(r) for r in args.spark_rows}:
            out = folder / f"spark-{n}"  # the Spark engine writes a summaries dataset (a folder)
            if out.exists():
                shutil.rmtree(out)
            print(json.dumps({"rows": n, **measure("spark", raw, out)}), flush=True)


if __name__ == "__main__":
    main()
