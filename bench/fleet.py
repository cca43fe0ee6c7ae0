"""The city-fleet shape of issue 29: the records ``bench_peers.py`` and ``bench_scaling.py
--shape fleet`` time, and the bit-equality test's small city.

5,000 vehicles over 3 days; each vehicle's share of the records is lognormal(0, 1.5); each
vehicle has 3 anchors (uniform in a 30 km box around Surat) and every record lies at one of them
± N(0, 0.01°) in latitude and longitude; timestamps uniform over the 3 days; speeds
clip(N(20.7, √115), 0, 65) rounded to 0.1. At H3 resolution 8 × 1 h, 10⁷ records give about
80,000 HATs and 5.9M (HAT, user) pairs: many users per HAT, few records per pair.

>>> f = make_fleet(1_000, seed=1, n_users=50)
>>> f.shape, f.columns
((1000, 5), ['user_id', 'lat', 'lon', 'timestamp', 'speed'])
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: 2024-03-04 00:00 UTC in seconds since 1970.
START = 1_709_510_400
CENTRE = (21.195, 72.83)


def make_fleet(n: int, seed: int = 0, n_users: int = 5_000) -> pl.DataFrame:
    """``n`` records of ``n_users`` vehicles of the fleet shape (see the module)."""
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0.0, 1.5, n_users)
    per_user = np.floor(weights / weights.sum() * n).astype(np.int64)
    short = n - int(per_user.sum())
    per_user[np.argsort(-weights, kind="stable")[:short]] += 1  # exactly n records
    user = np.repeat(np.arange(n_users), per_user)
    anchors_lat = CENTRE[0] + rng.uniform(-0.14, 0.14, (n_users, 3))
    anchors_lon = CENTRE[1] + rng.uniform(-0.15, 0.15, (n_users, 3))
    which = rng.integers(0, 3, n)
    lat = anchors_lat[user, which] + rng.normal(0.0, 0.01, n)
    lon = anchors_lon[user, which] + rng.normal(0.0, 0.01, n)
    del which
    seconds = START + rng.integers(0, 3 * 86_400, n)
    speed = np.round(np.clip(rng.normal(20.7, np.sqrt(115.0), n), 0.0, 65.0), 1)
    names = pl.Series([f"veh-{i:05d}" for i in range(n_users)])
    return pl.DataFrame(
        {
            "user_id": names.gather(user),
            "lat": np.round(lat, 6),
            "lon": np.round(lon, 6),
            "timestamp": (pl.Series(seconds) * 1_000_000).cast(pl.Datetime("us")),
            "speed": speed,
        }
    )


def write_fleet(path, n: int, seed: int = 0, n_users: int = 5_000, chunk: int = 10_000_000) -> None:
    """``n`` fleet records as Parquet (zstd), generated ``chunk`` records at a time (each chunk its
    own seed and its own share of the vehicles, named apart), so 10⁸ records never sit whole in
    memory."""
    import pyarrow.parquet as pq

    writer = None
    done, i = 0, 0
    n_chunks = -(-n // chunk)
    while done < n:
        size = min(chunk, n - done)
        users = n_users if n_chunks == 1 else max(1, round(n_users * size / n))
        frame = make_fleet(size, seed=seed * 1000 + i, n_users=users)
        if n_chunks > 1:
            frame = frame.with_columns((pl.col("user_id") + f"-{i:03d}").alias("user_id"))
        table = frame.to_arrow()
        if writer is None:
            writer = pq.ParquetWriter(str(path), table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1_000_000)
        done += size
        i += 1
    assert writer is not None
    writer.close()
