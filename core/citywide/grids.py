"""Per-grid means and variances: exact sensitivities, worst-case biases and errors, and the
per-grid mechanism (SPEC section 5).

- Exact sensitivities and worst-case biases of the clipped mean and variance for any retention
  (slides of [3], "Exact error characterizations" I and II, as corrected by SPEC section 5):
  :func:`delta_mean`, :func:`delta_var`, :func:`bias_mean`, :func:`bias_var`, :func:`grid_error`,
  :func:`grid_errors`.
- The per-grid mechanism (mean and variance, budget ε/2 each): :func:`noisy_statistics`,
  :func:`release_grids` (simulation noise from numpy; a published release goes through
  ``core.publish``, SPEC section 7).

Counts are public here (SPEC sections 1 and 5): the sensitivities and the error bounds read only
counts; only :func:`noisy_statistics` and :func:`grid_statistics` read values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.citywide.gridset import GridSet, _check_values
from core.errors import HexplorerError
from core.params import check_epsilon, check_upper

RELEASE_COLUMNS = (
    "hat",
    "cell",
    "slot",
    "users",
    "records",
    "retained",
    "true_mean",
    "true_var",
    "noisy_mean",
    "noisy_var",
    "delta_mean",
    "delta_var",
    "error_bound",
)


# --------------------------------------------------------------------------------------------
# Exact sensitivities and worst-case biases (SPEC section 5)
# --------------------------------------------------------------------------------------------


def _int_array(name: str, x, minimum: int) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        f = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise HexplorerError(f"The '{name}' parameter must hold integers. Got {x!r}.")
        a = f
    a = a.astype(np.int64)
    if np.any(a < minimum):
        raise HexplorerError(f"The '{name}' parameter must be >= {minimum}. Got {x!r}.")
    return a


def _out(value: np.ndarray, *inputs):
    return float(value) if all(np.ndim(v) == 0 for v in inputs) else value


def _pair_term(a: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``a (total - a) / total²`` in float64, from exact integer products (same op order as
    :func:`_chop_kernel`'s scalar code, so both give bit-identical errors)."""
    return (a * (total - a)).astype(np.float64) / (total * total).astype(np.float64)


def delta_mean(total, gamma_star, upper):
    """Sensitivity of the retained mean: ``Δ_μ = U Γ* / S`` (SPEC section 5).

    Parameters
    ----------
    total : S = Σ Γ_ℓ, retained records (integer >= 1; arrays broadcast).
    gamma_star : Γ* = max Γ_ℓ (integer in [1, S]).
    upper : U.

    >>> delta_mean(4, 1, 2.0)
    0.5
    """
    s_, g_ = _check_retention(total, gamma_star)
    u = check_upper(upper)
    return _out(u * (g_.astype(np.float64) / s_.astype(np.float64)), total, gamma_star)


def delta_var(total, gamma_star, upper):
    """Sensitivity of the retained variance (1/S normalisation), SPEC section 5.

    ``U² Γ*(S − Γ*)/S²`` if ``S > 2Γ*``; ``U²/4`` if ``S ≤ 2Γ*`` and S even;
    ``(U²/4)(1 − 1/S²)`` if ``S ≤ 2Γ*`` and S odd. All three are ``U² j (S − j) / S²`` with
    ``j = min(Γ*, ⌊S/2⌋)``, which is how it is computed: the case split is decided on integers.

    >>> delta_var(3, 1, 1.0) == 2 / 9, delta_var(4, 2, 1.0), delta_var(3, 2, 1.0) == 2 / 9
    (True, 0.25, True)
    """
    s_, g_ = _check_retention(total, gamma_star)
    u = check_upper(upper)
    j = np.minimum(g_, s_ // 2)
    return _out((u * u) * _pair_term(j, s_), total, gamma_star)


def bias_mean(total, records, upper):
    """Worst-case bias of the retained mean against the full mean: ``E_μ = U (1 − S/N)``.

    Computed as ``U · (N − S)/N``. Seed 002 slides, "Exact error characterizations II".

    >>> bias_mean(1, 4, 1.0)
    0.75
    """
    s_, n_ = _check_records(total, records)
    u = check_upper(upper)
    return _out(u * ((n_ - s_).astype(np.float64) / n_.astype(np.float64)), total, records)


def bias_var(total, records, upper):
    """Worst-case bias of the retained variance: ``E_Var = U² k(N − k)/N²``, ``k = min(R, ⌊N/2⌋)``.

    ``R = N − S`` dropped records (SPEC section 5, which corrects the slides' case conditions).
    Counterexample to the slides: U = 1, keep {0}, drop {1, 1, 0}: the bias is 1/4.

    >>> bias_var(1, 4, 1.0), bias_var(4, 4, 1.0), bias_var(3, 4, 1.0) == 3 / 16
    (0.25, 0.0, True)
    """
    s_, n_ = _check_records(total, records)
    u = check_upper(upper)
    k = np.minimum(n_ - s_, n_ // 2)
    return _out((u * u) * _pair_term(k, n_), total, records)


def _check_retention(total, gamma_star) -> tuple[np.ndarray, np.ndarray]:
    s_ = _int_array("total", total, 1)
    g_ = _int_array("gamma_star", gamma_star, 1)
    s_, g_ = np.broadcast_arrays(s_, g_)
    if np.any(g_ > s_):
        raise HexplorerError(
            f"gamma_star (Γ*) must be <= total (S). Got Γ*={gamma_star!r}, S={total!r}."
        )
    return s_, g_


def _check_records(total, records) -> tuple[np.ndarray, np.ndarray]:
    s_ = _int_array("total", total, 1)
    n_ = _int_array("records", records, 1)
    s_, n_ = np.broadcast_arrays(s_, n_)
    if np.any(s_ > n_):
        raise HexplorerError(f"total (S) must be <= records (N). Got S={total!r}, N={records!r}.")
    return s_, n_


def _error_vec(s_, g_, n_, u: float, eps: float) -> np.ndarray:
    """E_g from validated int64 arrays; op order mirrored in :func:`_chop_kernel`."""
    u2 = u * u
    r = n_ - s_
    k = np.minimum(r, n_ // 2)
    j = np.minimum(g_, s_ // 2)
    e_mu = u * (r.astype(np.float64) / n_.astype(np.float64))
    e_var = u2 * _pair_term(k, n_)
    d_mu = u * (g_.astype(np.float64) / s_.astype(np.float64))
    d_var = u2 * _pair_term(j, s_)
    return ((e_mu + e_var) + (2.0 * d_mu) / eps) + (2.0 * d_var) / eps


def grid_error(total, gamma_star, records, upper, epsilon):
    """Worst-case error of one grid: ``E_g = E_μ + E_Var + 2Δ_μ/ε + 2Δ_Var/ε`` (SPEC section 5).

    The last two terms are E|Lap(2Δ/ε)|: each statistic gets budget ε/2.

    >>> grid_error(2, 1, 2, 1.0, 1.0)  # two users with one record each, nothing suppressed
    1.5
    """
    s_, g_ = _check_retention(total, gamma_star)
    _, n_ = _check_records(total, records)
    s_, g_, n_ = np.broadcast_arrays(s_, g_, n_)
    out = _error_vec(s_, g_, n_, check_upper(upper), check_epsilon(epsilon))
    return _out(out, total, gamma_star, records)


@dataclass(frozen=True, kw_only=True, eq=False)
class GridErrors:
    """Per-grid error parts for one retention (all (G,) arrays; SPEC section 5).

    Attributes
    ----------
    retained_records : S; gamma_star : Γ*; records : N; retained_users : users with Γ_ℓ > 0.
    delta_mean, delta_var : sensitivities; bias_mean, bias_var : worst-case biases E_μ, E_Var.
    total : E_g = E_μ + E_Var + 2Δ_μ/ε + 2Δ_Var/ε.
    """

    epsilon: float
    upper: float
    retained_records: np.ndarray
    gamma_star: np.ndarray
    records: np.ndarray
    retained_users: np.ndarray
    delta_mean: np.ndarray
    delta_var: np.ndarray
    bias_mean: np.ndarray
    bias_var: np.ndarray
    total: np.ndarray


def _retention(grids: GridSet, retained) -> np.ndarray:
    if retained is None:
        return np.ones(grids.n_pairs, dtype=bool)
    r = np.asarray(retained)
    if r.dtype != bool or r.shape != (grids.n_pairs,):
        raise HexplorerError(
            f"retained must be a boolean mask of length {grids.n_pairs} (one per (grid, user) pair)"
        )
    return r


def grid_errors(grids: GridSet, epsilon: float, *, upper: float, retained=None) -> GridErrors:
    """Exact sensitivities, biases and worst-case error of every grid for a suppression mask.

    Parameters
    ----------
    grids : the grids.
    epsilon : per-grid budget ε.
    upper : U.
    retained : (P,) bool, False where the pair is suppressed (Γ_ℓ = 0); default keeps all.

    Raises
    ------
    HexplorerError
        If a grid retains no record.
    """
    return _grid_errors(
        grids, check_epsilon(epsilon), check_upper(upper), _retention(grids, retained)
    )


def _grid_errors(grids: GridSet, eps: float, u: float, keep: np.ndarray) -> GridErrors:
    """:func:`grid_errors` on checked inputs (``keep`` from ``_retention``)."""
    heads = grids.starts[:-1]
    kept_m = np.where(keep, grids.m, 0)
    s_ = np.add.reduceat(kept_m, heads)
    if np.any(s_ < 1):
        g = int(np.flatnonzero(s_ < 1)[0])
        raise HexplorerError(f"Grid {grids.hats[g]!r} retains no record; a grid needs one.")
    g_ = np.maximum.reduceat(kept_m, heads)
    n_ = grids.records
    k = np.minimum(n_ - s_, n_ // 2)
    j = np.minimum(g_, s_ // 2)
    return GridErrors(
        epsilon=eps,
        upper=u,
        retained_records=s_,
        gamma_star=g_,
        records=n_,
        retained_users=np.add.reduceat(keep.astype(np.int64), heads),
        delta_mean=u * (g_.astype(np.float64) / s_.astype(np.float64)),
        delta_var=(u * u) * _pair_term(j, s_),
        bias_mean=u * ((n_ - s_).astype(np.float64) / n_.astype(np.float64)),
        bias_var=(u * u) * _pair_term(k, n_),
        total=_error_vec(s_, g_, n_, u, eps),
    )


# --------------------------------------------------------------------------------------------
# The per-grid mechanism (SPEC section 5)
# --------------------------------------------------------------------------------------------


def laplace_noise(rng: np.random.Generator, scale: np.ndarray, size) -> np.ndarray:
    """Zero-mean Laplace noise of the given scale(s): the only noise source of this module.

    Simulation noise from numpy; a *published* release goes through ``core.publish`` (SPEC
    section 7). Tests monkeypatch this function to check that a wrong scale is caught.
    """
    return rng.laplace(0.0, scale, size)


def grid_statistics(grids: GridSet, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (1/count normalisation) of the records of the kept pairs, per grid."""
    heads = grids.starts[:-1]
    cnt = np.add.reduceat(np.where(keep, grids.m, 0), heads).astype(np.float64)
    tot = np.add.reduceat(np.where(keep, grids.s, 0.0), heads)
    sq = np.add.reduceat(np.where(keep, grids.q, 0.0), heads)
    mean = tot / cnt
    var = np.maximum(sq / cnt - mean * mean, 0.0)
    return mean, var


def noisy_statistics(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    rng: np.random.Generator,
    retained=None,
    size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-grid mechanism with budget ε: retained mean + Lap(2Δ_μ/ε), variance + Lap(2Δ_Var/ε).

    Mean and variance (1/S normalisation) are those of the retained users' records, computed
    from their s and q (no mean replacement here). Each grid reads only its own records, so the
    release over all grids is ``ε max_ℓ G_ℓ``-DP ([2], Theorem II.3).

    Returns
    -------
    (noisy_mean, noisy_var) : arrays of shape (G,), or (size, G) when ``size`` is given
        (independent runs, vectorised).
    """
    u = check_upper(upper)
    _check_values(grids, u)
    return _noisy(grids, check_epsilon(epsilon), u, rng, _retention(grids, retained), size)


def _noisy(grids: GridSet, eps: float, u: float, rng, keep: np.ndarray, size: int | None):
    """:func:`noisy_statistics` on checked inputs."""
    errs = _grid_errors(grids, eps, u, keep)
    mean, var = grid_statistics(grids, keep)
    shape = (grids.n_grids,) if size is None else (int(size), grids.n_grids)
    noisy_mean = mean + laplace_noise(rng, 2.0 * errs.delta_mean / eps, shape)
    noisy_var = var + laplace_noise(rng, 2.0 * errs.delta_var / eps, shape)
    return noisy_mean, noisy_var


def release_grids(
    grids: GridSet,
    epsilon: float,
    *,
    upper: float,
    rng: np.random.Generator,
    retained=None,
) -> pd.DataFrame:
    """One run of the per-grid mechanism on every grid, as a table (SPEC section 5).

    Columns: hat, cell, slot, users, records, retained (records kept), true_mean, true_var (all
    records), noisy_mean, noisy_var, delta_mean, delta_var, error_bound (E_g), plus
    retained_users, retained_mean, retained_var (the noiseless estimates) and bias_mean, bias_var.
    """
    eps = check_epsilon(epsilon)
    u = check_upper(upper)
    keep = _retention(grids, retained)
    _check_values(grids, u)
    noisy_mean, noisy_var = _noisy(grids, eps, u, rng, keep, None)
    errs = _grid_errors(grids, eps, u, keep)
    true_mean, true_var = grid_statistics(grids, np.ones(grids.n_pairs, dtype=bool))
    kept_mean, kept_var = grid_statistics(grids, keep)
    return pd.DataFrame(
        {
            "hat": grids.hats.astype(str),
            "cell": grids.cells.astype(str),
            "slot": grids.slots.astype(str),
            "users": grids.users_per_grid,
            "records": errs.records,
            "retained": errs.retained_records,
            "true_mean": true_mean,
            "true_var": true_var,
            "noisy_mean": noisy_mean,
            "noisy_var": noisy_var,
            "delta_mean": errs.delta_mean,
            "delta_var": errs.delta_var,
            "error_bound": errs.total,
            "retained_users": errs.retained_users,
            "retained_mean": kept_mean,
            "retained_var": kept_var,
            "bias_mean": errs.bias_mean,
            "bias_var": errs.bias_var,
        }
    )
