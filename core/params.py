"""Validation helpers shared by every module: messages name the parameter and the value."""

from __future__ import annotations

import functools
import math

import numpy as np

from core.errors import HexplorerError

NOISE_MEASURES = ("mean", "std")


EPSILON_MIN = 0.001
EPSILON_MAX = 100.0
"""The one range of ε the whole product accepts: the CLI, the library's public functions, the
URL and every ε widget of the dashboard (a slider may show a narrower span; its number input
reaches the whole range). Below 0.001 every mechanism's noise dwarfs any speed (U/ε ≥ 65,000 km/h
for one record) and far below it the noise arithmetic leaves float64's finite range (ε = 1e-300
gave inf and NaN); above 100 the noise is far below a speed's last digit and ⌈2/ε⌉ = 1."""
UPPER_RANGE = (1e-6, 1e9)
"""Accepted U: the exact fixed-point aggregation scales values by 2^(40 - exponent of U²), which
must stay a finite float, and U² · N must stay far from float64 overflow."""


@functools.cache
def log_grid(lo: float, hi: float, n: int) -> tuple[float, ...]:
    """``n`` values from ``lo`` to ``hi`` equally spaced on a log scale (``numpy.geomspace``),
    each the float nearest to lo·(hi/lo)^(i/(n−1)), computed in 50-digit decimals: the same
    bits on every machine (numpy's own differs in the last bit between CPUs with and without
    AVX-512), so a chart's ε axis, a plan's grid and what is built from them are reproducible.
    Kept once made (a tuple; 161 points take about 5 ms, and the plan's Monte-Carlo grid and
    the city's coverage curve are the same one).

    >>> log_grid(0.01, 10.0, 4)
    (0.01, 0.1, 1.0, 10.0)
    >>> len(log_grid(0.01, 100.0, 161)), log_grid(0.01, 10.0, 61)[15]
    (161, 0.05623413251903491)
    """
    from decimal import Decimal, localcontext

    with localcontext(prec=50):
        a, b = Decimal(lo).ln(), Decimal(hi).ln()
        inner = [float((a + (b - a) * i / (n - 1)).exp()) for i in range(1, n - 1)]
    return (float(lo), *inner, float(hi)) if n > 1 else (float(lo),)


def check_epsilon(epsilon: float) -> float:
    """Return ``epsilon`` as a float, or raise if it is not a number in
    [``EPSILON_MIN``, ``EPSILON_MAX``].

    Called where ε enters (the CLI's parse, a public function of the library); the functions
    they call trust the checked value.

    >>> check_epsilon(0.5)
    0.5
    """
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'epsilon' parameter must be a number > 0. Got {epsilon!r} instead."
        ) from None
    if isinstance(epsilon, bool) or not math.isfinite(value) or value <= 0:
        raise HexplorerError(f"The 'epsilon' parameter must be > 0. Got {epsilon!r} instead.")
    if not EPSILON_MIN <= value <= EPSILON_MAX:
        raise HexplorerError(
            f"The 'epsilon' parameter must be in [{EPSILON_MIN:g}, {EPSILON_MAX:g}]. "
            f"Got {epsilon!r} instead."
        )
    return value


def check_upper(upper: float) -> float:
    """Return the value bound U as a float, or raise if it is not a number in ``UPPER_RANGE``."""
    try:
        value = float(upper)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'upper' parameter (U) must be a number > 0. Got {upper!r} instead."
        ) from None
    if isinstance(upper, bool) or not math.isfinite(value) or value <= 0:
        raise HexplorerError(f"The 'upper' parameter (U) must be > 0. Got {upper!r} instead.")
    lo, hi = UPPER_RANGE
    if not lo <= value <= hi:
        raise HexplorerError(
            f"The 'upper' parameter (U) must be in [{lo:g}, {hi:g}]. Got {upper!r} instead."
        )
    return value


def check_number(name: str, value) -> float:
    """Return ``value`` as a finite float, or raise naming the parameter (text, None, NaN, ±inf).

    >>> check_number("mean", "20.5")
    20.5
    """
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = math.nan
    if isinstance(value, bool) or not math.isfinite(out):
        raise HexplorerError(
            f"The '{name}' parameter must be a finite number. Got {value!r} instead."
        )
    return out


def check_positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= 1 (bools and floats refused).

    >>> check_positive_int("n_runs", 10)
    10
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise HexplorerError(
            f"The '{name}' parameter must be an integer >= 1. Got {value!r} instead."
        )
    return int(value)


def check_noise_measure(noise_measure: str) -> float:
    """Return the factor c of the noise error: 1 for E|Lap(b)| = b ('mean'), sqrt(2) for its std ('std')."""
    if noise_measure == "mean":
        return 1.0
    if noise_measure == "std":
        return math.sqrt(2.0)
    raise HexplorerError(
        f"The 'noise_measure' parameter must be one of {NOISE_MEASURES}. Got {noise_measure!r} instead."
    )


def check_m_ub(m_ub: int, counts: np.ndarray) -> int:
    """Return ``m_ub`` as an int, or raise if it is not an integer in [m_*, m*] of ``counts``."""
    m_min, m_max = int(np.min(counts)), int(np.max(counts))
    try:
        value = int(m_ub)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'm_ub' parameter must be an integer. Got {m_ub!r} instead."
        ) from None
    if isinstance(m_ub, bool) or value != m_ub or not m_min <= value <= m_max:
        raise HexplorerError(
            f"The 'm_ub' parameter must be an integer in [m_*, m*] = [{m_min}, {m_max}]. Got {m_ub!r} instead."
        )
    return value


MAX_RECORDS = 2**53  # N = Σ m_ℓ from here on is neither exact in float64 nor safe in int64 sums


def check_counts(counts) -> np.ndarray:
    """Return ``counts`` as a 1-D int64 array, or raise if it is empty or has a non-integer or < 1.

    >>> check_counts([3, 2.0, 1]).tolist()
    [3, 2, 1]
    """
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size == 0:
        raise HexplorerError(
            f"The 'counts' parameter must be a non-empty 1-D list of record counts. "
            f"Got shape {arr.shape} instead."
        )
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" and arr.dtype != object:
            raise HexplorerError(
                f"Every entry of the 'counts' parameter must be an integer >= 1. Got dtype {arr.dtype}."
            )
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise HexplorerError(
                "Every entry of the 'counts' parameter must be an integer >= 1; found a non-number."
            ) from None
        bad = ~np.isfinite(as_float) | (as_float != np.round(as_float))
        if np.any(bad):
            raise HexplorerError(
                f"Every entry of the 'counts' parameter must be an integer >= 1. Got {arr[bad][0]!r} instead."
            )
        arr = as_float
    small = arr < 1
    if np.any(small):
        raise HexplorerError(
            f"Every entry of the 'counts' parameter must be an integer >= 1. Got {int(arr[small][0])} instead."
        )
    total = float(np.sum(arr, dtype=np.float64))
    if total >= MAX_RECORDS:
        raise HexplorerError(
            f"The 'counts' parameter must total fewer than 2^53 records (exact in float64). "
            f"Got {total:.3g} instead."
        )
    return arr.astype(np.int64)


def ceil_two_over_epsilon(epsilon: float) -> int:
    """``ceil(2 / epsilon)``, treating 2/epsilon within 1e-9 of an integer as that integer (SPEC, notation).

    An inner helper: ``epsilon`` is a checked ε > 0 (:func:`check_epsilon` at the entry point).

    >>> ceil_two_over_epsilon(0.5), ceil_two_over_epsilon(0.3), ceil_two_over_epsilon(2 / 3)
    (4, 7, 3)
    >>> ceil_two_over_epsilon(1e300)
    1
    """
    ratio = 2.0 / float(epsilon)  # ε > 0, checked by the caller
    nearest = round(ratio)
    if nearest >= 1 and abs(ratio - nearest) <= 1e-9:
        return int(nearest)
    return int(math.ceil(ratio))  # >= 1: 2/ε > 0 (ε = 1e300 gave 0 and an index error)


def check_target(target) -> float:
    """Return the target error as a float, or raise if it is not a finite number >= 0.

    >>> check_target(2)
    2.0
    """
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise HexplorerError(
            f"The 'target' parameter (target error) must be a number >= 0. Got {target!r} instead."
        ) from None
    if isinstance(target, bool) or not math.isfinite(value) or value < 0:
        raise HexplorerError(
            f"The 'target' parameter (target error) must be a finite number >= 0. "
            f"Got {target!r} instead."
        )
    return value
