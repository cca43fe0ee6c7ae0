"""core.citywide.adaptive: the cover is disjoint and complete, optimal against brute force over all
covers of small synthetic cities, has the stated properties, and its cells feed the per-user
accounting (ε · max G_ℓ, CHOP-USER) unchanged."""

from __future__ import annotations

import functools
import itertools

import h3
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import plan
from core.citywide.accounting import privacy_loss
from core.citywide.adaptive import adaptive_cover, cell_parents, parse_resolutions
from core.citywide.chop import chop_user
from core.citywide.errors import error_table, errors_at
from core.citywide.gridset import GridSet
from core.errors import HexplorerError
from tests.test_throwaway_worst_case import throwaway  # noqa: F401 (the fixture)

U = 65.0
SLOT = "h08"
R_MIN, R_MAX = 5, 7
ROOTS = [h3.latlng_to_cell(21.19, 72.83, R_MIN), h3.latlng_to_cell(21.40, 72.60, R_MIN)]
BASE = sorted(c for r in ROOTS for c in h3.cell_to_children(r, R_MAX))


def summaries(pairs: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "hat": [c + "/" + SLOT for c, _, _ in pairs],
            "cell": [c for c, _, _ in pairs],
            "slot": SLOT,
            "user_id": [u for _, u, _ in pairs],
            "m": [m for _, _, m in pairs],
            "s": [30.0 * m for _, _, m in pairs],
            "q": [900.0 * m for _, _, m in pairs],
        }
    )


@st.composite
def cities(draw):
    """Up to 7 r_max cells under two r_min cells, up to 4 users, counts 1..30."""
    cells = draw(st.lists(st.sampled_from(BASE), min_size=1, max_size=7, unique=True))
    pairs = []
    for c in cells:
        users = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True))
        pairs += [(c, u, draw(st.integers(1, 30))) for u in users]
    return pairs


def brute_force(pairs, epsilon, target, mechanism, r_min=R_MIN, r_max=R_MAX):
    """Every cover of every r_min tree (h3's own cell_to_parent, the single-HAT worst case):
    the best (records within, Σ N res) and every optimal cover."""
    counts: dict[str, dict[str, int]] = {}
    for c, u, m in pairs:
        for r in range(r_min, r_max + 1):
            node = h3.cell_to_parent(c, r)
            counts.setdefault(node, {}).setdefault(u, 0)
            counts[node][u] += m

    def children(node):
        r = h3.get_resolution(node)
        return sorted(n for n in counts if h3.get_resolution(n) == r + 1 and
                      h3.cell_to_parent(n, r) == node)  # fmt: skip

    def value(node):
        n = sum(counts[node].values())
        err = plan.worst_case(list(counts[node].values()), U, epsilon, mechanism).total
        return (n if err <= target else 0, n * h3.get_resolution(node))

    @functools.cache
    def covers(node):
        out = [((node,), value(node))]
        if h3.get_resolution(node) < r_max:
            for combo in itertools.product(*(covers(k) for k in children(node))):
                cells = tuple(c for cov, _ in combo for c in cov)
                val = tuple(sum(v[i] for _, v in combo) for i in range(2))
                out.append((cells, val))
        return tuple(out)

    roots = sorted(n for n in counts if h3.get_resolution(n) == r_min)
    best_val, best = (0, 0), []
    for combo in itertools.product(*(covers(r) for r in roots)):
        val = tuple(sum(v[i] for _, v in combo) for i in range(2))
        cells = sorted(c for cov, _ in combo for c in cov)
        if val > best_val:
            best_val, best = val, [cells]
        elif val == best_val:
            best.append(cells)
    return best_val, best, counts


@settings(max_examples=80, deadline=None)
@given(
    pairs=cities(),
    epsilon=st.sampled_from([0.3, 1.0, 3.0]),
    target=st.sampled_from([5.0, 15.0, 30.0, 60.0]),
    mechanism=st.sampled_from(["opt-arrayavg", "baseline", "opt-bounding"]),
)
def test_cover_is_optimal_disjoint_complete(pairs, epsilon, target, mechanism):
    df = summaries(pairs)
    cover = adaptive_cover(
        df, slot=SLOT, epsilon=epsilon, target=target, mechanism=mechanism,
        resolutions=(R_MIN, R_MAX),
    )  # fmt: skip
    best_val, best, counts = brute_force(pairs, epsilon, target, mechanism)
    assert (cover.records_within, cover.fineness) == best_val
    assert sorted(cover.cells.tolist()) in best
    # complete and disjoint: each record's r_max cell is assigned to exactly one released cell,
    # its ancestor, and no released cell is an ancestor of another
    for base, k in zip(cover.base_cells.tolist(), cover.assignment.tolist(), strict=True):
        rel = cover.cells[k]
        assert h3.cell_to_parent(base, h3.get_resolution(rel)) == rel
    cells = cover.cells.tolist()
    for a, b in itertools.permutations(cells, 2):
        if h3.get_resolution(a) < h3.get_resolution(b):
            assert h3.cell_to_parent(b, h3.get_resolution(a)) != a
    assert cover.n_records == df["m"].sum()
    # the stated properties, and each cell's numbers are the single-HAT worst case of its users
    for c, res, n, err, ok in zip(
        cells, cover.resolution, cover.records, cover.worst_case_error, cover.within, strict=True
    ):
        assert res == h3.get_resolution(c) and n == sum(counts[c].values())
        assert err == pytest.approx(
            plan.worst_case(list(counts[c].values()), U, epsilon, mechanism).total, rel=1e-12
        )
        if not ok:
            assert res == R_MAX
            for r in range(R_MIN, R_MAX):
                anc = h3.cell_to_parent(c, r)
                e = plan.worst_case(list(counts[anc].values()), U, epsilon, mechanism).total
                assert e > target
    # the mixed-cell summaries hold every user's records once
    summ = cover.summaries()
    assert (
        summ.groupby("user_id")["m"].sum().to_dict() == df.groupby("user_id")["m"].sum().to_dict()
    )
    assert summ.groupby("cell")["m"].sum().reindex(cells).tolist() == cover.records.tolist()


def test_the_objective_prefers_records_within_over_fineness():
    # under one res-6 parent: a busy res-7 child within target and a sparse one that is not;
    # together they are within: the parent is released whole (more records within target)
    parent = h3.cell_to_children(ROOTS[0], 6)[0]
    busy, sparse = sorted(h3.cell_to_children(parent, 7))[:2]
    pairs = [(busy, u, 6) for u in "abcdefgh"] + [(sparse, "z", 1)]
    cover = adaptive_cover(summaries(pairs), slot=SLOT, epsilon=1.0, target=20.0,
                           resolutions=(6, 7))  # fmt: skip
    assert cover.fixed_cells[7][2].tolist() == [True, False]
    assert cover.cells.tolist() == [parent] and cover.within.all()
    # with a target the sparse child meets too, the finer cover wins
    cover = adaptive_cover(summaries(pairs), slot=SLOT, epsilon=1.0, target=70.0,
                           resolutions=(6, 7))  # fmt: skip
    assert cover.resolution.tolist() == [7, 7]
    # coarser is not always better: one heavy user next door spoils the parent (baseline's
    # m*/N: 5/40 in the busy child, 40/80 together), so the busy child is released on its own
    pairs = [(busy, u, 5) for u in "abcdefgh"] + [(sparse, "z", 40)]
    cover = adaptive_cover(summaries(pairs), slot=SLOT, epsilon=1.0, target=10.0,
                           mechanism="baseline", resolutions=(6, 7))  # fmt: skip
    assert cover.fixed_cells[6][2].tolist() == [False]
    assert cover.cells.tolist() == [busy, sparse] and cover.within.tolist() == [True, False]


def test_missing_cells_stay_fine():
    # nothing meets the target at any resolution: the cover keeps r_max cells (finer, no loss)
    pairs = [(BASE[0], "a", 1), (BASE[1], "b", 1)]
    cover = adaptive_cover(summaries(pairs), slot=SLOT, epsilon=0.1, target=1.0,
                           resolutions=(R_MIN, R_MAX))  # fmt: skip
    assert cover.resolution.tolist() == [R_MAX, R_MAX] and not cover.within.any()


def test_cell_parents_matches_h3():
    rng = np.random.default_rng(1)
    lat, lng = rng.uniform(-80, 80, 200), rng.uniform(-180, 180, 200)
    for res in (3, 9, 15):
        cells = [h3.latlng_to_cell(a, b, res) for a, b in zip(lat, lng, strict=True)]
        ints = np.array([h3.str_to_int(c) for c in cells], dtype=np.uint64)
        for r in range(0, res + 1):
            got = [h3.int_to_str(int(x)) for x in cell_parents(ints, r)]
            assert got == [h3.cell_to_parent(c, r) for c in cells]


def test_accounting_on_mixed_cells():
    # user "a" enters two released cells (one res 6, one res 7), "b" one: ε max G_ℓ = 2ε, and
    # CHOP-USER and the error table run on the mixed cells as on any cells
    far = h3.cell_to_children(ROOTS[1], 7)[0]
    near = h3.cell_to_children(ROOTS[0], 7)
    pairs = [(near[0], "a", 5), (near[1], "b", 5), (near[2], "c", 5), (far, "a", 1)]
    cover = adaptive_cover(summaries(pairs), slot=SLOT, epsilon=1.0, target=40.0,
                           resolutions=(R_MIN, R_MAX))  # fmt: skip
    assert sorted(cover.resolution.tolist()) == [6, 7]
    grids = GridSet.from_summaries(cover.summaries())
    assert dict(zip(grids.user_ids, grids.grids_per_user, strict=True)) == {"a": 2, "b": 1, "c": 1}
    loss = privacy_loss(grids, 0.5, chop_user(grids, 0.5, upper=U))
    assert loss.by_users == 1.0 and loss.basic == 1.0 and loss.after_chop <= 1.0
    table = error_table(grids, upper=U)
    np.testing.assert_allclose(errors_at(table, 1.0).total, cover.worst_case_error, rtol=1e-12)


def test_bad_inputs():
    df = summaries([(BASE[0], "a", 3)])
    with pytest.raises(HexplorerError, match="resolution 7, not r_max = 8"):
        adaptive_cover(df, slot=SLOT, epsilon=1.0, target=3.0, resolutions="5-8")
    with pytest.raises(HexplorerError, match="resolutions"):
        parse_resolutions("5-16")
    with pytest.raises(HexplorerError, match="analytic"):
        adaptive_cover(df, slot=SLOT, epsilon=1.0, target=3.0, mechanism="levy")
    with pytest.raises(HexplorerError, match="slot"):
        adaptive_cover(df, slot="h09", epsilon=1.0, target=3.0)
    with pytest.raises(HexplorerError, match="epsilon"):
        adaptive_cover(df, slot=SLOT, epsilon=0, target=3.0)


def test_a_coarse_cell_resolves_to_its_records():
    # One hexagon reads a released coarse cell through hat_data: the records of its descendants
    from core.data import hat_data

    near = h3.cell_to_children(ROOTS[0], 7)
    pairs = [(near[0], "a", 5), (near[1], "a", 2), (near[1], "b", 5), (near[2], "c", 5)]
    df = summaries(pairs)
    cover = adaptive_cover(df, slot=SLOT, epsilon=1.0, target=40.0, resolutions=(R_MIN, R_MAX))
    assert cover.resolution.tolist() == [6]
    label = f"{cover.cells[0]}/{SLOT}"
    hat = hat_data(df, label, upper=U)
    assert (hat.n_users, hat.n_records, hat.hat) == (3, 17, label)
    assert sorted(hat.counts.tolist()) == [5, 5, 7]
    want = cover.summaries().sort_values("user_id")
    assert sorted(hat.sums.tolist()) == sorted(want["s"].tolist())
    with pytest.raises(HexplorerError, match="Unknown HAT"):
        hat_data(df, f"{h3.cell_to_parent(BASE[-1], 6)}/{SLOT}", upper=U)


def test_a_mechanism_registered_later_drives_the_cover(throwaway):  # noqa: F811 (fixture)
    # the throwaway user-level Laplace mean (tests/test_throwaway_worst_case.py) carries its
    # closed form in its registry entry only: the cover reads it from there
    near = h3.cell_to_children(ROOTS[0], 7)
    pairs = [(near[i], u, 3 + i) for i in range(5) for u in "abcdefgh"[: i + 1]]
    pairs += [(BASE[-1], "z", 2)]
    for target in (10.0, 20.0, 40.0):
        cover = adaptive_cover(
            summaries(pairs), slot=SLOT, epsilon=1.0, target=target, mechanism=throwaway,
            resolutions=(R_MIN, R_MAX),
        )  # fmt: skip
        best_val, best, _ = brute_force(pairs, 1.0, target, throwaway)
        assert (cover.records_within, cover.fineness) == best_val
        assert sorted(cover.cells.tolist()) in best
