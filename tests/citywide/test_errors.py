"""core.citywide.errors: every HAT's error at once equals the single-HAT worst case, HAT by HAT;
the simulated quantiles agree with a per-HAT Monte Carlo (and not when the noise is halved)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import worstcase as wc
from core.citywide import errors
from core.citywide.gridset import GridSet, grid_set
from core.data import default_slot, hat_table, load_demo, prepare
from core.errors import HexplorerError
from core.evaluation import abs_error_statistic, mae_samples
from core.hat import HatData
from core.mechanisms import analytic_names, noise
from core.params import EPSILON_MAX, EPSILON_MIN

U = 65.0
ORIGINAL_LAPLACE = noise._laplace


@functools.cache
def demo_summaries() -> pd.DataFrame:
    return prepare(load_demo()).summaries


def summaries(hats: dict[str, list[int]], slot: str = "2024-03-05T08:00") -> pd.DataFrame:
    """Summaries of HATs given as {cell: counts}; users u0, u1, ... reappear across cells."""
    rows = []
    for cell, counts in hats.items():
        for i, m in enumerate(counts):
            mean = 10.0 + (7 * i) % 50
            rows.append(
                {"hat": f"{cell}/{slot}", "cell": cell, "slot": slot, "user_id": f"u{i}",
                 "m": m, "s": m * mean, "q": m * mean * mean}
            )  # fmt: skip
    return pd.DataFrame(rows)


#: Ties, one-user HATs, all-equal counts, a long tail: the cases where exactness shows.
TIES = summaries(
    {
        "a": [5, 5, 5, 2, 2],
        "b": [7],
        "c": [1],
        "d": [4, 4, 4, 4],
        "e": [417, 300, 120, 46, 46, 20, 5, 1],
        "f": [3, 2, 1],
        "g": [2, 1],
        "h": [10, 1, 1, 1, 1],
        "i": [9, 9, 1, 1, 1],
        "j": [1, 1],
    }
)


def oracle(counts, epsilon: float, mechanism: str, noise_measure: str) -> tuple[int, float]:
    """The single-HAT worst case (core.worstcase, as `hexplorer worstcase` computes it)."""
    if mechanism == "baseline":
        return -1, wc.baseline_error(counts, U, epsilon, noise_measure)
    if mechanism == "opt-bounding":
        return -1, wc.opt_bounding_error(counts, U, epsilon, noise_measure)
    if mechanism == "opt-arrayavg":
        m = wc.m_opt(counts, U, epsilon, noise_measure)
    elif mechanism == "arrayavg-best":
        m = wc.median_count(counts)
    else:
        m = wc.m_convex(counts)
    return m, float(wc.worst_case_error(counts, U, m, epsilon, noise_measure).total)


def assert_equal_to_single_hat(grids: GridSet, table, epsilons, noise_measure: str) -> None:
    for eps in epsilons:
        for mechanism in analytic_names():
            got = errors.errors_at(table, eps, mechanism)
            want = [
                oracle(
                    grids.m[grids.starts[h] : grids.starts[h + 1]], eps, mechanism, noise_measure
                )
                for h in range(grids.n_grids)
            ]
            np.testing.assert_array_equal(got.m_ub, [w[0] for w in want], err_msg=mechanism)
            np.testing.assert_allclose(
                got.total, [w[1] for w in want], rtol=1e-13, atol=0, err_msg=mechanism
            )


def breakpoints(table, k: int) -> list[float]:
    """k staircase breakpoints (step ends inside the product's ε range) spread over the table."""
    to = table.stairs["opt"].to
    finite = np.unique(to[(to >= EPSILON_MIN) & (to <= EPSILON_MAX)])
    return [float(x) for x in finite[np.linspace(0, finite.size - 1, k).astype(int)]]


def test_demo_city_every_hat_equals_the_single_hat_worst_case():
    grids = GridSet.from_summaries(demo_summaries())
    table = errors.error_table(grids, upper=U)
    assert table.n_hats == grids.n_grids > 2000
    assert_equal_to_single_hat(grids, table, [0.3, 1.0, 4.0, *breakpoints(table, 2)], "mean")


def test_demo_slot_std_measure_equals_the_single_hat_worst_case():
    s = demo_summaries()
    grids = grid_set(s, slot=default_slot(hat_table(s)))
    table = errors.error_table(grids, upper=U, noise_measure="std")
    assert_equal_to_single_hat(grids, table, [0.05, 0.7, 2.0, *breakpoints(table, 4)], "std")


@pytest.mark.parametrize("noise_measure", ["mean", "std"])
def test_ties_and_one_user_hats_at_every_breakpoint(noise_measure):
    grids = GridSet.from_summaries(TIES)
    table = errors.error_table(grids, upper=U, noise_measure=noise_measure)
    to = table.stairs["opt"].to
    finite = np.unique(to[(to > EPSILON_MIN) & (to < EPSILON_MAX)]).tolist()
    # every breakpoint, the floats on either side, and ⌈2/ε⌉'s piece ends (opt-bounding)
    around = [np.nextafter(x, 0.0) for x in finite] + [np.nextafter(x, np.inf) for x in finite]
    assert_equal_to_single_hat(
        grids, table, [*finite, *around, 0.5, 2 / 3, 1.0, 2.0, 0.25, 13.0], noise_measure
    )
    # the staircase of each HAT is core's
    for h in range(grids.n_grids):
        steps = wc.staircase(grids.m[grids.starts[h] : grids.starts[h + 1]], U, noise_measure)
        sl = slice(table.stairs["opt"].starts[h], table.stairs["opt"].starts[h + 1])
        assert table.stairs["opt"].to[sl].tolist() == [s.epsilon_to for s in steps]
        assert table.stairs["opt"].start[sl].tolist() == [s.epsilon_from for s in steps]
        assert table.stairs["opt"].m[sl].tolist() == [s.m for s in steps]


@settings(max_examples=40, deadline=None)
@given(
    hats=st.lists(st.lists(st.integers(1, 30), min_size=1, max_size=12), min_size=1, max_size=6),
    epsilon=st.floats(0.01, 50.0),
    noise_measure=st.sampled_from(["mean", "std"]),
)
def test_random_cities_equal_the_single_hat_worst_case(hats, epsilon, noise_measure):
    grids = GridSet.from_summaries(summaries({f"c{i}": c for i, c in enumerate(hats)}))
    table = errors.error_table(grids, upper=U, noise_measure=noise_measure)
    assert_equal_to_single_hat(grids, table, [epsilon], noise_measure)


def test_frame_columns_and_values():
    table = errors.error_table(TIES, upper=U)
    frame = errors.errors_at(table, 1.0, "opt-bounding").frame()
    assert list(frame.columns) == list(errors.ERROR_COLUMNS)
    assert frame["m_ub"].isna().all() and (frame["mechanism"] == "opt-bounding").all()
    assert frame.loc[frame["hat"] == "f/2024-03-05T08:00", "worst_case_error"].item() == (
        pytest.approx(27.083333333333332)
    )
    frame = errors.errors_at(table, 1.0).frame()
    row = frame[frame["hat"] == "f/2024-03-05T08:00"].iloc[0]
    assert (row["users"], row["records"], row["m_ub"], row["worst_case_error"]) == (3, 6, 3, 32.5)


def test_bad_input():
    table = errors.error_table(TIES, upper=U)
    with pytest.raises(HexplorerError, match="analytic"):
        errors.errors_at(table, 1.0, "levy")
    with pytest.raises(HexplorerError, match="epsilon"):
        errors.errors_at(table, 0.0)
    with pytest.raises(HexplorerError, match="ErrorTable"):
        errors.errors_at(TIES, 1.0)
    with pytest.raises(HexplorerError, match="noise_measure"):
        errors.error_table(TIES, upper=U, noise_measure="median")


def test_geojson_has_hexagons_in_lon_lat_order_and_the_rows_as_properties():
    import h3

    s = demo_summaries()
    grids = grid_set(s, slot=default_slot(hat_table(s)))
    frame = errors.errors_at(errors.error_table(grids, upper=U), 1.0).frame()
    fc = json.loads(json.dumps(errors.hexagon_geojson(frame), allow_nan=False))
    assert fc["type"] == "FeatureCollection" and len(fc["features"]) == len(frame)
    feature = fc["features"][0]
    ring = feature["geometry"]["coordinates"][0]
    lat, lon = h3.cell_to_latlng(frame["cell"].iloc[0])
    assert ring[0] == ring[-1] and len(ring) == 7
    assert np.mean([p[0] for p in ring[:-1]]) == pytest.approx(lon, abs=0.01)  # lon first
    assert np.mean([p[1] for p in ring[:-1]]) == pytest.approx(lat, abs=0.01)
    assert feature["properties"]["hat"] == frame["hat"].iloc[0]
    assert feature["properties"]["worst_case_error"] == frame["worst_case_error"].iloc[0]


# --- Simulated quantiles ---------------------------------------------------------------------

Z = 4.5  # per HAT, two-sided: p ≈ 7e-6, so ~10 HATs × 3 mechanisms stay far from a false alarm


def _per_hat_reference(grids: GridSet, mechanism: str, epsilon: float, n_runs: int):
    out = []
    for h in range(grids.n_grids):
        sl = slice(grids.starts[h], grids.starts[h + 1])
        hat = HatData.from_arrays(grids.m[sl], grids.s[sl], grids.q[sl], upper=U)
        e = mae_samples(hat, mechanism, epsilon, n_runs=n_runs, rng=np.random.default_rng(99 + h))
        out.append(abs_error_statistic(e, 0.9))
    return np.array(out)


def _disagreement(sim: pd.DataFrame, ref: np.ndarray) -> np.ndarray:
    """|q_all − q_ref| in units of their combined standard error (independent estimates)."""
    se = np.sqrt(sim["standard_error"].to_numpy() ** 2 + ref[:, 1] ** 2)
    return np.abs(sim["quantile"].to_numpy() - ref[:, 0]) / se


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["baseline", "opt-arrayavg", "levy"])
def test_simulated_quantiles_agree_with_a_per_hat_monte_carlo(mechanism):
    grids = GridSet.from_summaries(TIES)
    ref = _per_hat_reference(grids, mechanism, 1.0, 6000)
    sim = errors.simulated_quantiles(grids, 1.0, mechanism, upper=U, n_runs=6000, seed=3)
    assert sim["hat"].tolist() == grids.hats.tolist()
    assert _disagreement(sim, ref).max() < Z


@pytest.mark.slow
def test_simulated_quantiles_companion_fails_with_half_the_noise(monkeypatch):
    grids = GridSet.from_summaries(TIES)
    ref = _per_hat_reference(grids, "baseline", 1.0, 6000)
    monkeypatch.setattr(
        noise, "_laplace", lambda rng, scale, size: ORIGINAL_LAPLACE(rng, scale * 0.5, size)
    )
    sim = errors.simulated_quantiles(grids, 1.0, "baseline", upper=U, n_runs=6000, seed=3)
    assert _disagreement(sim, ref).max() > Z  # the same check as above, now failing


def test_simulated_quantiles_exact_for_baseline_and_seeded():
    # Baseline's |error| is |Lap(b)|: its 0.9-quantile is b ln 10.
    grids = GridSet.from_summaries(TIES)
    sim = errors.simulated_quantiles(grids, 2.0, "baseline", upper=U, n_runs=20000, seed=1)
    b = U * grids.m[grids.starts[:-1]] / (grids.records * 2.0)
    z = np.abs(sim["quantile"] - b * np.log(10.0)) / sim["standard_error"]
    assert z.max() < Z
    again = errors.simulated_quantiles(grids, 2.0, "baseline", upper=U, n_runs=20000, seed=1)
    pd.testing.assert_frame_equal(sim, again)
    # a HAT's runs do not depend on the other HATs simulated with it
    one = errors.simulated_quantiles(
        GridSet.from_summaries(TIES[TIES["cell"] == "e"]), 2.0, "baseline", upper=U,
        n_runs=20000, seed=1,
    )  # fmt: skip
    assert one["quantile"].item() == sim.loc[sim["hat"].str.startswith("e/"), "quantile"].item()


def test_simulated_quantiles_note_when_not_applicable():
    sim = errors.simulated_quantiles(TIES, 1.0, "akmv", upper=U, n_runs=50, seed=0)
    assert len(sim) == 10 and sim["quantile"].notna().all()
    with pytest.raises(HexplorerError, match="level"):
        errors.simulated_quantiles(TIES, 1.0, "akmv", upper=U, n_runs=50, seed=0, level=1.0)
