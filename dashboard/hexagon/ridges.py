"""The numbers of the distribution chart ("where releases land"): each mechanism's ridge.

:func:`ridges` gives them at one ε (the page's chart, :func:`dashboard.hexagon.charts.releases_distribution`);
:func:`ridges_each` gives the same numbers, bit for bit, for many ε at once (the frames document's
271 stops, :mod:`dashboard.hexagon.frames`): the stops with the same number of sets of the same
length are stacked and taken in one pass of numpy (one sort, the quantiles read off the sorted
rows, one set of edges per stop), instead of a dozen numpy calls per set and stop. A stop it
cannot stack (sets of different lengths), or whose releases hold NaN, ±inf or -0.0 (where
numpy's partition and sort might order or interpolate differently), goes through
:func:`ridges` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

QUANTILES = (0.005, 0.995)
"""The tails every set's releases reach into the x range (99 % of them in range)."""


@dataclass(frozen=True, kw_only=True)
class ReleaseSet:
    """The simulated releases of one mechanism, as the distribution chart draws them."""

    mechanism: str
    title: str
    values: np.ndarray
    share_within: float


@dataclass(frozen=True, kw_only=True)
class Ridges:
    """The numbers of the distribution chart at one ε: what
    :func:`~dashboard.hexagon.charts.releases_distribution` draws and
    :mod:`dashboard.hexagon.frames` sends for each of the slider's stops (one source).

    ``x`` is every ridge's x (the left edge, the ``bins`` bin centres, the right edge); ``ys``
    and ``shares`` hold one array of the same length per set: the ridge's height (its baseline
    ``offset`` plus 0.9 × the bin's count over the set's peak) and the share of the set's
    releases in each bin (0 at both ends). ``lo``/``hi`` are the x axis's range.
    """

    lo: float
    hi: float
    x: np.ndarray
    ys: tuple[np.ndarray, ...]
    shares: tuple[np.ndarray, ...]


def _tails_and_sorted(sets: Sequence[ReleaseSet]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each set's 0.5 % and 99.5 % quantiles and its sorted releases, the sets of one length
    stacked (one quantile and one sort for all of them)."""
    out: list = [None] * len(sets)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(sets):
        by_length.setdefault(len(s.values), []).append(i)
    for at in by_length.values():
        stack = np.stack([np.asarray(sets[i].values, dtype=float) for i in at])
        tails = np.quantile(stack, QUANTILES, axis=1)
        ordered = np.sort(stack, axis=1)
        for j, i in enumerate(at):
            out[i] = (tails[:, j], ordered[j])
    return out


def ridges(
    sets: Sequence[ReleaseSet], *, true_mean: float, within: float, bins: int = 60
) -> Ridges:
    """The x axis's range and each set's ridge: 99 % of every set's releases and the ±``within``
    band are in range; each ridge is the histogram of ``bins`` equal bins over that range
    (counted as ``np.histogram`` counts with these edges: by searching the sorted releases, the
    last bin closed), scaled to its own peak, on its own baseline (the first set on top)."""
    n = len(sets)
    tails = _tails_and_sorted(sets)
    lo = min([true_mean - within] + [float(t[0]) for t, _ in tails])
    hi = max([true_mean + within] + [float(t[1]) for t, _ in tails])
    if hi - lo < 1e-9:
        lo, hi = lo - 1.0, hi + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2.0
    ys, shares = [], []
    for i, (s, (_, ordered)) in enumerate(zip(sets, tails, strict=True)):
        offset = float(n - 1 - i)
        below = np.concatenate(
            [ordered.searchsorted(edges[:-1], "left"), ordered.searchsorted(edges[-1:], "right")]
        )
        hist = np.diff(below).astype(float)
        peak = hist.max() if hist.max() > 0 else 1.0
        ys.append(np.concatenate([[offset], offset + 0.9 * hist / peak, [offset]]))
        shares.append(np.concatenate([[0.0], hist / max(len(s.values), 1), [0.0]]))
    return Ridges(
        lo=lo,
        hi=hi,
        x=np.concatenate([[edges[0]], centres, [edges[-1]]]),
        ys=tuple(ys),
        shares=tuple(shares),
    )


def sorted_quantiles(ordered: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """``np.quantile(values, q, axis=-1)`` (its default "linear" method) of rows already sorted
    along the last axis, with numpy's own arithmetic: the virtual index (n − 1)·q, its floor and
    the next index (both the last past the end), and numpy's ``_lerp`` (``a + (b − a)·t``, or
    ``b − (b − a)·(1 − t)`` where ``t ≥ 0.5``). Bit-equal to ``np.quantile`` for finite values
    (the order statistics are the same numbers); shape ``(len(q), *ordered.shape[:-1])``.

    >>> v = np.array([[3.0, 1.0, 2.0, 10.0], [0.5, 0.25, 4.0, 8.0]])
    >>> bool((sorted_quantiles(np.sort(v), (0.005, 0.5, 0.995)) == np.quantile(v, (0.005, 0.5, 0.995), axis=1)).all())
    True
    """
    n = ordered.shape[-1]
    virtual = (n - 1) * np.asarray(q, dtype=np.float64)
    prev = np.floor(virtual)
    nxt = prev + 1
    top = virtual >= n - 1
    prev[top] = -1
    nxt[top] = -1
    gamma = virtual - prev.astype(np.intp)
    a = np.moveaxis(ordered[..., prev.astype(np.intp)], -1, 0)
    b = np.moveaxis(ordered[..., nxt.astype(np.intp)], -1, 0)
    t = gamma.reshape((-1,) + (1,) * (ordered.ndim - 1))
    diff = b - a
    out = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=np.broadcast_to(t >= 0.5, out.shape))
    return out


def _stackable(sets: Sequence[ReleaseSet]) -> tuple[int, int] | None:
    """(number of sets, their common length), or None: not stacked with others."""
    if not sets:
        return None
    lengths = {len(s.values) for s in sets}
    if len(lengths) != 1 or min(lengths) < 1:
        return None
    return len(sets), lengths.pop()


def ridges_each(
    groups: Sequence[Sequence[ReleaseSet]], *, true_mean: float, within: float, bins: int = 60
) -> list[Ridges]:
    """``[ridges(sets, ...) for sets in groups]``, bit for bit, in one numpy pass per shape.

    >>> rng = np.random.default_rng(1)
    >>> sets = lambda: [ReleaseSet(mechanism="m", title="M", values=rng.normal(5, 2, 300),
    ...                            share_within=0.5) for _ in range(2)]
    >>> groups = [sets() for _ in range(3)]
    >>> got = ridges_each(groups, true_mean=5.0, within=1.0)
    >>> want = [ridges(g, true_mean=5.0, within=1.0) for g in groups]
    >>> all(g.lo == w.lo and (g.ys[1] == w.ys[1]).all() for g, w in zip(got, want))
    True
    """
    out: list[Ridges | None] = [None] * len(groups)
    shapes: dict[tuple[int, int], list[int]] = {}
    for g, sets in enumerate(groups):
        shape = _stackable(sets)
        if shape is None:
            out[g] = ridges(sets, true_mean=true_mean, within=within, bins=bins)
        else:
            shapes.setdefault(shape, []).append(g)
    for (k, _n), at in shapes.items():
        values = np.stack([np.asarray(s.values, dtype=float) for g in at for s in groups[g]])
        values = values.reshape(len(at), k, -1)
        odd = ~np.isfinite(values) | ((values == 0.0) & np.signbit(values))
        plain = ~odd.any(axis=(1, 2))
        for g in np.asarray(at)[~plain].tolist():
            out[g] = ridges(groups[g], true_mean=true_mean, within=within, bins=bins)
        at = np.asarray(at)[plain].tolist()
        if at:
            stacked = _stacked(values[plain], true_mean=true_mean, within=within, bins=bins)
            for g, r in zip(at, stacked, strict=True):
                out[g] = r
    return [r if r is not None else ridges(groups[g], true_mean=true_mean, within=within, bins=bins)
            for g, r in enumerate(out)]  # fmt: skip


def _stacked(
    values: np.ndarray, *, true_mean: float, within: float, bins: int
) -> list[Ridges | None]:
    """:func:`ridges` of each group of ``values`` (groups × sets × runs, all finite); None for a
    group whose bins are 0 wide (``np.linspace`` takes another path for those)."""
    n_groups, k, n = values.shape
    ordered = np.sort(values, axis=2)
    tails = sorted_quantiles(ordered, QUANTILES)  # (2, groups, sets)
    lo = np.minimum(true_mean - within, tails[0].min(axis=1))
    hi = np.maximum(true_mean + within, tails[1].max(axis=1))
    narrow = hi - lo < 1e-9
    lo = np.where(narrow, lo - 1.0, lo)
    hi = np.where(narrow, hi + 1.0, hi)
    step = (hi - lo) / bins  # np.linspace's arithmetic, one row per group
    edges = np.arange(0, bins + 1, dtype=float)[None, :] * step[:, None]
    edges += lo[:, None]
    edges[:, -1] = hi
    centres = (edges[:, :-1] + edges[:, 1:]) / 2.0
    below = np.empty((n_groups, k, bins + 1), dtype=np.intp)
    for g in range(n_groups):
        for i in range(k):
            below[g, i, :-1] = ordered[g, i].searchsorted(edges[g, :-1], "left")
    below[:, :, -1] = (ordered <= hi[:, None, None]).sum(axis=2)
    hist = np.diff(below, axis=2).astype(float)
    peak = hist.max(axis=2)
    peak = np.where(peak > 0, peak, 1.0)
    offsets = np.arange(k - 1, -1, -1, dtype=float)[None, :, None]
    ys = np.empty((n_groups, k, bins + 2))
    ys[:, :, 1:-1] = offsets + 0.9 * hist / peak[:, :, None]
    ys[:, :, 0] = offsets[:, :, 0]
    ys[:, :, -1] = offsets[:, :, 0]
    shares = np.zeros((n_groups, k, bins + 2))
    shares[:, :, 1:-1] = hist / max(n, 1)
    x = np.empty((n_groups, bins + 2))
    x[:, 0] = edges[:, 0]
    x[:, 1:-1] = centres
    x[:, -1] = edges[:, -1]
    return [
        Ridges(lo=float(lo[g]), hi=float(hi[g]), x=x[g], ys=tuple(ys[g]), shares=tuple(shares[g]))
        if step[g] != 0
        else None
        for g in range(n_groups)
    ]
