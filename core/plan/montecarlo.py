"""One HAT, Monte Carlo: the smallest ε on a grid whose simulated error statistic is within target
(:func:`epsilon_for_error_mc`), for any mechanism; see :mod:`core.plan`."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.errors import HexplorerError, NotApplicableError
from core.hat import HatData
from core.params import (
    check_epsilon,
    check_positive_int,
)
from core.plan.pieces import DEFAULT_MC_GRID, check_target

# --------------------------------------------------------------------------------------------
# One HAT, Monte Carlo


@dataclass(frozen=True, kw_only=True, eq=False)
class MonteCarloPlan:
    """The smallest ε of a grid whose simulated error statistic is ≤ target.

    Attributes
    ----------
    status : {"ok", "unreachable"}
        "unreachable": no ε of the grid met the target.
    epsilon : float or None
        The smallest grid ε meeting the target (a smaller ε off the grid may too).
    value, standard_error : float or None
        The statistic at ``epsilon`` and its Monte-Carlo standard error.
    m_ub : int or None
        The m_UB the mechanism used at ``epsilon``.
    statistic : str
        "mae" or "q0.9" (a quantile of |error|).
    mechanism, target, n_runs : the inputs.
    curve : pandas.DataFrame
        epsilon, value, standard_error, m_ub, note for every grid ε evaluated (in increasing ε,
        up to ``epsilon``).
    """

    status: str
    epsilon: float | None
    value: float | None
    standard_error: float | None
    m_ub: int | None
    statistic: str
    mechanism: str
    target: float
    n_runs: int
    curve: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready fields (without the curve)."""
        return {
            "status": self.status,
            "epsilon": self.epsilon,
            "value": self.value,
            "standard_error": self.standard_error,
            "m_ub": self.m_ub,
            "statistic": self.statistic,
            "mechanism": self.mechanism,
            "target": self.target,
            "n_runs": self.n_runs,
        }


def _statistic_name(statistic) -> tuple[str, float | None]:
    if statistic == "mae":
        return "mae", None
    try:
        q = float(statistic)
    except (TypeError, ValueError):
        q = math.nan
    if isinstance(statistic, bool) or not 0.0 < q < 1.0:
        raise HexplorerError(
            f"The 'statistic' parameter must be 'mae' or a quantile level in (0, 1). "
            f"Got {statistic!r} instead."
        )
    return f"q{q:g}", q


def epsilon_for_error_mc(
    hat: HatData,
    target: float,
    mechanism: str,
    *,
    statistic: str | float = "mae",
    rng: np.random.Generator,
    n_runs: int,
    grid: Iterable[float] = DEFAULT_MC_GRID,
    m_ub: int | None = None,
) -> MonteCarloPlan:
    """The smallest ε of ``grid`` whose simulated MAE (or quantile of |error|) is ≤ ``target``.

    Any mechanism of SPEC section 3, its randomness redrawn in every run (SPEC section 3,
    Evaluation). The grid is walked in increasing ε and the walk stops at the first ε meeting
    the target, so the answer is "the smallest grid ε whose estimate is ≤ target"; the estimate
    carries a standard error (MAE: std(|error|)/√n; quantile: half the distance between the
    order statistics at ranks ``n q ± √(n q (1 − q))``, the binomial ±1σ band of the rank).

    Raises
    ------
    HexplorerError
        Bad target, statistic, grid, n_runs, rng or mechanism.

    >>> h = HatData.from_arrays([30, 20, 10], [600.0, 400.0, 200.0], upper=65.0)
    >>> p = epsilon_for_error_mc(h, 20.0, "baseline", rng=np.random.default_rng(0), n_runs=4000,
    ...                          grid=[0.5, 1, 2, 4])
    >>> p.status, p.epsilon
    ('ok', 2.0)
    """
    from core.evaluation import abs_error_statistic
    from core.mechanisms import get_mechanism, run_mechanism

    if not isinstance(hat, HatData):
        raise HexplorerError(
            f"The 'hat' parameter must be a HatData. Got {type(hat).__name__} instead."
        )
    target = check_target(target)
    name = get_mechanism(mechanism).name
    label, level = _statistic_name(statistic)
    n_runs = check_positive_int("n_runs", n_runs)
    if not isinstance(rng, np.random.Generator):
        raise HexplorerError(f"The 'rng' parameter must be a numpy Generator. Got {rng!r} instead.")
    try:
        eps_grid = sorted({check_epsilon(e) for e in grid})
    except TypeError:
        raise HexplorerError(f"The 'grid' parameter must be a list of ε. Got {grid!r}.") from None
    if not eps_grid:
        raise HexplorerError("The 'grid' parameter must hold at least one ε > 0. Got [].")
    cache: dict = {}
    rows = []
    found: dict[str, Any] | None = None
    for eps in eps_grid:
        try:
            d = run_mechanism(name, hat, eps, m_ub=m_ub, rng=rng, size=n_runs, _arrays_cache=cache)
        except NotApplicableError as exc:
            rows.append(
                {"epsilon": eps, "value": np.nan, "standard_error": np.nan, "m_ub": None,
                 "note": f"not applicable: {exc}"}
            )  # fmt: skip
            continue
        value, se = abs_error_statistic(np.abs(d.estimates - hat.true_mean), level)
        rows.append(
            {"epsilon": eps, "value": value, "standard_error": se, "m_ub": d.m_ub, "note": d.note}
        )
        if value <= target:
            found = rows[-1]
            break
    curve = pd.DataFrame(rows, columns=["epsilon", "value", "standard_error", "m_ub", "note"])
    curve["m_ub"] = curve["m_ub"].astype("Int64")
    common = {
        "statistic": label,
        "mechanism": name,
        "target": target,
        "n_runs": n_runs,
        "curve": curve,
    }
    if found is None:
        return MonteCarloPlan(
            status="unreachable", epsilon=None, value=None, standard_error=None, m_ub=None,
            **common,
        )  # fmt: skip
    return MonteCarloPlan(
        status="ok",
        epsilon=float(found["epsilon"]),
        value=float(found["value"]),
        standard_error=float(found["standard_error"]),
        m_ub=None if found["m_ub"] is None else int(found["m_ub"]),
        **common,
    )
