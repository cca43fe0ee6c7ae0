"""One HAT (hexagon and timeslot) as the mechanisms see it: per-user (m, s, q), sorted.

SPEC section 1: within a HAT, users are re-indexed so that m_1 >= m_2 >= ... >= m_L, ties broken
by user id; every mechanism needs only the count m, the sum s and the sum of squares q per user.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.errors import HexplorerError
from core.params import check_counts, check_upper


@dataclass(frozen=True, kw_only=True, eq=False)
class HatData:
    """Per-user summaries of one HAT, sorted by count (descending), ties by user id.

    Build it with :meth:`from_arrays`; the constructor trusts its inputs.

    Attributes
    ----------
    counts : int64 array, m_l (sorted descending)
    sums : float64 array, s_l (sum of the user's clamped values)
    sumsq : float64 array, q_l (sum of squares)
    user_ids : array of str
    upper : float, the value bound U
    hat : str or None, the "CELL/SLOT" label
    """

    counts: np.ndarray
    sums: np.ndarray
    sumsq: np.ndarray
    user_ids: np.ndarray
    upper: float
    hat: str | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_arrays(
        cls,
        counts,
        sums,
        sumsq=None,
        user_ids=None,
        *,
        upper: float = 65.0,
        hat: str | None = None,
    ) -> HatData:
        """Validate, sort (count desc, user id asc) and freeze per-user summaries.

        Raises
        ------
        HexplorerError
            If there are no users, a count is < 1 or not an integer, lengths differ, or a user's
            mean lies outside [0, U] (values must be clamped before aggregation).

        >>> h = HatData.from_arrays([1, 3], [10.0, 30.0], user_ids=["b", "a"], upper=65)
        >>> h.counts.tolist(), h.n_records, h.true_mean
        ([3, 1], 4, 10.0)
        """
        upper = check_upper(upper)
        m = np.asarray(counts)
        if m.ndim != 1 or m.size == 0:
            raise HexplorerError("A HAT needs at least one user with at least one record.")
        m = check_counts(m)
        s = np.asarray(sums, dtype=np.float64)
        q = np.full(m.shape, np.nan) if sumsq is None else np.asarray(sumsq, dtype=np.float64)
        ids = (
            np.array([f"u{i:06d}" for i in range(m.size)], dtype=object)
            if user_ids is None
            else np.asarray(user_ids).astype(str).astype(object)
        )
        if not (s.shape == q.shape == ids.shape == m.shape):
            raise HexplorerError("counts, sums, sumsq and user_ids must have the same length.")
        if np.unique(ids.astype(str)).size != ids.size:
            raise HexplorerError(
                "Each user must appear once per HAT (one (m, s, q) row each); found a repeated user id. "
                "Aggregate per (HAT, user) first."
            )
        means = s / m
        tol = 1e-9 * upper
        if not np.all(np.isfinite(means)) or np.any(means < -tol) or np.any(means > upper + tol):
            raise HexplorerError(
                f"Every user's mean must lie in [0, U] = [0, {upper:g}]; clamp values first."
            )
        order = np.lexsort((ids.astype(str), -m))
        return cls(
            counts=m[order],
            sums=s[order],
            sumsq=q[order],
            user_ids=ids[order],
            upper=upper,
            hat=hat,
        )

    @property
    def n_users(self) -> int:
        """L, the number of users."""
        return int(self.counts.size)

    @property
    def n_records(self) -> int:
        """N = sum of m_l."""
        return int(self.counts.sum())

    @property
    def m_max(self) -> int:
        """m*, the largest count."""
        return int(self.counts[0])

    @property
    def m_min(self) -> int:
        """m_*, the smallest count."""
        return int(self.counts[-1])

    @property
    def user_means(self) -> np.ndarray:
        """x̄_l = s_l / m_l (mean replacement, SPEC section 1)."""
        return self.sums / self.counts

    @property
    def true_mean(self) -> float:
        """f = sum s_l / N."""
        return float(self.sums.sum() / self.n_records)
