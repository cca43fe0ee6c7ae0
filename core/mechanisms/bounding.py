"""Bounding each user's contribution without arrays (SPEC section 3): worst-case-optimal bounding
([5], Theorem III.1) and AKMV (Amin et al. 2019, adapted).

- opt-bounding clips each user's mean into its own interval [a_ℓ, b_ℓ] chosen from the public
  counts (T_ε, no budget split); when T_ε = 0 (⌈2/ε⌉ > L) it releases the constant U/2, and for
  ε ≥ 2 it is Baseline.
- akmv caps each user's *sum* at a private threshold T̂ (ε/2), then adds Laplace noise (ε/2).

One user (L = 1): opt-bounding releases U/2 unless ⌈2/ε⌉ = 1 (then it is Baseline); akmv's
quantile level 1 − ⌈2/ε⌉ is clamped to 0.
"""

from __future__ import annotations

import numpy as np

from core.mechanisms import noise
from core.mechanisms.common import clipped_sums, draws, prefix_sums
from core.mechanisms.registry import Mechanism, register
from core.params import ceil_two_over_epsilon
from core.worstcase import opt_bounding_threshold

__all__ = ["akmv_level"]


def _opt_bounding(hat, epsilon, m_ub, rng, size):
    """(1/N) Σ m_ℓ Π[a_ℓ,b_ℓ](x̄_ℓ) + Lap(T_ε / (N ε)) ([5], Theorem III.1, d = 1).

    T_ε depends on counts only (public), so there is no budget split. When T_ε = 0
    (⌈2/ε⌉ > L) every interval is {U/2}: the release is the constant U/2 with no noise.
    """
    m = hat.counts.astype(np.float64)
    u = hat.upper
    t_eps = float(opt_bounding_threshold(hat.counts, u, epsilon))
    a = np.maximum((u * m - t_eps) / (2.0 * m), 0.0)
    b = np.minimum((u * m + t_eps) / (2.0 * m), u)
    noiseless = float(np.sum(m * np.clip(hat.user_means, a, b)) / hat.n_records)
    sens = t_eps / hat.n_records
    note = (
        "T_eps = 0 (ceil(2/eps) > L): the release is the constant U/2, no noise."
        if t_eps == 0
        else ""
    )
    return draws(
        "opt-bounding", hat, epsilon, None, None, noiseless, sens, sens / epsilon, rng, size,
        threshold=np.full(size, t_eps), note=note,
    )  # fmt: skip


def akmv_level(epsilon: float, n_users: int) -> float:
    """Quantile level of akmv's T̂: 1 − ⌈2/ε⌉/L clamped to [0, 1] (SPEC section 3)."""
    return float(min(1.0, max(0.0, 1.0 - ceil_two_over_epsilon(epsilon) / n_users)))


def _akmv(hat, epsilon, m_ub, rng, size):
    """(1/N) Σ min(s_ℓ, T̂) + Lap(2 T̂ / (N ε)), T̂ a private quantile with ε/2 on [0, U m*].

    Amin et al. 2019 adapted (SPEC section 3): T̂ estimates the ⌈2/ε⌉-th largest user sum.
    """
    sums = np.sort(hat.sums)
    t_hat = noise._private_quantile(
        rng, sums, akmv_level(epsilon, hat.n_users), epsilon / 2.0,
        lo=0.0, hi=hat.upper * hat.m_max, sensitivity=1.0, size=size,
    )  # fmt: skip
    zero = np.zeros(size)
    noiseless = clipped_sums(sums, prefix_sums(sums), zero, t_hat) / hat.n_records
    sens = t_hat / hat.n_records
    return draws(
        "akmv", hat, epsilon, None, None, noiseless, sens, 2.0 * sens / epsilon, rng, size,
        clip_lo=zero, clip_hi=t_hat, threshold=t_hat,
    )  # fmt: skip


register(
    Mechanism(
        name="opt-bounding", title="Worst-case-optimal bounding", family="Bounding",
        description=(
            "Each bus's mean clipped into its own interval chosen from the public counts (T_ε, "
            "the ⌈2/ε⌉-th largest U m_ℓ), plus Laplace noise T_ε/(Nε); no budget split."
        ),
        reference="[5], Theorem III.1", spec="SPEC §3", grouping=None,
        m_ub_rule=None, colour="#882255", run=_opt_bounding,
    )
)  # fmt: skip
register(
    Mechanism(
        name="akmv", title="AKMV bounding", family="Bounding",
        description=(
            "Each bus's sum capped at a private estimate T̂ of the ⌈2/ε⌉-th largest sum (ε/2), "
            "plus Laplace noise 2T̂/(Nε) (ε/2)."
        ),
        reference="Amin et al. 2019, adapted", spec="SPEC §3 (private quantile)",
        grouping=None, m_ub_rule=None, colour="#999933", run=_akmv, laplace_share=0.5,
    )
)  # fmt: skip
