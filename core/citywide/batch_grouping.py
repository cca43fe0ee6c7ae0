"""The groupings of :mod:`core.citywide.batch` over every HAT at once (SPEC section 2).

- WrapAround: array boundaries of all HATs with one ``searchsorted`` in the concatenated
  cumulative counts.
- BestFit: a HAT whose clipped counts Γ are all equal is closed form; the others advance in
  lockstep over runs of equal Γ (the run-by-run form of :func:`core.grouping.bestfit_fill`:
  step r places the r-th run of every HAT at once; candidate arrays sorted by (HAT, fill
  descending, index), capacities by prefix sums, users assigned by ``searchsorted``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.errors import HexplorerError

#: A :class:`core.citywide.batch.HatBatch` (which imports this module; typed loosely here so
#: that the two modules do not import each other).
HatBatch = Any

__all__ = ["bestfit_assign", "bestfit_means", "wraparound_means"]


def _gamma(b: HatBatch, m_ub: np.ndarray) -> np.ndarray:
    return np.minimum(b.counts, m_ub[b.segment])


def wraparound_means(b: HatBatch, m_ub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """WrapAround (SPEC section 2) for every HAT: (f_arr per HAT, K per HAT)."""
    seg = b.segment
    gamma = _gamma(b, m_ub)
    xbar = b.sums / b.counts
    total = b.seg_sum(gamma)  # integers: exact
    k = total // m_ub
    if np.any(k < 1):  # cannot happen for m_ub in [m_*, m*]
        raise HexplorerError("No array of m_UB samples can be formed in some HAT.")
    lengths = b.lengths
    # per HAT: c_j, v_j (j = 0..L) as the loop has them, stored at row o + j + h (one extra
    # leading 0 per HAT)
    c_loc = np.cumsum(gamma) - (np.cumsum(gamma) - gamma)[b.offsets[:-1]][seg]  # exact ints
    v_loc = _seg_cumsum(gamma * xbar, b.offsets)
    n_bounds = k + 1
    hb = np.repeat(np.arange(b.n_hats), n_bounds)
    j = np.arange(n_bounds.sum()) - np.repeat(np.cumsum(n_bounds) - n_bounds, n_bounds)
    bound = j * m_ub[hb]
    # user index u (0-based in its HAT) with c_u <= bound < c_{u+1}: c_{u+1} = c_loc[o + u]
    key = seg * (int(c_loc.max()) + 1) + c_loc  # sorted: HAT, then cumulative count
    u = np.searchsorted(key, hb * (int(c_loc.max()) + 1) + bound, side="right")
    u = np.minimum(u - b.offsets[:-1][hb], lengths[hb] - 1)
    row = b.offsets[:-1][hb] + u
    c_u = np.where(u > 0, c_loc[row - 1], 0)
    v_u = np.where(u > 0, v_loc[row - 1], 0.0)
    cum = v_u + (bound - c_u) * xbar[row]
    means = np.diff(cum) / m_ub[hb][1:]
    keep = hb[1:] == hb[:-1]  # differences inside one HAT
    sums = np.bincount(hb[1:][keep], weights=means[keep], minlength=b.n_hats)
    return sums / k, k


def bestfit_assign(b: HatBatch, m_ub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BestFit (SPEC section 2) for every HAT: (array index of every user row within its HAT,
    K̄ per HAT). Equal, HAT by HAT, to :func:`core.grouping.bestfit_fill`."""
    return _bestfit(b.offsets, b.segment, _gamma(b, m_ub), m_ub)


def _bestfit(
    offsets: np.ndarray, seg: np.ndarray, gamma: np.ndarray, m_ub: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bestfit_assign` on flat arrays (segments ``offsets``, HAT of each row ``seg``).

    A HAT whose Γ are all equal (m_* >= m_UB, or one distinct count; on a city fleet's shape,
    where the median user of most HATs has one record, nearly every HAT) is closed form: each
    array takes ``per = ⌊m_UB/Γ⌋`` users in order, so user j goes to array ``⌊j/per⌋`` and
    K̄ = ⌈L/per⌉. The other HATs go through :func:`_bestfit_lockstep`.
    """
    starts, lengths = offsets[:-1], np.diff(offsets)
    g_first = gamma[starts]
    uniform = g_first == gamma[offsets[1:] - 1]
    per = np.where(uniform, m_ub // g_first, 1)
    assign = (np.arange(gamma.size) - starts[seg]) // per[seg]
    k = -(-lengths // per)
    hard = np.flatnonzero(~uniform)
    if hard.size:
        rows = _ranges(starts[hard], lengths[hard])
        sub_lengths = lengths[hard]
        assign[rows], k[hard] = _bestfit_lockstep(
            np.concatenate(([0], np.cumsum(sub_lengths))),
            np.repeat(np.arange(hard.size), sub_lengths),
            gamma[rows],
            m_ub[hard],
        )
    return assign, k


def _bestfit_lockstep(
    offsets: np.ndarray, seg: np.ndarray, gamma: np.ndarray, m_ub: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """BestFit in lockstep over HATs, run by run of equal Γ (the form of
    :func:`core.grouping.bestfit_fill`): step r places the r-th run of every HAT at once."""
    n_hats = m_ub.size
    n = gamma.size
    assign = np.empty(n, dtype=np.int64)
    run_start = np.flatnonzero(
        np.concatenate(([True], (gamma[1:] != gamma[:-1]) | (seg[1:] != seg[:-1])))
    )
    run_len = np.diff(np.append(run_start, n))
    run_hat = seg[run_start]
    run_g = gamma[run_start]
    run_rank = np.arange(run_start.size) - np.searchsorted(run_start, offsets[:-1])[run_hat]
    cap = m_ub
    n_open = np.zeros(n_hats, dtype=np.int64)  # arrays opened per HAT (indices 0..n_open-1)
    # arrays with room left: HAT, index, fill
    a_hat = np.zeros(0, np.int64)
    a_idx = np.zeros(0, np.int64)
    a_fill = np.zeros(0, np.int64)
    order = np.argsort(run_rank, kind="stable")
    bounds = np.searchsorted(run_rank[order], np.arange(int(run_rank.max()) + 2))
    for r in range(int(run_rank.max()) + 1):
        runs = order[bounds[r] : bounds[r + 1]]  # the r-th run of each HAT that has one, by HAT
        hats = run_hat[runs]
        g_of = np.zeros(n_hats, np.int64)
        g_of[hats] = run_g[runs]
        need_of = np.zeros(n_hats, np.int64)
        need_of[hats] = run_len[runs]
        # candidate arrays: in an active HAT, with room for Γ
        ok = (g_of[a_hat] > 0) & (a_fill <= cap[a_hat] - g_of[a_hat])
        cand = np.flatnonzero(ok)
        cand = cand[np.lexsort((a_idx[cand], -a_fill[cand], a_hat[cand]))]
        ch = a_hat[cand]
        per = (cap[ch] - a_fill[cand]) // g_of[ch]
        # capacity of the earlier candidates of the same HAT
        excl = np.cumsum(per) - per
        heads = np.flatnonzero(np.concatenate(([True], ch[1:] != ch[:-1]))) if ch.size else ch
        head_of = heads[np.searchsorted(heads, np.arange(ch.size), side="right") - 1]
        before = excl - excl[head_of]
        take = np.clip(need_of[ch] - before, 0, per)
        used = take > 0
        # fresh arrays (next unused indices) for what the candidates cannot hold
        held = np.bincount(ch, weights=take, minlength=n_hats).astype(np.int64)
        rest = need_of[hats] - held[hats]
        per_fresh = cap[hats] // run_g[runs]
        n_fresh = -(-rest // per_fresh)
        run_of = np.repeat(np.arange(hats.size), n_fresh)
        fh = hats[run_of]
        fj = np.arange(run_of.size) - (np.cumsum(n_fresh) - n_fresh)[run_of]
        f_idx = n_open[fh] + fj
        f_take = np.minimum(per_fresh[run_of], rest[run_of] - fj * per_fresh[run_of])
        n_open[hats] += n_fresh
        # users of each run in order: candidates (fill desc, index), then the fresh arrays
        e_hat = np.concatenate((ch[used], fh))
        e_idx = np.concatenate((a_idx[cand][used], f_idx))
        e_take = np.concatenate((take[used], f_take))
        e_order = np.argsort(e_hat, kind="stable")
        assign[_ranges(run_start[runs], run_len[runs])] = np.repeat(e_idx[e_order], e_take[e_order])
        # new fills; full arrays leave the table
        a_fill = a_fill.copy()
        a_fill[cand[used]] += take[used] * g_of[ch[used]]
        a_hat = np.concatenate((a_hat, fh))
        a_idx = np.concatenate((a_idx, f_idx))
        a_fill = np.concatenate((a_fill, f_take * g_of[fh]))
        keep = a_fill < cap[a_hat]
        a_hat, a_idx, a_fill = a_hat[keep], a_idx[keep], a_fill[keep]
    return assign, n_open


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for every (s, l)."""
    heads = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum())) + np.repeat(starts - heads, lengths)


def _seg_cumsum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``np.cumsum`` of every segment, restarted at 0 (bit for bit the per-HAT cumsum): rows of
    a zero-padded 2-D array per length class, summed along the row."""
    out = np.empty_like(values)
    lengths = np.diff(offsets)
    cls = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    for c in np.unique(cls).tolist():
        hs = np.flatnonzero(cls == c)
        width = int(lengths[hs].max())
        grid = np.zeros((hs.size, width))
        col = np.arange(width)
        mask = col[None, :] < lengths[hs][:, None]
        idx = offsets[hs][:, None] + col[None, :]
        grid[mask] = values[idx[mask]]
        out[idx[mask]] = np.cumsum(grid, axis=1)[mask]
    return out


def bestfit_means(b: HatBatch, m_ub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BestFit f_arr per HAT and K̄ per HAT."""
    gamma = _gamma(b, m_ub)
    assign, k = _bestfit(b.offsets, b.segment, gamma, m_ub)
    base = np.concatenate(([0], np.cumsum(k)))
    glob = base[b.segment] + assign
    sums = np.bincount(glob, weights=gamma * (b.sums / b.counts), minlength=int(base[-1]))
    fills = np.bincount(glob, weights=gamma, minlength=int(base[-1]))
    means = sums / fills
    hat_of_array = np.repeat(np.arange(b.n_hats), k)
    f_arr = np.bincount(hat_of_array, weights=means, minlength=b.n_hats) / k
    return f_arr, k
