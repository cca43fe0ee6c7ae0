"""OpenDP's vetted Laplace sampler: the only noise of a published release (SPEC section 7).

``opendp.measurements.make_laplace`` on a float atom domain with the absolute distance samples
exactly on a discretised grid and so resists the floating-point attacks that break textbook
``numpy`` Laplace noise (Mironov 2012). Its randomness is OpenDP's own (OS entropy), never seeded.
"""

from __future__ import annotations

import math
from importlib import metadata

import numpy as np

from core.errors import HexplorerError


def opendp_laplace(values, scale: float, sensitivity: float) -> tuple[np.ndarray, float]:
    """``values + Lap(scale)`` (independent per value) from OpenDP's vetted sampler, and its ε.

    Uses ``make_laplace`` on ``vector_domain(atom_domain(T=float, nan=False))`` with the
    ``l1_distance`` (OpenDP 0.16, "contrib" features); a published release passes one value.
    The randomness is OpenDP's own (OS entropy), never seeded here. The returned ε is OpenDP's
    privacy map at ``sensitivity`` (the Laplace step's share of the budget).

    Raises
    ------
    HexplorerError
        If a value or the scale is not finite, or the scale is negative.
    """
    import opendp.prelude as dp

    x = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if not (np.all(np.isfinite(x)) and math.isfinite(scale) and scale >= 0):
        raise HexplorerError(
            f"Cannot publish values with noise scale {scale!r}: values and scale must be finite, "
            "the scale >= 0."
        )
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.l1_distance(T=float),
        scale=float(scale),
    )
    eps = float(meas.map(float(sensitivity))) if scale > 0 or sensitivity == 0 else math.inf
    return np.asarray(meas(x.tolist()), dtype=np.float64), eps


def sampler_name() -> str:
    try:
        version = metadata.version("opendp")
    except metadata.PackageNotFoundError:  # pragma: no cover - opendp is a dependency
        version = "?"
    return f"opendp {version} measurements.make_laplace (float vector, L1 distance)"
