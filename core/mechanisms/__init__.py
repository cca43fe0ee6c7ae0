"""The single-HAT mechanisms of SPEC section 3, each user-level epsilon-DP, vectorised across runs.

A package by family; every public name is importable from ``core.mechanisms`` as before:

- :mod:`~core.mechanisms.registry`: :data:`MECHANISMS` (the one place every fact about a mechanism
  lives), the m_UB :data:`RULES`, :func:`register` / :func:`unregister`, name-keyed seeds;
- :mod:`~core.mechanisms.baseline`: ``baseline``;
- :mod:`~core.mechanisms.array_averaging`: ``arrayavg-wrap``, ``arrayavg-best``,
  ``opt-arrayavg``, ``opt-arrayavg-convex``;
- :mod:`~core.mechanisms.quantile_levy`: ``levy-wrap``, ``quantile-fixed-wrap``, ``levy``,
  ``quantile-fixed``, ``quantile-eps`` (PrivateInterval, private quantiles);
- :mod:`~core.mechanisms.bounding`: ``opt-bounding``, ``akmv``;
- :mod:`~core.mechanisms.forms`: what an entry may carry beside its run: the closed-form worst
  case (one HAT and every HAT) and the all-HATs release;
- :mod:`~core.mechanisms.noise`: all randomness (monkeypatch it there in privacy tests);
- :mod:`~core.mechanisms.api`: :func:`run_mechanism`, :func:`release`, :func:`default_m_ub`;
- :mod:`~core.mechanisms.docs`: the generated mechanism tables of README and CONTRIBUTING.

Every mechanism has the same signature, ``(hat, epsilon, m_ub, rng, size) -> Draws``.
:func:`run_mechanism` draws ``size`` independent runs at once (all of a mechanism's randomness,
interval estimation included, is redrawn per run); :func:`release` is one run with scalar fields.

Adding a mechanism: one module that builds a :class:`Mechanism` and calls :func:`register`
(a new module of this package is imported below by itself, or register from anywhere at run
time), plus its test; see CONTRIBUTING.md.
"""

from __future__ import annotations

from core.mechanisms.common import clipped_mean
from core.mechanisms.forms import BatchRelease, Pieces, WorstCaseForm, WorstParts
from core.mechanisms.noise import (
    exponential_mechanism_probabilities,
    private_quantile_distribution,
)
from core.mechanisms.registry import (
    FAMILIES,
    MECHANISMS,
    PALETTE,
    RULES,
    Draws,
    Mechanism,
    Release,
    Rule,
    analytic_form,
    analytic_names,
    default_names,
    get_analytic,
    get_mechanism,
    get_rule,
    mechanism_key,
    mechanism_rng,
    register,
    register_rule,
    rules_in_use,
    unregister,
    unregister_rule,
    vectorised_names,
)

# isort: off
# The families register their mechanisms on import, in this order (the registry's order).
from core.mechanisms import baseline, array_averaging, quantile_levy, bounding  # noqa: F401

# isort: on
from core.mechanisms.api import default_m_ub, release, resolve, run_mechanism
from core.mechanisms.bounding import akmv_level
from core.mechanisms.quantile_levy import (
    FIXED_QUANTILE_LEVELS,
    LEVY_GAMMA,
    IntervalDistribution,
    levy_tau,
    private_interval_distribution,
    quantile_eps_levels,
)

__all__ = [
    "FAMILIES",
    "FIXED_QUANTILE_LEVELS",
    "LEVY_GAMMA",
    "MECHANISMS",
    "PALETTE",
    "RULES",
    "Draws",
    "IntervalDistribution",
    "Mechanism",
    "BatchRelease",
    "Pieces",
    "Release",
    "Rule",
    "WorstCaseForm",
    "WorstParts",
    "akmv_level",
    "analytic_form",
    "analytic_names",
    "clipped_mean",
    "default_m_ub",
    "default_names",
    "exponential_mechanism_probabilities",
    "get_analytic",
    "get_mechanism",
    "get_rule",
    "levy_tau",
    "mechanism_key",
    "mechanism_rng",
    "private_interval_distribution",
    "private_quantile_distribution",
    "quantile_eps_levels",
    "register",
    "register_rule",
    "release",
    "resolve",
    "rules_in_use",
    "run_mechanism",
    "unregister",
    "unregister_rule",
    "vectorised_names",
]

#: The package's modules that are not families (everything else registers mechanisms).
_MACHINERY = frozenset({"api", "common", "docs", "forms", "noise", "registry"})


def _import_new_families() -> None:
    """Import every other module of this package (a new family), by name, after the four above:
    adding a mechanism's module edits no other file (``register(..., before=...)`` places it)."""
    import importlib
    import pkgutil

    known = _MACHINERY | {"baseline", "array_averaging", "quantile_levy", "bounding"}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name not in known and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_import_new_families()
