"""Published single-HAT releases (SPEC section 7): OpenDP noise, OS entropy, recorded once."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import publish
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import default_m_ub
from core.publish import Ledger, fingerprint, opendp_laplace, single

U = 10.0


@pytest.fixture
def hat() -> HatData:
    # counts (4, 3, 2, 2, 1), means (10, 5, 5, 2, 0): N = 12, f = (40 + 15 + 10 + 4) / 12.
    return HatData.from_arrays(
        [4, 3, 2, 2, 1],
        [40.0, 15.0, 10.0, 4.0, 0.0],
        user_ids=["a", "b", "c", "d", "e"],
        upper=U,
        hat="cell/slot",
    )


@pytest.fixture
def ledger_file(tmp_path):
    return tmp_path / "sub" / "ledger.sqlite"


def _records(path) -> list[dict]:
    return [r.body for r in Ledger(path).records()]


def test_same_request_returns_the_recorded_release(hat, ledger_file):
    first = publish.publish("baseline", hat, 1.0, ledger=ledger_file, dataset="demo")
    second = publish.publish("baseline", hat, 1.0, ledger=ledger_file, dataset="other-name")
    assert (first.reused, second.reused) == (False, True)
    assert second.release.estimate == first.release.estimate
    assert len(_records(ledger_file)) == 1
    # Baseline: sensitivity U m*/N = 10 * 4 / 12, scale = that / epsilon.
    assert first.release.sensitivity == pytest.approx(40.0 / 12.0)
    assert first.release.noise_scale == pytest.approx(40.0 / 12.0)
    assert first.ledger == ledger_file


def test_explicit_default_m_ub_is_the_same_request(hat, ledger_file):
    m = default_m_ub("arrayavg-best", hat, 1.0)
    first = publish.publish("arrayavg-best", hat, 1.0, ledger=ledger_file)
    second = publish.publish("arrayavg-best", hat, 1.0, m_ub=m, ledger=ledger_file)
    assert second.reused and second.release.estimate == first.release.estimate
    assert first.release.m_ub == m


def test_different_epsilon_mechanism_or_m_ub_is_a_new_entry_and_charges_users(hat, ledger_file):
    publish.publish("baseline", hat, 1.0, ledger=ledger_file)
    publish.publish("baseline", hat, 0.5, ledger=ledger_file)
    publish.publish("arrayavg-best", hat, 0.25, m_ub=2, ledger=ledger_file)
    publish.publish("arrayavg-best", hat, 0.25, m_ub=3, ledger=ledger_file)
    last = publish.publish("baseline", hat, 0.5, ledger=ledger_file)  # reused: costs nothing
    book = Ledger(ledger_file)
    assert len(book.entries()) == 4 and last.reused
    # every one of the 5 users is charged the epsilon of each distinct release: 2.0
    np.testing.assert_allclose(book.user_epsilons(), [2.0] * 5)
    summary = book.summary()
    assert (summary.releases, summary.users, summary.budget) == (4, 5, None)
    assert summary.max_user_epsilon == pytest.approx(2.0) == last.summary.max_user_epsilon


def test_changed_data_is_a_new_fingerprint(hat, ledger_file):
    other = HatData.from_arrays(
        [4, 3, 2, 2, 1], [40.0, 15.0, 10.0, 4.0, 1.0], user_ids=list("abcde"), upper=U,
        hat="cell/slot",
    )  # fmt: skip
    assert fingerprint(other) != fingerprint(hat)
    publish.publish("baseline", hat, 1.0, ledger=ledger_file)
    again = publish.publish("baseline", other, 1.0, ledger=ledger_file)
    assert not again.reused
    np.testing.assert_allclose(Ledger(ledger_file).user_epsilons(), [2.0] * 5)  # same users


def test_ledger_survives_reload_and_records_no_noiseless_value(hat, ledger_file):
    first = publish.publish("levy", hat, 1.0, m_ub=2, ledger=ledger_file)
    reloaded = Ledger(str(ledger_file)).entries()
    assert reloaded == [first.entry]
    (body,) = _records(ledger_file)
    assert "noiseless" not in body and "true_mean" not in body
    assert body["epsilon"] == 1.0 and body["m_ub"] == 2 and body["mechanism"] == "levy"
    assert body["sampler"].startswith("opendp")
    # Levy's Laplace step spends eps/2 (OpenDP's own privacy map says so).
    assert body["laplace_epsilon"] == pytest.approx(0.5)
    assert math.isnan(first.release.noiseless) and math.isnan(first.release.true_mean)
    again = publish.publish("levy", hat, 1.0, m_ub=2, ledger=ledger_file)
    assert again.reused and again.release.estimate == first.release.estimate
    assert again.release.clip_interval == first.release.clip_interval
    assert again.release_id == first.release_id


def test_env_var_overrides_the_default_path(hat, tmp_path, monkeypatch):
    target = tmp_path / "env-ledger.sqlite"
    monkeypatch.setenv("HEXPLORER_LEDGER", str(target))
    out = publish.publish("baseline", hat, 2.0)
    assert out.ledger == target and target.exists()
    assert publish.ledger_path("/x/y.sqlite").as_posix() == "/x/y.sqlite"


def test_default_path_is_in_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("HEXPLORER_LEDGER", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert publish.ledger_path() == tmp_path / ".hexplorer" / "ledger.sqlite"


def test_invalid_requests_raise_before_touching_the_ledger(hat, ledger_file):
    with pytest.raises(HexplorerError, match="epsilon"):
        publish.publish("baseline", hat, 0.0, ledger=ledger_file)
    with pytest.raises(HexplorerError, match="mechanism"):
        publish.publish("nope", hat, 1.0, ledger=ledger_file)
    with pytest.raises(HexplorerError, match="m_ub"):
        publish.publish("levy", hat, 1.0, m_ub=99, ledger=ledger_file)
    assert not ledger_file.exists()


def test_zero_noise_release_of_opt_bounding_with_no_threshold(hat, ledger_file):
    # ceil(2/0.25) = 8 > L = 5, so T_eps = 0: the release is the constant U/2 with no noise.
    out = publish.publish("opt-bounding", hat, 0.25, ledger=ledger_file)
    assert out.release.estimate == U / 2 and out.release.noise_scale == 0.0


def test_opendp_laplace_rejects_non_finite_input():
    with pytest.raises(HexplorerError, match="finite"):
        opendp_laplace([math.nan], 1.0, 1.0)
    with pytest.raises(HexplorerError, match="scale"):
        opendp_laplace([0.0], -1.0, 1.0)


def test_opendp_privacy_map_is_sensitivity_over_scale():
    _, eps = opendp_laplace([0.0], 4.0, 2.0)
    assert eps == pytest.approx(0.5, rel=1e-9)


@pytest.mark.slow
def test_opendp_noise_has_the_right_scale():
    """|Lap(b)| is exponential with mean b and sd b: over n draws the mean of |X| is within
    6 b / sqrt(n) of b except with probability < 1e-8 (normal tail; n = 20000 makes the CLT
    error negligible), and P(|X| > 2b) = e^-2 likewise within 6 sd. A scale 10% off fails.
    """
    b, n = 3.0, 20_000
    x, _ = opendp_laplace(np.zeros(n), b, 1.0)
    absx = np.abs(x)
    assert abs(absx.mean() - b) < 6 * b / math.sqrt(n)
    p = math.exp(-2.0)
    assert abs(np.mean(absx > 2 * b) - p) < 6 * math.sqrt(p * (1 - p) / n)
    assert abs(np.mean(x > 0) - 0.5) < 6 * math.sqrt(0.25 / n)  # centred
    shifted, _ = opendp_laplace(np.full(n // 4, 7.0), b, 1.0)
    assert abs(np.mean(shifted) - 7.0) < 6 * math.sqrt(2) * b / math.sqrt(n // 4)
    # The same tolerance rejects a scale 10% off: the test can fail.
    assert abs(absx.mean() - 1.1 * b) > 6 * b / math.sqrt(n)


def test_concurrent_requests_draw_noise_once(hat, ledger_file):
    """Concurrent requests for the same release (threads here; processes in test_processes.py):
    BEGIN IMMEDIATE serialises them, so exactly one draws noise."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(publish.publish, "baseline", hat, 1.5, ledger=ledger_file) for _ in range(4)
        ]
        outs = [f.result() for f in futures]
    assert len({o.release.estimate for o in outs}) == 1
    assert sum(not o.reused for o in outs) == 1
    assert len(Ledger(ledger_file).entries()) == 1


@pytest.mark.parametrize("name", ["baseline", "levy", "akmv"])  # shares 1, 1/2, 1/2
def test_refuses_when_opendp_charges_more_than_the_laplace_share(
    hat, ledger_file, monkeypatch, name
):
    """A Laplace scale too small for the Laplace step's share of epsilon is caught before publishing."""
    import dataclasses

    real = single.run_mechanism

    def halved(*args, **kwargs):
        draws = real(*args, **kwargs)
        return dataclasses.replace(draws, noise_scale=draws.noise_scale / 2)

    monkeypatch.setattr(single, "run_mechanism", halved)
    with pytest.raises(HexplorerError, match="Refusing to publish"):
        publish.publish(name, hat, 1.0, ledger=ledger_file)
    assert not ledger_file.exists() or _records(ledger_file) == []
