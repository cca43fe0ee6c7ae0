"""The ledger of published releases (SPEC section 7).

The ledger file (default ``~/.hexplorer/ledger.jsonl``; the ``HEXPLORER_LEDGER`` environment
variable or the ``ledger`` argument override it) holds one JSON object per line. It contains a
hash of each HAT's per-user summaries, so it is a private file: publish the estimates, not the
ledger. It never stores the noiseless value or the true mean.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import Release

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
