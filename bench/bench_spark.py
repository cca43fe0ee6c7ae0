"""Spark end to end on the fleet shape: ``prepare --engine spark`` then ``release --all --engine
spark``, each as its own ``hexplorer`` process on ``--master`` (default ``local[2]``, default
driver memory), the summaries never on the driver (issue 29).

    python bench/bench_spark.py                   # 10⁷ records (generated once, then reused)
    python bench/bench_spark.py --records 1000000 # a quick run

Each command's wall seconds, CPU seconds and peak memory are read from ``/proc`` every 0.2 s over
its whole process tree (the Python driver, the JVM that is Spark's driver and executors in local
mode, and the Python workers): CPU is the sum of every process's last seen user + system time,
peaks are the largest RSS of the Python driver, of the JVM, and of the tree's sum. The load
average is printed with the figures (a loaded machine stretches wall time, and CPU time a little).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree(root: int) -> list[int]:
    """``root`` and its live descendants (from /proc/*/stat parent ids)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, ()))
    return out


def _sample(pid: int) -> tuple[float, int, str] | None:
    """(CPU seconds, RSS bytes, command name) of one process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, tail = f.read().rsplit(")", 1)
        fields = tail.split()
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK, rss, head.split("(", 1)[1]


def measure(argv: list[str]) -> dict:
    """Run ``argv``; its wall s, CPU s (the whole tree) and peak RSS (driver, JVM, total)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu: dict[int, float] = {}
    peaks = {"python": 0, "jvm": 0, "total": 0}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            total = 0
            for pid in _tree(proc.pid):
                got = _sample(pid)
                if got is None:
                    continue
                seconds, rss, name = got
                cpu[pid] = max(cpu.get(pid, 0.0), seconds)
                total += rss
                if pid == proc.pid:
                    peaks["python"] = max(peaks["python"], rss)
                elif name == "java":
                    peaks["jvm"] = max(peaks["jvm"], rss)
            peaks["total"] = max(peaks["total"], total)
            time.sleep(0.2)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    thread.join()
    if proc.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-5:])
        raise SystemExit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n{tail}")
    gb = {k: round(v / 1e9, 2) for k, v in peaks.items()}
    return {"wall_s": round(wall, 1), "cpu_s": round(sum(cpu.values()), 1), "peak_gb": gb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--mechanism", default="arrayavg-best")
    parser.add_argument("--dir", default=None, help="working folder [a temporary one]")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-spark-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"fleet-{args.records}.parquet"
    if not src.exists():
        from bench.fleet import write_fleet

        write_fleet(src, args.records)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    os.environ.update(env)
    hexplorer = [sys.executable, "-c", "import sys; from core.cli import main; sys.exit(main())"]
    spark = ["--engine", "spark", "--spark-master", args.master, "--force", "--json"]
    summaries, releases = work / "summaries", work / "releases.parquet"
    load0 = os.getloadavg()
    prepare = measure(
        [*hexplorer, "prepare", str(src), "--resolution", "8", "--output", str(summaries), *spark]
    )
    release = measure(
        [
            *hexplorer,
            "release",
            str(summaries),
            "--all",
            "--mechanism",
            args.mechanism,
            "--epsilon",
            "1",
            "--seed",
            "1",
            "--output",
            str(releases),
            *spark,
        ]
    )
    load1 = os.getloadavg()
    parts = len(list(summaries.glob("part-*.parquet")))
    report = json.loads((summaries / "_hexplorer_summaries.json").read_text())["report"]
    result = {
        "records": args.records,
        "master": args.master,
        "hats": report["hats"],
        "parts": parts,
        "prepare": prepare,
        "release_all": release,
        "load_before": [round(x, 1) for x in load0],
        "load_after": [round(x, 1) for x in load1],
    }
    print(json.dumps(result, indent=2))

    def line(name: str, m: dict) -> str:
        p = m["peak_gb"]
        return (
            f"{name} {m['wall_s']} s wall, {m['cpu_s']} s CPU, peak {p['total']} GB "
            f"(JVM {p['jvm']}, Python driver {p['python']})"
        )

    print(
        f"Spark {args.master}, {args.records:.0e} fleet records ({report['hats']:,} HATs, "
        f"{parts} parts): {line('prepare', prepare)}; {line('release --all', release)}; "
        f"load {load0[0]:.1f} -> {load1[0]:.1f}."
    )


if __name__ == "__main__":
    main()
