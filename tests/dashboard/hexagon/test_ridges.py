"""The distribution chart's ridges for many stops at once (``ridges.ridges_each``) are the
ridges of each stop alone (``ridges.ridges``, what the page draws), bit for bit: the x range,
the bins' x, every ridge's heights and shares. On sets of every awkward shape: one run, a
constant set (a range widened by ±1), ties, a set of another length, a tiny or a huge scale,
clamped releases with many zeros, and sets holding NaN or -0.0 (taken one stop at a time)."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.hexagon.ridges import ReleaseSet, ridges, ridges_each, sorted_quantiles


def bits(x) -> bytes:
    return np.asarray(x, dtype=np.float64).tobytes()


def groups(seed: int) -> list[list[ReleaseSet]]:
    rng = np.random.default_rng(seed)
    makers = [
        lambda n: rng.laplace(20, rng.uniform(0.01, 50), n),
        lambda n: np.clip(rng.laplace(20, 100, n), 0, 40),  # many zeros and 40s
        lambda n: np.full(n, 3.0),
        lambda n: np.round(rng.normal(5, 2, n), 1),  # ties
        lambda n: rng.normal(1e6, 1e-4, n),
        lambda n: rng.laplace(0, 1e-8, n),
    ]
    out = []
    for trial in range(120):
        k, n = int(rng.integers(1, 6)), int(rng.choice([1, 2, 3, 7, 200, 2000]))
        make = makers[trial % len(makers)]
        sets = [
            ReleaseSet(mechanism="m", title="M", values=make(n), share_within=0.5) for _ in range(k)
        ]
        if trial % 17 == 3:
            sets.append(ReleaseSet(mechanism="m", title="M", values=make(n + 1), share_within=0))
        if trial % 19 == 4:
            sets[0].values[0] = np.nan
        if trial % 23 == 5:
            sets[-1].values[-1] = -0.0
        out.append(sets)
    return out


@pytest.mark.parametrize(("true_mean", "within"), [(20.0, 1.0), (3.0, 0.0), (5.0, 2.5)])
def test_many_stops_at_once_are_each_stop_alone(true_mean, within):
    cases = groups(7)
    got = ridges_each(cases, true_mean=true_mean, within=within)
    assert len(got) == len(cases)
    for sets, r in zip(cases, got, strict=True):
        want = ridges(sets, true_mean=true_mean, within=within)
        assert type(r.lo) is float and type(r.hi) is float
        assert bits([r.lo, r.hi]) == bits([want.lo, want.hi])
        assert bits(r.x) == bits(want.x)
        assert len(r.ys) == len(want.ys) == len(r.shares) == len(sets)
        for a, b in zip(r.ys + r.shares, want.ys + want.shares, strict=True):
            assert bits(a) == bits(b)


def test_quantiles_of_sorted_rows_are_numpys():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 201, 2000):
        v = rng.laplace(0, 3, (4, n))
        q = (0.0, 0.005, 0.25, 0.5, 0.995, 1.0)
        assert bits(sorted_quantiles(np.sort(v), q)) == bits(np.quantile(v, q, axis=1))
