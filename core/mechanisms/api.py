"""The public entry points: :func:`run_mechanism` (``size`` runs at once), :func:`release` (one
run, scalars), :func:`default_m_ub` and :func:`resolve` (validation and m_UB), for every
mechanism of the registry (SPEC section 3)."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms.common import arrays_of
from core.mechanisms.registry import Draws, Mechanism, Release, get_mechanism, get_rule
from core.params import check_epsilon, check_m_ub, check_positive_int

__all__ = ["default_m_ub", "release", "resolve", "run_mechanism"]


def _check_hat(hat) -> HatData:
    if not isinstance(hat, HatData):
        raise HexplorerError(
            f"The 'hat' parameter must be a HatData. Got {type(hat).__name__} instead."
        )
    return hat


def default_m_ub(name: str, hat: HatData, epsilon: float) -> int | None:
    """The m_UB a mechanism uses when the user gives none (SPEC section 3 table); None if no arrays.

    The mechanism's ``m_ub_rule`` is looked up in :data:`core.mechanisms.RULES` (median →
    ``median_count``; levy → m_UB^(L); opt → m^(ε) with noise measure "mean"; convex →
    m_UB^(O,2); or any rule registered since); an unknown rule raises, never a fallback.
    """
    mech = get_mechanism(name)
    _check_hat(hat)
    epsilon = check_epsilon(epsilon)
    if mech.m_ub_rule is None:
        return None
    return get_rule(mech.m_ub_rule)(hat.counts, hat.upper, epsilon, "mean")


def resolve(
    name: str, hat: HatData, epsilon: float, m_ub=None
) -> tuple[Mechanism, float, int | None, str]:
    """Validate inputs and resolve m_UB: returns (mechanism, epsilon, m_ub, note).

    A user-chosen ``m_ub`` is validated (an integer in [m_*, m*]) and overrides the default of
    mechanisms with arrays; mechanisms without arrays ignore it (m_ub None, note says so).
    """
    mech = get_mechanism(name)
    _check_hat(hat)
    epsilon = check_epsilon(epsilon)
    note = ""
    if m_ub is not None:
        m_ub = check_m_ub(m_ub, hat.counts)
        if not mech.uses_m_ub:
            note = f"{mech.name} uses no arrays; m_ub = {m_ub} was ignored."
            m_ub = None
    elif mech.m_ub_rule is not None:  # the default, from the checked inputs
        m_ub = get_rule(mech.m_ub_rule)(hat.counts, hat.upper, epsilon, "mean")
    return mech, epsilon, m_ub, note


def run_mechanism(
    name: str,
    hat: HatData,
    epsilon: float,
    *,
    m_ub: int | None = None,
    rng: np.random.Generator,
    size: int,
    _arrays_cache: dict | None = None,
) -> Draws:
    """``size`` independent runs of mechanism ``name`` on ``hat`` (SPEC section 3), vectorised.

    Parameters
    ----------
    name : str
        One of :data:`MECHANISMS`.
    hat : HatData
    epsilon : float
        Privacy loss of each run (> 0).
    m_ub : int, optional
        Overrides the mechanism's default m_UB (must lie in [m_*, m*]); ignored (and reported
        as None) by baseline, opt-bounding and akmv.
    rng : numpy.random.Generator
    size : int
        Number of runs (>= 1).
    _arrays_cache : dict, optional
        Private: arrays keyed by (strategy, m_UB), shared across calls by
        :func:`core.evaluation.monte_carlo` so each grouping is built once per table.

    Raises
    ------
    HexplorerError
        Unknown name (the message lists the valid ones), epsilon <= 0, m_ub outside [m_*, m*].
    NotApplicableError
        No array can be formed (K = 0).

    >>> from core.hat import HatData
    >>> h = HatData.from_arrays([4, 2, 1], [40.0, 10.0, 5.0], upper=10.0)
    >>> d = run_mechanism("baseline", h, 1.0, rng=np.random.default_rng(0), size=3)
    >>> float(d.sensitivity[0]), d.estimates.shape
    (5.714285714285714, (3,))
    """
    mech, epsilon, m_ub, note = resolve(name, hat, epsilon, m_ub)
    size = check_positive_int("size", size)
    if not isinstance(rng, np.random.Generator):
        raise HexplorerError(f"The 'rng' parameter must be a numpy Generator. Got {rng!r} instead.")
    kwargs = {}
    if mech.grouping is not None and _arrays_cache is not None:
        key = (mech.grouping, m_ub)
        if key not in _arrays_cache:
            _arrays_cache[key] = arrays_of(hat, mech.grouping, cast(int, m_ub))
        kwargs["arrays"] = _arrays_cache[key]
    draws = mech.run(hat, epsilon, m_ub, rng, size, **kwargs)
    if note:
        joined = f"{note} {draws.note}".strip()
        draws = replace(draws, note=joined)
    return draws


def release(
    name: str, hat: HatData, epsilon: float, *, m_ub: int | None = None, rng: np.random.Generator
) -> Release:
    """One run of mechanism ``name`` (see :func:`run_mechanism`), as scalars.

    This is a *simulated* release (SPEC section 7): a published release goes through
    ``core.publish`` with a vetted sampler and a ledger.
    """
    d = run_mechanism(name, hat, epsilon, m_ub=m_ub, rng=rng, size=1)
    clip = None
    if d.clip_lo is not None and d.clip_hi is not None:
        clip = (float(d.clip_lo[0]), float(d.clip_hi[0]))
    return Release(
        mechanism=d.mechanism,
        epsilon=d.epsilon,
        m_ub=d.m_ub,
        n_arrays=d.n_arrays,
        sensitivity=float(d.sensitivity[0]),
        noise_scale=float(d.noise_scale[0]),
        clip_interval=clip,
        threshold=None if d.threshold is None else float(d.threshold[0]),
        noiseless=float(d.noiseless[0]),
        estimate=float(d.estimates[0]),
        true_mean=d.true_mean,
        note=d.note,
    )
