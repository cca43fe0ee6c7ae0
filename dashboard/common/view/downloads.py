"""What every downloaded table carries: its provenance columns and a file name that says what it is.

A CSV taken away from the dashboard must say how it was made without the dashboard next to it:
which data (name and a fingerprint of its content and preparation), which HAT or set of grids,
which mechanism, ε, m_UB, U, seed and version of dp-hexplorer. :class:`Provenance` holds these;
:func:`with_provenance` appends them as columns (a column the table already has, e.g. a
per-row ``mechanism``, wins), :func:`with_units` puts the value unit into the headers of the
columns that hold speeds, and :func:`file_name` builds a name such as
``hexplorer_releases_demo-city_8a2b43c9d0e1_872830828ffffff-2024-03-05T1500_eps1_seed0.csv``.

No st.* calls: the page builds a :class:`Provenance` (:func:`provenance` from the data in use)
and passes it to :func:`dashboard.common.view.ui.table`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

from core.version import software_version
from dashboard.common.source.compute import DataSpec
from dashboard.common.source.units import Units

VERSION = software_version()

PROVENANCE_COLUMNS: tuple[str, ...] = (
    "hat",
    "mechanism",
    "epsilon",
    "m_ub",
    "U",
    "value_unit",
    "seed",
    "data",
    "data_fingerprint",
    "hexplorer_version",
)
"""The provenance columns, in the order they are appended."""


def fingerprint(spec: DataSpec) -> str:
    """12 hex digits identifying the data *and* its preparation (source content, columns, U,
    resolution, slot, keep-zeros): two downloads with the same fingerprint read the same HATs.

    An upload's source digest is the sha256 of its bytes; a server file's is its path, size and
    modification time; the demo city's is fixed (it is generated deterministically).
    """
    return hashlib.sha256(spec.key().encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """How a table was made. ``None`` fields do not apply (e.g. no mechanism for a HAT list).

    Parameters
    ----------
    data : the data's name (file name or "demo city").
    fingerprint : :func:`fingerprint` of the data and its preparation.
    upper : U, the values' upper bound.
    units : the value unit and user noun in use.
    hat : the HAT label, or a description of the grids ("slot 2024-03-05T15:00", "day ...").
    mechanism, epsilon, m_ub, seed : as chosen on the page.
    version : dp-hexplorer's version.
    """

    data: str
    fingerprint: str
    upper: float
    units: Units = field(default_factory=Units)
    hat: str | None = None
    mechanism: str | None = None
    epsilon: float | None = None
    m_ub: int | None = None
    seed: int | None = None
    version: str = VERSION

    def __post_init__(self) -> None:
        if not self.data:
            raise ValueError("Provenance: 'data' must name the data, got an empty string")
        if not re.fullmatch(r"[0-9a-f]{6,64}", self.fingerprint):
            raise ValueError(
                f"Provenance: 'fingerprint' must be hex digits, got {self.fingerprint!r}"
            )
        if not self.upper > 0:
            raise ValueError(f"Provenance: 'upper' must be > 0, got {self.upper!r}")
        if self.epsilon is not None and not self.epsilon > 0:
            raise ValueError(f"Provenance: 'epsilon' must be > 0, got {self.epsilon!r}")

    def columns(self) -> dict[str, object]:
        """The provenance as ``{column: value}`` in :data:`PROVENANCE_COLUMNS` order."""
        return {
            "hat": self.hat,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "m_ub": self.m_ub,
            "U": float(self.upper),
            "value_unit": self.units.value,
            "seed": self.seed,
            "data": self.data,
            "data_fingerprint": self.fingerprint,
            "hexplorer_version": self.version,
        }


def provenance(spec: DataSpec, units: Units | None = None, **fields) -> Provenance:
    """The :class:`Provenance` of a table computed from ``spec`` (``fields``: hat, mechanism,
    epsilon, m_ub, seed)."""
    return Provenance(
        data=spec.source.name,
        fingerprint=fingerprint(spec),
        upper=float(spec.upper),
        units=units if units is not None else Units(),
        **fields,
    )


def with_provenance(df: pd.DataFrame, prov: Provenance) -> pd.DataFrame:
    """A copy of ``df`` with the provenance columns appended (one value repeated on every row).

    A column ``df`` already has (a per-row ``mechanism``, ``epsilon``, ``m_ub`` or ``hat``) is
    kept as it is: the row's own value is the more precise one. Columns of ``None`` are still
    written (empty in the CSV), so every download has the same provenance header.

    >>> prov = Provenance(data="demo city", fingerprint="abcdef123456", upper=65.0, epsilon=1.0)
    >>> out = with_provenance(pd.DataFrame({"mechanism": ["levy"], "estimate": [20.5]}), prov)
    >>> list(out.columns)[:4], out["mechanism"].tolist(), out["epsilon"].tolist()
    (['mechanism', 'estimate', 'hat', 'epsilon'], ['levy'], [1.0])
    """
    out = df.copy()
    for column, value in prov.columns().items():
        if column not in out.columns:
            out[column] = pd.Series([value] * len(out), index=out.index, dtype=object)
    return out


def with_units(
    df: pd.DataFrame,
    units: Units,
    *,
    values: Iterable[str] = (),
    squared: Iterable[str] = (),
) -> pd.DataFrame:
    """A copy of ``df`` whose speed columns say their unit in the header.

    ``values``: columns in the value unit (means, estimates, errors); ``squared``: variances,
    in the unit squared. Absent columns are skipped.

    >>> df = pd.DataFrame({"estimate": [20.5], "noisy_var": [110.0], "m": [3]})
    >>> list(with_units(df, Units(value="knots"), values=["estimate"], squared=["noisy_var"]))
    ['estimate [knots]', 'noisy_var [(knots)²]', 'm']
    """
    names = {c: f"{c} [{units.value}]" for c in values if c in df.columns}
    names |= {c: f"{c} [{units.squared}]" for c in squared if c in df.columns}
    return df.rename(columns=names)


def csv_bytes(df: pd.DataFrame, prov: Provenance) -> bytes:
    """The CSV a download button serves: ``df`` with its provenance columns, UTF-8."""
    return with_provenance(df, prov).to_csv(index=False).encode("utf-8")


def _slug(text: str) -> str:
    """File-name safe: letters, digits, '.', '_' and '-' only; runs of others become one '-'."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "x"


def file_name(what: str, prov: Provenance, ext: str = "csv") -> str:
    """A name that says what the file is: tool, table, data, fingerprint, HAT, mechanism, ε,
    m_UB and seed (those that apply), e.g.

    >>> prov = Provenance(data="ships.csv", fingerprint="abcdef123456", upper=30.0,
    ...                   hat="872830828ffffff/2024-03-05T15:00", epsilon=0.5, seed=7)
    >>> file_name("releases", prov)
    'hexplorer_releases_ships_abcdef123456_872830828ffffff-2024-03-05T1500_eps0.5_seed7.csv'
    """
    data = _slug(re.sub(r"\.(csv|tsv|txt|parquet|pq)$", "", prov.data.rsplit("/", 1)[-1]))
    parts = ["hexplorer", _slug(what), data, prov.fingerprint]
    if prov.hat is not None:
        parts.append(_slug(prov.hat.replace(":", "")))
    if prov.mechanism is not None:
        parts.append(_slug(prov.mechanism))
    if prov.epsilon is not None:
        parts.append(f"eps{prov.epsilon:g}")
    if prov.m_ub is not None:
        parts.append(f"mub{prov.m_ub}")
    if prov.seed is not None:
        parts.append(f"seed{prov.seed}")
    return "_".join(parts) + "." + ext
