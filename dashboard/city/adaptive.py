"""Whole city's plain-words note on the adaptive hexagons (the Map's "Resolution: adaptive"):
why the outskirts get larger hexagons, what it costs here, and that the choice reads the public
record counts (Learn → Adaptive hexagons has the whole story)."""

from __future__ import annotations

import streamlit as st

from dashboard.city import compute as city_compute
from dashboard.common.source.compute import DataSpec

LEVELS = 2
"""The note's adaptive cover may coarsen two resolutions (7 → 5 on the demo city)."""


def note(spec: DataSpec, slot: str, noise_measure: str, mechanism: str, epsilon: float,
         target: float, u) -> None:  # fmt: skip
    """The note for one slot at the page's ε, mechanism and target."""
    r_max = int(spec.resolution)
    r_min = max(0, r_max - LEVELS)
    if r_min == r_max or target <= 0:
        return
    cover = city_compute.adaptive_cover(
        spec, slot, noise_measure, mechanism, epsilon, target, r_min
    )
    fixed = cover.fixed_share_records(r_max)
    coarse = cover.resolution < r_max
    coarse_records = int(cover.records[coarse].sum())
    st.subheader("Larger hexagons where the data are thin")
    st.markdown(
        f"At ε = {epsilon:g} with {mechanism}, **fixed resolution {r_max}** puts "
        f"**{fixed:.0%}** of this slot's records in hexagons within ±{target:g} {u.value}; "
        f"an **adaptive** map ({r_max}–{r_min}) puts **{cover.share_records:.0%}** there. "
        f"It keeps the finest hexagons where they meet the target and releases "
        f"{int(coarse.sum()):,} larger ones where too few {u.users} make the finest ones noise "
        f"— mostly the outskirts. The cost is detail: {coarse_records / cover.n_records:.0%} of "
        f"the records are released as the mean of a larger area. Each record is released once, "
        f"so the per-{u.user} accounting above holds unchanged. The choice reads only the "
        f"record counts, which the papers treat as public; if they were private, the choice "
        "itself would need differential privacy (noisy counts, paid for with part of the budget). "
        "The Map draws it (Resolution → adaptive); Learn → Adaptive hexagons explains it."
    )
