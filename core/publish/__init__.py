"""Published releases: vetted Laplace noise, OS entropy, and a persistent ledger (SPEC section 7).

A *simulated* run (``core.mechanisms.release``, Monte Carlo, error curves) releases nothing and may
be seeded. A *published* release is different:

1. its Laplace noise comes from OpenDP's sampler (:mod:`core.publish.noise`), which resists the
   floating-point attacks that break textbook ``numpy`` Laplace noise (Mironov 2012);
2. the mechanism's other randomness (PrivateInterval's bin, private quantiles) comes from a
   ``numpy`` Generator seeded from OS entropy; nothing is ever seeded by the user;
3. it is recorded, with its ε, in a persistent ledger (:mod:`core.publish.ledger`);
4. the same request returns the recorded release instead of fresh noise (fresh noise on every
   rerun would let anyone average it away).

Modules: ``noise`` (OpenDP Laplace), ``records`` (what the ledger records), ``keys`` (the
ledger's secret key, keyed hashes of ids and fingerprints), ``store`` (the SQLite file, schema,
transactions), ``ledger`` (reading, budgets, recording: one transaction per publish), ``audit``
(check, export), ``migrate`` (schema 2 to keyed ids), ``single`` (one HAT's release), ``city``
(every grid's mean and variance), ``batch`` (every HAT's release at once), ``files``. The
operator's guide is ``docs/publishing.md``.
"""

from core.publish.ledger import (
    DEFAULT_LEDGER,
    LEDGER_ENV,
    LEDGER_VERSION,
    Ledger,
    ledger_path,
)
from core.publish.noise import opendp_laplace, sampler_name
from core.publish.records import (
    DEFAULT_NAMESPACE,
    BudgetExceeded,
    LedgerEntry,
    Record,
    Summary,
    fingerprint,
)
from core.publish.single import Published, publish

__all__ = [
    "DEFAULT_LEDGER",
    "DEFAULT_NAMESPACE",
    "LEDGER_ENV",
    "LEDGER_VERSION",
    "BudgetExceeded",
    "Ledger",
    "LedgerEntry",
    "Published",
    "Record",
    "Summary",
    "fingerprint",
    "ledger_path",
    "opendp_laplace",
    "publish",
    "sampler_name",
]
