"""Benchmark: user-level bounded mean per HAT over 10⁶ in-memory records, PipelineDP vs ours.

Target: this project at least 10× faster than PipelineDP's local backend (issue 2). PipelineDP is
installed for this benchmark only (``pip install pipeline-dp``; it is not a project dependency).

Records (not timed): 10⁶ synthetic bus records ``(user, hat, speed)``: 2,000 buses with
heavy-tailed activity, each visiting its own 25 of 400 HATs (partition = HAT, privacy id = user),
speeds projected-Gaussian on [0, 65] with the papers' mean and variance. PipelineDP gets them as
a Python list of tuples (its local backend's native input), this project as columns (a polars
frame, the native input of ``core.data.aggregation.aggregate``); building either is not timed.

Timed:

- PipelineDP: ``DPEngine.aggregate`` with ``Metrics.MEAN``, Laplace noise, public partitions (the
  HAT list, as HATs are public here too), ``max_partitions_contributed`` = the most HATs any bus
  visits (so no cross-partition sampling is needed), ``max_contributions_per_partition`` = m_UB,
  values in [0, 65], δ = 0, total ε = 1 × that maximum (our per-HAT releases at ε = 1 compose to
  the same user-level loss, SPEC section 5) — then the lazy result materialised.
- This project: ``core.data.aggregation.aggregate`` (per HAT, user: m, s, q), then, per HAT,
  ``HatData.from_arrays`` and one ``run_mechanism`` draw of ``arrayavg-best`` (m_UB = the HAT's
  median count; also ``baseline`` and ``opt-bounding`` for reference), ε = 1 per HAT.

The two release different estimators (PipelineDP: noisy sum / noisy count of bounded records;
ours: BestFit array averaging); what is compared is the cost of a user-level DP bounded mean per
partition over the same records. Times are the best of ``--repeat`` runs; a 2-core machine's
numbers vary with load. Run by hand: ``python bench/bench_pipelinedp.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from core.data.aggregation import aggregate
from core.hat import HatData
from core.mechanisms import run_mechanism

N_RECORDS = 1_000_000
N_USERS = 2_000
N_HATS = 400
HATS_PER_USER = 25
U = 65.0
EPSILON = 1.0
TARGET_RATIO = 10.0


def make_records(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user index, HAT index, speed) arrays of N_RECORDS synthetic records."""
    activity = rng.pareto(1.5, N_USERS) + 0.05  # heavy-tailed number of records per bus
    user = rng.choice(N_USERS, size=N_RECORDS, p=activity / activity.sum())
    visits = np.stack([rng.choice(N_HATS, HATS_PER_USER, replace=False) for _ in range(N_USERS)])
    hat = visits[user, rng.integers(0, HATS_PER_USER, N_RECORDS)]
    speed = np.clip(rng.normal(20.66769, np.sqrt(115.135), N_RECORDS), 0.0, U)
    return user.astype(np.int64), hat.astype(np.int64), speed


def run_ours(frame: pl.DataFrame, mechanism: str, rng: np.random.Generator) -> dict[int, float]:
    """Summaries by the aggregation engine, then one release of ``mechanism`` per HAT."""
    agg = aggregate(frame).sort("cell")  # HatData sorts users itself
    cell = agg.get_column("cell").to_numpy()
    m = agg.get_column("m").to_numpy()
    s = agg.get_column("s").to_numpy()
    q = agg.get_column("q").to_numpy()
    users = agg.get_column("user").to_numpy()
    bounds = np.flatnonzero(np.diff(cell)) + 1
    starts = np.concatenate(([0], bounds))
    stops = np.concatenate((bounds, [cell.size]))
    out = {}
    for a, b in zip(starts, stops, strict=True):
        hat = HatData.from_arrays(m[a:b], s[a:b], q[a:b], users[a:b], upper=U)
        out[int(cell[a])] = float(
            run_mechanism(mechanism, hat, EPSILON, rng=rng, size=1).estimates[0]
        )
    return out


def run_pipelinedp(records: list[tuple], hats: list[int], max_partitions: int, m_ub: int) -> dict:
    import pipeline_dp

    accountant = pipeline_dp.NaiveBudgetAccountant(
        total_epsilon=EPSILON * max_partitions, total_delta=0.0
    )
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        metrics=[pipeline_dp.Metrics.MEAN],
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=max_partitions,
        max_contributions_per_partition=m_ub,
        min_value=0.0,
        max_value=U,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: r[2],
    )
    result = engine.aggregate(records, params, extractors, public_partitions=hats)
    accountant.compute_budgets()
    return {k: v.mean for k, v in result}


def best_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(2026)
    user, hat, speed = make_records(rng)
    frame = pl.DataFrame(
        {
            "cell": hat.astype(np.uint64),
            "slot": np.zeros(N_RECORDS, dtype=np.int64),
            "user": pl.Series([f"bus{u:05d}" for u in range(N_USERS)]).gather(user),
            "value": speed,
        }
    )
    records = list(zip(user.tolist(), hat.tolist(), speed.tolist(), strict=True))
    hats = sorted(set(hat.tolist()))
    pairs = np.unique(user * N_HATS + hat)
    max_partitions = int(np.bincount(pairs // N_HATS).max())
    per_pair = np.unique(user * N_HATS + hat, return_counts=True)[1]
    m_ub = int(np.median(per_pair))
    true = {int(h): float(v) for h, v in zip(*_true_means(hat, speed), strict=True)}
    print(
        f"{N_RECORDS:,} records, {N_USERS:,} users, {len(hats)} HATs, "
        f"max HATs per user {max_partitions}, median records per (user, HAT) {m_ub}"
    )

    t_pdp, res_pdp = best_of(
        lambda: run_pipelinedp(records, hats, max_partitions, m_ub), args.repeat
    )
    print(f"PipelineDP {_version()} local backend, MEAN: {t_pdp:.3f} s")
    results = {}
    for name in ("arrayavg-best", "baseline", "opt-bounding"):
        t, res = best_of(lambda n=name: run_ours(frame, n, rng), args.repeat)
        results[name] = (t, res)
        print(f"dp-hexplorer {name:>14}: {t:.3f} s  ({t_pdp / t:.1f}x faster)")
    t_ours, res_ours = results["arrayavg-best"]
    ratio = t_pdp / t_ours
    mae_pdp = np.mean([abs(res_pdp[h] - true[h]) for h in hats])
    mae_ours = np.mean([abs(res_ours[h] - true[h]) for h in hats])
    print(
        "one release per HAT, mean |error| over HATs: "
        f"PipelineDP {mae_pdp:.3f}, ours {mae_ours:.3f}"
    )
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(
        f"ratio PipelineDP / ours (arrayavg-best) = {ratio:.1f}x "
        f"({verdict} the {TARGET_RATIO:g}x target)"
    )


def _true_means(hat: np.ndarray, speed: np.ndarray):
    ids, inv = np.unique(hat, return_inverse=True)
    return ids, np.bincount(inv, weights=speed) / np.bincount(inv)


def _version() -> str:
    import pipeline_dp

    return pipeline_dp.__version__


if __name__ == "__main__":
    main()
