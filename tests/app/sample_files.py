"""Small uploads with column names that are not the defaults, shared by the UI tests."""

from __future__ import annotations

import numpy as np
import pandas as pd


def ships_csv() -> bytes:
    """AIS-like names (MMSI, BaseDateTime, LAT, LON, SOG in knots): 8 ships, 2 hours."""
    rng = np.random.default_rng(3)
    rows = []
    for ship in range(8):
        for k in range(15 + 2 * ship):
            minute = (7 * k + ship) % 120
            rows.append(
                {
                    "MMSI": 366_000_100 + ship,
                    "BaseDateTime": f"2023-01-01T{8 + minute // 60:02d}:{minute % 60:02d}:00",
                    "LAT": 29.70 + 0.02 * (ship % 4) + 0.001 * (k % 5),
                    "LON": -95.00 - 0.02 * (ship // 4) - 0.001 * (k % 7),
                    "SOG": float(np.round(rng.uniform(0.5, 36.0), 1)),
                }
            )
    return pd.DataFrame(rows).to_csv(index=False).encode()


def flights_csv(n: int, planes: int, spots: int) -> bytes:
    """Flight-like names (callsign, latitude, longitude, timestamp, speed_kmh): ``n`` records of
    ``planes`` planes over ``spots`` × ``spots`` positions, one hour."""
    rng = np.random.default_rng(11)
    return (
        pd.DataFrame(
            {
                "callsign": [f"AB{i % planes:03d}" for i in range(n)],
                "latitude": 48.35 + 0.01 * rng.integers(0, spots, n),
                "longitude": 11.78 + 0.01 * rng.integers(0, spots, n),
                "timestamp": [f"2024-05-01 09:{m:02d}:00" for m in rng.integers(0, 60, n)],
                "speed_kmh": rng.uniform(100.0, 900.0, n).round(1),
            }
        )
        .to_csv(index=False)
        .encode()
    )
