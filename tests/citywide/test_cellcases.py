"""core.citywide.cellcases: many cells' worst case at one ε equals the single-HAT worst case
(core.plan.worst_case) cell by cell, and the Map's error colouring (errors_at) HAT by HAT."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import plan
from core.citywide.cellcases import CellCounts, cell_worst_cases
from core.citywide.errors import error_table, errors_at
from core.mechanisms import analytic_names

U = 65.0


def pack(cells: list[list[int]], noise_measure: str = "mean") -> CellCounts:
    cell = np.repeat(np.arange(len(cells)), [len(c) for c in cells])
    m = np.concatenate([np.asarray(c, dtype=np.int64) for c in cells])
    return CellCounts.from_pairs(cell, m, n_cells=len(cells), upper=U, noise_measure=noise_measure)


@settings(max_examples=40, deadline=None)
@given(
    cells=st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=7), min_size=1, max_size=6),
    epsilon=st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.5, 10.0]),
    noise_measure=st.sampled_from(["mean", "std"]),
)
def test_equals_single_hat_worst_case(cells, epsilon, noise_measure):
    cc = pack(cells, noise_measure)
    for name in analytic_names():
        got = cell_worst_cases(cc, epsilon, name)
        want = [plan.worst_case(c, U, epsilon, name, noise_measure).total for c in cells]
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)


def test_equals_errors_at_on_the_demo_slot():
    from core.data import load_demo, prepare

    summ = prepare(load_demo()).summaries
    slot = summ.loc[summ["m"].idxmax(), "slot"]
    rows = summ[summ["slot"] == slot]
    table = error_table(rows, upper=U)
    cell = pd.factorize(rows["hat"], sort=True)[0]
    cc = CellCounts.from_pairs(cell, rows["m"].to_numpy(), n_cells=table.n_hats, upper=U)
    for name in analytic_names():
        for eps in (0.2, 1.0, 4.0):
            want = errors_at(table, eps, name).total
            got = cell_worst_cases(cc, eps, name)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{name} {eps}")


def test_opt_arrayavg_is_the_minimum_over_counts_not_the_first():
    # counts (10, 1, 1, 1): at ε = 0.1 m^(ε) = 10 (all records), at ε = 10 m = 1 wins;
    # a candidate scan that stopped early would get one of them wrong
    cc = pack([[10, 1, 1, 1]])
    for eps in (0.1, 10.0):
        got = cell_worst_cases(cc, eps, "opt-arrayavg")[0]
        assert got == pytest.approx(plan.worst_case([10, 1, 1, 1], U, eps).total, rel=1e-12)
