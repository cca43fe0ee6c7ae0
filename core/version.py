"""The installed dp-hexplorer version: what releases, downloads, reports and caches record."""

from __future__ import annotations

from importlib import metadata


def software_version() -> str:
    """The installed dp-hexplorer version, or ``"unknown"`` when run from a checkout that is not
    installed."""
    try:
        return metadata.version("dp-hexplorer")
    except metadata.PackageNotFoundError:
        return "unknown"
