"""Baseline ([1], section III-B; SPEC section 3): the true mean plus Laplace noise sized by
the busiest user. No clipping, no arrays; the reference every other mechanism is measured
against."""

from __future__ import annotations

from core.mechanisms.common import draws
from core.mechanisms.registry import Mechanism, register


def _baseline(hat, epsilon, m_ub, rng, size):
    """f + Lap(U m* / (N ε)) ([1], section III-B): no clipping, sensitivity U m*/N."""
    sens = hat.upper * hat.m_max / hat.n_records
    return draws(
        "baseline", hat, epsilon, None, None, hat.true_mean, sens, sens / epsilon, rng, size
    )


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
    )
)
