"""The checks every registered mechanism must pass, and the cases each mechanism's test supplies.

A mechanism's test module calls :func:`add_cases` with at least one :class:`ExactCase` (a
hand-computed HAT, the final Laplace noise set to zero, the selection stage held fixed where the
mechanism has one) and one :class:`PrivacyCase` (a tight neighbouring pair audited at the
budget of the Laplace stage, with a failing companion whose noise is cut).
``tests/test_mechanism_conformance.py`` runs :func:`check_exact`, :func:`check_invalid` and
:func:`check_privacy` for every name of ``core.mechanisms.MECHANISMS``; :func:`cases_for` fails
for a registered mechanism whose test supplies no cases.

Cases are found by :func:`discover`: every ``tests/test_*.py`` that calls ``add_cases(`` is
imported (by its module name, so pytest and this module share one copy).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import MECHANISMS, get_mechanism, noise, run_mechanism
from tests.privacy_harness import audit

U = 10.0
N_SAMPLES = 200_000
ALPHA = 1e-6
ORIGINAL_LAPLACE = noise._laplace

Hold = Callable[[pytest.MonkeyPatch], None]


@dataclass(frozen=True, kw_only=True)
class ExactCase:
    """One hand-computed run: with zero final noise (and ``hold`` fixing any selection stage),
    the mechanism must give exactly ``expect`` (field of :class:`Draws` → value)."""

    counts: tuple[int, ...]
    sums: tuple[float, ...]
    upper: float = U
    epsilon: float = 1.0
    m_ub: int | None = None
    hold: Hold | None = field(default=None, repr=False)
    expect: dict


@dataclass(frozen=True, kw_only=True)
class PrivacyCase:
    """A neighbouring pair: user ``moved`` has all values 0 in D and all values U in D'.

    ``claimed`` is the budget audited (ε for a one-stage mechanism, ε/2 for the Laplace stage of
    a composed one, with ``hold`` fixing the selection stage); the moved user shifts the noiseless
    value by ``share`` × the charged sensitivity; the failing companion multiplies the Laplace
    scale by ``failing_factor`` and must be flagged.
    """

    counts: tuple[int, ...]
    means: tuple[float, ...]
    moved: int
    epsilon: float = 1.0
    claimed: float = 1.0
    m_ub: int | None = None
    share: float = 1.0
    failing_factor: float = 0.5
    hold: Hold | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class Cases:
    exact: tuple[ExactCase, ...] = ()
    privacy: PrivacyCase | None = None


CASES: dict[str, Cases] = {}


def add_cases(
    name: str, *, exact: list[ExactCase] | None = None, privacy: PrivacyCase | None = None
) -> None:
    """Supply (or add to) the conformance cases of mechanism ``name``."""
    old = CASES.get(name, Cases())
    CASES[name] = Cases(
        exact=old.exact + tuple(exact or ()),
        privacy=privacy if privacy is not None else old.privacy,
    )


def discover() -> None:
    """Import every ``tests/test_*.py`` that supplies cases (once; pytest shares the modules)."""
    here = Path(__file__).resolve().parent
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    for path in sorted(here.glob("test_*.py")):
        if "add_cases(" in path.read_text(encoding="utf-8"):
            importlib.import_module(path.stem)


def cases_for(name: str) -> Cases:
    """The cases of ``name``; fails (not skips) when its test supplies none."""
    cases = CASES.get(name, Cases())
    missing = [
        what
        for what, ok in (("exact-value", bool(cases.exact)), ("privacy", cases.privacy is not None))
        if not ok
    ]
    if missing:
        pytest.fail(
            f"Mechanism {name!r} is registered but its test supplies no {' and no '.join(missing)} "
            "case: call add_cases(...) from tests/mechanism_checks.py in its test module."
        )
    return cases


def _zero_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise, "_laplace", lambda rng, scale, size: np.zeros(size))


def check_exact(name: str, case: ExactCase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero final noise: ``estimates == noiseless``, the expected fields, and the Laplace scale
    equal to sensitivity / (ε × the registry's ``laplace_share``)."""
    _zero_noise(monkeypatch)
    if case.hold is not None:
        case.hold(monkeypatch)
    hat = HatData.from_arrays(list(case.counts), list(case.sums), upper=case.upper)
    d = run_mechanism(name, hat, case.epsilon, m_ub=case.m_ub, rng=np.random.default_rng(0), size=3)
    np.testing.assert_array_equal(d.estimates, d.noiseless)
    share = get_mechanism(name).laplace_share
    np.testing.assert_allclose(d.noise_scale, d.sensitivity / (case.epsilon * share), rtol=1e-12)
    for key, want in case.expect.items():
        got = getattr(d, key)
        if want is None or isinstance(want, int) and not isinstance(got, np.ndarray):
            assert got == want, (key, got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=key)


def check_invalid(name: str) -> None:
    """Bad ε, m_ub, size, rng and hat each raise one :class:`HexplorerError` naming the
    parameter; a chosen m_ub is validated, then ignored (and said so) without arrays."""
    hat = HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)
    rng = np.random.default_rng(0)
    for eps in (0, -1.0, float("nan"), float("inf"), "abc", None):
        with pytest.raises(HexplorerError, match="epsilon"):
            run_mechanism(name, hat, eps, rng=rng, size=1)
    for m_ub in (0, 5, 2.5, "x"):
        with pytest.raises(HexplorerError, match="m_ub"):
            run_mechanism(name, hat, 1.0, m_ub=m_ub, rng=rng, size=1)
    for kwargs, param in (({"size": 0}, "size"), ({"size": 1, "rng": None}, "rng")):
        with pytest.raises(HexplorerError, match=param):
            run_mechanism(name, hat, 1.0, **{"rng": rng, **kwargs})
    with pytest.raises(HexplorerError, match="hat"):
        run_mechanism(name, [4, 2, 1], 1.0, rng=rng, size=1)
    d = run_mechanism(name, hat, 1.0, m_ub=3, rng=rng, size=2)
    if get_mechanism(name).uses_m_ub:
        assert d.m_ub == 3
    else:
        assert d.m_ub is None and "ignored" in d.note


def pair(counts, means, moved: int) -> tuple[HatData, HatData]:
    """D and D': user ``moved`` has all values 0 in D and all values U in D' (ids fix order)."""
    counts = np.asarray(counts, dtype=np.int64)
    ids = [f"u{i:03d}" for i in range(counts.size)]
    out = []
    for v in (0.0, U):
        mu = np.asarray(means, dtype=np.float64).copy()
        mu[moved] = v
        out.append(HatData.from_arrays(counts, counts * mu, user_ids=ids, upper=U, hat="h/1"))
    return out[0], out[1]


def _sampler(name, hat, epsilon, m_ub):
    def sample(size, rng):
        return run_mechanism(name, hat, epsilon, m_ub=m_ub, rng=rng, size=size).estimates

    return sample


def check_privacy(name: str, case: PrivacyCase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pair is tight; the audit passes at ``claimed`` and flags the run with the Laplace
    scale multiplied by ``failing_factor`` (same code path, ``noise._laplace`` patched)."""
    if case.hold is not None:
        case.hold(monkeypatch)
    d, dp = pair(case.counts, case.means, case.moved)
    one = [
        run_mechanism(name, h, case.epsilon, m_ub=case.m_ub, rng=np.random.default_rng(1), size=1)
        for h in (d, dp)
    ]
    assert one[0].sensitivity[0] > 0
    assert one[0].sensitivity[0] == pytest.approx(one[1].sensitivity[0], rel=1e-12)
    shift = abs(one[1].noiseless[0] - one[0].noiseless[0])
    assert shift == pytest.approx(case.share * one[0].sensitivity[0], rel=1e-12)

    def run_audit(seed: int):
        return audit(
            _sampler(name, d, case.epsilon, case.m_ub),
            _sampler(name, dp, case.epsilon, case.m_ub),
            case.claimed,
            rng=np.random.default_rng(seed),
            n=N_SAMPLES,
            alpha=ALPHA,
        )

    ok = run_audit(0)
    assert not ok.violated, str(ok)
    factor = case.failing_factor
    monkeypatch.setattr(
        noise, "_laplace", lambda rng, scale, size: ORIGINAL_LAPLACE(rng, scale * factor, size)
    )
    bad = run_audit(1)
    assert bad.violated, str(bad)


__all__ = [
    "CASES",
    "Cases",
    "ExactCase",
    "MECHANISMS",
    "PrivacyCase",
    "add_cases",
    "cases_for",
    "check_exact",
    "check_invalid",
    "check_privacy",
    "discover",
    "pair",
]
