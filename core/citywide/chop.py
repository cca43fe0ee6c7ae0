"""CHOP-USER: suppress (user, grid) pairs to lower K = max_ℓ G_ℓ without raising the largest
per-grid worst-case error (slides of [3]; SPEC section 5).

Suppression decisions read only counts, which are public here (SPEC sections 1 and 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import pandas as pd

from core.citywide.grids import _error_vec, grid_errors
from core.citywide.gridset import GridSet
from core.params import check_epsilon, check_upper


@dataclass(frozen=True, kw_only=True, eq=False)
class ChopResult:
    """Outcome of :func:`chop_user`.

    Attributes
    ----------
    epsilon, upper : the parameters.
    threshold : E_thresh = max_g E_g with nothing suppressed.
    k_initial : max_ℓ G_ℓ before; k_final : K after (privacy loss ``k_final · ε``).
    k_history : K at the start of every round, then the final K (non-increasing).
    suppressed : (n,) pair indices into the GridSet, in the order they were suppressed.
    retained : (P,) bool mask, False on suppressed pairs (pass it to :func:`release_grids`).
    errors_before, errors_after : (G,) E_g with nothing suppressed and after suppression.
    grids_per_user_after : (L,) G_ℓ after suppression.
    stopped_by : id of the user at which the loop stopped (it could not be suppressed in any of
        its grids within the threshold, or was the last contributor of all of them).
    wasted : suppressions made in the final round, which did not lower K (SPEC's loop keeps them).
    """

    epsilon: float
    upper: float
    threshold: float
    k_initial: int
    k_final: int
    k_history: tuple[int, ...]
    suppressed: np.ndarray
    retained: np.ndarray
    errors_before: np.ndarray
    errors_after: np.ndarray
    grids_per_user_after: np.ndarray
    stopped_by: str | None
    wasted: int
    _grids: GridSet = field(repr=False)

    @property
    def privacy_loss(self) -> float:
        """K ε."""
        return self.k_final * self.epsilon

    @property
    def n_suppressed(self) -> int:
        """Number of suppressed (user, grid) pairs."""
        return int(self.suppressed.size)

    def suppressed_pairs(self) -> pd.DataFrame:
        """The suppressed pairs in order: user_id, hat, m (records dropped), order."""
        g = self._grids
        p = self.suppressed
        return pd.DataFrame(
            {
                "user_id": g.user_ids[g.user[p]].astype(str),
                "hat": g.hats[g.grid[p]].astype(str),
                "m": g.m[p],
                "order": np.arange(p.size, dtype=np.int64),
            }
        )


def chop_user(grids: GridSet, epsilon: float, *, upper: float) -> ChopResult:
    """CHOP-USER: suppress (user, grid) pairs to lower K = max_ℓ G_ℓ without raising max_g E_g.

    SPEC section 5, exactly: ``E_thresh = max_g E_g`` with nothing suppressed. Repeat: let
    ``K = max_ℓ G_ℓ``; for each user with ``G_ℓ = K`` in order of user id, find among its grids
    the grid ``g(ℓ)`` whose error after also suppressing ℓ there is smallest (ties: first HAT
    label); a grid where ℓ is the last retained contributor is not a candidate. Suppress ℓ there
    if that error is ``≤ E_thresh``; otherwise stop: this user keeps K grids, so K cannot fall.
    When every user of the level was suppressed once, K has fallen by one and the loop repeats.
    Suppressions already made in the stopping round are kept (counted in ``wasted``).

    The result equals this loop run literally (tested against a naive implementation); the
    work is organised for a city (10⁴ grids, 10⁵ users: ``bench/bench_chop.py``). Per grid: S,
    the number of retained users and the two largest retained counts (Γ* after removing any
    user), read from the pairs sorted by count through a "next retained pair" union-find; per
    user: its retained pairs. At the start of each round the post-suppression errors of all pairs
    of the level's users are computed at once (numpy) and each user's few smallest are sorted.
    Within the round a grid changes only when someone is suppressed there; its stale errors stay
    lower bounds of the current ones unless its two largest counts changed or S ≤ 3 m*
    (Δ_Var is not monotone there), so a user's scan stops at the first stale error that cannot
    win and recomputes only changed grids (always those whose errors may have fallen).

    Parameters
    ----------
    grids : the grids; epsilon : per-grid budget ε; upper : U.

    Returns
    -------
    ChopResult
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    before = grid_errors(grids, eps, upper=u)
    threshold = float(before.total.max())
    suppressed, history, stopped_by, wasted = _chop_kernel(grids, eps, u, threshold)
    keep = np.ones(grids.n_pairs, dtype=bool)
    keep[suppressed] = False
    after = grid_errors(grids, eps, upper=u, retained=keep)
    g_after = np.bincount(grids.user[keep], minlength=grids.n_users).astype(np.int64)
    return ChopResult(
        epsilon=eps,
        upper=u,
        threshold=threshold,
        k_initial=grids.max_grids_per_user,
        k_final=int(g_after.max()),
        k_history=tuple(history),
        suppressed=suppressed,
        retained=keep,
        errors_before=before.total,
        errors_after=after.total,
        grids_per_user_after=g_after,
        stopped_by=stopped_by,
        wasted=wasted,
        _grids=grids,
    )


def _chop_kernel(
    grids: GridSet, eps: float, u: float, threshold: float, prefix: int = 4
) -> tuple[np.ndarray, list[int], str | None, int]:
    """The loop of :func:`chop_user`; returns (suppressed pairs, K history, stopper, wasted)."""
    u2 = u * u
    inf = math.inf
    n_pairs = grids.n_pairs
    pm = grids.m.tolist()
    pg = grids.grid.tolist()
    starts = grids.starts.tolist()
    ends = starts[1:]
    # Grid state (Python lists: fast scalar access in the loop).
    n_np = grids.records
    n_list = n_np.tolist()
    s_list = list(n_list)
    alive_users = grids.users_per_grid.tolist()
    top1 = [pm[a] for a in starts[:-1]]
    top2 = [pm[a + 1] if a + 1 < e else 0 for a, e in zip(starts[:-1], ends, strict=True)]
    # Union-find over the pairs (sorted by count within a grid): parent[i] == i for retained
    # pairs, find(i) = first retained pair index >= i; gives the two largest retained counts.
    parent = list(range(n_pairs + 1))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def post_error(g: int, m: int) -> float:
        """E_g after also suppressing a retained user with m records (mirrors _error_vec)."""
        if alive_users[g] <= 1:
            return inf  # never remove a grid's last contributor
        a1 = top1[g]
        a2 = top2[g]
        gsv = a2 if (m == a1 and a2 < a1) else a1
        s2v = s_list[g] - m
        nv = n_list[g]
        r = nv - s2v
        h = nv // 2
        kk = r if r < h else h
        h = s2v // 2
        jj = gsv if gsv < h else h
        return (
            (u * (r / nv) + u2 * (float(kk * (nv - kk)) / float(nv * nv)))
            + (2.0 * (u * (gsv / s2v))) / eps
        ) + (2.0 * (u2 * (float(jj * (s2v - jj)) / float(s2v * s2v)))) / eps

    # Per user: list of retained pair indices (ascending = grid order).
    order = np.argsort(grids.user, kind="stable")
    bounds = np.searchsorted(grids.user[order], np.arange(grids.n_users + 1))
    order_l = order.tolist()
    uses = [order_l[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]
    g_init = grids.grids_per_user
    # Grids changed in round `rnd` have stamp[g] == rnd. Their stale (round-start) errors are
    # lower bounds of the current ones unless g is in `wobbled`: removing other users from a grid
    # only raises E_mu, E_Var and Delta_mu, and raises Delta_Var while S' > 2 Gamma*' (it is not
    # monotone for S' <= 2 Gamma*'); so the stale value bounds the current one from below as long
    # as the two largest counts are unchanged and S > 3 m*, which keeps S - m_l > 2 Gamma*' for
    # every user. Float rounding is monotone too, so the bound holds bit for bit.
    stamp = [-1] * grids.n_grids
    suppressed: list[int] = []
    k = int(g_init.max())
    history = [k]
    stopped_by: str | None = None
    wasted = 0
    pm_arr, pg_arr = grids.m, grids.grid
    grid_key = np.uint16 if grids.n_grids <= 65536 else np.int64
    level = np.flatnonzero(g_init == k)
    rnd = 0
    while True:
        # Every user of the level has exactly k retained pairs: one (n, k) block.
        n_lvl = level.size
        flat = np.fromiter(
            chain.from_iterable(uses[x] for x in level.tolist()), dtype=np.int64, count=n_lvl * k
        )
        gg = pg_arr[flat]
        mm = pm_arr[flat]
        t1 = np.asarray(top1, dtype=np.int64)[gg]
        t2 = np.asarray(top2, dtype=np.int64)[gg]
        gs = np.where((mm == t1) & (t2 < t1), t2, t1)
        s2 = np.asarray(s_list, dtype=np.int64)[gg] - mm
        last = np.asarray(alive_users, dtype=np.int64)[gg] <= 1
        n_arr = n_np[gg]
        vals = _error_vec(np.where(last, 1, s2), np.where(last, 1, gs), n_arr, u, eps)
        vals = np.where(last, inf, vals).reshape(n_lvl, k)
        pairs2 = flat.reshape(n_lvl, k)
        # Per user, the `prefix` smallest stale errors in (error, grid) order; the rest is only
        # read when the prefix cannot decide (rare).
        width = min(k, prefix)
        if width < k:
            part = np.sort(np.argpartition(vals, width - 1, axis=-1)[:, :width], axis=-1)
        else:
            part = np.broadcast_to(np.arange(k), (n_lvl, k))
        pv = np.take_along_axis(vals, part, axis=-1)
        srt = np.take_along_axis(part, np.argsort(pv, axis=-1, kind="stable"), axis=-1)
        vals_l = np.take_along_axis(vals, srt, axis=-1).ravel().tolist()
        pairs_l = np.take_along_axis(pairs2, srt, axis=-1).ravel().tolist()
        top1_0 = list(top1)
        top2_0 = list(top2)
        wobbled: set[int] = set()
        # need[i] = 1 once the grid of block entry i changed non-monotonically (see above):
        # positions of each grid's entries in the block, row by row, to mark later users.
        by_grid = np.argsort(gg.astype(grid_key), kind="stable")  # radix sort when uint16
        grid_first = np.concatenate(([0], np.cumsum(np.bincount(gg, minlength=grids.n_grids))))
        need = bytearray(n_lvl * k)
        need_np = np.frombuffer(need, dtype=np.uint8)
        stop = False
        base = -width
        for row, usr in enumerate(level.tolist()):
            base += width
            v_edge = vals_l[base + width - 1]  # entries outside the prefix: stale errors >= this
            best_v = inf
            best_g = n_pairs
            best_p = -1
            decided = False
            for c in range(width):
                p = pairs_l[base + c]
                g = pg[p]
                sv = vals_l[base + c]
                if sv > best_v or (sv == best_v and g > best_g):
                    # Stale errors are lower bounds except on wobbled grids: no later entry of
                    # the prefix can win, nor one outside it if sv > best_v or sv < v_edge.
                    decided = sv > best_v or sv < v_edge or width == k
                    break
                if stamp[g] == rnd:
                    sv = post_error(g, pm[p])
                if sv < best_v or (sv == best_v and g < best_g):
                    best_v, best_g, best_p = sv, g, p
            else:
                decided = width == k
            if not decided:
                # Exact scan of every retained grid of the user.
                best_v, best_g, best_p = inf, n_pairs, -1
                for p, sv in zip(pairs2[row].tolist(), vals[row].tolist(), strict=True):
                    g = pg[p]
                    if stamp[g] == rnd:
                        sv = post_error(g, pm[p])
                    if sv < best_v or (sv == best_v and g < best_g):
                        best_v, best_g, best_p = sv, g, p
            elif wobbled:
                j = need.find(1, row * k, row * k + k)
                while j >= 0:
                    p = int(flat[j])
                    g = pg[p]
                    v = post_error(g, pm[p])
                    if v < best_v or (v == best_v and g < best_g):
                        best_v, best_g, best_p = v, g, p
                    j = need.find(1, j + 1, row * k + k)
            if best_p < 0 or best_v > threshold:
                stop = True
                stopped_by = str(grids.user_ids[usr])
                wasted = row
                break
            # Suppress user usr in grid best_g.
            p, g = best_p, best_g
            m = pm[p]
            parent[p] = p + 1
            s_list[g] -= m
            alive_users[g] -= 1
            f1 = starts[g]
            if parent[f1] != f1:
                f1 = find(f1)
            e = ends[g]
            top1[g] = pm[f1]  # a grid keeps one contributor, so f1 < e
            f2 = f1 + 1
            if parent[f2] != f2:
                f2 = find(f2)
            top2[g] = pm[f2] if f2 < e else 0
            stamp[g] = rnd
            if g not in wobbled and (
                top1[g] != top1_0[g] or top2[g] != top2_0[g] or s_list[g] <= 3 * top1[g]
            ):
                wobbled.add(g)
                seg = by_grid[grid_first[g] : grid_first[g + 1]]
                need_np[seg[np.searchsorted(seg, row * k + k) :]] = 1
            uses[usr].remove(p)
            suppressed.append(p)
        if stop:
            break
        # Every user of level k now has k - 1 grids and none has more: K fell by one.
        k -= 1
        rnd += 1
        history.append(k)
        if k == 0:  # unreachable: a grid never loses its last contributor
            break
        level = np.union1d(level, np.flatnonzero(g_init == k))
    return np.asarray(suppressed, dtype=np.int64), history, stopped_by, wasted
