"""What a registry entry may carry beside its run: a closed-form worst case and an all-HATs form.

A mechanism whose worst-case error SPEC gives in closed form (sections 3 and 4) carries a
:class:`WorstCaseForm` in its registry entry (``Mechanism.worst_case``); the Map's and Whole city's
error colouring (:func:`core.citywide.errors.errors_at`), the plan (:mod:`core.plan`, one HAT and
a city), ``hexplorer worstcase`` / ``plan`` and One hexagon read it from there. A mechanism whose
value before noise is a fixed number per HAT (no private interval or threshold) may carry an
all-HATs release (``Mechanism.release_all``: ``fn(batch, epsilon) -> BatchRelease``), which
``release --all`` and :func:`core.citywide.batch.release_all` use instead of a loop over HATs.

The forms read their inputs by attribute and never import the classes that hold them, so this
package stays below :mod:`core.citywide` and :mod:`core.plan`:

- ``table`` (a :class:`core.citywide.errors.ErrorTable`, H HATs): ``upper``, ``noise_measure``,
  ``n_hats``, ``users`` (L), ``records`` (N), ``m_max`` (m*), ``count_starts`` (H + 1 offsets),
  ``counts_desc`` (each HAT's counts, descending), ``top`` (their running sums within a HAT),
  ``segment_sums(values)`` (one sum per HAT of one value per (HAT, user) pair), and for an m_UB
  rule ``rule_m_s(rule, eps)`` (each HAT's m_UB and S(m_UB) at its ε) and ``rule_pieces(rule)``;
- ``batch`` (a :class:`core.citywide.batch.HatBatch`): ``upper``, ``n_hats``, ``offsets``,
  ``counts``, ``sums``, ``lengths``, ``segment``, ``seg_sum(values)``, ``rule_m(rule, epsilon)``
  and ``array_means(m_ub, grouping)``.

Every form trusts its inputs (checked at the public entry that calls it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.errors import HexplorerError

__all__ = [
    "BatchRelease",
    "Pieces",
    "WorstCaseForm",
    "WorstParts",
    "ceil_two_over_epsilon_array",
    "one_piece",
    "opt_bounding_piece_starts",
]


@dataclass(frozen=True, kw_only=True, eq=False)
class Pieces:
    """The ε axis cut into pieces ``[lo, hi)`` (in increasing ε) on which error = a + b/ε.

    ``m`` is the m_UB on the piece (-1 when the mechanism has none). The last piece of a HAT
    reaches ε = inf; its ``a`` is the error's floor as ε grows.
    """

    lo: np.ndarray
    hi: np.ndarray
    a: np.ndarray
    b: np.ndarray
    m: np.ndarray


@dataclass(frozen=True, kw_only=True)
class WorstParts:
    """One HAT's worst case at one ε: the m_UB used (None without arrays) and the parts."""

    m_ub: int | None
    clipping: float
    noise: float
    total: float


@dataclass(frozen=True, kw_only=True, eq=False)
class BatchRelease:
    """Every HAT's release before its noise (one value per HAT; -1 where there is no array)."""

    m_ub: np.ndarray
    n_arrays: np.ndarray
    sensitivity: np.ndarray
    noise_scale: np.ndarray
    noiseless: np.ndarray


OneFn = Callable[[np.ndarray, float, float, str], WorstParts]
PiecesFn = Callable[[np.ndarray, float, str], Pieces]
ManyFn = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
ManyPiecesFn = Callable[..., tuple[np.ndarray, Pieces]]


@dataclass(frozen=True, kw_only=True)
class WorstCaseForm:
    """A mechanism's closed-form worst-case error (SPEC sections 3 and 4), for one HAT and many.

    Attributes
    ----------
    many : callable
        ``many(table, eps) -> (m_ub, clipping, noise, total)``: every HAT of ``table`` at its own
        ``eps[h]`` (float64 (H,), > 0), arrays (H,), ``m_ub`` -1 without arrays. The Map's error
        colouring, Whole city and the city plan use it.
    many_pieces : callable
        ``many_pieces(table) -> (hat, Pieces)``: every HAT's pieces ``a + b/ε``, grouped by HAT
        (``hat`` the HAT of each piece, non-decreasing); each HAT's pieces cover (0, inf) in
        increasing ε. The city plan uses them.
    one : callable
        ``one(counts, upper, epsilon, noise_measure) -> WorstParts`` for one HAT (``counts``
        int64 descending); the single-HAT plan and ``hexplorer worstcase`` use it.
    pieces : callable
        ``pieces(counts, upper, noise_measure) -> Pieces`` for one HAT (the single-HAT plan).
    """

    many: ManyFn = field(repr=False)
    many_pieces: ManyPiecesFn = field(repr=False)
    one: OneFn = field(repr=False)
    pieces: PiecesFn = field(repr=False)

    def __post_init__(self) -> None:
        for name in ("many", "many_pieces", "one", "pieces"):
            if not callable(getattr(self, name)):
                raise HexplorerError(f"The worst case's {name!r} must be callable.")


# ---------------------------------------------------------------------------------------------
# ⌈2/ε⌉ on arrays and the ε where it changes (opt-bounding's pieces; any T_ε-style threshold)


def ceil_two_over_epsilon_array(epsilon: np.ndarray) -> np.ndarray:
    """:func:`core.params.ceil_two_over_epsilon` for an array of ε > 0 (same 1e-9 rule).

    Values beyond 2^62 are capped there (every count-based use treats them as "more than L").

    >>> ceil_two_over_epsilon_array(np.array([0.5, 0.3, 2 / 3, 4.0, 1e300])).tolist()
    [4, 7, 3, 1, 1]
    """
    ratio = np.minimum(2.0 / np.asarray(epsilon, dtype=np.float64), 2.0**62)
    nearest = np.rint(ratio)
    snap = (nearest >= 1) & (np.abs(ratio - nearest) <= 1e-9)  # never 0: 2/ε > 0
    return np.where(snap, nearest, np.ceil(ratio)).astype(np.int64)


_PIECE_STARTS: list[np.ndarray] = [np.array([np.inf, 0.0])]


def opt_bounding_piece_starts(k_max: int) -> np.ndarray:
    """``lo[k]`` = the smallest float ε with ⌈2/ε⌉ ≤ k, for k = 1..k_max (``lo[0] = inf``).

    ⌈2/ε⌉ (SPEC's rounding rule) is non-increasing in ε, so ⌈2/ε⌉ = k exactly on
    ``[lo[k], lo[k-1])``: the pieces on which opt-bounding's threshold T_ε is constant. The
    table depends on k only (not on a HAT) and is kept between calls.

    >>> lo = opt_bounding_piece_starts(4)
    >>> [float(x) for x in lo[1:]] == [2 / (k + 1e-9) for k in (1, 2, 3, 4)]
    False
    >>> from core.params import ceil_two_over_epsilon as c2
    >>> all(c2(lo[k]) == k and c2(np.nextafter(lo[k], 0)) == k + 1 for k in (1, 2, 3, 4))
    True
    """
    k_max = int(k_max)
    have = _PIECE_STARTS[0]
    if have.size - 1 >= k_max:
        return have[: k_max + 1]
    k = np.arange(1, max(k_max, 2 * (have.size - 1)) + 1, dtype=np.float64)
    x = 2.0 / (k + 1e-9)
    kk = k.astype(np.int64)
    for _ in range(64):
        up = ceil_two_over_epsilon_array(x) > kk
        x = np.where(up, np.nextafter(x, np.inf), x)
        prev = np.nextafter(x, 0.0)
        down = ~up & (ceil_two_over_epsilon_array(prev) <= kk)
        x = np.where(down, prev, x)
        if not (up.any() or down.any()):
            break
    table = np.concatenate(([np.inf], x))
    _PIECE_STARTS[0] = table
    return table[: k_max + 1]


def one_piece(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, Pieces]:
    """Every HAT's single piece ``a + b/ε`` on (0, inf): the city pieces of a worst case with
    one piece per HAT (Baseline, a fixed m_UB rule, ...)."""
    n = np.asarray(a).size
    zero = np.zeros(n)
    return np.arange(n), Pieces(lo=zero, hi=np.full(n, np.inf), a=a, b=b, m=m)
