"""The Data controls in the sidebar, shared by every page.

A new choice (file, column, U, resolution, slot, keep-zeros) is tried; if core rejects it
(:class:`core.errors.HexplorerError`), its message is shown and the last data that worked stays
in use (``state.APPLIED``), so a bad file never breaks the app.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.data import HOUR_OF_DAY
from core.errors import HexplorerError
from dashboard.common import compute, datadir, limits, state
from dashboard.common.columns import detect_columns
from dashboard.common.compute import DataSpec, Source

SOURCE_LABELS = {
    "demo": "Demo city",
    "upload": "Upload a file",
    "path": "File in the server's data directory",
}
ROLE_LABELS = {
    "user": "User (bus) id column",
    "lat": "Latitude column",
    "lon": "Longitude column",
    "time": "Timestamp column",
    "value": "Speed (value) column",
}
HELP = {
    "source": (
        "Uploads are limited by the app's server.maxUploadSize. Bigger files can be offered by "
        "whoever runs the app: they name a data directory (HEXPLORER_DATA_DIR or --data-dir) and "
        "its files become a choice here, read on the server with the fast path."
    ),
    "upper": (
        "U, the largest possible speed. Every value is clamped into [0, U]; all sensitivities "
        "scale with U (Learn → Sensitivity)."
    ),
    "resolution": "H3 resolution of the hexagons (7 ≈ 5 km², as the data exchange uses).",
    "slot": (
        "Absolute windows floor(timestamp, length), or hour-of-day pooling each clock hour over "
        "all days (how the papers' bus data was binned)."
    ),
    "keep_zeros": "Zero speeds (stationary buses) are dropped by default, as in the papers.",
}


@dataclass(frozen=True, kw_only=True)
class DataChoice:
    """What the pages work on: the applied data and any message about the latest attempt."""

    spec: DataSpec | None
    error: str | None = None


def upload_limit_mb() -> int:
    """The upload limit in MB, as Streamlit enforces it (server.maxUploadSize)."""
    return int(st.get_option("server.maxUploadSize"))


def _data_dir() -> Path | None:
    """The operator's data directory, or None (a misconfigured one is logged, not shown)."""
    try:
        return datadir.configured_dir()
    except HexplorerError as exc:
        logging.getLogger(__name__).warning("server files are off: %s", exc)
        return None


def _source_widget() -> tuple[Source | None, str | None]:
    ss = st.session_state
    root = _data_dir()
    kinds = ["demo", "upload"] + (["path"] if root is not None else [])
    if ss.get(state.SOURCE) not in kinds:
        ss[state.SOURCE] = "demo"
    st.radio(
        "Source",
        options=kinds,
        format_func=SOURCE_LABELS.__getitem__,
        key=state.SOURCE,
        help=HELP["source"],
    )
    limit = upload_limit_mb()
    note = (
        f"Uploads: CSV or Parquet up to {limit} MB. A file that would need more than "
        f"{limits.memory_budget_mb():,} MB of memory once read is refused."
    )
    if root is not None:
        note += " Larger files: ask the operator to put them in the server's data directory."
    st.caption(note)
    kind = ss[state.SOURCE]
    if kind == "upload":
        upload = st.file_uploader(
            f"CSV or Parquet, up to {limit} MB",
            type=["csv", "parquet", "pq", "tsv", "txt"],
            key=state.UPLOAD,
            help=HELP["source"],
        )
        if upload is None:
            return None, None
        return Source.upload(upload.name, upload.getvalue()), None
    if kind == "path" and root is not None:
        files = datadir.list_files(root)
        if ss.get(state.PATH) not in files:
            ss[state.PATH] = None
        st.selectbox(
            "File in the server's data directory",
            options=files,
            key=state.PATH,
            index=None,
            placeholder="choose a file" if files else "no CSV or Parquet file there",
            help=HELP["source"],
        )
        name = ss[state.PATH]
        if name is None:
            return None, None
        try:
            info = datadir.resolve(root, name).stat()
        except (HexplorerError, OSError):
            return None, str(datadir.not_found(name))
        return Source(
            kind="path", name=name, digest=f"{name}|{info.st_size}|{info.st_mtime_ns}"
        ), None
    return Source.demo(), None


def _column_widgets(source: Source) -> tuple[tuple[str, ...] | None, str | None]:
    try:
        names = compute.table_columns(source)
    except HexplorerError as exc:
        return None, str(exc)
    detected = detect_columns(names)
    ss = st.session_state
    chosen = []
    with st.expander("Columns", expanded=any(v is None for v in detected.values())):
        for role, label in ROLE_LABELS.items():
            key = state.column_key(role, source.digest)
            if key not in ss or ss[key] not in names:
                ss[key] = detected[role]
            st.selectbox(
                label,
                options=names,
                key=key,
                placeholder="choose a column",
                help="Auto-detected from the column names (case-insensitive); change it if wrong.",
            )
            chosen.append(ss[key])
    missing = [ROLE_LABELS[r] for r, c in zip(ROLE_LABELS, chosen, strict=True) if c is None]
    if missing:
        return None, f"Choose the {', '.join(m.lower() for m in missing)} of '{source.name}'."
    return tuple(chosen), None


def _settings_widgets() -> tuple[float, int, str, bool]:
    ss = st.session_state
    st.number_input(
        "U, upper bound on speed (km/h)",
        min_value=1.0,
        max_value=1000.0,
        step=5.0,
        key=state.UPPER,
        help=HELP["upper"],
    )
    st.slider(
        "H3 resolution", min_value=0, max_value=15, key=state.RESOLUTION, help=HELP["resolution"]
    )
    st.radio(
        "Timeslots",
        options=["window", HOUR_OF_DAY],
        format_func={"window": "absolute windows", HOUR_OF_DAY: "hour of day"}.__getitem__,
        key=state.SLOT_KIND,
        horizontal=True,
        help=HELP["slot"],
    )
    st.selectbox(
        "Window length",
        options=list(state.SLOT_LENGTHS),
        key=state.SLOT_LENGTH,
        disabled=ss[state.SLOT_KIND] == HOUR_OF_DAY,
        help=HELP["slot"],
    )
    st.checkbox("Keep zero speeds", key=state.KEEP_ZEROS, help=HELP["keep_zeros"])
    slot = HOUR_OF_DAY if ss[state.SLOT_KIND] == HOUR_OF_DAY else str(ss[state.SLOT_LENGTH])
    return float(ss[state.UPPER]), int(ss[state.RESOLUTION]), slot, bool(ss[state.KEEP_ZEROS])


def data_sidebar() -> DataChoice:
    """Draw the Data controls; return the data in use and the latest error, if any."""
    state.init()
    ss = st.session_state
    error: str | None = None
    with st.sidebar:
        st.header("Data")
        source, error = _source_widget()
        columns = None
        if source is not None:
            columns, error = _column_widgets(source)
        upper, resolution, slot, keep_zeros = _settings_widgets()
        if columns is not None:
            candidate = DataSpec(
                source=source,
                columns=columns,
                upper=upper,
                resolution=resolution,
                slot=slot,
                keep_zeros=keep_zeros,
            )
            try:
                with st.spinner("Preparing the data…"):
                    compute.report(candidate)
            except HexplorerError as exc:
                error = f"Could not use '{source.name}': {exc}"
            else:
                ss[state.APPLIED] = candidate.to_state()
        applied = DataSpec.from_state(ss[state.APPLIED]) if ss[state.APPLIED] is not None else None
        if applied is not None:
            st.caption(
                f"In use: **{applied.source.name}** · U = {applied.upper:g} · "
                f"resolution {applied.resolution} · slot {applied.slot}"
            )
    return DataChoice(spec=applied, error=error)


def require_data() -> DataSpec:
    """Draw the sidebar, show its error in the page, and stop the page if no data works yet."""
    choice = data_sidebar()
    if choice.error is not None:
        if choice.spec is not None:
            msg = f"{choice.error.rstrip('.')} — still using **{choice.spec.source.name}**."
            st.error(msg, icon=":material/error:")
        else:
            st.error(choice.error, icon=":material/error:")
    if choice.spec is None:
        if choice.error is None:
            st.info("Choose a data source in the sidebar.")
        st.stop()
    return choice.spec
