"""The files a city publishes: one row per HAT of noisy values and how they were made (SPEC §7).

Columns, in order: ``release_id, created, version, hat, cell, slot, noisy_mean[, noisy_var],
mechanism, epsilon, m_ub, upper, accounting, privacy_loss`` — the noisy values post-processed
into range (means into [0, U], variances into [0, U²/4], :mod:`core.postprocess`, free under DP)
and nothing true: no true value, no count, no user. ``epsilon`` is the release's ε (per grid for a
city-wide release), ``privacy_loss`` the largest ε the release charged one user.

Formats by extension: ``.csv``, ``.parquet`` and ``.geojson`` (a FeatureCollection, each HAT a
Polygon: its H3 hexagon from h3 v4 ``cell_to_boundary``, ``[lng, lat]`` as GeoJSON wants, the ring
closed). Files are written to a temporary name and renamed, so a reader never sees half a file;
everything in them comes from the recorded release, so asking again writes identical bytes.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from core.errors import HexplorerError
from core.postprocess import clamp_mean, clamp_variance
from core.publish.batch import HatsRelease
from core.publish.city import CityRelease
from core.publish.records import LedgerEntry

#: Extensions :func:`write_table` understands.
OUTPUT_SUFFIXES = (".csv", ".parquet", ".geojson")


def hat_table(entry: LedgerEntry, *, privacy_loss: float | None = None) -> pd.DataFrame:
    """The one-row table of a published single-HAT release (its recorded values only)."""
    label = entry.hat or ""
    cell, _, slot = label.partition("/")
    upper = entry.upper
    if upper is None:
        raise HexplorerError(f"Release {entry.release_id} does not record U; publish it again.")
    return pd.DataFrame(
        {
            "release_id": [entry.release_id],
            "created": [entry.created],
            "version": [entry.version],
            "hat": [label],
            "cell": [cell],
            "slot": [slot],
            "noisy_mean": clamp_mean(np.array([entry.estimate]), upper),
            "mechanism": [entry.mechanism],
            "epsilon": [entry.epsilon],
            "m_ub": pd.array([entry.m_ub], dtype="Int64"),
            "upper": [upper],
            "accounting": ["single-hat"],
            "privacy_loss": [entry.epsilon if privacy_loss is None else privacy_loss],
        }
    )


def city_table(release: CityRelease) -> pd.DataFrame:
    """The table of a published city-wide release, one row per grid (HAT)."""
    t = release.table
    n = len(t)
    return pd.DataFrame(
        {
            "release_id": [release.release_id] * n,
            "created": [release.created] * n,
            "version": [release.version] * n,
            "hat": t["hat"].to_numpy(),
            "cell": t["cell"].to_numpy(),
            "slot": t["slot"].to_numpy(),
            "noisy_mean": clamp_mean(t["noisy_mean"].to_numpy(), release.upper),
            "noisy_var": clamp_variance(t["noisy_var"].to_numpy(), release.upper),
            "mechanism": [release.mechanism] * n,
            "epsilon": [release.epsilon] * n,
            "m_ub": pd.array([None] * n, dtype="Int64"),
            "upper": [release.upper] * n,
            "accounting": [release.accounting] * n,
            "privacy_loss": [release.privacy_loss] * n,
        }
    )


def hats_table(release: HatsRelease) -> pd.DataFrame:
    """The table of a published every-HAT release (``release --all``), one row per HAT."""
    t = release.table
    n = len(t)
    labels = t["hat"].astype(str)
    parts = labels.str.partition("/")
    m_ub = t["m_ub"].to_numpy()
    return pd.DataFrame(
        {
            "release_id": [release.release_id] * n,
            "created": [release.created] * n,
            "version": [release.version] * n,
            "hat": labels.to_numpy(),
            "cell": parts[0].to_numpy(),
            "slot": parts[2].to_numpy(),
            "noisy_mean": clamp_mean(t["estimate"].to_numpy(), release.upper),
            "mechanism": [release.mechanism] * n,
            "epsilon": [release.epsilon] * n,
            "m_ub": pd.array([None if v < 0 else int(v) for v in m_ub], dtype="Int64"),
            "upper": [release.upper] * n,
            "accounting": [release.accounting] * n,
            "privacy_loss": [release.privacy_loss] * n,
        }
    )


def _boundary(cell: str) -> list[list[float]]:
    import h3

    try:
        ring = [[float(lng), float(lat)] for lat, lng in h3.cell_to_boundary(cell)]
    except (ValueError, TypeError, h3.H3BaseException):
        raise HexplorerError(
            f"Cell {cell!r} is not an H3 cell; GeoJSON needs H3 cells (use .csv or .parquet)."
        ) from None
    return [*ring, ring[0]]


def _json_value(value):
    if isinstance(value, np.generic):
        value = value.item()
    if value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def geojson(table: pd.DataFrame) -> dict:
    """The table as a GeoJSON FeatureCollection (one hexagon Polygon per row)."""
    features = []
    columns = list(table.columns)
    for row in table.itertuples(index=False):
        props = {c: _json_value(v) for c, v in zip(columns, row, strict=True)}
        features.append(
            {
                "type": "Feature",
                "geometry": {"type": "Polygon", "coordinates": [_boundary(str(props["cell"]))]},
                "properties": props,
            }
        )
    return {"type": "FeatureCollection", "features": features}


def to_bytes(table: pd.DataFrame, suffix: str) -> bytes:
    """The file content for ``suffix`` (``.csv``, ``.parquet`` or ``.geojson``)."""
    suffix = suffix.lower()
    if suffix == ".csv":
        return table.to_csv(index=False, lineterminator="\n").encode()
    if suffix == ".geojson":
        text = json.dumps(
            geojson(table), allow_nan=False, ensure_ascii=False, separators=(",", ":")
        )
        return (text + "\n").encode()
    if suffix == ".parquet":
        import io

        buf = io.BytesIO()
        table.to_parquet(buf, index=False)
        return buf.getvalue()
    raise HexplorerError(
        f"Output must end in {' or '.join(OUTPUT_SUFFIXES)}. Got {suffix!r} instead."
    )


def write_table(table: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``table`` to ``path`` in the format of its extension, atomically (temp + rename).

    Overwrites an existing file: check with ``core.cli.common.output_path`` first.
    """
    target = Path(path)
    return write_bytes(to_bytes(table, target.suffix), target)


def write_bytes(data: bytes, path: str | os.PathLike) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary file in its folder, then a rename)."""
    target = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # a file to publish: readable by others, like any new file
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise HexplorerError(f"Cannot write {target}: {exc.strerror}.") from None
    return target


def check_writable(path: str | os.PathLike) -> None:
    """Refuse at once an output whose folder takes no new file (before any work or charge)."""
    StagedFile(path).discard()


class StagedFile:
    """An output file written around a ledger transaction, so that a release is never charged
    for a file that cannot be written.

    Made before any work: a temporary file in the target's folder (an unwritable folder, e.g.
    ``/proc``, is refused here, before anything is recorded). :meth:`write` fills it inside
    the ledger's transaction (``before_commit``: a failure there rolls the release back);
    :meth:`commit` renames it into place once the ledger has committed. Use it as a context
    manager: on leaving, an uncommitted temporary file is removed.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.target = Path(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.target.name}.", dir=self.target.parent)
        except OSError as exc:
            raise HexplorerError(
                f"Cannot write {self.target} ({exc.strerror}); nothing was published or charged."
            ) from None
        os.close(fd)
        self._tmp: Path | None = Path(tmp)

    def __enter__(self) -> StagedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def write(self, data: bytes) -> None:
        """Write ``data`` to the temporary file (a failure: nothing published or charged)."""
        assert self._tmp is not None
        try:
            with self._tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(self._tmp, 0o644)  # a file to publish: readable by others, like any new file
        except OSError as exc:
            raise HexplorerError(
                f"Cannot write {self.target} ({exc.strerror}); nothing was published or charged."
            ) from None

    def commit(self, release_id: str) -> Path:
        """Rename the written file into place (after the ledger's commit)."""
        assert self._tmp is not None
        try:
            os.replace(self._tmp, self.target)
        except OSError as exc:
            raise HexplorerError(
                f"Release {release_id} is recorded and charged, but {self.target} could not be "
                f"written ({exc.strerror}); ask again to write it at no cost."
            ) from None
        self._tmp = None
        return self.target

    def discard(self) -> None:
        """Remove the temporary file if it was not committed."""
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None
