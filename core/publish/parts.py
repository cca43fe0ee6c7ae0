"""Publishing every HAT of summaries that come in parts (a summaries dataset), part by part.

:func:`core.publish.batch.publish_all` holds every (HAT, user) row at once; at 10⁸ records that
is tens of millions of rows. :func:`publish_parts` reads the parts one at a time and keeps only
what is small: per HAT the value before noise, its sensitivity and scale (what a release
records anyway), and per user the number of HATs its records enter (the charge). The release
is then recorded exactly as :func:`publish_all` records it, all or nothing, in ONE ledger
transaction: the same request key (the fingerprint of every HAT's summaries, computed part by
part into the same SHA-256 as :func:`core.publish.batch.batch_fingerprint` of the whole, so
the same summaries as one file or as a dataset are one request), the same charges, the same
noise draw (OpenDP, one measurement per scale), the same published table.

The parts must hold whole HATs in ascending HAT order across parts (a dataset
``hexplorer prepare`` writes); :func:`parts_in_order` tells whether a dataset's are.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import polars as pl

from core.citywide.batch import HatBatch
from core.errors import HexplorerError
from core.publish.batch import (
    HatsRelease,
    PublishedHats,
    _before_noise,
    _BeforeNoise,
    _with_noise,
    checked_request,
    hats_holding,
    hats_per_user,
    record_hats,
)
from core.publish.ledger import ID_FORM, Ledger

__all__ = ["publish_parts"]


class _Gathered:
    """What one pass over the parts keeps: the fingerprint's pieces (the HAT labels and
    lengths in memory, user ids, counts and sums in temporary files), the values before noise
    and each user's number of HATs."""

    def __init__(self, folder: Path) -> None:
        self.hats: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.before: list[_BeforeNoise] = []
        self.users: list[pl.DataFrame] = []
        self.files = {k: open(folder / k, "wb") for k in ("ids", "counts", "sums")}  # noqa: SIM115
        self.upper: float | None = None
        self.last: str | None = None

    def add(self, name: str, batch: HatBatch, eps: float) -> None:
        if batch.n_hats == 0:
            return
        if self.last is not None and not str(batch.hats[0]) > self.last:
            raise HexplorerError(
                "The parts' HATs are not in ascending order across parts: publish them whole."
            )
        self.last = str(batch.hats[-1])
        self.upper = batch.upper
        self.hats.append(batch.hats)
        self.lengths.append(batch.lengths)
        ids = batch.user_ids
        joined = "\x1f".join(ids.tolist()).encode()
        self.files["ids"].write((b"\x1f" if self.files["ids"].tell() else b"") + joined)
        self.files["counts"].write(np.ascontiguousarray(batch.counts, dtype="<i8").tobytes())
        self.files["sums"].write(np.ascontiguousarray(batch.sums, dtype="<f8").tobytes())
        self.before.append(_before_noise(name, batch, eps))
        distinct, k = hats_per_user(batch)
        self.users.append(pl.DataFrame({"id": distinct, "k": k}))

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()

    def fingerprint(self) -> str:
        """:func:`core.publish.batch.batch_fingerprint` of the parts put together."""
        h = hashlib.sha256()
        h.update(f"hexplorer-hats-v1|U={float(self.upper or 0.0)!r}|".encode())
        hats = np.concatenate(self.hats)
        h.update("\x1f".join(str(v) for v in hats.tolist()).encode() + b"|")
        _stream(h, self.files["ids"].name)
        h.update(b"|")
        offsets = np.concatenate(([0], np.cumsum(np.concatenate(self.lengths))))
        h.update(np.ascontiguousarray(offsets, dtype="<i8").tobytes() + b"|")
        _stream(h, self.files["counts"].name)
        h.update(b"|")
        _stream(h, self.files["sums"].name)
        return h.hexdigest()

    def charges(self, eps: float, accounting: str) -> tuple[np.ndarray, np.ndarray]:
        """(distinct user ids in sorted order, ε charged), as :func:`user_charges` of the whole."""
        k = pl.concat(self.users).group_by("id").agg(pl.col("k").sum()).sort("id")
        ids = k.get_column("id").to_numpy().astype(str)
        counts = k.get_column("k").to_numpy().astype(np.int64)
        if accounting == "per-user":
            return ids, counts * eps
        return ids, np.full(ids.size, float(counts.max()) * eps)

    def before_noise(self) -> _BeforeNoise:
        return _BeforeNoise(
            **{
                f: np.concatenate([getattr(b, f) for b in self.before])
                for f in ("noiseless", "sensitivity", "noise_scale", "m_ub", "n_arrays")
            }
        )


def _stream(h: hashlib._Hash, path: str, size: int = 1 << 24) -> None:
    with open(path, "rb") as handle:
        while chunk := handle.read(size):
            h.update(chunk)


def publish_parts(
    name: str,
    parts: Callable[[], Iterable[HatBatch]],
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
    """:func:`core.publish.batch.publish_all` of the HATs of every part of ``parts()`` (a
    function giving a fresh iterator of :class:`HatBatch`, whole HATs in ascending order),
    reading one part at a time. Same parameters, record, charges and errors; one ledger
    transaction for the whole release (nothing recorded if any part is refused)."""
    mech, eps, ns, book = checked_request(name, epsilon, accounting, namespace, ledger)
    with tempfile.TemporaryDirectory(prefix="hexplorer-publish-") as folder:
        gathered = _Gathered(Path(folder))
        try:
            for batch in parts():
                gathered.add(mech.name, batch, eps)
        finally:
            gathered.close()
        if not gathered.hats:
            raise HexplorerError("There are no HATs to release: the summaries are empty.")
        fp = book.seal(gathered.fingerprint())
    ids, charges = gathered.charges(eps, accounting)
    hats = np.concatenate(gathered.hats)
    before = gathered.before_noise()
    upper = gathered.upper
    del gathered

    def blocked(over: np.ndarray) -> int:
        # a second pass, only to say how many HATs stay publishable
        return sum(hats_holding(batch, over) for batch in parts())

    return record_hats(
        book,
        mech.name,
        eps,
        accounting,
        namespace=ns,
        fingerprint=fp,
        ids=ids,
        charges=charges,
        hats=hats,
        upper=upper,
        noisy=lambda: (_with_noise(mech.name, before, eps, None), before),
        blocked=blocked,
        dataset=dataset,
        budget=budget,
        before_commit=before_commit,
        id_form=id_form,
    )
