"""Baseline ([1], section III-B; SPEC section 3): the true mean plus Laplace noise sized by
the busiest user. No clipping, no arrays; the reference every other mechanism is measured
against."""

from __future__ import annotations

import numpy as np

from core import worstcase as wc
from core.mechanisms.common import draws
from core.mechanisms.forms import BatchRelease, Pieces, WorstCaseForm, WorstParts, one_piece
from core.mechanisms.registry import Mechanism, register
from core.params import check_noise_measure


def _baseline(hat, epsilon, m_ub, rng, size):
    """f + Lap(U m* / (N ε)) ([1], section III-B): no clipping, sensitivity U m*/N."""
    sens = hat.upper * hat.m_max / hat.n_records
    return draws(
        "baseline", hat, epsilon, None, None, hat.true_mean, sens, sens / epsilon, rng, size
    )


def _one(counts, upper, epsilon, noise_measure) -> WorstParts:
    """``c U m* / (N ε)``: no clipping, all noise (:func:`core.worstcase.baseline_error`)."""
    total = wc.baseline_error(counts, upper, epsilon, noise_measure)
    return WorstParts(m_ub=None, clipping=0.0, noise=total, total=total)


def _pieces(counts, upper, noise_measure) -> Pieces:
    c = check_noise_measure(noise_measure)
    b = c * upper * int(counts.max()) / int(counts.sum())
    return Pieces(
        lo=np.array([0.0]), hi=np.array([np.inf]), a=np.array([0.0]), b=np.array([b]),
        m=np.array([-1]),
    )  # fmt: skip


def _many(table, eps):
    c = check_noise_measure(table.noise_measure)
    noise = c * table.upper * table.m_max / (table.records * eps)
    return np.full(table.n_hats, -1, dtype=np.int64), np.zeros(table.n_hats), noise, noise


def _many_pieces(table):
    c = check_noise_measure(table.noise_measure)
    b = c * table.upper * table.m_max / table.records
    return one_piece(np.zeros(table.n_hats), b, np.full(table.n_hats, -1))


def _release_all(b, epsilon) -> BatchRelease:
    """Every HAT's f with sensitivity U m*/N, in one pass."""
    n = b.seg_sum(b.counts)
    none = np.full(b.n_hats, -1, dtype=np.int64)
    sens = b.upper * b.counts[b.offsets[:-1]] / n
    return BatchRelease(
        m_ub=none, n_arrays=none, sensitivity=sens, noise_scale=sens / epsilon,
        noiseless=b.seg_sum(b.sums) / n,
    )  # fmt: skip


register(
    Mechanism(
        name="baseline",
        title="Baseline",
        family="Baseline",
        description=(
            "The true mean plus Laplace noise for one bus moving all its m* records: unbiased, "
            "but the busiest bus sets the noise."
        ),
        reference="[1] section III-B",
        spec="SPEC §3",
        grouping=None,
        m_ub_rule=None,
        colour="#000000",
        run=_baseline,
        worst_case=WorstCaseForm(many=_many, many_pieces=_many_pieces, one=_one, pieces=_pieces),
        release_all=_release_all,
        default=True,
    )
)
