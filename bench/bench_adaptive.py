"""Benchmark: the adaptive H3 cover of one slot (core.citywide.adaptive); targets <= 0.2 s on the
demo city's busiest slot (resolutions 5-7) and <= 2 s on a slot of 10^7 records (5-8).

The large slot is synthetic: 10^6 (cell, user) pairs over 20,000 users, the pairs' resolution-8
cells drawn from a Gaussian around Surat (sd 0.12 degrees, a dense centre and sparse outskirts),
records per pair 1 + geometric with mean 9, so about 10^7 records (pairs that fall on the same
cell and user are merged). Timed: ``adaptive_cover`` from the summaries DataFrame to the cover
(the median of ``--repeat`` runs, opt-arrayavg at eps = 1, target 3 km/h), after one warm-up
run; wall and process CPU time are both printed (CPU time is the steadier on a shared machine). Building the summaries is not timed. Run by hand from the repository root:
``python bench/bench_adaptive.py [--pairs 1000000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import h3
import numpy as np
import pandas as pd

from core.citywide.adaptive import adaptive_cover
from core.data import PrepConfig, load_demo, prepare

DEMO_TARGET_S = 0.2
LARGE_TARGET_S = 2.0


def synthetic_slot(n_pairs: int, rng: np.random.Generator, res: int = 8) -> pd.DataFrame:
    lat = rng.normal(21.19, 0.12, n_pairs)
    lng = rng.normal(72.83, 0.12, n_pairs)
    pts = np.round(np.column_stack([lat, lng]), 4)  # ~10 m: fewer distinct points to index
    uniq, inv = np.unique(pts, axis=0, return_inverse=True)
    cells = np.array([h3.latlng_to_cell(a, b, res) for a, b in uniq.tolist()], dtype=object)
    cell = cells[inv.ravel()]
    user = rng.integers(0, 20_000, n_pairs)
    m = 1 + rng.geometric(1 / 9, n_pairs)
    df = pd.DataFrame({"cell": cell, "user_id": user.astype(str), "m": m})
    df = df.groupby(["cell", "user_id"], as_index=False, sort=False)["m"].sum()
    speed = rng.uniform(5, 60, len(df))
    df["s"] = df["m"] * speed
    df["q"] = df["m"] * speed**2
    df["slot"] = "2024-03-05T08:00"
    df["hat"] = df["cell"] + "/" + df["slot"]
    return df


def timed(summaries: pd.DataFrame, slot: str, resolutions: tuple[int, int], repeat: int):
    def run():
        return adaptive_cover(
            summaries, slot=slot, epsilon=1.0, target=3.0, resolutions=resolutions
        )

    cover = run()
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return cover, statistics.median(times), statistics.median(cpu)


def report(name: str, cover, seconds: float, cpu: float, target: float, r_max: int) -> None:
    per_res = {int(r): int((cover.resolution == r).sum()) for r in np.unique(cover.resolution)}
    print(
        f"{name}: {cover.n_records:,} records, {len(cover.base_cells):,} res-{r_max} cells -> "
        f"{len(cover.cells):,} cells {per_res}; within 3 km/h: fixed res {r_max} "
        f"{cover.fixed_share_records(r_max):.1%}, adaptive {cover.share_records:.1%}; "
        f"median {seconds * 1e3:.0f} ms wall, {cpu * 1e3:.0f} ms CPU (target {target * 1e3:.0f} ms) "
        f"{'OK' if seconds <= target else 'SLOW'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    summ = prepare(load_demo(), config=PrepConfig(resolution=7)).summaries
    slot = str(summ.loc[summ.groupby("hat")["m"].transform("sum").idxmax(), "slot"])
    cover, sec, cpu = timed(summ, slot, (5, 7), args.repeat)
    report(f"demo city, slot {slot}", cover, sec, cpu, DEMO_TARGET_S, 7)
    big = synthetic_slot(args.pairs, np.random.default_rng(2026))
    cover, sec, cpu = timed(big, "2024-03-05T08:00", (5, 8), args.repeat)
    report("synthetic slot", cover, sec, cpu, LARGE_TARGET_S, 8)


if __name__ == "__main__":
    main()
