"""The embedded demo city: three days of bus GPS records in a city like Surat (item 7, issue 2).

Nothing is stored: :func:`load_demo` generates the records deterministically (fixed seed,
numpy-vectorised) in well under two seconds and caches them in memory. ``assets/README.md``
describes the model; in short:

* ``N_ROUTES`` routes, each two straight legs meeting at the central hub (the centre of the H3
  resolution-7 cell around 21.195 N, 72.83 E: the central bus station), 5-11 km per leg;
* ``N_BUSES`` buses over three days (2024-03-04 to 2024-03-06); each shuttles back and forth
  along its route during its shift (70% from 06:00-07:30 to 21:00-23:00, the others a shorter
  middle shift), in segments of 30-150 s at a gamma-distributed speed, with stops (speed 0) and
  a few GPS glitches above 65 km/h (so that clamping is exercised); each bus reports every
  10-30 s (its own interval, +-3 s jitter);
* at every pass through the hub a bus circulates on a small loop (radius 320 m) around the
  station: usually for a few minutes, but "circulator" buses (27%, with newer 10-16 s trackers)
  mostly for 40-90 minutes. This gives the hub's per-bus record counts the papers' heavy tail.

At the default settings (resolution 7, 1 h slots, zeros dropped, U = 65) the busiest HAT is the
hub at 2024-03-05T15:00 with about 205 buses, N about 17,000, m* about 300, a median count
about 50, mean speed about 20.7 km/h and variance about 115; the city spans 58 cells and 17
hourly slots a day. ``tests/data/test_demo.py`` pins these ranges.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import h3
import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd

SEED = 20240304
CENTRE = (21.195, 72.83)
FIRST_DAY = np.datetime64("2024-03-04T00:00:00", "s")
N_DAYS = 3
N_ROUTES = 18
N_BUSES = 205
_M_PER_DEG = 111_320.0

# speeds (km/h) of moving segments: gamma with this mean and variance, a share of stops (0)
SPEED_MEAN = 20.5
SPEED_VAR = 113.0
STOP_SHARE = 0.12
GLITCH_SHARE = 0.002  # GPS glitches: 65-120 km/h, clamped by preparation
LOOP_RADIUS_M = 320.0
CIRCULATOR_SHARE = 0.27  # buses that often circulate long around the hub
P_LONG = (0.05, 0.95)  # chance of a long loop at a pass: other buses, circulators
SHORT_LOOP_S = 150.0


def _hub() -> tuple[float, float]:
    cell = h3.latlng_to_cell(CENTRE[0], CENTRE[1], 7)
    return h3.cell_to_latlng(cell)


def _speeds(rng: np.random.Generator, n: int) -> np.ndarray:
    shape = SPEED_MEAN**2 / SPEED_VAR
    v = rng.gamma(shape, SPEED_MEAN / shape, n)
    glitch = rng.random(n) < GLITCH_SHARE
    v[glitch] = rng.uniform(65.0, 120.0, glitch.sum())
    return v


def _segmented_cumsum(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sums restarting at each index in ``starts`` (rows laid end to end)."""
    cs = np.cumsum(x)
    base = np.r_[0.0, cs][starts]
    counts = np.diff(np.r_[starts, x.size])
    return cs - np.repeat(base, counts)


def _row_search(keys_row, keys, values_row, values, big, side):
    """``searchsorted`` of values in keys within each row (both sorted within rows)."""
    return np.searchsorted(keys_row * big + keys, values_row * big + values, side=side)


def _generate(seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    hub_lat, hub_lon = _hub()
    cos_lat = np.cos(np.radians(hub_lat))

    # routes: two legs leaving the hub at angles th1 and th2, lengths leg_a and leg_c
    th1 = np.linspace(0, 2 * np.pi, N_ROUTES, endpoint=False) + rng.uniform(-0.15, 0.15, N_ROUTES)
    th2 = th1 + np.pi + rng.uniform(-0.6, 0.6, N_ROUTES)
    leg_a = rng.uniform(5_000, 11_000, N_ROUTES)
    leg_c = rng.uniform(5_000, 11_000, N_ROUTES)

    # buses: route, own reporting interval, identifier
    route = rng.integers(0, N_ROUTES, N_BUSES)
    circulator = rng.random(N_BUSES) < CIRCULATOR_SHARE
    interval = np.where(
        circulator, rng.uniform(10.0, 16.0, N_BUSES), rng.uniform(10.0, 30.0, N_BUSES)
    )
    p_long = np.where(circulator, P_LONG[1], P_LONG[0])
    names = [f"bus-{i:03d}" for i in range(N_BUSES)]

    # one row per (day, bus): the shift (70% all day, 30% a shorter middle shift)
    n_rows = N_DAYS * N_BUSES
    day = np.repeat(np.arange(N_DAYS), N_BUSES)
    bus = np.tile(np.arange(N_BUSES), N_DAYS)
    r = route[bus]
    kind = rng.random(n_rows) < 0.7
    start = np.where(kind, rng.uniform(6.0, 7.5, n_rows), rng.uniform(7.0, 9.0, n_rows)) * 3600
    end = np.where(kind, rng.uniform(21.0, 23.0, n_rows), rng.uniform(19.0, 21.0, n_rows)) * 3600
    span = end - start
    length = leg_a[r] + leg_c[r]
    period = 2 * length

    # reporting times (seconds after the shift start), flat over rows
    n_rep = (span / interval[bus] * 1.1).astype(np.int64) + 10
    rep_row = np.repeat(np.arange(n_rows), n_rep)
    rep_starts = np.r_[0, np.cumsum(n_rep)[:-1]]
    gaps = np.maximum(3.0, np.round(interval[bus][rep_row] + rng.uniform(-3, 3, rep_row.size)))
    rel = _segmented_cumsum(gaps, rep_starts)
    keep = rel < span[rep_row]
    rel, rep_row = rel[keep], rep_row[keep]

    # route-clock segments: 30-150 s at a gamma speed, or a stop of 15-60 s at speed 0
    n_seg = (span / 60.0).astype(np.int64) + 20
    seg_row = np.repeat(np.arange(n_rows), n_seg)
    seg_starts = np.r_[0, np.cumsum(n_seg)[:-1]]
    tau = rng.uniform(30.0, 150.0, seg_row.size)
    v = _speeds(rng, seg_row.size)
    stop = rng.random(seg_row.size) < STOP_SHARE
    v[stop] = 0.0
    tau[stop] = rng.uniform(15.0, 60.0, stop.sum())
    step = v * tau / 3.6
    t_end = _segmented_cumsum(tau, seg_starts)
    t_start = t_end - tau
    d0 = rng.uniform(0, period)
    d_end = d0[seg_row] + _segmented_cumsum(step, seg_starts)
    d_start = d_end - step
    d_last = d_end[np.cumsum(n_seg) - 1]

    # passes through the hub (route coordinate leg_a or, going back, period - leg_a)
    k_lo = np.floor(d0 / period)
    n_k = (np.ceil(d_last / period) - k_lo + 1).astype(np.int64)
    k_row = np.repeat(np.arange(n_rows), n_k)
    k = k_lo[k_row] + (np.arange(k_row.size) - np.repeat(np.r_[0, np.cumsum(n_k)[:-1]], n_k))
    pass_row = np.repeat(k_row, 2)
    target = np.column_stack(
        [leg_a[r][k_row] + period[k_row] * k, period[k_row] * (k + 1) - leg_a[r][k_row]]
    ).ravel()
    ok = (target > d0[pass_row]) & (target < d_last[pass_row])
    target, pass_row = target[ok], pass_row[ok]
    big_d = 1e8
    j = _row_search(seg_row, d_end, pass_row, target, big_d, "left")
    speed_ms = v[j] / 3.6
    u_pass = t_start[j] + np.where(
        speed_ms > 0, (target - d_start[j]) / np.maximum(speed_ms, 1e-9), 0
    )
    loop_len = _loop_durations(rng, p_long[bus[pass_row]])
    n_pass = np.bincount(pass_row, minlength=n_rows)
    pass_starts = np.r_[0, np.cumsum(n_pass)[:-1]]
    done_incl = _segmented_cumsum(loop_len, pass_starts)
    ep_start = u_pass + done_incl - loop_len
    ep_end = ep_start + loop_len

    # each report: inside a loop episode, or on the route at route-clock u
    big_t = 1e6
    i = _row_search(pass_row, ep_start, rep_row, rel, big_t, "right") - 1
    ic = np.maximum(i, 0)
    valid = (i >= 0) & (pass_row[ic] == rep_row)
    in_loop = valid & (rel < ep_end[ic])
    u = np.where(in_loop, u_pass[ic], rel - np.where(valid, done_incl[ic], 0.0))
    seg = _row_search(seg_row, t_start, rep_row, u, big_t, "right") - 1
    dist = d_start[seg] + v[seg] / 3.6 * (u - t_start[seg])
    phase = np.mod(dist, period[rep_row])
    x = np.where(phase <= length[rep_row], phase, period[rep_row] - phase) - leg_a[r][rep_row]
    ang = np.where(x < 0, th1[r][rep_row], th2[r][rep_row])
    east = np.abs(x) * np.cos(ang)
    north = np.abs(x) * np.sin(ang)
    speed = v[seg] * rng.lognormal(0.0, 0.08, rel.size)

    # loops: a circle through the hub centre, at ordinary speeds (with stops)
    elapsed = rel[in_loop] - ep_start[ic[in_loop]]
    alpha = (SPEED_MEAN / 3.6) * elapsed / LOOP_RADIUS_M
    east[in_loop] = LOOP_RADIUS_M * (np.cos(alpha) - 1.0)
    north[in_loop] = LOOP_RADIUS_M * np.sin(alpha)
    loop_speed = _speeds(rng, int(in_loop.sum()))
    loop_speed[rng.random(loop_speed.size) < STOP_SHARE] = 0.0
    speed[in_loop] = loop_speed

    # rows come out by day, then bus, then time
    seconds = np.round(day[rep_row] * 86400 + start[rep_row] + rel).astype(np.int64)
    user = pa.array(names).take(pa.array(bus[rep_row]))
    import pandas as pd  # here: importing core.data (e.g. `hexplorer prepare`) needs no pandas

    return pd.DataFrame(
        {
            "user_id": user.to_pandas(
                types_mapper={pa.string(): pd.StringDtype("pyarrow", na_value=np.nan)}.get
            ),
            "lat": np.round(hub_lat + north / _M_PER_DEG, 6),
            "lon": np.round(hub_lon + east / (_M_PER_DEG * cos_lat), 6),
            "timestamp": FIRST_DAY + seconds.astype("timedelta64[s]"),
            "speed": np.round(speed, 1),
        }
    )


def _loop_durations(rng: np.random.Generator, p_long: np.ndarray) -> np.ndarray:
    """Seconds a bus circulates around the hub at a pass: mostly minutes, sometimes an hour."""
    n = p_long.size
    short = rng.exponential(SHORT_LOOP_S, n)
    long = rng.uniform(2400.0, 5400.0, n)
    return np.where(rng.random(n) < p_long, long, short)


@functools.lru_cache(maxsize=1)
def _cached() -> pd.DataFrame:
    return _generate()


def load_demo() -> pd.DataFrame:
    """Raw records of the demo city: columns user_id, lat, lon, timestamp, speed.

    Generated deterministically (fixed seed) on first use and cached; each call returns a copy,
    so callers may modify it.

    Returns
    -------
    pandas.DataFrame
        About 1-2 million records of buses over three days (2024-03-04 to 2024-03-06), naive
        local timestamps, speeds in km/h (zeros for stops, a few above 65).
    """
    return _cached().copy()
