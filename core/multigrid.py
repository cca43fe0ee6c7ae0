"""Former home of the many-grid code, kept so ``from core.multigrid import ...`` still works.

The code lives in :mod:`core.citywide` (SPEC section 5): ``gridset`` (choosing grids,
:class:`GridSet`), ``grids`` (per-grid Δ, E and the mean/variance mechanism), ``chop``
(CHOP-USER) and ``accounting`` (the three accountings and :func:`compose`). New code should
import from there.
"""

from __future__ import annotations

from core.citywide.accounting import PrivacyLoss, compose, privacy_loss
from core.citywide.chop import ChopResult, _chop_kernel, chop_user
from core.citywide.grids import (
    RELEASE_COLUMNS,
    GridErrors,
    _error_vec,
    bias_mean,
    bias_var,
    delta_mean,
    delta_var,
    grid_error,
    grid_errors,
    grid_statistics,
    laplace_noise,
    noisy_statistics,
    release_grids,
)
from core.citywide.gridset import (
    SUMMARY_COLUMNS,
    GridSet,
    grid_set,
    select_grids,
)

__all__ = [
    "RELEASE_COLUMNS",
    "SUMMARY_COLUMNS",
    "ChopResult",
    "GridErrors",
    "GridSet",
    "PrivacyLoss",
    "_chop_kernel",
    "_error_vec",
    "bias_mean",
    "bias_var",
    "chop_user",
    "compose",
    "delta_mean",
    "delta_var",
    "grid_error",
    "grid_errors",
    "grid_set",
    "grid_statistics",
    "laplace_noise",
    "noisy_statistics",
    "privacy_loss",
    "release_grids",
    "select_grids",
]
