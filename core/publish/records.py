"""What the ledger records: a release's record, the ledger's summary, one single-HAT release
(:class:`LedgerEntry`), and the fingerprints and times they carry.

Plain values and their checks, no storage: :mod:`core.publish.ledger` keeps them in SQLite.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import Release

if TYPE_CHECKING:
    import pandas as pd

#: The namespace users belong to unless another is given.
DEFAULT_NAMESPACE = "default"


def fingerprint(hat: HatData) -> str:
    """SHA-256 (hex) of a HAT's per-user summaries: U, user ids, m, s and q, in HatData order.

    Everything a mechanism reads enters the hash, so equal fingerprints mean equal releases'
    distributions; renaming or copying a data file does not change it (no fresh noise that way).

    >>> a = HatData.from_arrays([2, 1], [10.0, 5.0], user_ids=["x", "y"])
    >>> b = HatData.from_arrays([1, 2], [5.0, 10.0], user_ids=["y", "x"])
    >>> fingerprint(a) == fingerprint(b), len(fingerprint(a))
    (True, 64)
    """
    h = hashlib.sha256()
    h.update(f"hexplorer-hat-v1|U={hat.upper!r}|L={hat.n_users}|".encode())
    h.update("\x1f".join(str(u) for u in hat.user_ids).encode())
    for arr in (hat.counts.astype("<i8"), hat.sums.astype("<f8"), hat.sumsq.astype("<f8")):
        h.update(b"|")
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def now() -> str:
    """The current UTC time, ISO 8601 to the second (the ``created`` of a release)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def check_namespace(namespace: str | None) -> str:
    """The namespace, ``"default"`` when None; a non-empty single-line string."""
    if namespace is None:
        return DEFAULT_NAMESPACE
    if not isinstance(namespace, str) or not namespace.strip() or "\n" in namespace:
        raise HexplorerError(
            f"The 'namespace' parameter must be a non-empty name. Got {namespace!r}."
        )
    return namespace


def _floor(x: float, digits: int = 3) -> float:
    """``x`` rounded down to ``digits`` significant digits (a shown ε that surely fits).

    >>> _floor(0.74999), _floor(2.0)
    (0.749, 2.0)
    """
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return math.floor(x * scale * (1 + 1e-12)) / scale


class BudgetExceeded(HexplorerError):
    """A release would take some user past its namespace's budget; nothing was recorded.

    Attributes
    ----------
    over : numpy.ndarray
        Positions (in the release's user order) of the users who would pass the budget.
    n_users, largest, budget, namespace : the release's users, the largest ε one of them would
        reach, the budget and its namespace.
    epsilon_fit : float
        The largest ε of this request that would fit (0 when some user has no room left).
    hats_fit : (int, int) or None
        For a release of many HATs: how many of them hold none of the users in ``over`` (those
        HATs fit at this ε), out of how many.
    """

    def __init__(
        self,
        *,
        over: np.ndarray,
        n_users: int,
        largest: float,
        budget: float,
        namespace: str,
        epsilon_fit: float,
        hats_fit: tuple[int, int] | None = None,
    ) -> None:
        self.over = np.asarray(over)
        self.n_users = n_users
        self.largest = largest
        self.budget = budget
        self.namespace = namespace
        self.epsilon_fit = epsilon_fit
        self.hats_fit = hats_fit
        super().__init__(self._message())

    def _message(self) -> str:
        msg = (
            f"Refused: {self.over.size} of the {self.n_users} users of this release would pass "
            f"the budget eps = {self.budget:g} of namespace {self.namespace!r} (up to eps = "
            f"{self.largest:.6g}); nothing was recorded, no one was charged."
        )
        fits = []
        fit = _floor(self.epsilon_fit)
        if fit > 0:
            fits.append(f"eps <= {fit:g} would fit")
        if self.hats_fit is not None and self.hats_fit[0] > 0:
            k, n = self.hats_fit
            fits.append(f"{k} of the {n} HATs (those without these users) would fit")
        if fits:
            return msg + " " + "; or ".join(fits) + "."
        return msg + " No eps fits: some of these users have no budget left."

    def with_hats(self, fit: int, total: int) -> BudgetExceeded:
        """The same refusal, also naming the HATs that would fit."""
        return BudgetExceeded(
            over=self.over,
            n_users=self.n_users,
            largest=self.largest,
            budget=self.budget,
            namespace=self.namespace,
            epsilon_fit=self.epsilon_fit,
            hats_fit=(int(fit), int(total)),
        )


@dataclass(frozen=True, kw_only=True)
class Record:
    """One published release as the ledger holds it.

    Attributes
    ----------
    release_id : random hex id; request : the request key (JSON), unique in the ledger.
    kind : ``"hat"`` (one HAT, ``core.publish.single``) or ``"city"`` (``core.publish.city``).
    created : UTC time; namespace : the users' namespace.
    epsilon : ε of the request (per grid for a city release); accounting : how users were charged.
    n_users : users charged; max_charge : the largest ε charged to one user by this release.
    body : the released (noisy) values and how they were made, JSON-ready.
    """

    release_id: str
    request: str
    kind: str
    created: str
    namespace: str
    epsilon: float
    accounting: str
    n_users: int
    max_charge: float
    body: dict

    def release_fields(self) -> dict:
        """What every release's body says of how it was made — ``release_id``, ``created``,
        ``version``, ``mechanism``, ``epsilon``, ``accounting``, ``upper`` and
        ``privacy_loss`` — typed, as keywords for a release class. Raises KeyError, TypeError
        or ValueError on a damaged body (read it inside :meth:`damaged_body`)."""
        b = self.body
        return dict(
            release_id=self.release_id,
            created=str(b["created"]),
            version=str(b["version"]),
            mechanism=str(b["mechanism"]),
            epsilon=float(b["epsilon"]),
            accounting=str(b["accounting"]),
            upper=float(b["upper"]),
            privacy_loss=float(b["privacy_loss"]),
        )

    @contextlib.contextmanager
    def damaged_body(self, path: Path) -> Iterator[None]:
        """Read the body inside this: a missing or mistyped field of the ledger at ``path``
        becomes a one-line :class:`HexplorerError` naming the release."""
        try:
            yield
        except (KeyError, TypeError, ValueError) as exc:
            raise HexplorerError(
                f"Ledger {path} release {self.release_id} has a damaged body ({exc!r})."
            ) from None


@dataclass(frozen=True, kw_only=True)
class RecordedRelease:
    """A recorded release of many HATs (``core.publish.batch``, ``core.publish.city``): how it
    was made (:meth:`Record.release_fields`) and its noisy values per HAT (``table``).

    A subclass reads its own part of the body in :meth:`body_fields`.
    """

    release_id: str
    created: str
    version: str
    mechanism: str
    epsilon: float
    accounting: str
    upper: float
    privacy_loss: float
    table: pd.DataFrame

    @classmethod
    def from_record(cls, record: Record, path: Path) -> Self:
        """Read a record of this kind (a damaged body is a one-line error)."""
        with record.damaged_body(path):
            return cls(**record.release_fields(), **cls.body_fields(record.body))

    @classmethod
    def body_fields(cls, body: dict) -> dict:
        """The subclass's fields (``table`` and any other) from the record's body."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Summary:
    """The ledger at a glance (``hexplorer ledger``)."""

    releases: int
    users: int
    max_user_epsilon: float
    budget: float | None
    users_near_budget: int

    def as_dict(self) -> dict:
        return {
            "releases": self.releases,
            "users": self.users,
            "max_user_epsilon": self.max_user_epsilon,
            "budget": self.budget,
            "users_near_budget": self.users_near_budget,
        }


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What :meth:`Ledger.record_once` returns: the record, whether it was reused, the
    ledger's summary after it (largest cumulative ε of any user, users near the budget), and
    warnings for the operator (a new namespace for users charged in another one)."""

    record: Record
    reused: bool
    summary: Summary
    warnings: tuple[str, ...] = ()


# -------------------------------------------------------------------------------------------
# Single-HAT records (core.publish.single)

_KEY_FIELDS = ("fingerprint", "hat", "mechanism", "epsilon", "m_ub")
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "created": str,
    "fingerprint": str,
    "hat": (str, type(None)),
    "mechanism": str,
    "epsilon": float,
    "m_ub": (int, type(None)),
    "estimate": float,
    "sensitivity": float,
    "noise_scale": float,
    "n_arrays": (int, type(None)),
    "clip_interval": (list, type(None)),
    "threshold": (float, type(None)),
}


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One published single-HAT release (the body of a ``"hat"`` :class:`Record`).

    The key is (fingerprint, hat, mechanism, epsilon, m_ub); the rest is what was released.
    """

    created: str
    fingerprint: str
    hat: str | None
    mechanism: str
    epsilon: float
    m_ub: int | None
    estimate: float
    sensitivity: float
    noise_scale: float
    n_arrays: int | None
    clip_interval: list[float] | None
    threshold: float | None
    dataset: str | None = None
    sampler: str = ""
    laplace_epsilon: float | None = None
    note: str = ""
    upper: float | None = None
    version: str = ""
    release_id: str = ""

    @property
    def key(self) -> tuple:
        """(fingerprint, hat, mechanism, epsilon, m_ub)."""
        return tuple(getattr(self, f) for f in _KEY_FIELDS)

    @classmethod
    def from_record(cls, record: Record, path: Path) -> LedgerEntry:
        """Validate a ``"hat"`` record's body (a damaged one raises :class:`HexplorerError`)."""
        obj = dict(record.body)
        where = f"Ledger {path} release {record.release_id}"
        for name, types in _REQUIRED.items():
            if name not in obj:
                raise HexplorerError(f"{where} lacks the field {name!r}.")
            value = obj[name]
            if types is float and isinstance(value, int) and not isinstance(value, bool):
                obj[name] = value = float(value)
            if isinstance(value, bool) or not isinstance(value, types):
                raise HexplorerError(f"{where}: field {name!r} has a wrong type ({value!r}).")
        clip = obj["clip_interval"]
        if clip is not None and (
            len(clip) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in clip)
        ):
            raise HexplorerError(f"{where}: field 'clip_interval' must be two numbers ({clip!r}).")
        known = set(cls.__dataclass_fields__)
        obj["release_id"] = record.release_id
        return cls(**{k: v for k, v in obj.items() if k in known})

    def to_release(self) -> Release:
        """As a :class:`core.mechanisms.Release`; noiseless and true_mean are NaN (never stored)."""
        clip = None
        if self.clip_interval is not None:
            clip = (float(self.clip_interval[0]), float(self.clip_interval[1]))
        return Release(
            mechanism=self.mechanism,
            epsilon=self.epsilon,
            m_ub=self.m_ub,
            n_arrays=self.n_arrays,
            sensitivity=self.sensitivity,
            noise_scale=self.noise_scale,
            clip_interval=clip,
            threshold=self.threshold,
            noiseless=math.nan,
            estimate=self.estimate,
            true_mean=math.nan,
            note=self.note,
        )
