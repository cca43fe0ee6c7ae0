"""Publishing every HAT at once (``hexplorer release --all`` without ``--seed``): SPEC §3, §5, §7.

Each HAT gets the published single-HAT release of :mod:`core.publish.single` — the mechanism's
value before noise at its default m_UB, plus Laplace noise from OpenDP's vetted sampler
(:mod:`core.publish.noise`) — computed for all HATs together:

- the values before noise, sensitivities and Laplace scales of the vectorised mechanisms come
  from :mod:`core.citywide.batch` in one pass; the mechanisms with a private interval or
  threshold run :func:`core.mechanisms.run_mechanism` per HAT with OS entropy, as a single
  published release does (never a user's seed);
- the noise is drawn by OpenDP with one measurement per distinct scale, and OpenDP's privacy
  map must grant at most the mechanism's Laplace share of ε at the largest sensitivity of the
  HATs sharing that scale (else nothing is recorded).

Accounting (SPEC §5; [2], Theorem II.3, per-user form): the HATs of a release are disjoint sets
of records and each HAT's release is ε-DP and reads only its own records, so a user whose
records enter k of the released HATs loses ``k ε``:

- ``"per-user"``: each user is charged ``k_ℓ ε`` (a user in one HAT pays ε, as for a
  single-HAT release);
- ``"max"``: every user is charged ``ε max_ℓ k_ℓ``, the release's guarantee.

The whole release is one ledger record (kind ``"hats"``), keyed by the fingerprint of every
HAT's per-user summaries, the mechanism, ε and the accounting: asking again returns the recorded
values, no fresh noise and no new charge. The record holds the noisy values only, never a value
before noise or a true mean.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.citywide import batch as batch_module
from core.citywide.batch import HatBatch
from core.errors import HexplorerError
from core.mechanisms import MECHANISMS, Mechanism, get_mechanism, resolve, run_mechanism
from core.params import check_epsilon
from core.publish.ledger import ID_FORM, Ledger
from core.publish.noise import opendp_laplace, sampler_name
from core.publish.records import (
    BudgetExceeded,
    Record,
    RecordedRelease,
    Summary,
    check_namespace,
    now,
)
from core.version import software_version

#: The accountings of an every-HAT release (see the module docstring).
BATCH_ACCOUNTINGS = ("per-user", "max")
#: The ledger kind of an every-HAT release.
KIND = "hats"
#: Columns of the published table, one row per HAT (no value before noise, no true mean).
PUBLISHED_COLUMNS = [
    "hat",
    "mechanism",
    "epsilon",
    "m_ub",
    "n_arrays",
    "sensitivity",
    "noise_scale",
    "estimate",
]

__all__ = [
    "BATCH_ACCOUNTINGS",
    "PUBLISHED_COLUMNS",
    "HatsRelease",
    "PublishedHats",
    "batch_fingerprint",
    "draw_estimates",
    "hats_per_user",
    "publish_all",
    "user_charges",
]


def batch_fingerprint(batch: HatBatch) -> str:
    """SHA-256 (hex) of everything the mechanisms read: U, HAT labels, segments, user ids, m, s.

    >>> df = pd.DataFrame({"hat": ["a/s", "a/s"], "user_id": ["x", "y"], "m": [1, 2],
    ...     "s": [3.0, 4.0]})
    >>> len(batch_fingerprint(HatBatch.from_summaries(df, upper=10.0)))
    64
    """
    h = hashlib.sha256()
    h.update(f"hexplorer-hats-v1|U={float(batch.upper)!r}|".encode())
    for labels in (batch.hats, batch.user_ids):
        h.update("\x1f".join(str(v) for v in labels).encode() + b"|")
    for arr in (batch.offsets, batch.counts):
        h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes() + b"|")
    h.update(np.ascontiguousarray(batch.sums, dtype="<f8").tobytes())
    return h.hexdigest()


def hats_per_user(batch: HatBatch) -> tuple[np.ndarray, np.ndarray]:
    """(distinct user ids, k_ℓ: the number of HATs of ``batch`` each user's records enter).

    >>> df = pd.DataFrame({"hat": ["a/s", "a/s", "b/s"], "user_id": ["x", "y", "x"],
    ...     "m": [1, 1, 1], "s": [0.0, 0.0, 0.0]})
    >>> ids, k = hats_per_user(HatBatch.from_summaries(df))
    >>> ids.tolist(), k.tolist()
    (['x', 'y'], [2, 1])
    """
    ids, k = np.unique(batch.user_ids, return_counts=True)  # one row per (HAT, user)
    return ids, k.astype(np.int64)


def user_charges(batch: HatBatch, epsilon: float, accounting: str) -> tuple[np.ndarray, np.ndarray]:
    """(distinct user ids, ε charged to each) by an every-HAT release at per-HAT ε.

    >>> df = pd.DataFrame({"hat": ["a/s", "a/s", "b/s"], "user_id": ["x", "y", "x"],
    ...     "m": [1, 1, 1], "s": [0.0, 0.0, 0.0]})
    >>> b = HatBatch.from_summaries(df)
    >>> user_charges(b, 0.5, "per-user")[1].tolist(), user_charges(b, 0.5, "max")[1].tolist()
    ([1.0, 0.5], [1.0, 1.0])
    """
    eps = check_epsilon(epsilon)
    _check_accounting(accounting)
    ids, k = hats_per_user(batch)
    if accounting == "per-user":
        return ids, k * eps
    return ids, np.full(ids.size, float(k.max()) * eps)


def _check_accounting(accounting: str) -> str:
    if accounting not in BATCH_ACCOUNTINGS:
        raise HexplorerError(
            f"The 'accounting' parameter must be one of {', '.join(BATCH_ACCOUNTINGS)}. "
            f"Got {accounting!r} instead."
        )
    return accounting


@dataclass(frozen=True, kw_only=True, eq=False)
class _BeforeNoise:
    """Per HAT: the value before noise, its sensitivity and Laplace scale, m_UB and K̄ (-1
    where the mechanism has none)."""

    noiseless: np.ndarray
    sensitivity: np.ndarray
    noise_scale: np.ndarray
    m_ub: np.ndarray
    n_arrays: np.ndarray


def _before_noise(name: str, batch: HatBatch, epsilon: float) -> _BeforeNoise:
    if MECHANISMS[name].release_all is not None:
        parts = batch_module._vectorised(name, batch, epsilon)
        return _BeforeNoise(
            noiseless=parts.noiseless,
            sensitivity=parts.sensitivity,
            noise_scale=parts.noise_scale,
            m_ub=parts.m_ub,
            n_arrays=parts.n_arrays,
        )
    # a private interval or threshold per HAT: OS entropy, as a single published release
    rng = np.random.default_rng(secrets.randbits(128))
    out = {k: np.empty(batch.n_hats) for k in ("noiseless", "sensitivity", "noise_scale")}
    m_ub = np.full(batch.n_hats, -1, dtype=np.int64)
    n_arrays = np.full(batch.n_hats, -1, dtype=np.int64)
    for h in range(batch.n_hats):
        hat = batch.hat_data(h)
        _, eps, m, _ = resolve(name, hat, epsilon)
        draws = run_mechanism(name, hat, eps, m_ub=m, rng=rng, size=1)
        out["noiseless"][h] = draws.noiseless[0]
        out["sensitivity"][h] = draws.sensitivity[0]
        out["noise_scale"][h] = draws.noise_scale[0]
        m_ub[h] = -1 if m is None else m
        n_arrays[h] = -1 if draws.n_arrays is None else int(draws.n_arrays)
    return _BeforeNoise(m_ub=m_ub, n_arrays=n_arrays, **out)


def draw_estimates(
    name: str, batch: HatBatch, epsilon: float, *, size: int | None = None
) -> tuple[np.ndarray, _BeforeNoise]:
    """Every HAT's published estimate: the value before noise plus OpenDP's Laplace noise.

    One OpenDP measurement per distinct noise scale; its privacy map at the largest sensitivity
    of the HATs with that scale must be at most the mechanism's Laplace share of ε. ``size``
    draws independent runs of the noise (shape ``(size, H)``, for the privacy tests; a
    publication draws one, shape ``(H,)``).

    Raises
    ------
    HexplorerError
        A scale OpenDP prices above the Laplace share, or non-finite values.
    """
    mech = get_mechanism(name)
    eps = check_epsilon(epsilon)
    parts = _before_noise(mech.name, batch, eps)
    return _with_noise(mech.name, parts, eps, size), parts


def _with_noise(name: str, parts: _BeforeNoise, eps: float, size: int | None) -> np.ndarray:
    """The values before noise plus OpenDP's Laplace noise (:func:`draw_estimates`)."""
    mech = get_mechanism(name)
    share = eps * mech.laplace_share
    n_hats = parts.noiseless.size
    shape = (n_hats,) if size is None else (int(size), n_hats)
    values = np.broadcast_to(parts.noiseless, shape).copy()
    out = np.empty_like(values)
    scales, inverse = np.unique(parts.noise_scale, return_inverse=True)
    for i, scale in enumerate(scales.tolist()):
        cols = np.flatnonzero(inverse == i)
        sens = float(parts.sensitivity[cols].max())
        noisy, lap_eps = opendp_laplace(values[..., cols].ravel(), scale, sens)
        if lap_eps > share * (1.0 + 1e-9):
            raise HexplorerError(
                f"Refusing to publish: OpenDP charges eps={lap_eps!r} for the Laplace step of "
                f"{mech.name} in a HAT, more than its share of the requested epsilon ({share!r})."
            )
        out[..., cols] = noisy.reshape(values[..., cols].shape)
    return out


@dataclass(frozen=True, kw_only=True)
class HatsRelease(RecordedRelease):
    """A recorded every-HAT release: the noisy value of each HAT and how it was made.

    ``table`` has columns :data:`PUBLISHED_COLUMNS`, one row per HAT (m_ub, n_arrays -1 where
    the mechanism has none): the raw noisy values as drawn (the published files clamp them
    into [0, U], ``core.publish.files``), never a value before noise or a true mean.
    """

    @classmethod
    def body_fields(cls, body: dict) -> dict:
        h = body["hats"]
        table = pd.DataFrame(
            {
                "hat": [str(v) for v in h["hat"]],
                "mechanism": str(body["mechanism"]),
                "epsilon": float(body["epsilon"]),
                "m_ub": np.asarray(h["m_ub"], dtype=np.int64),
                "n_arrays": np.asarray(h["n_arrays"], dtype=np.int64),
                "sensitivity": np.asarray(h["sensitivity"], dtype=np.float64),
                "noise_scale": np.asarray(h["noise_scale"], dtype=np.float64),
                "estimate": np.asarray(h["estimate"], dtype=np.float64),
            }
        )
        return {"table": table[PUBLISHED_COLUMNS]}


@dataclass(frozen=True, kw_only=True)
class PublishedHats:
    """What :func:`publish_all` returns: the release, whether it was reused (the same request
    was recorded before: its values, no new noise or charge), the ledger and its summary after."""

    release: HatsRelease
    record: Record
    reused: bool
    ledger: Path
    summary: Summary
    warnings: tuple[str, ...] = ()


def checked_request(
    name: str,
    epsilon: float,
    accounting: str,
    namespace: str | None,
    ledger: str | os.PathLike | Ledger | None,
) -> tuple[Mechanism, float, str, Ledger]:
    """An every-HAT release's inputs checked (one clear error each): the mechanism, ε, the
    namespace and the ledger opened (or the one given)."""
    mech = get_mechanism(name)
    eps = check_epsilon(epsilon)
    _check_accounting(accounting)
    ns = check_namespace(namespace)
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    return mech, eps, ns, book


def hats_holding(batch: HatBatch, users: np.ndarray) -> int:
    """How many HATs of ``batch`` hold at least one of ``users`` (what a refusal names: the
    HATs that would still fit are the others)."""
    hat_of_row = np.repeat(np.arange(batch.n_hats), np.diff(batch.offsets))
    return int(np.unique(hat_of_row[np.isin(batch.user_ids, users)]).size)


def request_key(fp: str, mechanism: str, epsilon: float, accounting: str) -> str:
    """The ledger's request key of an every-HAT release (JSON text)."""
    return json.dumps([KIND, fp, mechanism, epsilon, accounting])


def publish_all(
    name: str,
    batch: HatBatch,
    epsilon: float,
    *,
    accounting: str = "per-user",
    dataset: str | None = None,
    ledger: str | os.PathLike | Ledger | None = None,
    namespace: str | None = None,
    budget: float | None = None,
    before_commit: Callable[[HatsRelease], None] | None = None,
    id_form: str = ID_FORM,
) -> PublishedHats:
    """Publish one release of mechanism ``name`` for every HAT of ``batch`` at per-HAT ε.

    Parameters
    ----------
    name : str
        A mechanism of :data:`core.mechanisms.MECHANISMS`; each HAT uses its default m_UB.
    batch : HatBatch
        The HATs to publish (select rows of the summaries first for a slot or a day).
    epsilon : float
        Privacy loss of each HAT's release.
    accounting : ``"per-user"`` (k_ℓ ε each) or ``"max"`` (ε max k_ℓ each).
    dataset, ledger, namespace, budget, before_commit, id_form : as :func:`core.publish.single.publish`
        (``before_commit`` gets the :class:`HatsRelease`).

    Returns
    -------
    PublishedHats
        The recorded values (a reused record when the same request was recorded), never a
        value before noise or a true mean.

    Raises
    ------
    BudgetExceeded
        The release would take some user past the budget; nothing recorded. It names the
        largest ε that fits and how many HATs hold none of the users past the budget.
    HexplorerError
        Bad input, a damaged or unwritable ledger, a scale OpenDP prices too high.
    """
    mech, eps, ns, book = checked_request(name, epsilon, accounting, namespace, ledger)
    fp = book.seal(batch_fingerprint(batch))  # keyed: no unkeyed digest of true values
    ids, charges = user_charges(batch, eps, accounting)
    return record_hats(
        book,
        mech.name,
        eps,
        accounting,
        namespace=ns,
        fingerprint=fp,
        ids=ids,
        charges=charges,
        hats=batch.hats,
        upper=batch.upper,
        noisy=lambda: draw_estimates(mech.name, batch, eps),
        blocked=lambda over: hats_holding(batch, over),
        dataset=dataset,
        budget=budget,
        before_commit=before_commit,
        id_form=id_form,
    )


def record_hats(
    book: Ledger,
    mechanism: str,
    eps: float,
    accounting: str,
    *,
    namespace: str,
    fingerprint: str,
    ids: np.ndarray,
    charges: np.ndarray,
    hats: np.ndarray,
    upper: float | None,
    noisy: Callable[[], tuple[np.ndarray, Any]],
    blocked: Callable[[np.ndarray], int],
    dataset: str | None,
    budget: float | None,
    before_commit: Callable[[HatsRelease], None] | None,
    id_form: str,
) -> PublishedHats:
    """Record one every-HAT release in one ledger transaction (:func:`publish_all` and
    :func:`core.publish.parts.publish_parts`): ``noisy()`` draws the estimates and their
    per-HAT parameters (m_ub, n_arrays, sensitivity, noise_scale) only if the budget holds;
    ``blocked(over)`` counts the HATs that hold a user of ``over`` (for the refusal's message)."""

    def draw() -> dict:
        estimate, parts = noisy()
        return {
            "created": now(),
            "version": software_version(),
            "mechanism": mechanism,
            "epsilon": eps,
            "accounting": accounting,
            "upper": upper,
            "privacy_loss": float(charges.max()),
            "fingerprint": fingerprint,
            "dataset": dataset,
            "sampler": sampler_name(),
            "hats": {
                "hat": hats.astype(str).tolist(),
                "m_ub": parts.m_ub.tolist(),
                "n_arrays": parts.n_arrays.tolist(),
                "sensitivity": parts.sensitivity.tolist(),
                "noise_scale": parts.noise_scale.tolist(),
                "estimate": estimate.tolist(),
            },
        }

    try:
        outcome = book.record_once(
            request=request_key(fingerprint, mechanism, eps, accounting),
            kind=KIND,
            namespace=namespace,
            epsilon=eps,
            accounting=accounting,
            user_ids=ids.tolist(),
            charges=charges,
            draw=draw,
            budget=budget,
            id_form=id_form,
            before_commit=None
            if before_commit is None
            else lambda record: before_commit(HatsRelease.from_record(record, book.path)),
        )
    except BudgetExceeded as exc:
        raise exc.with_hats(hats.size - blocked(ids[exc.over]), hats.size) from None
    return PublishedHats(
        release=HatsRelease.from_record(outcome.record, book.path),
        record=outcome.record,
        reused=outcome.reused,
        ledger=book.path,
        summary=outcome.summary,
        warnings=outcome.warnings,
    )
