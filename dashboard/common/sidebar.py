"""The Data controls in the sidebar, shared by every page.

A new choice (file, column, U, resolution, slot, keep-zeros) is tried; if core rejects it
(:class:`core.errors.HexplorerError`), its message is shown and the last data that worked stays
in use (``state.APPLIED``), so a bad file never breaks the app. A choice the user has not made
yet (a column no name gave away) is a prompt, never an error.

An uploaded file's bytes live in the server's upload store
(:mod:`dashboard.common.source.uploads`, one memory budget for all sessions) and its name,
sha256 and size in the session (``state.UPLOADED``): Streamlit empties the uploader when
another page runs, so the kept copy is what every page prepares, and U, resolution, slot and
keep-zeros keep applying to it. Uploading another file, or 15 minutes unused, lets it go.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.data import HOUR_OF_DAY
from core.errors import HexplorerError
from dashboard.common.markdown import escape
from dashboard.common.session import datasettings, state, url
from dashboard.common.source import compute, datadir, keep, limits, units, uploads
from dashboard.common.source.columns import detect_columns, detect_noun, detect_unit
from dashboard.common.source.compute import DataSpec, Source

SOURCE_LABELS = {
    "demo": "Demo city",
    "upload": "Upload a file",
    "path": "File in the server's data directory",
}
ROLE_LABELS = {
    "user": "User id column",
    "lat": "Latitude column",
    "lon": "Longitude column",
    "time": "Timestamp column",
    "value": "Value (speed) column",
}
UNIT_CHOICES = ("km/h", "mph", "knots", "m/s")
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
    "keep_zeros": "Zero values (standing still) are dropped by default, as in the papers.",
    "unit": (
        "What the values are measured in; every label, table header and download says it. "
        "Guessed from the value column's name (SOG: knots, speed_mph: mph, ...)."
    ),
    "noun": "What one user is (bus, ship, plane, taxi, ...): the noun of every label.",
}


@dataclass(frozen=True, kw_only=True)
class DataChoice:
    """What the pages work on: the applied data and any message about the latest attempt."""

    spec: DataSpec | None
    error: str | None = None
    pending: str | None = None  # a choice the user still has to make (a prompt, not an error)


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
        f"{limits.memory_budget_mb():,} MB of memory once read is refused, and so is an upload "
        f"while all visitors' uploads need {limits.uploads_budget_mb():,} MB; an upload unused "
        f"for {limits.UPLOAD_IDLE_S // 60} minutes is released."
    )
    if root is not None:
        note += " Larger files: ask the operator to put them in the server's data directory."
    st.caption(note)
    kind = ss[state.SOURCE]
    if kind == "upload":
        upload = st.file_uploader(  # no type=: uploads.check_name says why in one line
            f"CSV or Parquet, up to {limit} MB",
            key=state.UPLOAD,
            help=HELP["source"],
            on_change=_on_upload_change,
        )
        return _kept_upload(upload)
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


def _on_upload_change() -> None:
    """The user removed the file from the uploader: forget the kept copy too."""
    ss = st.session_state
    if ss.get(state.UPLOAD) is None:
        applied = ss.get(state.APPLIED)
        ss[state.UPLOADED] = None
        in_use = (applied["source"]["digest"],) if applied else ()
        uploads.drop(uploads.session_token(), keep=in_use)  # the data in use keeps its bytes


def _kept_upload(upload) -> tuple[Source | None, str | None]:
    """The uploaded file as a Source: the one in the uploader (kept in the server's upload
    store, :mod:`dashboard.common.source.uploads`, under its memory budget), or the kept copy
    when the uploader is empty because another page ran; or None and a one-line error (a
    name the app does not read, the server's budget, an upload released after being idle)."""
    ss = st.session_state
    token = uploads.session_token()
    kept = ss.get(state.UPLOADED)
    if upload is not None and (kept is None or kept.get("file_id") != upload.file_id):
        try:
            uploads.check_name(upload.name)
            payload = upload.getvalue()
            digest = hashlib.sha256(payload).hexdigest()
            applied = ss.get(state.APPLIED) or {}
            in_use = (applied["source"]["digest"],) if applied.get("source") else ()
            uploads.put(token, upload.name, digest, payload, keep=in_use)
        except HexplorerError as exc:
            return None, str(exc)
        until = keep.keep(upload.name, digest, payload).until  # a reload finds it again
        kept = {"name": upload.name, "digest": digest, "size": len(payload)}
        kept["file_id"] = upload.file_id
        kept["until"] = until
        ss[state.UPLOADED] = kept
    if kept is None:
        return None, None
    payload = uploads.payload(token, kept["digest"])
    if payload is None:  # released after being idle
        ss[state.UPLOADED] = None
        applied = ss.get(state.APPLIED)
        if applied and applied["source"].get("digest") == kept["digest"]:
            ss[state.APPLIED] = None
        return None, uploads.released_message(kept["name"])
    if upload is None:
        st.caption(
            f"Kept for this session: **{escape(kept['name'])}** ({kept['size'] / 1e6:,.1f} MB). "
            "Upload another file to replace it."
        )
    if kept.get("until"):
        st.caption(
            f"A reload of this view in this browser finds the file again "
            f"{keep.until_text(kept['until'])} (kept on the server for "
            f"{keep.TTL_SECONDS // 60} minutes after its upload, under a random token of this "
            "browser; a shared link does not carry it)."
        )
    return Source(kind="upload", name=kept["name"], digest=kept["digest"], payload=payload), None


def _column_widgets(
    source: Source,
) -> tuple[tuple[str, str, str, str, str] | None, str | None, str | None]:
    """The chosen columns, or None with an error (unreadable file) or a prompt (a role no
    column name gave away)."""
    try:
        stored = compute.summaries_columns(source)
    except HexplorerError as exc:  # broken summaries metadata: refused, as by the CLI
        return None, str(exc), None
    if stored is not None:  # a summaries file: its columns were mapped when it was prepared
        st.caption("A summaries file (`hexplorer prepare`): its columns were mapped then.")
        return stored, None, None
    try:
        names = compute.table_columns(source)
    except HexplorerError as exc:
        return None, str(exc), None
    detected = detect_columns(names)
    ss = st.session_state
    chosen = []
    # The five select boxes are drawn only while the expander is open (opening it reruns the
    # page): closed, as on every first view, they cost the browser ~1,200 React component
    # renders for nothing (docs/benchmarks.md, wave 14). Their values are kept meanwhile
    # (state.init re-assigns the column keys on every run); it opens by itself when a column
    # has to be chosen.
    box = st.expander(
        "Columns",
        expanded=any(v is None for v in detected.values()),
        key=state.COLUMNS_OPEN,
        on_change="rerun",
    )
    for role, label in ROLE_LABELS.items():
        key = state.column_widget(role, source.digest)
        if key not in ss or ss[key] not in names:
            ss[key] = detected[role]
        if box.open:
            box.selectbox(
                label,
                options=names,
                key=key,
                placeholder="choose a column",
                help="Auto-detected from the column names (case-insensitive); change it if wrong.",
            )
        chosen.append(ss[key])
    missing = [ROLE_LABELS[r] for r, c in zip(ROLE_LABELS, chosen, strict=True) if c is None]
    if missing:
        return (
            None,
            None,
            (
                f"Choose the {', '.join(m.lower() for m in missing)} of '{escape(source.name)}' in the "
                "sidebar (Columns): no column name gave it away."
            ),
        )
    user, lat, lon, time, value = chosen  # one per role, in ROLE_LABELS' order
    return (user, lat, lon, time, value), None, None


def _units_widgets(source: Source | None, columns: tuple[str, ...] | None) -> None:
    """Value unit and user noun: guessed from the column names once per file and columns, then
    the user's to change."""
    ss = st.session_state
    if source is not None and columns is not None:
        user_col, value_col = columns[0], columns[4]
        ident = f"{source.key()}|{user_col}|{value_col}"
        if ss.get(state.UNITS_FOR) != ident:
            ss[state.UNITS_FOR] = ident
            default = units.Units()
            if source.kind == "demo":
                ss[units.VALUE_UNIT], ss[units.USER_NOUN] = default.value, default.user
            else:
                ss[units.VALUE_UNIT] = detect_unit(value_col) or default.value
                ss[units.USER_NOUN] = detect_noun(user_col) or "user"
    for key, value in (
        (units.VALUE_UNIT, units.Units().value),
        (units.USER_NOUN, units.Units().user),
    ):
        if not ss.get(key):
            ss[key] = value
    left, right = st.columns(2)
    left.selectbox(
        "Value unit",
        options=sorted({*UNIT_CHOICES, str(ss[units.VALUE_UNIT])}),
        key=units.VALUE_UNIT,
        accept_new_options=True,
        help=HELP["unit"],
    )
    right.text_input("One user is a", key=units.USER_NOUN, help=HELP["noun"])


def _settings_widgets() -> tuple[float, int, str, bool]:
    ss = st.session_state
    st.number_input(
        f"U, upper bound on the value ({units.current().value})",
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
    st.checkbox("Keep zero values", key=state.KEEP_ZEROS, help=HELP["keep_zeros"])
    slot = HOUR_OF_DAY if ss[state.SLOT_KIND] == HOUR_OF_DAY else str(ss[state.SLOT_LENGTH])
    return float(ss[state.UPPER]), int(ss[state.RESOLUTION]), slot, bool(ss[state.KEEP_ZEROS])


def data_sidebar() -> DataChoice:
    """Draw the Data controls; return the data in use and the latest error or prompt, if any."""
    state.init()
    ss = st.session_state
    error: str | None = None
    pending: str | None = None
    with st.sidebar:
        st.header("Data")
        source, error = _source_widget()
        columns = None
        if source is not None:
            columns, error, pending = _column_widgets(source)
            # U, resolution, slot, zeros, unit and noun belong to the data set (datasettings)
            linked = ss.get(url.LINK_FILE) == source.digest[: url.DIGEST_CHARS]
            datasettings.follow(source.key(), source.name, adopt=linked)
        _units_widgets(source, columns)
        upper, resolution, slot, keep_zeros = _settings_widgets()
        datasettings.save()
        if (note := datasettings.note()) is not None:
            st.caption(note)
        if columns is not None and source is not None:
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
                kept = ss.get(state.UPLOADED)  # the uploader's file stays for a switch back
                uploads.drop(
                    uploads.session_token(),
                    keep=(source.digest,) + ((kept["digest"],) if kept else ()),
                )  # the data in use and the uploader's file only
        applied = DataSpec.from_state(ss[state.APPLIED]) if ss[state.APPLIED] is not None else None
        if applied is not None and applied.source.kind == "upload":
            if uploads.by_digest(applied.source.digest) is None:  # released after being idle
                error = error or uploads.released_message(applied.source.name)
                applied = ss[state.APPLIED] = None
        if applied is not None:
            st.caption(in_use_caption(applied, units.current()))
    return DataChoice(spec=applied, error=error, pending=pending)


def default_spec() -> DataSpec:
    """The data a new visitor sees before touching the sidebar: the demo city, its columns as
    detected, the default U, resolution, slot and zeros (:data:`state.DEFAULTS`)."""
    source = Source.demo()
    detected = detect_columns(compute.table_columns(source))
    d = state.DEFAULTS
    slot = HOUR_OF_DAY if d[state.SLOT_KIND] == HOUR_OF_DAY else str(d[state.SLOT_LENGTH])
    return DataSpec(
        source=source,
        columns=tuple(str(detected[role]) for role in ROLE_LABELS),  # type: ignore[arg-type]
        upper=float(d[state.UPPER]),
        resolution=int(d[state.RESOLUTION]),
        slot=slot,
        keep_zeros=bool(d[state.KEEP_ZEROS]),
    )


def in_use_caption(spec: DataSpec, u: units.Units) -> str:
    """'In use: **ships.csv** · U = 30 knots · resolution 7 · slot 1h · zeros dropped'."""
    zeros = "zeros kept" if spec.keep_zeros else "zeros dropped"
    return (
        f"In use: **{escape(spec.source.name)}** · U = {spec.upper:g} {u.value} · "
        f"resolution {spec.resolution} · slot {spec.slot} · {zeros}"
    )


def require_data() -> DataSpec:
    """Draw the sidebar, show its error or prompt in the page, and stop the page if no data
    works yet or a column still has to be chosen for the new file. A report's warnings (most
    values clamped to U) head every page: each of its numbers is pulled to the bound."""
    choice = data_sidebar()
    if choice.pending is not None:
        st.info(choice.pending, icon=":material/arrow_back:")
        st.stop()
    if choice.error is not None:
        if choice.spec is not None:
            msg = (
                f"{escape(choice.error.rstrip('.'))} — still using "
                f"**{escape(choice.spec.source.name)}**."
            )
            st.error(msg, icon=":material/error:")
        else:
            st.error(escape(choice.error), icon=":material/error:")
    if choice.spec is None:
        if choice.error is None:
            st.info("Choose a data source in the sidebar.")
        st.stop()
    for warning in compute.report(choice.spec).warnings:  # every number here is doubtful
        st.warning(f"{escape(warning)} Set U under Data in the sidebar.", icon=":material/warning:")
    return choice.spec
