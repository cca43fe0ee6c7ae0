"""Grouping a HAT's users into pseudo-users ("arrays"): WrapAround and BestFit (SPEC section 2).

Both strategies clip every user ℓ to ``Γ_ℓ = min(m_ℓ, m_UB)`` samples and use mean replacement
(each kept sample of user ℓ is the user's mean ``x̄_ℓ``), so an array's sum is
``Σ Γ_ℓ x̄_ℓ`` over the (parts of) users it holds.

- :func:`wraparound` ([2], Algorithm 1): the users' samples laid end to end in sorted order,
  cut into ``K = ⌊ΣΓ_ℓ / m_UB⌋`` full arrays; the trailing partial array is dropped.
- :func:`bestfit` ([2], Algorithm 2): each user, in sorted order, goes whole into the array
  with room that is filled the most (lowest index among equal fills); ``K̄`` non-empty arrays.
- :func:`bestfit_fill`: the BestFit placement on counts alone, in O(L log L).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import HexplorerError, NotApplicableError
from core.hat import HatData
from core.params import check_m_ub

STRATEGIES = ("wraparound", "bestfit")

# BestFit merges a fill level's index chunks in Python below this size, in numpy above it.
_NUMPY_MERGE_MIN = 65


@dataclass(frozen=True, kw_only=True, eq=False)
class Arrays:
    """The arrays (pseudo-users) one grouping strategy builds (SPEC section 2).

    Attributes
    ----------
    strategy : str
        ``"wraparound"`` or ``"bestfit"``.
    m_ub : int
        The array capacity m_UB (users are clipped to ``min(m_ℓ, m_UB)`` samples).
    means : float64 array, shape (n_arrays,)
        Array means ``Ā_i`` of the kept arrays.
    fills : int64 array, shape (n_arrays,)
        Fills ``w(A_i)``, the number of samples in each kept array (all ``m_UB`` for WrapAround).
    n_arrays : int (property)
        K (WrapAround) or K̄ (BestFit), the number of kept arrays: ``means.size``.
    assignment : int64 array of shape (L,) or None
        BestFit: the array index (0-based) of each user, in the HAT's sorted order.
        None for WrapAround, where a user can straddle two arrays.
    """

    strategy: str
    m_ub: int
    means: np.ndarray
    fills: np.ndarray
    assignment: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise HexplorerError(
                f"The 'strategy' parameter must be one of {STRATEGIES}. "
                f"Got {self.strategy!r} instead."
            )
        if self.means.ndim != 1 or self.means.size < 1 or self.fills.shape != self.means.shape:
            raise HexplorerError(
                "Arrays need one mean and one fill per array, at least one array. "
                f"Got means of shape {self.means.shape}, fills of shape {self.fills.shape}."
            )

    @property
    def arrays_per_user(self) -> int:
        """How many arrays one user's samples can reach: 2 for WrapAround (a user straddles two
        arrays), 1 for BestFit. The factor on every sensitivity that reads array means (SPEC
        sections 2-3; for plain WrapAround averaging it is the papers' charged factor)."""
        return 2 if self.strategy == "wraparound" else 1

    @property
    def n_arrays(self) -> int:
        """K (WrapAround) or K̄ (BestFit): the number of kept arrays."""
        return int(self.means.size)

    @property
    def f_arr(self) -> float:
        """``f_arr = (1/K̄) Σ_i Ā_i`` (BestFit) or ``(1/K) Σ_{i≤K} Ā_i`` (WrapAround)."""
        return float(self.means.mean())


def clipped_counts(counts: np.ndarray, m_ub: int) -> np.ndarray:
    """``Γ_ℓ = min(m_ℓ, m_UB)`` as int64.

    >>> clipped_counts(np.array([5, 3, 1]), 3).tolist()
    [3, 3, 1]
    """
    return np.minimum(np.asarray(counts, dtype=np.int64), np.int64(m_ub))


def n_full_arrays(counts: np.ndarray, m_ub: int) -> int:
    """``K = ⌊Σ_ℓ min(m_ℓ, m_UB) / m_UB⌋``, the number of full arrays (SPEC section 2).

    >>> n_full_arrays(np.array([5, 3, 1]), 3)
    2
    """
    return int(clipped_counts(counts, m_ub).sum() // m_ub)


def _check_no_array(k: int, m_ub: int, total: int) -> None:
    if k < 1:
        raise NotApplicableError(
            f"No array of m_UB = {m_ub} samples can be formed: the users keep only {total} "
            f"samples in all (m_ub={m_ub})."
        )


def wraparound(hat: HatData, m_ub: int) -> Arrays:
    """WrapAround grouping ([2], Algorithm 1; SPEC section 2), vectorised.

    The mean-replaced stream is piecewise linear in its cumulative value: with
    ``C_j = Σ_{ℓ<j} Γ_ℓ`` and ``V_j = Σ_{ℓ<j} Γ_ℓ x̄_ℓ``, the cumulative value at stream position
    ``p`` in user j's stretch is ``V_j + (p − C_j) x̄_j``. An array's sum is the difference of
    that function at its two ends, so all K arrays cost one ``searchsorted``.

    Parameters
    ----------
    hat : HatData
        The HAT's users, sorted by count (descending).
    m_ub : int
        Array length, an integer in [m_*, m*].

    Returns
    -------
    Arrays
        ``strategy="wraparound"``, K full arrays, ``fills`` all m_UB, ``assignment=None``.

    Raises
    ------
    HexplorerError
        If ``m_ub`` is not an integer in [m_*, m*].
    NotApplicableError
        If K = 0 (no full array can be formed).

    >>> h = HatData.from_arrays([3, 2, 1], [30.0, 40.0, 5.0], upper=65)
    >>> a = wraparound(h, 2)
    >>> a.n_arrays, a.means.tolist()
    (2, [10.0, 20.0])
    """
    m_ub = check_m_ub(m_ub, hat.counts)
    gamma = clipped_counts(hat.counts, m_ub)
    xbar = hat.user_means
    total = int(gamma.sum())
    k = total // m_ub
    _check_no_array(k, m_ub, total)
    c = np.concatenate(([0], np.cumsum(gamma)))
    v = np.concatenate(([0.0], np.cumsum(gamma * xbar)))
    bounds = np.arange(k + 1, dtype=np.int64) * m_ub
    j = np.minimum(np.searchsorted(c, bounds, side="right") - 1, gamma.size - 1)
    cum = v[j] + (bounds - c[j]) * xbar[j]
    means = np.diff(cum) / m_ub
    return Arrays(
        strategy="wraparound",
        m_ub=m_ub,
        means=means.astype(np.float64),
        fills=np.full(k, m_ub, dtype=np.int64),
        assignment=None,
    )


def bestfit_fill(clipped_counts: np.ndarray, m_ub: int) -> tuple[np.ndarray, np.ndarray]:
    """BestFit placement on counts alone ([2], Algorithm 2; SPEC section 2).

    L arrays of capacity ``m_ub``, indexed 0..L−1 here (1..L in the SPEC). Users are placed in
    the given order (pass them sorted by count, descending, as :class:`HatData` holds them): each
    user's ``Γ_ℓ`` samples go, contiguously, into the array that has room for them and is filled
    the most; among equally filled arrays, the lowest index.

    Implementation: arrays are bucketed by fill level (per level, ascending chunks of array
    indices — ``range`` objects for freshly opened arrays, merged lazily, in numpy when large —
    plus a sorted list of the non-empty levels, searched with ``bisect`` for the largest level
    ``≤ m_UB − Γ``). Users are processed in runs of equal Γ: within a run the chosen array keeps
    receiving users until it has no room for one more Γ (it was the fullest with room and only
    got fuller), after which it is never chosen again in that run. So a run takes the arrays of
    the fullest eligible level in index order, ``⌊(m_UB − level)/Γ⌋`` users each, in one
    vectorised step per (run, level), and opens fresh arrays (the lowest unused indices) in one
    step when no opened array has room. Every step either ends a run or empties a level for it,
    so the Python overhead is per (distinct Γ, fill level) pair, not per user; index moves are
    slices and sorted-run merges (each array moves at most once per user it receives). The one
    cost outside O(L log L) is re-merging a level that a run leaves partly used (at most once
    per run, in C). Sorted input with a few thousand distinct
    counts (10⁶ users) takes a few hundredths of a second; unsorted input or hundreds of
    thousands of distinct counts fall back towards one step per user (still correct).

    Parameters
    ----------
    clipped_counts : int array, shape (L,)
        ``Γ_ℓ = min(m_ℓ, m_UB)``, each an integer in [1, m_ub].
    m_ub : int
        Array capacity, >= 1.

    Returns
    -------
    assignment : int64 array, shape (L,)
        The array index of each user (same order as ``clipped_counts``); arrays are opened in
        index order, so the used indices are exactly 0..K̄−1.
    fills : int64 array, shape (K̄,)
        ``w(A_i)``, the samples in each non-empty array.

    Raises
    ------
    HexplorerError
        If ``m_ub`` is not an integer >= 1 or a count is not an integer in [1, m_ub].

    >>> a, w = bestfit_fill(np.array([3, 3, 2, 1, 1]), 3)
    >>> a.tolist(), w.tolist()
    ([0, 1, 2, 2, 3], [3, 3, 3, 1])
    """
    bad_m_ub = f"The 'm_ub' parameter must be an integer >= 1. Got {m_ub!r} instead."
    try:
        cap = int(m_ub)
    except (TypeError, ValueError):
        raise HexplorerError(bad_m_ub) from None
    if cap != m_ub or cap < 1:
        raise HexplorerError(bad_m_ub)
    g = np.asarray(clipped_counts)
    if g.ndim != 1 or g.size == 0:
        raise HexplorerError("The 'clipped_counts' parameter must be a non-empty 1-D array.")
    if not np.issubdtype(g.dtype, np.integer):
        if not np.all(np.isfinite(g)) or np.any(g != np.round(g)):
            raise HexplorerError("Every entry of 'clipped_counts' must be an integer in [1, m_ub].")
    g = g.astype(np.int64)
    if np.any(g < 1) or np.any(g > cap):
        bad = g[(g < 1) | (g > cap)][0]
        raise HexplorerError(
            f"Every entry of 'clipped_counts' must be an integer in [1, m_ub={cap}]. "
            f"Got {bad} instead."
        )

    n_users = g.size
    assignment = np.empty(n_users, dtype=np.int64)
    # Fill level -> ascending chunks (``range`` or ``list``) of array indices, merged lazily
    # when the level is next taken from. Only levels 1..cap-1 are kept: empty arrays are the
    # unused indices >= n_open, full arrays can never take anyone.
    buckets: dict[int, list] = {}
    levels: list[int] = []  # sorted non-empty levels
    n_open = 0
    insort, bisect_right = bisect.insort, bisect.bisect_right

    def as_index(chunk) -> np.ndarray:
        if isinstance(chunk, range):
            return np.arange(chunk.start, chunk.stop, dtype=np.int64)
        return np.asarray(chunk, dtype=np.int64)

    def merged(chunks: list):
        # Small merges in Python, large ones in numpy (timsort/radix on a few sorted runs).
        if sum(len(c) for c in chunks) < _NUMPY_MERGE_MIN:
            return sorted(itertools.chain(*chunks))
        return np.sort(np.concatenate([as_index(c) for c in chunks]), kind="stable")

    # Runs of equal Γ.
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    ends = np.append(starts[1:], n_users)
    run_values = g[starts].tolist()
    for pos, end, gv in zip(starts.tolist(), ends.tolist(), run_values, strict=True):
        left = end - pos
        room_level = cap - gv  # an array at fill f has room iff f <= cap - gv
        while left > 0:
            i = bisect_right(levels, room_level) - 1
            if i < 0:
                # No opened array has room: open fresh arrays, per_array users each.
                level = 0
                per_array = cap // gv
                n_take = -(-left // per_array)
                taken = range(n_open, n_open + n_take)
                n_open += n_take
            else:
                level = levels[i]
                chunks = buckets[level]
                avail = chunks[0] if len(chunks) == 1 else merged(chunks)
                per_array = (cap - level) // gv
                n_take = min(len(avail), -(-left // per_array))
                taken = avail[:n_take]
                if n_take < len(avail):
                    buckets[level] = [avail[n_take:]]
                else:
                    del buckets[level]
                    del levels[i]
            used = min(left, n_take * per_array)
            if n_take == 1:
                assignment[pos : pos + used] = taken[0]
            elif per_array == 1:
                assignment[pos : pos + used] = as_index(taken)
            else:
                assignment[pos : pos + used] = np.repeat(as_index(taken), per_array)[:used]
            last = used - (n_take - 1) * per_array
            moves: tuple[tuple[int, Any], ...]
            if last == per_array:
                moves = ((level + per_array * gv, taken),)
            else:
                moves = ((level + per_array * gv, taken[:-1]), (level + last * gv, taken[-1:]))
            for new_level, chunk in moves:
                if new_level < cap and len(chunk):
                    bucket = buckets.get(new_level)
                    if bucket is None:
                        buckets[new_level] = [chunk]
                        insort(levels, new_level)
                    else:
                        bucket.append(chunk)
            pos += used
            left -= used

    fills = np.bincount(assignment, weights=g, minlength=n_open).astype(np.int64)
    return assignment, fills


def bestfit(hat: HatData, m_ub: int) -> Arrays:
    """BestFit grouping ([2], Algorithm 2; SPEC section 2).

    Each user lies in exactly one array, so one user moves ``f_arr`` by at most ``U / K̄``.
    Array mean ``Ā_i = (Σ_{ℓ∈A_i} Γ_ℓ x̄_ℓ) / w(A_i)``.

    Parameters
    ----------
    hat : HatData
        The HAT's users, sorted by count (descending).
    m_ub : int
        Array capacity, an integer in [m_*, m*].

    Returns
    -------
    Arrays
        ``strategy="bestfit"``, K̄ non-empty arrays, their fills and the users' assignment.

    Raises
    ------
    HexplorerError
        If ``m_ub`` is not an integer in [m_*, m*].
    NotApplicableError
        If K = ⌊ΣΓ_ℓ / m_UB⌋ = 0 (cannot happen for a valid m_ub, kept as a guard).

    >>> h = HatData.from_arrays([3, 2, 1], [30.0, 40.0, 5.0], upper=65)
    >>> a = bestfit(h, 3)
    >>> a.n_arrays, a.fills.tolist(), a.means.tolist()
    (2, [3, 3], [10.0, 15.0])
    """
    m_ub = check_m_ub(m_ub, hat.counts)
    gamma = clipped_counts(hat.counts, m_ub)
    total = int(gamma.sum())
    _check_no_array(total // m_ub, m_ub, total)
    assignment, fills = bestfit_fill(gamma, m_ub)
    sums = np.bincount(assignment, weights=gamma * hat.user_means, minlength=fills.size)
    return Arrays(
        strategy="bestfit",
        m_ub=m_ub,
        means=(sums / fills).astype(np.float64),
        fills=fills,
        assignment=assignment,
    )


def user_weights(arrays: Arrays, counts: np.ndarray) -> np.ndarray:
    """BestFit's linear weights ``α_ℓ = Γ_ℓ / (K̄ · w(array of ℓ))``, so ``f_arr = Σ α_ℓ x̄_ℓ``.

    SPEC section 4 (exact bias of the arrays BestFit builds); ``Σ α_ℓ = 1``.

    >>> h = HatData.from_arrays([2, 1], [2.0, 1.0])
    >>> user_weights(bestfit(h, 2), h.counts).tolist()
    [0.5, 0.5]
    """
    if arrays.assignment is None:
        raise HexplorerError("user_weights needs BestFit arrays (strategy='bestfit').")
    gamma = clipped_counts(counts, arrays.m_ub)
    return gamma / (arrays.n_arrays * arrays.fills[arrays.assignment])
