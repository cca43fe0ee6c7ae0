"""Every HAT at once: release or evaluate all HATs of a slot, a day or a file in one pass.

A city has tens of thousands of HATs a day; a Python loop over them (build a HatData, pick
m_UB, group, add noise) costs about 0.3 ms a HAT. Here the per-user summaries of all HATs sit
in flat arrays, segmented by HAT (sorted by HAT label, then count descending, ties by user id:
SPEC section 1's order inside each segment), and every step is a numpy operation over all
segments at once:

- segment totals (N, Σ s) with ``np.add.reduceat``; m*, m_* and the median count by offset;
- m_UB per HAT: median (``arrayavg-*``), m^(ε) (``opt-arrayavg``: E(m) at each distinct count
  from segment prefix sums, SPEC section 4; HATs whose best candidates tie within the float
  screening tolerance are settled by :func:`core.worstcase.m_opt`, exactly as the loop does);
- WrapAround and BestFit (SPEC section 2) over all HATs at once in
  :mod:`core.citywide.batch_grouping`: BestFit is closed form in a HAT whose clipped counts are
  all equal (most HATs of a city fleet) and advances in lockstep over runs of equal Γ in the
  others;
- the Laplace noise of each HAT from that HAT's own generator (the seed rule below), computed
  for all HATs at once.

Vectorised: ``baseline, arrayavg-wrap, arrayavg-best, opt-arrayavg, opt-arrayavg-convex``
and ``opt-bounding`` (m^(ε) and m_UB^(O,2) are screened in float over all HATs at once; the
rare HATs whose best candidates tie within the tolerance are settled exactly per HAT by
:mod:`core.worstcase`, as the loop does). The mechanisms with a private interval or threshold
(``levy, levy-wrap, quantile-fixed, quantile-fixed-wrap, quantile-eps, akmv``) fall back to a
loop over HATs calling :func:`core.mechanisms.release`: their exponential-mechanism draws per
HAT do not vectorise without re-implementing them, and the loop keeps their tested code path.

**Seed rule** (per HAT, so a HAT's value does not depend on which other HATs are released with
it): the generator of HAT ``hat`` for mechanism ``name`` and seed ``seed`` is
``numpy.random.Generator(numpy.random.Philox(key=k))`` with
``k = int.from_bytes(blake2b(f"{seed}|{name}|{hat}", digest_size=16), "little")``
(:func:`hat_rng`, in :mod:`core.citywide.seeds`). The single-HAT loop with that generator gives the same estimate as this
module: integers (m_UB, K̄) and the noise bit for bit, the noiseless value up to the order of
floating-point summation (numpy's pairwise sums per HAT against segment sums here; a relative
difference of order 1e-15). For the vectorised mechanisms the first Laplace draw of every
HAT's Philox stream is computed directly (Philox4x64-10 on the counter 1, as numpy does, then
numpy's ``random_laplace`` with the C library's ``log``); a test checks it against numpy.

These are simulated releases (SPEC section 7): nothing is published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from core import worstcase
from core.citywide.batch_grouping import bestfit_assign, bestfit_means, wraparound_means
from core.citywide.seeds import first_laplace, hat_key, hat_keys, hat_rng
from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import (
    MECHANISMS,
    BatchRelease,
    get_mechanism,
    get_rule,
    release,
    vectorised_names,
)
from core.params import check_epsilon, check_upper

if TYPE_CHECKING:  # pandas only where a table is asked for as pandas (release --all writes
    # Arrow), polars only where summaries come as a frame (release --all reads runs)
    import pandas as pd
    import polars as pl

RELEASE_COLUMNS = [
    "hat",
    "mechanism",
    "epsilon",
    "m_ub",
    "n_arrays",
    "sensitivity",
    "noise_scale",
    "noiseless",
    "estimate",
    "true_mean",
    "users",
    "records",
]

__all__ = [
    "RELEASE_COLUMNS",
    "HatBatch",
    "hat_key",
    "hat_keys",
    "hat_rng",
    "evaluate_all",
    "first_laplace",
    "release_all",
    "release_columns",
    "release_loop",
    "bestfit_assign",
    "bestfit_means",
    "wraparound_means",
]


# ---------------------------------------------------------------------------------------------
# The segmented data


@dataclass(frozen=True, kw_only=True, eq=False)
class HatBatch:
    """Per-user summaries of many HATs in flat arrays, one segment per HAT.

    Attributes
    ----------
    hats : ndarray of str (H,)
        HAT labels, sorted.
    offsets : int64 (H + 1,)
        Segment h is ``offsets[h]:offsets[h + 1]``.
    counts : int64 (n,)
        m_ℓ, descending inside each segment (ties by user id, as :class:`HatData`).
    sums : float64 (n,)
        s_ℓ in the same order.
    users : polars.Series of str (n,) or None
        The user ids (None when built without them), in the order of the summaries given; ``users[user_rows]`` (all of
        ``users`` when ``user_rows`` is None) are the rows' ids, :attr:`user_ids` them as a
        numpy array, made when first asked for (the vectorised releases never need them).
    user_rows : int64 (n,) or None
    upper : float
        U.
    """

    hats: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    users: pl.Series | None
    user_rows: np.ndarray | None
    upper: float

    @classmethod
    def from_summaries(
        cls, summaries: pd.DataFrame | pl.DataFrame, upper: float = 65.0
    ) -> HatBatch:
        """Build the batch from ``Prepared.summaries`` (pandas or polars, any row order; select
        rows first to release a slot or a day).

        Summaries as a summaries file holds them (sorted by hat, then user_id) need only a
        stable sort by count inside each HAT, on integers; other orders are sorted by (hat,
        count descending, user_id) on the text. Without a ``user_id`` column the rows must be
        in that file order already (checked by HAT; the ids inside a HAT are taken on trust):
        enough for the vectorised releases, which never read the ids (:attr:`user_ids` then
        refuses in one line).
        """
        import polars as pl

        upper = check_upper(upper)
        missing = [c for c in ("hat", "m", "s") if c not in summaries.columns]
        if missing:
            raise HexplorerError(
                f"Summaries need the columns hat, user_id, m, s; missing: {missing}."
            )
        if len(summaries) == 0:
            raise HexplorerError("There are no HATs to release: the summaries are empty.")
        has_users = "user_id" in summaries.columns
        wanted = ["hat", "user_id", "m", "s"] if has_users else ["hat", "m", "s"]
        if isinstance(summaries, pl.DataFrame):
            frame = summaries.select(wanted)
        else:
            frame = pl.from_pandas(summaries[wanted])
        counts = frame.get_column("m").cast(pl.Int64).to_numpy()
        if counts.min() < 1:
            raise HexplorerError("Every count m must be >= 1.")
        n = counts.size
        hat_col = frame.get_column("hat")
        same = _same_as_previous(hat_col)  # row i's HAT is row i - 1's
        starts = np.flatnonzero(~same)
        hats = hat_col.gather(starts)
        in_order = bool((hats.slice(1) > hats.slice(0, hats.len() - 1)).all())
        if in_order and has_users:  # ids ascending inside every HAT
            user_col = frame.get_column("user_id")
            up = np.concatenate(([True], (user_col.slice(1) > user_col.slice(0, n - 1)).to_numpy()))
            in_order = bool(up[same].all())
        if in_order:  # sorted by (hat, user_id): a stable sort by count inside each HAT
            sums = frame.get_column("s").cast(pl.Float64).to_numpy()
            ids = frame.get_column("user_id").cast(pl.String) if has_users else None
            return cls.from_runs(hats.to_numpy(), starts, counts, sums, upper=upper, users=ids)
        if not has_users:
            raise HexplorerError(
                "Summaries without user_id must be sorted by hat (then user id, as a summaries "
                "file is); give the user_id column to release them in another order."
            )
        frame = frame.sort(["hat", "m", "user_id"], descending=[False, True, False])
        counts = frame.get_column("m").cast(pl.Int64).to_numpy()
        hat_col = frame.get_column("hat")
        starts = np.flatnonzero(~_same_as_previous(hat_col))
        hats = hat_col.gather(starts)
        sums = frame.get_column("s").cast(pl.Float64).to_numpy()
        users = frame.get_column("user_id").cast(pl.String)
        return cls(
            hats=hats.to_numpy().astype(str),
            offsets=np.append(starts, n).astype(np.int64),
            counts=counts,
            sums=sums,
            users=users,
            user_rows=None,
            upper=upper,
        )

    @classmethod
    def from_runs(
        cls,
        labels: Any,
        starts: np.ndarray,
        counts: np.ndarray,
        sums: np.ndarray,
        upper: float = 65.0,
        users: pl.Series | None = None,
    ) -> HatBatch:
        """The batch of rows in a summaries file's order (sorted by hat, then user_id) given as
        runs of one HAT (:class:`core.data.runs.SummaryRuns`): the HAT of each run
        (``labels``, ascending), the first row of each run, and every row's ``m`` and ``s``.
        A stable sort by count inside each HAT, on integers, gives SPEC section 1's order.
        ``users``: the rows' ids in the same order (without them :attr:`user_ids` refuses in
        one line; the vectorised releases never read them)."""
        upper = check_upper(upper)
        n = counts.size
        if n == 0:
            raise HexplorerError("There are no HATs to release: the summaries are empty.")
        if counts.min() < 1:
            raise HexplorerError("Every count m must be >= 1.")
        top = int(counts.max()) + 1
        seg = np.repeat(np.arange(starts.size, dtype=np.int64), np.diff(np.append(starts, n)))
        key = seg * top  # HAT, then count descending: seg * top + (top - 1 - count)
        key += top - 1
        key -= counts
        rows = np.argsort(key, kind="stable")
        del key
        batch = cls(
            hats=np.asarray(labels, dtype=str),
            offsets=np.append(starts, n).astype(np.int64),
            counts=counts[rows],
            sums=sums[rows],
            users=users,
            user_rows=rows,
            upper=upper,
        )
        batch.__dict__["segment"] = seg  # the cached property's value, made here already
        return batch

    @cached_property
    def user_ids(self) -> np.ndarray:
        """The user ids of the rows as a numpy array of str (made once, when first asked for)."""
        if self.users is None:
            raise HexplorerError(
                "These summaries were read without their user_id column: this release needs "
                "the user ids."
            )
        users = self.users if self.user_rows is None else self.users.gather(self.user_rows)
        return users.to_numpy().astype(str)

    @property
    def n_hats(self) -> int:
        return int(self.hats.size)

    @property
    def lengths(self) -> np.ndarray:
        """L per HAT."""
        return np.diff(self.offsets)

    @cached_property
    def segment(self) -> np.ndarray:
        """The HAT index of every user row (made once)."""
        return np.repeat(np.arange(self.n_hats), self.lengths)

    def hat_data(self, h: int) -> HatData:
        """HAT ``h`` as :class:`HatData` (for the loop and for tests)."""
        sl = slice(int(self.offsets[h]), int(self.offsets[h + 1]))
        return HatData.from_arrays(
            self.counts[sl],
            self.sums[sl],
            None,
            self.user_ids[sl],
            upper=self.upper,
            hat=str(self.hats[h]),
        )

    def seg_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (one per user row) per HAT."""
        return np.add.reduceat(values, self.offsets[:-1])

    def rule_m(self, rule: str, epsilon: float) -> np.ndarray:
        """Every HAT's m_UB under the m_UB rule ``rule`` at ``epsilon`` (the kernels below for
        the built-in rules; any other rule is called once per HAT)."""
        kernel = _RULE_KERNELS.get(rule)
        if kernel is not None:
            return kernel(self, epsilon)
        fn = get_rule(rule)
        o = self.offsets.tolist()
        return np.array(
            [fn(self.counts[o[h] : o[h + 1]], self.upper, epsilon) for h in range(self.n_hats)],
            dtype=np.int64,
        )

    def array_means(self, m_ub: np.ndarray, grouping: str) -> tuple[np.ndarray, np.ndarray]:
        """Every HAT's (f_arr, number of arrays) for ``grouping`` arrays of length ``m_ub``."""
        if grouping == "wraparound":
            return wraparound_means(self, m_ub)
        return bestfit_means(self, m_ub)


def _same_as_previous(labels: pl.Series) -> np.ndarray:
    """Whether each row's label equals the previous row's (False for the first row).

    >>> import polars as pl
    >>> _same_as_previous(pl.Series(["a", "a", "b"])).tolist()
    [False, True, False]
    """
    n = labels.len()
    same = (labels.slice(1) == labels.slice(0, n - 1)).to_numpy() if n > 1 else np.zeros(0, bool)
    return np.concatenate(([False], same))


# ---------------------------------------------------------------------------------------------
# m_UB per HAT


def _median(b: HatBatch) -> np.ndarray:
    """The ⌈L/2⌉-th largest count per HAT (SPEC section 1)."""
    return b.counts[b.offsets[:-1] + (b.lengths + 1) // 2 - 1]


def _m_opt(b: HatBatch, epsilon: float) -> np.ndarray:
    """m^(ε) per HAT (SPEC section 4): E(m) at every distinct count, smallest minimiser; HATs
    with candidates within the screening tolerance are settled by worstcase.m_opt (exact)."""
    seg = b.segment
    c = b.counts
    first = np.ones(c.size, dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (seg[1:] != seg[:-1])
    pos = np.arange(c.size) - b.offsets[seg]  # users before this one in its HAT
    prefix = np.cumsum(c) - c  # global, then made per segment
    prefix = prefix - prefix[b.offsets[:-1]][seg]
    n = b.seg_sum(c)
    idx = np.flatnonzero(first)
    v = c[idx]
    s = pos[idx] * v + (n[seg[idx]] - prefix[idx])  # S(v) = #{m > v} v + Σ_{m <= v} m
    e = (1.0 - s / n[seg[idx]]) + v / (epsilon * s)
    hseg = seg[idx]
    best = np.full(b.n_hats, np.inf)
    np.minimum.at(best, hseg, e)
    tol = 1e-9 * np.maximum(np.abs(best), 1e-300)
    near = e <= best[hseg] + tol[hseg]
    n_near = np.bincount(hseg, weights=near.astype(np.float64), minlength=b.n_hats)
    # smallest minimiser: candidates are in descending v, so the last near one per HAT
    last = np.full(b.n_hats, -1, dtype=np.int64)
    np.maximum.at(last, hseg[near], np.flatnonzero(near))
    out = v[last].astype(np.int64)
    for h in np.flatnonzero(n_near > 1).tolist():
        sl = slice(int(b.offsets[h]), int(b.offsets[h + 1]))
        out[h] = worstcase.m_opt(c[sl], b.upper, epsilon)
    return out


def _s_at(b: HatBatch, m: np.ndarray, hat: np.ndarray) -> np.ndarray:
    """S(m) = Σ_ℓ min(m_ℓ, m) for values ``m`` of HATs ``hat`` (exact integers)."""
    seg = b.segment
    top = int(b.counts.max()) + 1
    # counts ascending inside each HAT as a sorted key: HAT, then count
    asc = np.argsort(seg * top + b.counts, kind="stable")
    key = (seg * top + b.counts)[asc]
    sorted_counts = b.counts[asc]
    prefix = np.concatenate(([0], np.cumsum(sorted_counts)))
    start = b.offsets[:-1][hat]
    j = np.searchsorted(key, hat * top + np.minimum(m, top - 1), side="right")  # c <= m
    below = prefix[j] - prefix[start]
    above = b.offsets[1:][hat] - j
    return below + above * m


def _m_convex(b: HatBatch) -> np.ndarray:
    """m_UB^(O,2) per HAT (SPEC section 4, [4] eq. 5), as worstcase.m_convex: candidates
    are the counts, ⌊N/L⌋ and ⌈N/L⌉ within [m_*, m*]; the smallest minimiser of the integer key
    ``-L m* S(m) + N max(L m, N)``, screened in float; near-ties settled by worstcase.m_convex."""
    seg = b.segment
    c = b.counts
    first = np.ones(c.size, dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (seg[1:] != seg[:-1])
    n = b.seg_sum(c)
    big_l = b.lengths
    lo, hi = c[b.offsets[1:] - 1], c[b.offsets[:-1]]
    hats = np.arange(b.n_hats)
    extra_m = np.concatenate((n // big_l, -(-n // big_l)))
    extra_h = np.concatenate((hats, hats))
    ok = (extra_m >= lo[extra_h]) & (extra_m <= hi[extra_h])
    cand_h = np.concatenate((seg[first], extra_h[ok]))
    cand_m = np.concatenate((c[first], extra_m[ok]))
    s = _s_at(b, cand_m, cand_h)
    lf, hf, nf = big_l[cand_h].astype(float), hi[cand_h].astype(float), n[cand_h].astype(float)
    key = (-lf * hf * s + nf * np.maximum(lf * cand_m, nf)) / (lf * hf * nf)
    best = np.full(b.n_hats, np.inf)
    np.minimum.at(best, cand_h, key)
    tol = 1e-9 * np.maximum(np.abs(best), 1e-300)
    near = key <= best[cand_h] + tol[cand_h]
    out = np.full(b.n_hats, np.iinfo(np.int64).max)
    np.minimum.at(out, cand_h[near], cand_m[near])
    n_near = np.bincount(cand_h[near], minlength=b.n_hats)
    distinct = np.zeros(b.n_hats, dtype=np.int64)  # near candidates with different m
    pairs = np.unique(np.stack((cand_h[near], cand_m[near])), axis=1)
    np.add.at(distinct, pairs[0], 1)
    del n_near
    for h in np.flatnonzero(distinct > 1).tolist():
        out[h] = worstcase.m_convex(c[b.offsets[h] : b.offsets[h + 1]])
    return out


# ---------------------------------------------------------------------------------------------
# Release


_Noiseless = BatchRelease


def _vectorised(name: str, b: HatBatch, epsilon: float) -> BatchRelease:
    """The registry's all-HATs release of ``name`` (``Mechanism.release_all``)."""
    form = MECHANISMS[name].release_all
    if form is None:
        raise HexplorerError(f"{name} has no all-HATs release form.")
    return form(b, epsilon)


def release_all(
    name: str,
    batch: HatBatch,
    epsilon: float,
    *,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """One simulated release of every HAT of ``batch`` (SPEC section 3), one row per HAT.

    Parameters
    ----------
    name : str
        A mechanism of :data:`core.mechanisms.MECHANISMS`; each HAT uses the mechanism's
        default m_UB.
    batch : HatBatch
    epsilon : float
        Privacy loss of each HAT's release (per HAT; composition across HATs is SPEC
        section 5's business).
    seed : int
        The seed of the module's per-HAT seed rule.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RELEASE_COLUMNS`, HATs in label order; ``m_ub`` and ``n_arrays`` are
        -1 for mechanisms without arrays (:func:`release_columns` as a frame).
    """
    import pandas as pd

    get_mechanism(name)
    if MECHANISMS[name].release_all is None:
        epsilon = check_epsilon(epsilon)
        _check_seed(seed)
        return release_loop(name, batch, epsilon, seed=seed, progress=progress)
    return pd.DataFrame(release_columns(name, batch, epsilon, seed=seed))


def release_columns(name: str, batch: HatBatch, epsilon: float, *, seed: int) -> dict[str, Any]:
    """:func:`release_all` of a vectorised mechanism as its columns (:data:`RELEASE_COLUMNS`:
    numpy arrays, and the mechanism's name and ε once for every row), without pandas: what
    ``release --all`` writes (:mod:`core.citywide.release_table`)."""
    get_mechanism(name)
    epsilon = check_epsilon(epsilon)
    _check_seed(seed)
    parts = _vectorised(name, batch, epsilon)
    estimate = parts.noiseless + first_laplace(
        hat_keys(seed, name, batch.hats.tolist()), parts.noise_scale
    )
    n = batch.seg_sum(batch.counts)
    return {
        "hat": batch.hats,
        "mechanism": name,
        "epsilon": epsilon,
        "m_ub": parts.m_ub,
        "n_arrays": parts.n_arrays,
        "sensitivity": parts.sensitivity,
        "noise_scale": parts.noise_scale,
        "noiseless": parts.noiseless,
        "estimate": estimate,
        "true_mean": batch.seg_sum(batch.sums) / n,
        "users": batch.lengths,
        "records": n,
    }


def _check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise HexplorerError(f"The 'seed' parameter must be an integer. Got {seed!r} instead.")


def evaluate_all(name: str, batch: HatBatch, epsilon: float) -> pd.DataFrame:
    """Every HAT's exact mean absolute error at ε for a vectorised mechanism (no sampling).

    For the mechanisms with an all-HATs form (``core.mechanisms.vectorised_names()``) the value before noise is a fixed number ``v`` (no
    private interval), so with ``d = v − f`` and Laplace scale ``b`` the papers' MAE (SPEC
    section 3, Evaluation) is ``E|d + Lap(b)| = |d| + b·exp(−|d|/b)`` (``|d|`` when b = 0):
    the same quantity :func:`core.evaluation.monte_carlo` estimates by sampling.

    Returns a DataFrame with columns ``hat, mechanism, epsilon, m_ub, n_arrays, noise_scale,
    noiseless, true_mean, bias, mae``, HATs in label order.

    Raises
    ------
    HexplorerError
        For a mechanism that is not vectorised (its MAE needs sampling: use monte_carlo).
    """
    import pandas as pd

    get_mechanism(name)
    epsilon = check_epsilon(epsilon)
    if MECHANISMS[name].release_all is None:
        raise HexplorerError(
            f"evaluate_all computes exact errors for {', '.join(vectorised_names())}; {name} draws a "
            "private interval or threshold, so its error needs sampling (monte_carlo)."
        )
    parts = _vectorised(name, batch, epsilon)
    true_mean = batch.seg_sum(batch.sums) / batch.seg_sum(batch.counts)
    d = np.abs(parts.noiseless - true_mean)
    b = parts.noise_scale
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(b > 0, b * np.exp(-d / np.where(b > 0, b, 1.0)), 0.0)
    return pd.DataFrame(
        {
            "hat": batch.hats,
            "mechanism": name,
            "epsilon": epsilon,
            "m_ub": parts.m_ub,
            "n_arrays": parts.n_arrays,
            "noise_scale": b,
            "noiseless": parts.noiseless,
            "true_mean": true_mean,
            "bias": d,
            "mae": d + tail,
        }
    )


def release_loop(
    name: str,
    batch: HatBatch,
    epsilon: float,
    *,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """The per-HAT loop: :func:`core.mechanisms.release` on each HAT with :func:`hat_rng`.

    The reference :func:`release_all` is tested against, and its path for the mechanisms that
    are not vectorised.
    """
    import pandas as pd

    rows = []
    for h in range(batch.n_hats):
        hat = batch.hat_data(h)
        r = release(name, hat, epsilon, rng=hat_rng(seed, name, str(hat.hat)))
        rows.append(
            {
                "hat": hat.hat,
                "mechanism": name,
                "epsilon": r.epsilon,
                "m_ub": -1 if r.m_ub is None else r.m_ub,
                "n_arrays": -1 if r.n_arrays is None else r.n_arrays,
                "sensitivity": r.sensitivity,
                "noise_scale": r.noise_scale,
                "noiseless": r.noiseless,
                "estimate": r.estimate,
                "true_mean": r.true_mean,
                "users": hat.n_users,
                "records": hat.n_records,
            }
        )
        if progress is not None and (h + 1) % 1000 == 0:
            progress(h + 1, batch.n_hats)
    return pd.DataFrame(rows, columns=RELEASE_COLUMNS)


#: Vectorised m_UB per HAT for the built-in rules (HatBatch.rule_m calls any other rule per HAT).
_RULE_KERNELS = {
    "median": lambda b, epsilon: _median(b),
    "opt": _m_opt,
    "convex": lambda b, epsilon: _m_convex(b),
}
