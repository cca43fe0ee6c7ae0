"""Published every-HAT releases (``release --all`` without ``--seed``; core.publish.batch):
per-user accounting over the released HATs, exact values with the noise replaced, reuse, the
budget, the files, and the empirical privacy audit of the published path with its failing
companion."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from core.citywide import batch as citywide_batch
from core.citywide.batch import HatBatch, release_all
from core.cli import main
from core.errors import HexplorerError
from core.publish import BudgetExceeded, Ledger
from core.publish import batch as pb
from tests.privacy_harness import audit

U = 10.0


def summaries(rows) -> pd.DataFrame:
    """Summaries from (hat, user, m, mean) rows."""
    return pd.DataFrame(
        [(h, u, m, mean * m) for h, u, m, mean in rows], columns=["hat", "user_id", "m", "s"]
    )


@pytest.fixture
def hb() -> HatBatch:
    # x is in 3 HATs, y in 2, z and w in 1
    return HatBatch.from_summaries(
        summaries(
            [
                ("a/s1", "x", 3, 2.0),
                ("a/s1", "y", 1, 4.0),
                ("a/s1", "z", 2, 8.0),
                ("b/s1", "x", 2, 5.0),
                ("b/s1", "y", 4, 1.0),
                ("b/s2", "x", 1, 7.0),
                ("b/s2", "w", 2, 3.0),
            ]
        ),  # fmt: skip
        upper=U,
    )


@pytest.fixture
def book(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


@pytest.mark.parametrize(
    ("accounting", "expected"), [("per-user", [1.0, 3.0, 2.0, 1.0]), ("max", [3.0] * 4)]
)
def test_each_user_pays_the_hats_its_records_enter(hb, book, accounting, expected):
    ids, k = pb.hats_per_user(hb)
    assert ids.tolist() == ["w", "x", "y", "z"] and k.tolist() == [1, 3, 2, 1]
    out = pb.publish_all("arrayavg-best", hb, 1.0, accounting=accounting, ledger=book)
    hashes = book.user_hashes("default", ids.tolist())
    totals = {u["user"]: u["epsilon"] for u in book.export()["users"]}
    np.testing.assert_allclose([totals[h] for h in hashes], expected)
    assert out.release.privacy_loss == max(expected) == out.summary.max_user_epsilon
    assert out.record.kind == "hats" and out.record.n_users == 4


@pytest.mark.parametrize("name", ["baseline", "arrayavg-best", "opt-arrayavg", "opt-bounding"])
def test_recorded_values_are_the_simulated_release_with_opendp_noise(hb, book, name, monkeypatch):
    """Exact values: OpenDP replaced by +1, the record is every HAT's value before noise + 1,
    with the scales of the simulated path, each scale priced at ε by the (fake) privacy map."""
    calls = []

    def fake(values, scale, sensitivity):
        calls.append((scale, sensitivity))
        return np.asarray(values) + 1.0, sensitivity / scale if scale > 0 else 0.0

    monkeypatch.setattr(pb, "opendp_laplace", fake)
    out = pb.publish_all(name, hb, 0.5, ledger=book)
    sim = release_all(name, hb, 0.5, seed=1)
    t = out.release.table
    assert t["hat"].tolist() == sim["hat"].tolist() == ["a/s1", "b/s1", "b/s2"]
    np.testing.assert_allclose(t["estimate"], sim["noiseless"] + 1.0)
    for col in ("m_ub", "n_arrays", "sensitivity", "noise_scale"):
        np.testing.assert_array_equal(t[col], sim[col])
    assert all(np.isclose(s / b, 0.5) for b, s in calls if b > 0)
    assert "noiseless" not in out.record.body["hats"] and "true_mean" not in out.record.body["hats"]


def test_a_private_interval_mechanism_is_published_per_hat(hb, book):
    out = pb.publish_all("levy", hb, 1.0, ledger=book)
    t = out.release.table
    assert len(t) == 3 and np.isfinite(t["estimate"]).all() and (t["noise_scale"] > 0).all()


def test_too_small_a_scale_is_refused_before_recording(hb, book, monkeypatch):
    real = pb.opendp_laplace
    monkeypatch.setattr(pb, "opendp_laplace", lambda v, scale, sens: real(v, scale / 2, sens))
    with pytest.raises(HexplorerError, match="Refusing to publish"):
        pb.publish_all("arrayavg-best", hb, 1.0, ledger=book)
    assert book.summary().releases == 0


def test_reuse_new_requests_and_budget(hb, book):
    first = pb.publish_all("arrayavg-best", hb, 1.0, ledger=book)
    again = pb.publish_all("arrayavg-best", hb, 1.0, ledger=book)
    assert again.reused and again.release.release_id == first.release.release_id
    pd.testing.assert_frame_equal(again.release.table, first.release.table)
    assert book.summary().max_user_epsilon == 3.0  # no new charge
    with pytest.raises(BudgetExceeded, match="would pass the budget eps = 5") as info:
        pb.publish_all("baseline", hb, 1.0, ledger=book, budget=5.0)  # x would reach 6
    assert "eps <= 0.666 would fit" in str(info.value)  # x: 3 + 3 eps <= 5
    assert book.summary().releases == 1 and book.budget() is None  # all or nothing
    other = pb.publish_all("baseline", hb, 0.5, ledger=book, budget=5.0)  # x: 3 + 1.5 <= 5
    assert not other.reused and book.summary().max_user_epsilon == 4.5
    with pytest.raises(HexplorerError, match="accounting"):
        pb.publish_all("baseline", hb, 0.5, accounting="chop", ledger=book)


# ---------------------------------------------------------------------------------------------
# The command line


@pytest.fixture
def raw_csv(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for k, (dlat, dlon) in enumerate([(0, 0), (0.05, 0), (0, 0.05)]):
        for u, m in enumerate((7 + k, 5, 4 + k, 3)):
            for i in range(m):
                rows.append(
                    {
                        "user_id": f"bus-{u}",
                        "lat": 21.17 + dlat + 1e-5 * i,
                        "lon": 72.83 + dlon,
                        "timestamp": f"2024-03-05 08:{i:02d}:00",
                        "speed": float(np.round(rng.uniform(5, 60), 7)),
                    }
                )
    path = tmp_path / "city.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".geojson"])
def test_cli_publishes_every_hat_once_and_writes_the_same_bytes_again(
    capsys, raw_csv, tmp_path, suffix
):
    import json

    ledger = tmp_path / "l.sqlite"
    argv = ["release", raw_csv, "--all", "--mechanism", "arrayavg-best", "--epsilon", "1"]
    argv += ["--ledger", ledger, "--json"]
    status, out, err = _run(capsys, *argv, "--output", tmp_path / f"a{suffix}")
    assert status == 0, err
    first = json.loads(out)
    assert first["published"] and not first["reused"] and first["hats"] == 3
    assert first["release_privacy_loss"] == 3.0  # every bus is in the three HATs
    status, out, _ = _run(capsys, *argv, "--output", tmp_path / f"b{suffix}")
    assert status == 0 and json.loads(out)["reused"]
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    assert Ledger(ledger).summary().releases == 1
    if suffix == ".csv":
        table = pd.read_csv(tmp_path / "a.csv")
        assert "true_mean" not in table and "noiseless" not in table
        assert (table["noisy_mean"].between(0, 65)).all()


def test_cli_flag_errors_are_one_line(capsys, raw_csv, tmp_path):
    base = ["release", raw_csv, "--mechanism", "baseline", "--epsilon", "1"]
    cases = [
        ([*base, "--all", "--seed", "1", "--accounting", "max", "--output", tmp_path / "x.csv"],
         "--accounting is for published releases"),
        ([*base, "--all", "--seed", "1", "--output", tmp_path / "x.geojson"], "must end in"),
        ([*base, "--accounting", "max"], "need --all"),
    ]  # fmt: skip
    for argv, message in cases:
        status, _, err = _run(capsys, *argv)
        assert status == 2 and message in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# Empirical privacy of the published path (tests/privacy_harness.py)


def _tight_pair() -> list[HatBatch]:
    """HAT a: u1 with 2 records, u2, u3 with 1, values 0; D' moves u1's to U. The baseline's
    value before noise moves by exactly its sensitivity U m*/N = U/2 (HAT b is unchanged)."""
    out = []
    for v in (0.0, U):
        rows = [("a/s", "u1", 2, v), ("a/s", "u2", 1, 0.0), ("a/s", "u3", 1, 0.0)]
        rows.append(("b/s", "u1", 3, 5.0))
        out.append(HatBatch.from_summaries(summaries(rows), upper=U))
    return out


def _audit(epsilon: float = 1.0):
    pair = _tight_pair()

    def sampler(b):
        def draw(size, rng):  # rng unused: OpenDP's own entropy
            return pb.draw_estimates("baseline", b, epsilon, size=size)[0][:, 0]

        return draw

    return audit(
        sampler(pair[0]),
        sampler(pair[1]),
        epsilon,
        rng=np.random.default_rng(0),
        n=40_000,
        n_pilot=4_000,
        alpha=1e-6,
    )


@pytest.mark.slow
def test_published_every_hat_release_is_private():
    verdict = _audit()
    assert not verdict.violated, str(verdict)


@pytest.mark.slow
def test_audit_catches_a_halved_sensitivity_in_the_published_path(monkeypatch):
    """The companion: sensitivity and scale halved (OpenDP's check passes at the halved
    sensitivity), the noise is too small, the audit must flag it."""
    real = citywide_batch._vectorised

    def halved(*args, **kwargs):
        p = real(*args, **kwargs)
        return dataclasses.replace(p, sensitivity=p.sensitivity / 2, noise_scale=p.noise_scale / 2)

    monkeypatch.setattr(citywide_batch, "_vectorised", halved)
    verdict = _audit()
    assert verdict.violated, str(verdict)
