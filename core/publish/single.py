"""Publishing one HAT's release: mechanism, OpenDP noise, ledger (SPEC section 7).

The split between the mechanism and the noise uses :class:`core.mechanisms.Draws`:
``run_mechanism(..., size=1)`` gives the run's ``noiseless`` value (the clipped mean for the run's
privately chosen interval) and the Laplace ``noise_scale``; its own numpy Laplace draw is discarded
and replaced by OpenDP's.
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import Release, resolve, run_mechanism
from core.publish.ledger import LEDGER_VERSION, Ledger, LedgerEntry, fingerprint
from core.publish.noise import opendp_laplace, sampler_name


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
            sampler=sampler_name(),
            laplace_epsilon=lap_eps,
            note=draws.note,
        )

    entry, reused = book.record_once(key, make_entry)
    return Published(release=entry.to_release(), entry=entry, reused=reused, ledger=book.path)
