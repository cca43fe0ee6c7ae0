"""The one place every fact about a mechanism lives: :data:`MECHANISMS` and its m_UB rules.

Each :class:`Mechanism` carries its name (the SPEC section 3 name), plain title, family,
description, paper and SPEC references, default m_UB rule, grouping, Laplace budget share, fixed
colour, run function and, where they exist, its closed-form worst case and its all-HATs release
(:mod:`core.mechanisms.forms`) and whether the dashboard selects it by default. Everything else
reads this registry: the CLI's choices, ``core.evaluation``, publishing, the dashboard's picker,
rule marks, colours and legend order, the Map's and Whole city's error colouring, the plan,
``worstcase --all``, ``release --all``, the Learn page's "Mechanisms" section and the tables of
README and CONTRIBUTING (``python -m core.mechanisms.docs``). Adding a mechanism is one module
that calls :func:`register` (and its test); nothing else is edited.

The default m_UB rules are named entries of :data:`RULES` (function, label, symbol, colour,
one-line help); :func:`core.mechanisms.default_m_ub` looks the rule up and an unknown rule is an
error at registration, never a silent fallback.

Seeds are keyed by name (:func:`mechanism_key`, :func:`mechanism_rng`): a mechanism's random
stream is derived from the caller's seed and a stable hash of the mechanism's *name*, never from
its position, so registering a mechanism changes no other mechanism's simulated numbers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core import worstcase
from core.errors import HexplorerError
from core.mechanisms.forms import WorstCaseForm

__all__ = [
    "FAMILIES",
    "MECHANISMS",
    "PALETTE",
    "RULES",
    "Draws",
    "Mechanism",
    "Release",
    "Rule",
    "analytic_form",
    "analytic_names",
    "default_names",
    "get_analytic",
    "get_mechanism",
    "get_rule",
    "mechanism_key",
    "mechanism_rng",
    "register",
    "register_rule",
    "rules_in_use",
    "unregister",
    "unregister_rule",
    "vectorised_names",
]


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class Draws:
    """``size`` independent runs of one mechanism on one HAT (SPEC section 3).

    Attributes
    ----------
    mechanism : str
        Name from :data:`MECHANISMS`.
    epsilon : float
        Total privacy loss of each run.
    m_ub : int or None
        Array length used; None for mechanisms without arrays (baseline, opt-bounding, akmv),
        which ignore a user-chosen ``m_ub`` (``note`` says so).
    n_arrays : int or None
        K̄ (BestFit) or K (WrapAround); None without arrays.
    true_mean : float
        f = Σ s_ℓ / N, the value being estimated.
    noiseless : ndarray (size,)
        The value before the final Laplace noise (clipped mean for the given run's interval).
    sensitivity : ndarray (size,)
        User-level sensitivity of ``noiseless`` given the run's interval (charged 2U/K for
        arrayavg-wrap).
    noise_scale : ndarray (size,)
        Laplace scale b of the final noise (E|noise| = b).
    clip_lo, clip_hi : ndarray (size,) or None
        The clipping interval of the run: of array means for levy / quantile mechanisms, of user
        sums ([0, T̂]) for akmv; None where there is no common interval (baseline, arrayavg,
        opt-bounding, whose intervals are per user).
    threshold : ndarray (size,) or None
        T_ε (opt-bounding, constant) or T̂ (akmv, private); None otherwise.
    estimates : ndarray (size,)
        The released values, ``noiseless + Lap(noise_scale)``.
    note : str
        Anything a reader should know (m_ub ignored, T_ε = 0, ...); empty otherwise.
    """

    mechanism: str
    epsilon: float
    m_ub: int | None
    n_arrays: int | None
    true_mean: float
    noiseless: np.ndarray
    sensitivity: np.ndarray
    noise_scale: np.ndarray
    clip_lo: np.ndarray | None
    clip_hi: np.ndarray | None
    threshold: np.ndarray | None
    estimates: np.ndarray
    note: str = ""

    @property
    def size(self) -> int:
        """Number of runs."""
        return int(self.estimates.size)

    @property
    def abs_errors(self) -> np.ndarray:
        """|M(D) − f(D)| per run (SPEC section 3, Evaluation)."""
        return np.abs(self.estimates - self.true_mean)


@dataclass(frozen=True, kw_only=True)
class Release:
    """One run of a mechanism, with what produced it (scalars; see :class:`Draws`)."""

    mechanism: str
    epsilon: float
    m_ub: int | None
    n_arrays: int | None
    sensitivity: float
    noise_scale: float
    clip_interval: tuple[float, float] | None
    threshold: float | None
    noiseless: float
    estimate: float
    true_mean: float
    note: str = ""


RunFn = Callable[..., Draws]
RuleFn = Callable[..., int]

#: A fixed, colour-blind-safe palette (Okabe–Ito first, then Paul Tol's muted scheme): the
#: colours a mechanism may take. Every registered mechanism has its own.
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
    "#000000", "#F0E442", "#332288", "#882255", "#44AA99", "#999933",
    "#AA4499", "#117733", "#88CCEE", "#DDCC77",
)  # fmt: skip

#: The families, in the order the registry lists them (one module of ``core.mechanisms`` each).
FAMILIES: tuple[str, ...] = ("Baseline", "Array-Averaging", "Levy and quantile", "Bounding")

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_COLOUR = re.compile(r"^#[0-9A-Fa-f]{6}$")
_GROUPINGS = (None, "wraparound", "bestfit")


# ---------------------------------------------------------------------------------------------
# m_UB rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Rule:
    """A named default-m_UB rule (SPEC sections 3 and 4).

    Attributes
    ----------
    name : str
        The key mechanisms use (``Mechanism.m_ub_rule``).
    label : str
        Short plain-text label for buttons and chart marks, e.g. ``"m^(L)"``.
    symbol : str
        LaTeX symbol for explanations, e.g. ``r"m_{UB}^{(L)}"``.
    colour : str
        Hex colour of the rule's mark on charts.
    help : str
        One line saying what the rule chooses.
    fn : callable
        ``fn(counts, upper, epsilon, noise_measure) -> int``: the rule's m_UB from the public
        counts (never a value), an integer in [m_*, m*].
    counts_only : bool
        True when ``fn`` reads the counts only (not U, ε or the noise measure), so the m_UB is
        the same at every ε (``core.plan`` relies on it).
    staircase : callable or None
        For a rule that moves with ε: ``staircase(counts, upper, noise_measure) -> [Step]``, the
        exact steps of its m_UB along ε (:func:`core.worstcase.staircase`); with it (or
        ``counts_only``) an Array-Averaging mechanism at this rule has a closed-form worst case.
    many : callable or None
        For a ``counts_only`` rule: ``many(counts_desc, starts) -> m_UB per HAT``, vectorised
        over HATs laid end to end (counts descending within each); without it every distinct
        multiset of counts calls ``fn`` once.
    """

    name: str
    label: str
    symbol: str
    colour: str
    help: str
    fn: RuleFn = field(repr=False)
    counts_only: bool = False
    staircase: Callable | None = field(default=None, repr=False)
    many: Callable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise HexplorerError(
                f"The rule 'name' must be lower-case letters, digits and '-'. Got {self.name!r}."
            )
        if not isinstance(self.colour, str) or not _COLOUR.match(self.colour):
            raise HexplorerError(
                f"The 'colour' of rule {self.name!r} must be '#RRGGBB'. Got {self.colour!r}."
            )
        if not callable(self.fn):
            raise HexplorerError(f"The 'fn' of rule {self.name!r} must be callable.")

    def __call__(self, counts, upper: float, epsilon: float, noise_measure: str = "mean") -> int:
        return int(self.fn(counts, upper, epsilon, noise_measure))


#: The m_UB rules by name, in the order the dashboard shows their marks.
RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(name="median", label="median", symbol=r"\mathrm{median}(m_\ell)", colour="#7F7F7F",
             help="the median count: the ⌈L/2⌉-th largest m_ℓ",
             fn=lambda c, u, e, nm: worstcase.median_count(c), counts_only=True,
             many=lambda c, starts: c[starts[:-1] + (np.diff(starts) + 1) // 2 - 1]),
        Rule(name="levy", label="m^(L)", symbol=r"m_{UB}^{(L)}", colour="#9467BD",
             help="Levy's choice: argmax_m Σ_ℓ min(m_ℓ, m)/√m",
             fn=lambda c, u, e, nm: worstcase.m_levy(c), counts_only=True),
        Rule(name="opt", label="m^(ε)", symbol=r"m^{(\varepsilon)}", colour="#2CA02C",
             help="the minimiser of the worst-case error E(m) at this ε (SPEC §4)",
             fn=lambda c, u, e, nm: worstcase.m_opt(c, u, e, noise_measure=nm),
             staircase=worstcase.staircase),
        Rule(name="convex", label="m^(O,2)", symbol=r"m_{UB}^{(O,2)}", colour="#8C564B",
             help="the convex proxy: minimiser of 1 − S(m)/N + max(m, N/L)/m*",
             fn=lambda c, u, e, nm: worstcase.m_convex(c), counts_only=True),
    )
}  # fmt: skip


def register_rule(rule: Rule) -> Rule:
    """Add an m_UB rule to :data:`RULES` (its name must be new)."""
    if not isinstance(rule, Rule):
        raise HexplorerError(f"register_rule takes a Rule. Got {type(rule).__name__} instead.")
    if rule.name in RULES:
        raise HexplorerError(f"An m_UB rule called {rule.name!r} is already registered.")
    RULES[rule.name] = rule
    return rule


def unregister_rule(name: str) -> Rule:
    """Remove an m_UB rule no registered mechanism uses."""
    rule = get_rule(name)
    users = [m.name for m in MECHANISMS.values() if m.m_ub_rule == name]
    if users:
        raise HexplorerError(f"The m_UB rule {name!r} is used by {', '.join(users)}.")
    return RULES.pop(rule.name)


def get_rule(name: str) -> Rule:
    """The :class:`Rule` called ``name``; the error lists the valid names."""
    try:
        return RULES[name]
    except (KeyError, TypeError):
        raise HexplorerError(
            f"The 'm_ub_rule' must be one of {', '.join(RULES)}. Got {name!r} instead."
        ) from None


# ---------------------------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Mechanism:
    """One entry of :data:`MECHANISMS`.

    Attributes
    ----------
    name : str
        The SPEC section 3 name (lower-case letters, digits, '-').
    title : str
        The plain name, following the papers.
    family : str
        One of :data:`FAMILIES` (or a new family's name).
    description : str
        One or two plain sentences: what it releases and why.
    reference : str
        The paper and section it comes from.
    spec : str
        Where ``SPEC.md`` states it (section and table row).
    grouping : str or None
        "wraparound", "bestfit" or None.
    m_ub_rule : str or None
        The default m_UB rule, a key of :data:`RULES`; None when the mechanism has no arrays
        (a user-chosen m_ub is then ignored).
    colour : str
        The mechanism's fixed colour ('#RRGGBB'), the same on every chart; distinct from every
        other registered mechanism's.
    run : callable
        ``run(hat, epsilon, m_ub, rng, size) -> Draws`` with validated inputs and ``m_ub``
        already resolved (None for mechanisms without arrays).
    laplace_share : float
        The share of ε spent by the final Laplace step (1, or 1/2 when an interval or threshold
        is estimated privately first); publishing checks OpenDP's accounting against it.
    worst_case : WorstCaseForm or None
        Its closed-form worst-case error (SPEC section 4), one HAT and every HAT at once
        (:class:`core.mechanisms.forms.WorstCaseForm`); None when SPEC gives none. The Map's
        error colouring, Whole city, the plan and ``hexplorer worstcase`` offer exactly the
        mechanisms that have one (:func:`analytic_names`).
    release_all : callable or None
        ``release_all(batch, epsilon) -> BatchRelease``: every HAT's value before noise,
        sensitivity and scale in one vectorised pass (:mod:`core.mechanisms.forms`); None makes
        ``release --all`` loop over HATs (:func:`vectorised_names`).
    default : bool
        Whether the dashboard selects it when it opens (:func:`default_names`).
    """

    name: str
    title: str
    family: str
    description: str
    reference: str
    spec: str
    grouping: str | None
    m_ub_rule: str | None
    colour: str
    run: RunFn = field(repr=False)
    laplace_share: float = 1.0
    worst_case: WorstCaseForm | None = field(default=None, repr=False)
    release_all: Callable | None = field(default=None, repr=False)
    default: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise HexplorerError(
                "The mechanism 'name' must be lower-case letters, digits and '-'. "
                f"Got {self.name!r} instead."
            )
        for attr in ("title", "family", "description", "reference", "spec"):
            value = getattr(self, attr)
            if not isinstance(value, str) or not value.strip():
                raise HexplorerError(f"The {attr!r} of mechanism {self.name!r} must be non-empty.")
        if self.grouping not in _GROUPINGS:
            raise HexplorerError(
                f"The 'grouping' of mechanism {self.name!r} must be one of {_GROUPINGS}. "
                f"Got {self.grouping!r} instead."
            )
        if (self.grouping is None) != (self.m_ub_rule is None):
            raise HexplorerError(
                f"Mechanism {self.name!r}: a grouping needs an m_UB rule and an m_UB rule needs "
                f"a grouping. Got grouping={self.grouping!r}, m_ub_rule={self.m_ub_rule!r}."
            )
        if not isinstance(self.colour, str) or not _COLOUR.match(self.colour):
            raise HexplorerError(
                f"The 'colour' of mechanism {self.name!r} must be '#RRGGBB'. "
                f"Got {self.colour!r} instead."
            )
        if not callable(self.run):
            raise HexplorerError(f"The 'run' of mechanism {self.name!r} must be callable.")
        if self.worst_case is not None and not isinstance(self.worst_case, WorstCaseForm):
            raise HexplorerError(
                f"The 'worst_case' of mechanism {self.name!r} must be a WorstCaseForm."
            )
        if self.release_all is not None and not callable(self.release_all):
            raise HexplorerError(f"The 'release_all' of mechanism {self.name!r} must be callable.")
        if not 0.0 < float(self.laplace_share) <= 1.0:
            raise HexplorerError(
                f"The 'laplace_share' of mechanism {self.name!r} must be in (0, 1]. "
                f"Got {self.laplace_share!r} instead."
            )

    @property
    def uses_m_ub(self) -> bool:
        """Whether the mechanism builds arrays of length m_UB."""
        return self.m_ub_rule is not None

    @property
    def rule(self) -> Rule | None:
        """The :class:`Rule` of the default m_UB (None without arrays)."""
        return None if self.m_ub_rule is None else get_rule(self.m_ub_rule)


#: Every registered mechanism by name, in registration order (family by family). The object
#: itself never changes (only its contents), so ``from core.mechanisms import MECHANISMS``
#: always sees the current registry.
MECHANISMS: dict[str, Mechanism] = {}


def register(mechanism: Mechanism, *, before: str | None = None) -> Mechanism:
    """Add ``mechanism`` to :data:`MECHANISMS` (last, or just before the mechanism ``before``).

    Checks what a registry entry needs: a new name, a known m_UB rule, and a colour no other
    registered mechanism has.

    Raises
    ------
    HexplorerError
        Not a Mechanism, a name already registered, an unknown rule or ``before``, a taken colour.
    """
    if not isinstance(mechanism, Mechanism):
        raise HexplorerError(f"register takes a Mechanism. Got {type(mechanism).__name__} instead.")
    if mechanism.name in MECHANISMS:
        raise HexplorerError(f"A mechanism called {mechanism.name!r} is already registered.")
    if mechanism.m_ub_rule is not None:
        get_rule(mechanism.m_ub_rule)
    taken = {m.colour.upper(): m.name for m in MECHANISMS.values()}
    if mechanism.colour.upper() in taken:
        raise HexplorerError(
            f"Mechanism {mechanism.name!r}: colour {mechanism.colour} is already "
            f"{taken[mechanism.colour.upper()]}'s."
        )
    if before is None:
        MECHANISMS[mechanism.name] = mechanism
        return mechanism
    get_mechanism(before)
    entries = list(MECHANISMS.items())
    at = [name for name, _ in entries].index(before)
    entries.insert(at, (mechanism.name, mechanism))
    MECHANISMS.clear()
    MECHANISMS.update(entries)
    return mechanism


def unregister(name: str) -> Mechanism:
    """Remove the mechanism ``name`` from :data:`MECHANISMS` and return it."""
    return MECHANISMS.pop(get_mechanism(name).name)


def get_mechanism(name: str) -> Mechanism:
    """The :class:`Mechanism` called ``name``; the error lists the valid names."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise HexplorerError(
            f"The 'mechanism' parameter must be one of {', '.join(MECHANISMS)}. "
            f"Got {name!r} instead."
        ) from None


def analytic_names() -> tuple[str, ...]:
    """The registered mechanisms with a closed-form worst case, in registry order."""
    return tuple(name for name, m in MECHANISMS.items() if m.worst_case is not None)


def vectorised_names() -> tuple[str, ...]:
    """The registered mechanisms with an all-HATs release form, in registry order."""
    return tuple(name for name, m in MECHANISMS.items() if m.release_all is not None)


def default_names() -> tuple[str, ...]:
    """The mechanisms the dashboard selects when it opens, in registry order."""
    return tuple(name for name, m in MECHANISMS.items() if m.default)


def get_analytic(name: str) -> Mechanism:
    """The registered mechanism ``name`` if it has a closed-form worst case, else raise.

    >>> get_analytic("opt-bounding").name
    'opt-bounding'
    """
    mechanism = get_mechanism(name)
    if mechanism.worst_case is None:
        raise HexplorerError(
            f"The 'mechanism' parameter must have an analytic worst case "
            f"({', '.join(analytic_names())}); {mechanism.name!r} has none: use the Monte-Carlo "
            "plan (epsilon_for_error_mc) for it."
        )
    return mechanism


def analytic_form(name: str) -> WorstCaseForm:
    """The closed-form worst case of mechanism ``name`` (raises as :func:`get_analytic`)."""
    form = get_analytic(name).worst_case
    if form is None:  # pragma: no cover - get_analytic raised
        raise HexplorerError(f"{name!r} has no analytic worst case.")
    return form


def rules_in_use() -> list[Rule]:
    """The rules some registered mechanism uses, in :data:`RULES` order."""
    used = {m.m_ub_rule for m in MECHANISMS.values()}
    return [rule for name, rule in RULES.items() if name in used]


# ---------------------------------------------------------------------------------------------
# Seeds keyed by name
# ---------------------------------------------------------------------------------------------


def mechanism_key(name: str) -> int:
    """A stable 64-bit integer from the mechanism's name (first 8 bytes of its SHA-256).

    The same on every machine and Python run (unlike ``hash``), and independent of the
    registry's order.

    >>> mechanism_key("levy")
    6492647904177471643
    """
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def mechanism_rng(entropy, name: str) -> np.random.Generator:
    """The generator of mechanism ``name`` for the seed material ``entropy``.

    ``np.random.SeedSequence([*entropy, mechanism_key(name)])``: each mechanism gets its own
    independent stream, derived from the seed and its *name*, never its position.

    Parameters
    ----------
    entropy : int or sequence of int
        Non-negative seed material (a user's seed, a purpose code, words drawn from a parent
        generator ...).
    name : str
        The mechanism's name.
    """
    words = [int(entropy)] if isinstance(entropy, int | np.integer) else [int(w) for w in entropy]
    return np.random.default_rng(np.random.SeedSequence([*words, mechanism_key(name)]))
