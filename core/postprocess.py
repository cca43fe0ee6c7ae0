"""Post-processing released values into their range (free under differential privacy).

A noisy mean can land below 0 or above U and a noisy variance below 0; any function of a DP
output that does not look at the data again is DP with the same ε (post-processing), so clamping
costs no privacy. It changes the error the papers analyse (they study the raw, unclamped
estimates), so the dashboard shows raw values on request.
"""

from __future__ import annotations

import numpy as np

from core.params import check_upper


def clamp_mean(values: np.ndarray | float, upper: float) -> np.ndarray:
    """Means into [0, U].

    >>> clamp_mean(np.array([-3.0, 10.0, 99.0]), 65.0).tolist()
    [0.0, 10.0, 65.0]
    """
    upper = check_upper(upper)
    return np.clip(np.asarray(values, dtype=np.float64), 0.0, upper)


def clamp_variance(values: np.ndarray | float, upper: float) -> np.ndarray:
    """Variances into [0, U²/4], the largest variance of values in [0, U] (Popoviciu).

    >>> clamp_variance(np.array([-5.0, 100.0, 5000.0]), 65.0).tolist()
    [0.0, 100.0, 1056.25]
    """
    upper = check_upper(upper)
    return np.clip(np.asarray(values, dtype=np.float64), 0.0, upper * upper / 4.0)
