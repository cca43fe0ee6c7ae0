"""One hexagon's cached calls into core (dashboard.hexagon.compute): what is quicker than the
call it replaces gives exactly that call's numbers."""

from __future__ import annotations

import numpy as np

from core.hat import HatData
from dashboard.hexagon import compute as hx


def test_median_of_is_numpys_median_bit_for_bit():
    rng = np.random.default_rng(3)
    cases = [
        np.full(2000, 0.1 / 3.0),
        np.full(1, 7.25),
        np.full(5, np.inf),
        np.full(4, np.nan),
        np.full(4, 1e308),  # doubled it overflows: numpy's median is inf, not 1e308
        np.array([0.0, -0.0, 0.0, -0.0]),
        np.array([-0.0, -0.0]),
        rng.laplace(size=2001),
        rng.laplace(size=2000),
        np.r_[np.full(1999, 2.5), 2.5000000000000004],
        np.broadcast_to(np.float64(0.3), (50,)),
        np.arange(10.0)[::3],
        np.array([1, 1, 1]),
    ]
    for values in cases:
        with np.errstate(over="ignore"):  # numpy's median of 1e308s overflows to inf
            want, got = float(np.median(values)), hx.median_of(values)
        assert np.isnan(want) == np.isnan(got)
        if not np.isnan(want):
            assert np.float64(got).tobytes() == np.float64(want).tobytes(), values


def test_every_mechanisms_simulated_noise_scale_is_numpys_median():
    h = HatData.from_arrays([9, 4, 4, 2, 1, 1], [90.0, 30.0, 41.0, 19.0, 8.0, 12.0], upper=15.0)
    for name in hx.MECHANISMS:
        for eps in (0.05, 1.0, 7.0):
            rng = hx.rng_for(0, "distribution", name)
            try:
                d = hx.run_mechanism(name, h, eps, rng=rng, size=300)
            except hx.NotApplicableError:
                continue
            sim = hx.simulate(h, name, eps, None, 0, 300)
            assert sim.noise_scale == float(np.median(d.noise_scale)) or (
                np.isnan(sim.noise_scale) and np.isnan(np.median(d.noise_scale))
            )
