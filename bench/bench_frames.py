"""One hexagon's frames document: its CPU time and encoded size (the ε charts of every stop).

Run by hand (not in CI): ``python bench/bench_frames.py [--rounds 3] [--hat LABEL]``. On the demo
city with the default settings (a new visitor's data, mechanisms, seed, 2,000 runs, band ±1,
clamped releases, ε = 1) and its busiest HAT unless ``--hat``, computes
:func:`dashboard.hexagon.frames.document` (what the first GET of the page's frames path
computes, :mod:`dashboard.common.view.frames`) ``--rounds`` times after one warm-up of the data
caches, and prints one README-ready line: the CPU seconds of the process (median of rounds;
simulations of every stop × mechanism, ridges, patches), the wall time, the encoded size (compact
JSON) and the gzipped size the browser downloads, with the load average. Target (wave 13): about
0.8 CPU s, ≲ 0.5 MB sent.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import time

from dashboard.common.sidebar import default_spec
from dashboard.common.source import compute
from dashboard.common.view.frames import encode
from dashboard.hexagon import frames as hf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hat", default=None, help="a HAT label (default: the busiest)")
    args = ap.parse_args()
    spec = default_spec()
    hat = args.hat or str(compute.hats(spec)["hat"].iloc[0])
    kwargs = hf.new_visitor(1.0)
    compute.hat(spec, hat)  # the data's caches, as a page run has them
    cpu, wall, body = [], [], b""
    for _ in range(args.rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        body = encode(hf.document(spec, hat, **kwargs))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    zipped = gzip.compress(body, compresslevel=6, mtime=0)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"frames document, demo city's busiest HAT {hat} ({len(kwargs['chosen'])} mechanisms × "
        f"{len(kwargs['stops'])} stops × {kwargs['n_runs']:,} runs): "
        f"{statistics.median(cpu):.2f} CPU s, {statistics.median(wall):.2f} s wall "
        f"(median of {args.rounds}), {len(body) / 1e6:.2f} MB JSON, "
        f"{len(zipped) / 1e6:.2f} MB gzipped (load {load})"
    )


if __name__ == "__main__":
    main()
