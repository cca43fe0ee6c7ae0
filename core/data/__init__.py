"""Data in (SPEC section 1): the only code that touches raw records.

``read_table`` -> ``prepare`` / ``prepare_file`` -> ``Prepared.summaries`` (per HAT and user:
m, s, q) -> ``hat_table`` / ``hat_data``. ``load_demo`` gives the embedded demo city.
"""

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
