"""Publishing one HAT's release: mechanism, OpenDP noise, ledger (SPEC section 7).

The split between the mechanism and the noise uses :class:`core.mechanisms.Draws`:
``run_mechanism(..., size=1)`` gives the run's ``noiseless`` value (the clipped mean for the run's
privately chosen interval) and the Laplace ``noise_scale``; its own numpy Laplace draw is discarded
and replaced by OpenDP's.

Every user of the HAT is charged ε in the ledger (user-level DP: the whole release is ε-DP for
each of its L users), whatever the HAT's label, so the same fleet released at another H3
resolution, slot or U adds up per user.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import HexplorerError
from core.hat import HatData
from core.mechanisms import Release, resolve, run_mechanism
from core.publish.ledger import ID_FORM, Ledger
from core.publish.noise import opendp_laplace, sampler_name
from core.publish.records import (
    LedgerEntry,
    Record,
    Summary,
    check_namespace,
    fingerprint,
    now,
)
from core.version import software_version

#: The accounting label of a single-HAT release: ε charged to each of its users.
SINGLE_ACCOUNTING = "single-hat"


@dataclass(frozen=True, kw_only=True)
class Published:
    """What :func:`publish` returns.

    Attributes
    ----------
    release : core.mechanisms.Release
        The published values (``noiseless`` and ``true_mean`` are NaN: a published release
        never carries them).
    entry : LedgerEntry
        The recorded release.
    record : Record
        The ledger's record (release id, namespace, charges' summary).
    reused : bool
        True when the ledger already held this request and its recorded release was returned.
    ledger : pathlib.Path
        The ledger file.
    summary : Summary
        The ledger after this request: largest cumulative ε of any user, users near the budget.
    warnings : tuple of str
        For the operator: e.g. a new namespace opened for users charged in another one.
    """

    release: Release
    entry: LedgerEntry
    record: Record
    reused: bool
    ledger: Path
    summary: Summary
    warnings: tuple[str, ...] = ()

    @property
    def release_id(self) -> str:
        return self.record.release_id


def request_key(fp: str, hat: str | None, mechanism: str, epsilon: float, m_ub) -> str:
    """The ledger's request key of a single-HAT release (JSON text)."""
    return json.dumps(["hat", fp, hat, mechanism, epsilon, m_ub])


def publish(
    mechanism: str,
    hat: HatData,
    epsilon: float,
    *,
    m_ub: int | None = None,
    dataset: str | None = None,
    ledger: str | os.PathLike | Ledger | None = None,
    namespace: str | None = None,
    budget: float | None = None,
    before_commit: Callable[[LedgerEntry], None] | None = None,
    id_form: str = ID_FORM,
) -> Published:
    """Publish one release of ``mechanism`` on ``hat`` with privacy loss ``epsilon`` (SPEC §7).

    Parameters
    ----------
    mechanism : str
        A name from ``core.mechanisms.MECHANISMS``.
    hat : HatData
    epsilon : float
        Total privacy loss of the release (> 0), charged to each of the HAT's users.
    m_ub : int, optional
        Overrides the mechanism's default m_UB (resolved before the ledger lookup, so asking
        with the default explicitly or implicitly is the same request).
    dataset : str, optional
        A label of where the data came from (recorded, not part of the key: the key uses the
        content fingerprint, so a renamed file does not get fresh noise).
    ledger : path, Ledger or None
        The ledger (default ``$HEXPLORER_LEDGER`` or ``~/.hexplorer/ledger.sqlite``).
    namespace : str, optional
        The users' namespace in the ledger (default ``"default"``).
    budget : float, optional
        Confirm or lower the namespace's budget (the first one sets it; a higher one is refused:
        raising is the operator's, ``Ledger.set_budget``) before checking this request.
    id_form : str
        How the ids were canonicalised (``"keep"`` or ``"casefold"``, ``core.data``): a
        namespace accepts releases of one form only (:meth:`Ledger.record_once`).
    before_commit : callable, optional
        Called with the recorded entry inside the ledger's transaction (e.g. to write the output
        file to a temporary name): if it raises, nothing is recorded.

    Returns
    -------
    Published
        ``reused`` is True when the same request was found in the ledger; its recorded release
        is returned and no new noise is drawn (and no new ε spent).

    Raises
    ------
    BudgetExceeded
        The release would take some user past the budget; nothing recorded.
    HexplorerError
        Bad input (as ``run_mechanism``), a damaged ledger, an unwritable ledger.
    NotApplicableError
        No array can be formed.
    """
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    mech, epsilon, m_ub_resolved, _ = resolve(mechanism, hat, epsilon, m_ub)
    ns = check_namespace(namespace)
    fp = book.seal(fingerprint(hat))  # keyed: no unkeyed digest of true values is stored
    request = request_key(fp, hat.hat, mech.name, epsilon, m_ub_resolved)

    def draw() -> dict:
        # Non-Laplace randomness (interval selection) from OS entropy, never a user seed.
        rng = np.random.default_rng(secrets.randbits(128))
        draws = run_mechanism(mech.name, hat, epsilon, m_ub=m_ub_resolved, rng=rng, size=1)
        noiseless = float(draws.noiseless[0])
        scale = float(draws.noise_scale[0])
        sens = float(draws.sensitivity[0])
        noisy, lap_eps = opendp_laplace([noiseless], scale, sens)
        share = epsilon * mech.laplace_share
        if lap_eps > share * (1.0 + 1e-9):
            raise HexplorerError(
                f"Refusing to publish: OpenDP charges eps={lap_eps!r} for the Laplace step of "
                f"{mech.name}, more than its share of the requested epsilon ({share!r})."
            )
        clip = None
        if draws.clip_lo is not None and draws.clip_hi is not None:
            clip = [float(draws.clip_lo[0]), float(draws.clip_hi[0])]
        return {
            "created": now(),
            "fingerprint": fp,
            "hat": hat.hat,
            "mechanism": mech.name,
            "epsilon": epsilon,
            "m_ub": m_ub_resolved,
            "estimate": float(noisy[0]),
            "sensitivity": sens,
            "noise_scale": scale,
            "n_arrays": None if draws.n_arrays is None else int(draws.n_arrays),
            "clip_interval": clip,
            "threshold": None if draws.threshold is None else float(draws.threshold[0]),
            "dataset": dataset,
            "sampler": sampler_name(),
            "laplace_epsilon": lap_eps,
            "note": draws.note,
            "upper": hat.upper,
            "version": software_version(),
        }

    outcome = book.record_once(
        request=request,
        kind="hat",
        namespace=ns,
        epsilon=epsilon,
        accounting=SINGLE_ACCOUNTING,
        user_ids=[str(u) for u in hat.user_ids],
        charges=np.full(hat.n_users, epsilon),
        draw=draw,
        budget=budget,
        id_form=id_form,
        before_commit=None
        if before_commit is None
        else lambda record: before_commit(LedgerEntry.from_record(record, book.path)),
    )
    entry = LedgerEntry.from_record(outcome.record, book.path)
    return Published(
        release=entry.to_release(),
        entry=entry,
        record=outcome.record,
        reused=outcome.reused,
        ledger=book.path,
        summary=outcome.summary,
        warnings=outcome.warnings,
    )
