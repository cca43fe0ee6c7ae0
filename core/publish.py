"""Published releases: vetted Laplace noise, OS entropy, and a persistent ledger (SPEC section 7).

A *simulated* run (``core.mechanisms.release``, Monte Carlo, error curves) releases nothing and may
be seeded. A *published* release is different:

1. its Laplace noise comes from OpenDP's sampler (``opendp.measurements.make_laplace`` on a float
   atom domain with the absolute distance), which samples exactly on a discretised grid and so
   resists the floating-point attacks that break textbook ``numpy`` Laplace noise (Mironov 2012);
2. the mechanism's other randomness (PrivateInterval's bin, private quantiles) comes from a
   ``numpy`` Generator seeded from OS entropy; nothing is ever seeded by the user;
3. it is recorded, with its ε, in an append-only JSON-lines ledger;
4. the same request — same data fingerprint, HAT, mechanism, ε and m_UB — returns the recorded
   release instead of fresh noise (fresh noise on every rerun would let anyone average it away).

The ledger file (default ``~/.hexplorer/ledger.jsonl``; the ``HEXPLORER_LEDGER`` environment
variable or the ``ledger`` argument override it) holds one JSON object per line. It contains a
hash of each HAT's per-user summaries, so it is a private file: publish the estimates, not the
ledger. It never stores the noiseless value or the true mean.

The split between the mechanism and the noise uses :class:`core.mechanisms.Draws`:
``run_mechanism(..., size=1)`` gives the run's ``noiseless`` value (the clipped mean for the run's
privately chosen interval) and the Laplace ``noise_scale``; its own numpy Laplace draw is discarded
and replaced by OpenDP's.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import math
import os
import secrets
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import Release, resolve, run_mechanism

#: Environment variable that overrides the default ledger path.
LEDGER_ENV = "HEXPLORER_LEDGER"
#: Default ledger path (``~`` expanded at use).
DEFAULT_LEDGER = "~/.hexplorer/ledger.jsonl"
#: Version of the ledger line format.
LEDGER_VERSION = 1

_KEY_FIELDS = ("fingerprint", "hat", "mechanism", "epsilon", "m_ub")
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "version": int,
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


def ledger_path(ledger: str | os.PathLike | None = None) -> Path:
    """Where the ledger lives: ``ledger`` if given, else ``$HEXPLORER_LEDGER``, else the default.

    >>> str(ledger_path("/tmp/x.jsonl"))
    '/tmp/x.jsonl'
    """
    if ledger is None or str(ledger) == "":
        ledger = os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER
    return Path(ledger).expanduser()


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


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One published release as recorded in the ledger (one JSON line).

    The key is (fingerprint, hat, mechanism, epsilon, m_ub); the rest is what was released.
    """

    version: int
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

    @property
    def key(self) -> tuple:
        """(fingerprint, hat, mechanism, epsilon, m_ub)."""
        return tuple(getattr(self, f) for f in _KEY_FIELDS)

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


def _parse_line(line: str, path: Path, lineno: int) -> LedgerEntry:
    where = f"Ledger {path} line {lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise HexplorerError(
            f"{where} is not valid JSON ({exc.msg}); fix or move the file."
        ) from None
    if not isinstance(obj, dict):
        raise HexplorerError(f"{where} is not a JSON object; fix or move the file.")
    for name, types in _REQUIRED.items():
        if name not in obj:
            raise HexplorerError(f"{where} lacks the field {name!r}; fix or move the file.")
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
    if obj["version"] != LEDGER_VERSION:
        raise HexplorerError(f"{where}: unknown ledger version {obj['version']!r}.")
    known = set(LedgerEntry.__dataclass_fields__)
    try:
        return LedgerEntry(**{k: v for k, v in obj.items() if k in known})
    except TypeError as exc:
        raise HexplorerError(f"{where} is not a release record ({exc}).") from None


@dataclass(frozen=True, kw_only=True)
class Spent:
    """Total ε published for one (data fingerprint, HAT): basic composition, Σ ε of its releases."""

    fingerprint: str
    hat: str | None
    n_releases: int
    epsilon: float


class Ledger:
    """The append-only JSON-lines ledger of published releases (SPEC section 7).

    Parameters
    ----------
    path : str or path-like, optional
        Ledger file; default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.jsonl``.

    Reading validates every line: a corrupted line raises :class:`HexplorerError` naming the file
    and the line, rather than silently forgetting a release (which would hand out fresh noise).
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = ledger_path(path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def entries(self) -> list[LedgerEntry]:
        """Every recorded release, oldest first."""
        if not self.path.exists():
            return []
        with self.path.open("r", encoding="utf-8") as fh:
            return self._read(fh)

    def _read(self, fh) -> list[LedgerEntry]:
        fh.seek(0)
        out = []
        for lineno, line in enumerate(fh, start=1):
            if line.strip() == "":
                continue
            out.append(_parse_line(line, self.path, lineno))
        return out

    def find(self, key: tuple) -> LedgerEntry | None:
        """The recorded release with this (fingerprint, hat, mechanism, epsilon, m_ub), if any."""
        for entry in self.entries():
            if entry.key == key:
                return entry
        return None

    @contextlib.contextmanager
    def _locked(self) -> Iterator:
        """The ledger opened for reading and appending under an exclusive lock."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = self.path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise HexplorerError(f"Cannot open the ledger {self.path}: {exc.strerror}.") from None
        with fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield fh
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def record_once(self, key: tuple, make_entry) -> tuple[LedgerEntry, bool]:
        """The entry recorded under ``key``, or a new one from ``make_entry()``, appended.

        The check and the append happen under one exclusive file lock, so two processes asking
        for the same release at once draw noise only once. Returns (entry, reused).
        """
        with self._locked() as fh:
            for entry in self._read(fh):
                if entry.key == key:
                    return entry, True
            entry = make_entry()
            if entry.key != key:
                raise RuntimeError("ledger entry does not match its key")
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size > 0:
                fh.seek(size - 1)
                if fh.read(1) != "\n":
                    fh.write("\n")
            fh.write(json.dumps(asdict(entry), allow_nan=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            return entry, False

    def spent(self) -> list[Spent]:
        """Total ε published per (data fingerprint, HAT), in order of first release.

        Basic composition: the sum of the ε of the distinct recorded releases (a reused release
        costs nothing). Fingerprints of different data count separately.
        """
        totals: dict[tuple, list] = {}
        for e in self.entries():
            t = totals.setdefault((e.fingerprint, e.hat), [0, 0.0])
            t[0] += 1
            t[1] += e.epsilon
        return [
            Spent(fingerprint=f, hat=h, n_releases=n, epsilon=eps)
            for (f, h), (n, eps) in totals.items()
        ]

    def epsilon_spent(self, fingerprint: str, hat: str | None = None) -> float:
        """Σ ε recorded for ``fingerprint`` (restricted to one ``hat`` label if given)."""
        return float(
            sum(
                s.epsilon
                for s in self.spent()
                if s.fingerprint == fingerprint and (hat is None or s.hat == hat)
            )
        )


@dataclass(frozen=True, kw_only=True)
class Published:
    """What :func:`publish` returns.

    Attributes
    ----------
    release : core.mechanisms.Release
        The published values (``noiseless`` and ``true_mean`` are NaN: a published release
        never carries them).
    entry : LedgerEntry
        The ledger record.
    reused : bool
        True when the ledger already held this request and its recorded release was returned.
    ledger : pathlib.Path
        The ledger file.
    """

    release: Release
    entry: LedgerEntry
    reused: bool
    ledger: Path


def opendp_laplace(values, scale: float, sensitivity: float) -> tuple[np.ndarray, float]:
    """``values + Lap(scale)`` (independent per value) from OpenDP's vetted sampler, and its ε.

    Uses ``make_laplace`` on ``vector_domain(atom_domain(T=float, nan=False))`` with the
    ``l1_distance`` (OpenDP 0.16, "contrib" features); a published release passes one value.
    The randomness is OpenDP's own (OS entropy), never seeded here. The returned ε is OpenDP's
    privacy map at ``sensitivity`` (the Laplace step's share of the budget).

    Raises
    ------
    HexplorerError
        If a value or the scale is not finite, or the scale is negative.
    """
    import opendp.prelude as dp

    x = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if not (np.all(np.isfinite(x)) and math.isfinite(scale) and scale >= 0):
        raise HexplorerError(
            f"Cannot publish values with noise scale {scale!r}: values and scale must be finite, "
            "the scale >= 0."
        )
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.l1_distance(T=float),
        scale=float(scale),
    )
    eps = float(meas.map(float(sensitivity))) if scale > 0 or sensitivity == 0 else math.inf
    return np.asarray(meas(x.tolist()), dtype=np.float64), eps


def _sampler_name() -> str:
    try:
        version = metadata.version("opendp")
    except metadata.PackageNotFoundError:  # pragma: no cover - opendp is a dependency
        version = "?"
    return f"opendp {version} measurements.make_laplace (float vector, L1 distance)"


def publish(
    mechanism: str,
    hat: HatData,
    epsilon: float,
    *,
    m_ub: int | None = None,
    dataset: str | None = None,
    ledger: str | os.PathLike | Ledger | None = None,
) -> Published:
    """Publish one release of ``mechanism`` on ``hat`` with privacy loss ``epsilon`` (SPEC §7).

    Parameters
    ----------
    mechanism : str
        A name from ``core.mechanisms.MECHANISMS``.
    hat : HatData
    epsilon : float
        Total privacy loss of the release (> 0).
    m_ub : int, optional
        Overrides the mechanism's default m_UB (resolved before the ledger lookup, so asking
        with the default explicitly or implicitly is the same request).
    dataset : str, optional
        A label of where the data came from (recorded, not part of the key: the key uses the
        content fingerprint, so a renamed file does not get fresh noise).
    ledger : path, Ledger or None
        The ledger (default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.jsonl``).

    Returns
    -------
    Published
        ``reused`` is True when the same request was found in the ledger; its recorded release
        is returned and no new noise is drawn (and no new ε spent).

    Raises
    ------
    HexplorerError
        Bad input (as ``run_mechanism``), a corrupted ledger line, an unwritable ledger.
    NotApplicableError
        No array can be formed.
    """
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    mech, epsilon, m_ub_resolved, _ = resolve(mechanism, hat, epsilon, m_ub)
    fp = fingerprint(hat)
    key = (fp, hat.hat, mech.name, epsilon, m_ub_resolved)

    def make_entry() -> LedgerEntry:
        # Non-Laplace randomness (interval selection) from OS entropy, never a user seed.
        rng = np.random.default_rng(secrets.randbits(128))
        draws = run_mechanism(mech.name, hat, epsilon, m_ub=m_ub_resolved, rng=rng, size=1)
        noiseless = float(draws.noiseless[0])
        scale = float(draws.noise_scale[0])
        sens = float(draws.sensitivity[0])
        noisy, lap_eps = opendp_laplace([noiseless], scale, sens)
        estimate = float(noisy[0])
        budget = epsilon * mech.laplace_share
        if lap_eps > budget * (1.0 + 1e-9):
            raise HexplorerError(
                f"Refusing to publish: OpenDP charges eps={lap_eps!r} for the Laplace step of "
                f"{mech.name}, more than its share of the requested epsilon ({budget!r})."
            )
        clip = None
        if draws.clip_lo is not None and draws.clip_hi is not None:
            clip = [float(draws.clip_lo[0]), float(draws.clip_hi[0])]
        return LedgerEntry(
            version=LEDGER_VERSION,
            created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            fingerprint=fp,
            hat=hat.hat,
            mechanism=mech.name,
            epsilon=epsilon,
            m_ub=m_ub_resolved,
            estimate=estimate,
            sensitivity=sens,
            noise_scale=scale,
            n_arrays=None if draws.n_arrays is None else int(draws.n_arrays),
            clip_interval=clip,
            threshold=None if draws.threshold is None else float(draws.threshold[0]),
            dataset=dataset,
            sampler=_sampler_name(),
            laplace_epsilon=lap_eps,
            note=draws.note,
        )

    entry, reused = book.record_once(key, make_entry)
    return Published(release=entry.to_release(), entry=entry, reused=reused, ledger=book.path)
