"""Privacy accounting of a city-wide release (SPEC section 5): basic composition ``G ε``, by users
``ε max_ℓ G_ℓ`` ([2], Theorem II.3), after CHOP-USER ``K ε``; and :func:`compose`, the three
for several ε at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.citywide.chop import ChopResult, chop_user
from core.citywide.gridset import GridSet, _as_gridset
from core.errors import HexplorerError
from core.params import check_epsilon, check_upper


@dataclass(frozen=True, kw_only=True)
class PrivacyLoss:
    """Privacy loss of releasing every grid with budget ε each (SPEC section 5).

    basic : ``G ε`` (basic composition); by_users : ``ε max_ℓ G_ℓ`` ([2], Theorem II.3);
    after_chop : ``K ε`` after CHOP-USER, or None when not run.
    """

    epsilon: float
    basic: float
    by_users: float
    after_chop: float | None = None


def privacy_loss(grids: GridSet, epsilon: float, chop: ChopResult | None = None) -> PrivacyLoss:
    """The three accountings of SPEC section 5.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"hat": ["a/s", "b/s", "b/s"], "cell": ["a", "b", "b"], "slot": ["s"] * 3,
    ...     "user_id": ["x", "x", "y"], "m": [1, 1, 1], "s": [0.0] * 3, "q": [0.0] * 3})
    >>> privacy_loss(GridSet.from_summaries(df), 0.5)
    PrivacyLoss(epsilon=0.5, basic=1.0, by_users=1.0, after_chop=None)
    """
    eps = check_epsilon(epsilon)
    return PrivacyLoss(
        epsilon=eps,
        basic=grids.n_grids * eps,
        by_users=grids.max_grids_per_user * eps,
        after_chop=None if chop is None else chop.k_final * eps,
    )


def compose(summaries_or_gridset, epsilons, upper: float = 65.0) -> dict:
    """Privacy loss under composition for each ε: basic, by users and after CHOP-USER.

    Returns
    -------
    dict
        ``{grids, users, max_grids_per_user, results: [{epsilon, basic_loss, user_loss, chop_k,
        chop_loss, threshold, max_error_after, suppressed_pairs}]}`` (JSON-ready).
    """
    grids = _as_gridset(summaries_or_gridset)
    u = check_upper(upper)
    eps_list = [epsilons] if np.ndim(epsilons) == 0 else list(epsilons)
    if not eps_list:
        raise HexplorerError("The 'epsilon' parameter needs at least one value.")
    results = []
    for e in eps_list:
        eps = check_epsilon(e)
        chop = chop_user(grids, eps, upper=u)
        loss = privacy_loss(grids, eps, chop)
        results.append(
            {
                "epsilon": eps,
                "basic_loss": loss.basic,
                "user_loss": loss.by_users,
                "chop_k": chop.k_final,
                "chop_loss": loss.after_chop,
                "threshold": chop.threshold,
                "max_error_after": float(chop.errors_after.max()),
                "suppressed_pairs": chop.n_suppressed,
            }
        )
    return {
        "grids": grids.n_grids,
        "users": grids.n_users,
        "max_grids_per_user": grids.max_grids_per_user,
        "results": results,
    }
