"""Published city-wide releases (SPEC sections 5 and 7): OpenDP per grid, the three accountings
charged per user, reuse, the files (no true value in them, identical bytes on reuse), and the
empirical privacy audit of the published per-grid mechanism with its failing companion."""

from __future__ import annotations

import json
import math
import re

import h3
import numpy as np
import pandas as pd
import pytest

from core.citywide import grids as grids_module
from core.citywide.chop import chop_user
from core.citywide.grids import grid_errors, grid_statistics
from core.citywide.gridset import SUMMARY_COLUMNS, GridSet
from core.cli import main
from core.errors import HexplorerError
from core.publish import BudgetExceeded, Ledger, city, files
from core.publish.city import draw_noise, publish_grids, user_charges
from tests.privacy_harness import audit

U = 10.0


def frame(rows, slot="2024-03-05T08:00") -> pd.DataFrame:
    """Summaries from (cell, user, m, mean) rows."""
    out = [(f"{c}/{slot}", c, slot, u, m, mean * m, mean * mean * m) for c, u, m, mean in rows]
    return pd.DataFrame(out, columns=list(SUMMARY_COLUMNS))


@pytest.fixture
def gs() -> GridSet:
    # x is in 3 grids, y in 2, z in 1: G = (3, 2, 1), max 3.
    return GridSet.from_summaries(
        frame(
            [
                ("a", "x", 3, 2.0),
                ("a", "y", 1, 4.0),
                ("a", "z", 2, 8.0),
                ("b", "x", 2, 5.0),
                ("b", "y", 4, 1.0),
                ("c", "x", 1, 7.0),
                ("c", "w", 2, 3.0),
            ]
        )  # fmt: skip
    )


@pytest.fixture
def book(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


def _charges_by_user(book: Ledger) -> dict[str, float]:
    """Cumulative ε per user hash."""
    return {u["user"]: u["epsilon"] for u in book.export()["users"]}


@pytest.mark.parametrize(
    ("accounting", "expected"),
    [("per-user", [1.0, 3.0, 2.0, 1.0]), ("max", [3.0] * 4), ("chop", None)],
)
def test_each_user_is_charged_its_accounting(gs, book, accounting, expected):
    assert gs.user_ids.tolist() == ["w", "x", "y", "z"]
    assert gs.grids_per_user.tolist() == [1, 3, 2, 1]
    out = publish_grids(gs, 1.0, upper=U, accounting=accounting, ledger=book)
    if expected is None:  # CHOP-USER: K after suppression, charged to everyone
        k = chop_user(gs, 1.0, upper=U).k_final
        assert out.release.k == k
        expected = [float(k)] * 4
    np.testing.assert_allclose(user_charges(gs, 1.0, accounting, out.release.k), expected)
    hashes = book.user_hashes("default", gs.user_ids.tolist())
    totals = _charges_by_user(book)
    np.testing.assert_allclose([totals[h] for h in hashes], expected)
    assert out.release.privacy_loss == max(expected) == out.summary.max_user_epsilon


def test_recorded_values_and_scales_are_the_mechanism_of_spec_section_5(gs, book, monkeypatch):
    """Exact values: OpenDP's noise replaced by a recorder, the release is noiseless + noise."""
    calls = []

    def fake(values, scale, sensitivity):
        calls.append((np.array(values), scale, sensitivity))
        return np.asarray(values) + 1.0, sensitivity / scale

    monkeypatch.setattr(city, "opendp_laplace", fake)
    out = publish_grids(gs, 0.5, upper=U, ledger=book)
    errs = grid_errors(gs, 0.5, upper=U)
    mean, var = grid_statistics(gs, np.ones(gs.n_pairs, dtype=bool))
    np.testing.assert_allclose(out.release.table["noisy_mean"], mean + 1.0)
    np.testing.assert_allclose(out.release.table["noisy_var"], var + 1.0)
    body = out.record.body["grids"]
    np.testing.assert_allclose(body["scale_mean"], 2 * errs.delta_mean / 0.5)
    np.testing.assert_allclose(body["scale_var"], 2 * errs.delta_var / 0.5)
    # every grid's statistic was priced by the (fake) privacy map at eps/2 exactly
    assert all(math.isclose(s / b, 0.25) for _, b, s in calls if b > 0)


def test_too_small_a_scale_is_refused_before_recording(gs, book, monkeypatch):
    real = city.opendp_laplace
    monkeypatch.setattr(city, "opendp_laplace", lambda v, scale, sens: real(v, scale / 2, sens))
    with pytest.raises(HexplorerError, match="Refusing to publish"):
        publish_grids(gs, 1.0, upper=U, ledger=book)
    assert book.summary().releases == 0


def test_reuse_and_new_requests(gs, book):
    first = publish_grids(gs, 1.0, upper=U, ledger=book)
    again = publish_grids(gs, 1.0, upper=U, ledger=book)
    assert again.reused and again.release.release_id == first.release.release_id
    pd.testing.assert_frame_equal(again.release.table, first.release.table)
    other = publish_grids(gs, 1.0, upper=U, accounting="max", ledger=book)
    assert not other.reused
    assert book.summary().releases == 2


def test_chop_accounting_uses_the_suppression(book):
    # Two grids sharing users; CHOP-USER can drop pairs without raising the max error.
    rows = []
    for g in range(4):
        for u in range(6):
            rows.append((f"g{g}", f"u{u}", 1 + (u + g) % 3, 5.0))
    gs = GridSet.from_summaries(frame(rows))
    chop = chop_user(gs, 1.0, upper=U)
    out = publish_grids(gs, 1.0, upper=U, accounting="chop", ledger=book)
    assert out.release.k == chop.k_final and out.release.suppressed_pairs == chop.n_suppressed
    assert out.release.privacy_loss == chop.k_final * 1.0


def test_city_budget_refusal_records_nothing(gs, book):
    publish_grids(gs, 1.0, upper=U, ledger=book, budget=4.0)  # x: 3
    before = book.export()
    with pytest.raises(BudgetExceeded, match="1 of the 4 users") as info:
        publish_grids(gs, 0.5, upper=U, ledger=book)  # x would reach 4.5
    assert book.export() == before
    msg = str(info.value)  # x is in all 3 grids: no grid fits; eps <= 1/3 does
    assert "up to eps = 4.5" in msg and "eps <= 0.333 would fit" in msg and "HATs" not in msg
    assert not publish_grids(gs, 0.333, upper=U, ledger=book).reused


def test_bad_accounting_and_unclamped_values(gs, book):
    with pytest.raises(HexplorerError, match="accounting"):
        publish_grids(gs, 1.0, upper=U, accounting="basic", ledger=book)
    with pytest.raises(HexplorerError, match="clamp"):
        publish_grids(gs, 1.0, upper=1.0, ledger=book)
    assert not book.path.exists()


# --------------------------------------------------------------------------------------------
# The files


def test_files_hold_clamped_noisy_values_and_provenance(gs, book, monkeypatch):
    def wild(grids, epsilon, *, upper, retained=None, size=None):
        return city.GridNoise(
            noisy_mean=np.array([-5.0, 3.0, 100.0]),
            noisy_var=np.array([-1.0, 10.0, 1e6]),
            scale_mean=np.ones(3),
            scale_var=np.ones(3),
        )

    monkeypatch.setattr(city, "draw_noise", wild)
    out = publish_grids(gs, 1.0, upper=U, ledger=book)
    np.testing.assert_array_equal(out.release.table["noisy_mean"], [-5.0, 3.0, 100.0])  # as drawn
    table = files.city_table(out.release)
    assert list(table.columns) == [
        "release_id", "created", "version", "hat", "cell", "slot", "noisy_mean", "noisy_var",
        "mechanism", "epsilon", "m_ub", "upper", "accounting", "privacy_loss",
    ]  # fmt: skip
    np.testing.assert_array_equal(table["noisy_mean"], [0.0, 3.0, U])
    np.testing.assert_array_equal(table["noisy_var"], [0.0, 10.0, U * U / 4])
    assert set(table["release_id"]) == {out.release.release_id}
    assert set(table["accounting"]) == {"per-user"} and set(table["mechanism"]) == {"grid-laplace"}
    assert set(table["created"]) == {out.release.created} and set(table["upper"]) == {U}


def test_geojson_needs_h3_cells(gs, book, tmp_path):
    out = publish_grids(gs, 1.0, upper=U, ledger=book)
    with pytest.raises(HexplorerError, match="not an H3 cell"):
        files.write_table(files.city_table(out.release), tmp_path / "x.geojson")


# --------------------------------------------------------------------------------------------
# Through the command line: no true value, identical bytes on reuse, all three formats

LAT, LON = 21.1950, 72.8300


@pytest.fixture
def city_csv(tmp_path):
    """Three hexagons, speeds with many digits so that the true means are distinctive."""
    rows = []
    rng = np.random.default_rng(5)
    for k, (dlat, dlon) in enumerate([(0, 0), (0.05, 0), (0, 0.05)]):
        for u, m in enumerate((7 + k, 5, 4 + k, 3)):
            for i in range(m):
                rows.append(
                    {
                        "user_id": f"bus-{u}",
                        "lat": LAT + dlat + 1e-5 * i,
                        "lon": LON + dlon,
                        "timestamp": f"2024-03-05 08:{i:02d}:00",
                        "speed": float(np.round(rng.uniform(5, 60), 7)),
                    }
                )
    path = tmp_path / "city.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _cli(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _true_values(path) -> list[float]:
    from core.data import prepare

    summaries = prepare(pd.read_csv(path)).summaries
    gs = GridSet.from_summaries(summaries)
    mean, var = grid_statistics(gs, np.ones(gs.n_pairs, dtype=bool))
    user_means = (summaries["s"] / summaries["m"]).tolist()
    return [*mean.tolist(), *var.tolist(), *user_means]


def _numbers(text: str) -> set[str]:
    """Every number written in ``text``, as written."""
    return set(re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text))


def _spellings(x: float) -> set[str]:
    return {repr(x), f"{x:.6g}", f"{x:.4f}", str(np.float32(x))}


@pytest.mark.parametrize("suffix", [".csv", ".geojson", ".parquet"])
def test_published_city_output_has_no_true_value_and_reuse_gives_identical_bytes(
    capsys, city_csv, tmp_path, suffix
):
    ledger = tmp_path / "l.sqlite"
    first, second = tmp_path / f"first{suffix}", tmp_path / f"second{suffix}"
    args = ("compose", city_csv, "--epsilon", "1", "--publish", "--ledger", ledger, "--json")
    status, out1, err = _cli(capsys, *args, "--output", first)
    assert status == 0, err
    status, out2, err = _cli(capsys, *args, "--output", second)
    assert status == 0, err
    assert first.read_bytes() == second.read_bytes()
    j1, j2 = json.loads(out1), json.loads(out2)
    assert (j1["reused"], j2["reused"]) == (False, True)
    assert {k: v for k, v in j1.items() if k not in ("reused", "output")} == {
        k: v for k, v in j2.items() if k not in ("reused", "output")
    }
    assert j1["grids"] == 3 and j1["release_id"] and j1["max_user_epsilon"] == 3.0
    if suffix == ".parquet":
        table = pd.read_parquet(first)
        text = table.to_csv(index=False) + table.to_json()
    else:
        text = first.read_text()
    tokens = _numbers(text) | _numbers(out1)  # whole numbers, not substrings of noisy ones
    for value in _true_values(city_csv):
        assert not (_spellings(value) & tokens), value
    assert "true" not in text.lower().replace('"true"', "")
    status, _, err = _cli(capsys, *args, "--output", first)
    assert status == 2 and "--force" in err


def test_geojson_is_a_feature_collection_of_closed_hexagons(capsys, city_csv, tmp_path):
    target = tmp_path / "city.geojson"
    status, _, err = _cli(
        capsys, "compose", city_csv, "--epsilon", "1", "--publish", "--ledger",
        tmp_path / "l.sqlite", "--output", target, "--accounting", "chop",
    )  # fmt: skip
    assert status == 0, err
    data = json.loads(target.read_text())
    assert data["type"] == "FeatureCollection" and len(data["features"]) == 3
    for feature in data["features"]:
        ring = feature["geometry"]["coordinates"][0]
        cell = feature["properties"]["cell"]
        expected = [[lng, lat] for lat, lng in h3.cell_to_boundary(cell)]
        assert ring == [*expected, expected[0]]
        props = feature["properties"]
        assert props["accounting"] == "chop" and props["m_ub"] is None
        assert 0 <= props["noisy_mean"] <= 65 and 0 <= props["noisy_var"] <= 65**2 / 4


def test_published_single_hat_file(capsys, city_csv, tmp_path):
    target = tmp_path / "one.csv"
    status, out, err = _cli(
        capsys, "release", city_csv, "--mechanism", "levy", "--epsilon", "1", "--ledger",
        tmp_path / "l.sqlite", "--output", target, "--json",
    )  # fmt: skip
    assert status == 0, err
    table = pd.read_csv(target)
    j = json.loads(out)
    assert len(table) == 1 and table["release_id"][0] == j["release_id"]
    assert table["noisy_mean"][0] == pytest.approx(min(max(j["estimate"], 0), 65))
    assert table["m_ub"][0] == j["m_ub"] and table["accounting"][0] == "single-hat"
    assert f"{table['cell'][0]}/{table['slot'][0]}" == j["hat"]


def test_compose_flag_errors(capsys, city_csv, tmp_path):
    base = ("compose", city_csv, "--epsilon", "1")
    for extra, message in [
        (("--publish", "--seed", "1"), "never seeded"),
        (("--output", tmp_path / "x.csv"), "add --publish"),
        (("--budget", "2"), "add --publish"),
        (("--publish", "--output", tmp_path / "x.txt"), "must end in"),
    ]:
        status, out, err = _cli(capsys, *base, *extra)
        assert status == 2 and out == "" and message in err, err
    status, _, err = _cli(capsys, "compose", city_csv, "--epsilon", "1", "2", "--publish")
    assert status == 2 and "exactly one" in err


# --------------------------------------------------------------------------------------------
# Empirical privacy of the published per-grid mechanism (OpenDP noise)


def _tight_pair() -> list[GridSet]:
    """Grid a with 4 users (2, 1, 1, 1 records), all values 0; D' moves u1 to U. Tight: the mean
    moves by exactly Δ_μ = 2U/5 and the variance by exactly Δ_Var (test_multigrid's pair)."""
    out = []
    for v in (0.0, U):
        rows = [("a", "u1", 2, v), ("a", "u2", 1, 0.0), ("a", "u3", 1, 0.0), ("a", "u4", 1, 0.0)]
        rows.append(("b", "u1", 3, 5.0))
        out.append(GridSet.from_summaries(frame(rows)))
    return out


def _audit(column: int, epsilon: float = 1.0):
    pair = _tight_pair()
    e = grid_errors(pair[0], epsilon, upper=U)
    keep = np.ones(pair[0].n_pairs, dtype=bool)
    moved = [np.subtract(*reversed([grid_statistics(g, keep)[c][0] for g in pair])) for c in (0, 1)]
    assert moved[column] == pytest.approx([e.delta_mean[0], e.delta_var[0]][column], rel=1e-12)

    def sampler(g):
        def draw(size, rng):  # rng unused: OpenDP's own entropy
            noise = draw_noise(g, epsilon, upper=U, size=size)
            return (noise.noisy_mean, noise.noisy_var)[column][:, 0]

        return draw

    return audit(
        sampler(pair[0]),
        sampler(pair[1]),
        epsilon / 2,
        rng=np.random.default_rng(0),
        n=40_000,
        n_pilot=4_000,
        alpha=1e-6,
    )


@pytest.mark.slow
@pytest.mark.parametrize("column", [0, 1], ids=["mean", "variance"])
def test_published_grid_mechanism_is_private_per_statistic(column):
    verdict = _audit(column)
    assert not verdict.violated, str(verdict)


@pytest.mark.slow
@pytest.mark.parametrize("column", [0, 1], ids=["mean", "variance"])
def test_audit_catches_a_halved_sensitivity_in_the_published_path(monkeypatch, column):
    """The companion: sensitivities (so scales, and the sensitivity OpenDP is asked to price)
    halved — OpenDP's check passes, the noise is too small, the audit must flag it."""
    import dataclasses

    real = grids_module.grid_errors

    def halved(*args, **kwargs):
        e = real(*args, **kwargs)
        return dataclasses.replace(e, delta_mean=e.delta_mean / 2, delta_var=e.delta_var / 2)

    monkeypatch.setattr(city, "grid_errors", halved)
    verdict = _audit(column)
    assert verdict.violated, str(verdict)
