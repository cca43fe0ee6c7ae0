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

from core import worstcase as wc
from core.mechanisms import noise
from core.mechanisms.common import clipped_sums, draws, prefix_sums
from core.mechanisms.forms import (
    BatchRelease,
    Pieces,
    WorstCaseForm,
    WorstParts,
    ceil_two_over_epsilon_array,
    opt_bounding_piece_starts,
)
from core.mechanisms.registry import Mechanism, register
from core.params import ceil_two_over_epsilon, check_noise_measure
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


# --- opt-bounding's closed form: E^OPT(ε) ([5], Theorem III.1) ------------------------------
# With k = ⌈2/ε⌉ and m_(k) the k-th largest count (0 if k > L): T_ε = U m_(k) and
# E^OPT = U (Σ_{j≤k} m_(j) − k m_(k)) / (2N) + c U m_(k) / (N ε); A + B/ε on each piece where
# ⌈2/ε⌉ is constant, and the constant U/2 below ε = 2/L (T_ε = 0).


def _ob_one(counts, upper, epsilon, noise_measure) -> WorstParts:
    c = check_noise_measure(noise_measure)
    t = wc.opt_bounding_threshold(counts, upper, epsilon)
    noise = c * t / epsilon / int(counts.sum())
    total = wc.opt_bounding_error(counts, upper, epsilon, noise_measure)
    return WorstParts(m_ub=None, clipping=total - noise, noise=noise, total=total)


def _ob_pieces(counts, upper, noise_measure) -> Pieces:
    c = check_noise_measure(noise_measure)
    n = int(counts.sum())
    desc = np.sort(counts)[::-1]
    big_l = desc.size
    k = np.arange(big_l, 0, -1)  # pieces in increasing ε: k = L, ..., 1
    lo_tab = opt_bounding_piece_starts(big_l)
    m_k = desc[k - 1]
    top = np.cumsum(desc)[k - 1]
    return Pieces(
        lo=np.concatenate(([0.0], lo_tab[k])),
        hi=np.concatenate(([lo_tab[big_l]], lo_tab[k - 1])),
        a=np.concatenate(([upper / 2.0], upper * (top - k * m_k) / (2.0 * n))),
        b=np.concatenate(([0.0], c * upper * m_k / n)),
        m=np.full(big_l + 1, -1),
    )


def _ob_many(table, eps):
    u, n = table.upper, table.records
    c = check_noise_measure(table.noise_measure)
    k = ceil_two_over_epsilon_array(eps)
    inside = k <= table.users
    row = table.count_starts[:-1] + np.minimum(k, table.users) - 1
    m_k = np.where(inside, table.counts_desc[row], 0)
    top_k = np.where(inside, table.top[row], n)
    k_in = np.where(inside, k, 0)
    bias = u * (top_k - k_in * m_k) / 2.0
    noise = c * (u * m_k) / eps
    return np.full(n.size, -1, dtype=np.int64), bias / n, noise / n, (bias + noise) / n


def _ob_many_pieces(table):
    """For each HAT the piece ε < lo[L] (T = 0, error U/2), then k = L, ..., 1."""
    u = table.upper
    c = check_noise_measure(table.noise_measure)
    users = table.users
    hats = np.arange(table.n_hats)
    lo_tab = opt_bounding_piece_starts(int(users.max()))
    hat_pairs = np.repeat(hats, users)
    k = np.arange(table.counts_desc.size) - np.repeat(table.count_starts[:-1], users) + 1
    n = table.records[hat_pairs]
    m_k = table.counts_desc
    hat = np.concatenate((hats, hat_pairs))
    order = np.argsort(hat, kind="stable")
    pieces = Pieces(
        lo=np.concatenate((np.zeros(table.n_hats), lo_tab[k]))[order],
        hi=np.concatenate((lo_tab[users], lo_tab[k - 1]))[order],
        a=np.concatenate((np.full(table.n_hats, u / 2.0), u * (table.top - k * m_k) / (2.0 * n)))[
            order
        ],
        b=np.concatenate((np.zeros(table.n_hats), c * u * m_k / n))[order],
        m=np.full(hat.size, -1),
    )
    return hat[order], pieces


def _ob_release_all(b, epsilon) -> BatchRelease:
    """Every HAT's clipped mean at T_ε (constant per HAT: no private step), in one pass."""
    u = b.upper
    n = b.seg_sum(b.counts)
    none = np.full(b.n_hats, -1, dtype=np.int64)
    t = ceil_two_over_epsilon(epsilon)
    lengths = b.lengths
    kth = b.counts[b.offsets[:-1] + np.minimum(t, lengths) - 1]
    t_eps = np.where(t <= lengths, u * kth, 0.0)
    m = b.counts.astype(np.float64)
    te = t_eps[b.segment]
    lo = np.maximum((u * m - te) / (2.0 * m), 0.0)
    hi = np.minimum((u * m + te) / (2.0 * m), u)
    noiseless = b.seg_sum(m * np.clip(b.sums / b.counts, lo, hi)) / n
    sens = t_eps / n
    return BatchRelease(
        m_ub=none, n_arrays=none, sensitivity=sens, noise_scale=sens / epsilon,
        noiseless=noiseless,
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
        m_ub_rule=None, colour="#882255", run=_opt_bounding, default=True,
        worst_case=WorstCaseForm(
            many=_ob_many, many_pieces=_ob_many_pieces, one=_ob_one, pieces=_ob_pieces
        ),
        release_all=_ob_release_all,
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
