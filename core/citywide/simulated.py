"""Every HAT's simulated error for any mechanism (SPEC section 3): the seeded Monte-Carlo view
beside the analytic worst case of :mod:`core.citywide.errors`."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd

from core.citywide.gridset import GridSet, _as_gridset
from core.errors import HexplorerError, NotApplicableError
from core.mechanisms import get_mechanism
from core.params import check_epsilon, check_positive_int, check_upper

__all__ = ["hat_seed", "simulated_quantiles"]


def hat_seed(seed: int, hat: str) -> list[int]:
    """The seed sequence of one HAT's simulation: (seed, CRC-32 of its label).

    A HAT's simulated runs then do not depend on which other HATs are simulated with it.

    >>> hat_seed(7, "872a1008fffffff/2024-03-05T08:00")[0]
    7
    """
    return [int(seed), zlib.crc32(str(hat).encode("utf-8"))]


def simulated_quantiles(
    grids,
    epsilon: float,
    mechanism: str,
    *,
    upper: float,
    n_runs: int,
    seed: int,
    level: float = 0.9,
) -> pd.DataFrame:
    """Every HAT's simulated ``level``-quantile of |error| for any mechanism (SPEC section 3).

    Each HAT runs ``n_runs`` independent releases (:func:`core.mechanisms.run_mechanism`, all of
    the mechanism's randomness redrawn per run, at its default m_UB) with its own generator
    ``np.random.default_rng(hat_seed(seed, hat))``. The runs of one HAT are vectorised; HATs are
    visited one by one (this is the Monte-Carlo path, not the one that runs when ε moves).

    Returns
    -------
    pandas.DataFrame
        hat, cell, slot, users, records, m_ub (nullable), quantile, standard_error (see
        :func:`core.evaluation.abs_error_statistic`), mechanism, epsilon, n_runs, note
        (non-empty when the mechanism cannot run on the HAT: quantile NaN).
    """
    from core.evaluation import abs_error_statistic
    from core.hat import HatData
    from core.mechanisms import run_mechanism

    g: GridSet = _as_gridset(grids)
    epsilon = check_epsilon(epsilon)
    name = get_mechanism(mechanism).name
    upper = check_upper(upper)
    n_runs = check_positive_int("n_runs", n_runs)
    level = float(level)
    if not 0.0 < level < 1.0:
        raise HexplorerError(f"The 'level' parameter must lie in (0, 1). Got {level!r} instead.")
    rows = []
    for h in range(g.n_grids):
        sl = slice(int(g.starts[h]), int(g.starts[h + 1]))
        label = str(g.hats[h])
        hat = HatData.from_arrays(
            g.m[sl], g.s[sl], g.q[sl], g.user_ids[g.user[sl]], upper=upper, hat=label
        )
        row = {
            "hat": label,
            "cell": str(g.cells[h]),
            "slot": str(g.slots[h]),
            "users": hat.n_users,
            "records": hat.n_records,
            "m_ub": None,
            "quantile": math.nan,
            "standard_error": math.nan,
            "note": "",
        }
        rng = np.random.default_rng(hat_seed(seed, label))
        try:
            d = run_mechanism(name, hat, epsilon, rng=rng, size=n_runs)
        except NotApplicableError as exc:
            row["note"] = f"not applicable: {exc}"
        else:
            q, se = abs_error_statistic(np.abs(d.estimates - hat.true_mean), level)
            row.update(m_ub=d.m_ub, quantile=q, standard_error=se, note=d.note)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["m_ub"] = out["m_ub"].astype("Int64")
    out["mechanism"] = name
    out["epsilon"] = epsilon
    out["n_runs"] = n_runs
    return out[
        [
            "hat", "cell", "slot", "users", "records", "m_ub", "quantile", "standard_error",
            "mechanism", "epsilon", "n_runs", "note",
        ]
    ]  # fmt: skip
