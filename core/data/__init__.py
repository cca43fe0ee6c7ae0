"""Data in (SPEC section 1): the only code that touches raw records.

``read_table`` -> ``prepare`` / ``prepare_file`` -> ``Prepared.summaries`` (per HAT and user:
m, s, q) -> ``hat_table`` / ``hat_data``. ``load_demo`` gives the embedded demo city.

The names below are imported when first used (PEP 562), so that reading a summaries file
(``core.data.summaries``, ``core.data.runs``: ``release --all``) does not import the
preparation's engines (polars, h3, h3ronpy: about 0.25 CPU s per process).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.data.aggregation import aggregate
    from core.data.busiest import (
        BUSIEST_HEXAGON_HOUR,
        BUSIEST_HOUR,
        busiest_hexagon_hour,
        busiest_hour,
        default_slot,
        slot_names,
        slot_table,
    )
    from core.data.config import HOUR_OF_DAY, ColumnMap, PrepConfig, slot_seconds
    from core.data.demo import load_demo
    from core.data.hats import (
        HAT_TABLE_COLUMNS,
        hat_data,
        hat_means,
        hat_table,
        split_hat,
    )
    from core.data.io import column_names, read_table
    from core.data.prepare import (
        SUMMARY_COLUMNS,
        Prepared,
        PrepReport,
        prepare,
        prepare_file,
    )

#: Where each public name lives.
_HOMES = {
    "aggregate": "aggregation",
    **dict.fromkeys(
        [
            "BUSIEST_HEXAGON_HOUR",
            "BUSIEST_HOUR",
            "busiest_hexagon_hour",
            "busiest_hour",
            "default_slot",
            "slot_names",
            "slot_table",
        ],
        "busiest",
    ),
    **dict.fromkeys(["HOUR_OF_DAY", "ColumnMap", "PrepConfig", "slot_seconds"], "config"),
    "load_demo": "demo",
    **dict.fromkeys(
        ["HAT_TABLE_COLUMNS", "hat_data", "hat_means", "hat_table", "split_hat"], "hats"
    ),
    **dict.fromkeys(["column_names", "read_table"], "io"),
    **dict.fromkeys(
        ["SUMMARY_COLUMNS", "Prepared", "PrepReport", "prepare", "prepare_file"], "prepare"
    ),
}

__all__ = [
    "HAT_TABLE_COLUMNS",
    "HOUR_OF_DAY",
    "SUMMARY_COLUMNS",
    "ColumnMap",
    "PrepConfig",
    "PrepReport",
    "Prepared",
    "aggregate",
    "BUSIEST_HEXAGON_HOUR",
    "BUSIEST_HOUR",
    "busiest_hexagon_hour",
    "busiest_hour",
    "default_slot",
    "slot_names",
    "slot_table",
    "column_names",
    "hat_data",
    "hat_means",
    "hat_table",
    "load_demo",
    "prepare",
    "prepare_file",
    "read_table",
    "slot_seconds",
    "split_hat",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'core.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"core.data.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


class _Package(types.ModuleType):
    """This package, whose exported names win over its submodules of the same name: importing
    the submodule ``core.data.prepare`` sets the package's attribute ``prepare`` to it, which
    would hide the function ``prepare`` that ``from core.data import prepare`` gives (the
    eager imports this module had bound the function last)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
