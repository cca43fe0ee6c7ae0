import pandas as pd
import pytest

from core.data import (
    BUSIEST_HEXAGON_HOUR,
    BUSIEST_HOUR,
    busiest_hexagon_hour,
    busiest_hour,
    default_slot,
    hat_data,
    hat_table,
    slot_names,
    slot_table,
    split_hat,
)
from core.errors import HexplorerError

C1, C2 = "8742d9d69ffffff", "8742d98b4ffffff"


def summaries():
    rows = [
        (f"{C1}/h08", C1, "h08", "a", 5, 50.0, 600.0),
        (f"{C1}/h08", C1, "h08", "b", 1, 10.0, 100.0),
        (f"{C1}/h08", C1, "h08", "c", 2, 20.0, 250.0),
        (f"{C1}/h08", C1, "h08", "d", 2, 8.0, 40.0),
        (f"{C2}/h09", C2, "h09", "a", 10, 100.0, 1000.0),
        (f"{C2}/h07", C2, "h07", "z", 10, 100.0, 1000.0),
    ]
    return pd.DataFrame(rows, columns=["hat", "cell", "slot", "user_id", "m", "s", "q"])


def test_hat_table_order_and_values():
    t = hat_table(summaries())
    assert list(t.columns) == [
        "hat",
        "cell",
        "slot",
        "users",
        "records",
        "m_max",
        "m_min",
        "m_median",
    ]
    # C1/h08 has 10 records like the two C2 HATs; ties by hat string
    assert t["hat"].tolist() == [f"{C2}/h07", f"{C2}/h09", f"{C1}/h08"]
    row = t.set_index("hat").loc[f"{C1}/h08"]
    # counts 5, 2, 2, 1 -> median is the ceil(4/2) = 2nd largest = 2
    assert (row.users, row.records, row.m_max, row.m_min, row.m_median) == (4, 10, 5, 1, 2)


def test_hat_table_busiest_first():
    s = summaries()
    s.loc[s.user_id == "a", "m"] = [50, 10]
    t = hat_table(s)
    assert t["hat"].iloc[0] == f"{C1}/h08" and t["records"].tolist() == [55, 10, 10]


def test_hat_data_default_busiest_and_pick():
    h = hat_data(summaries())
    assert h.hat == f"{C2}/h07" and h.counts.tolist() == [10]
    h = hat_data(summaries(), f"{C1}/h08")
    assert h.counts.tolist() == [5, 2, 2, 1]
    assert h.user_ids.tolist() == ["a", "c", "d", "b"]
    assert h.n_records == 10 and h.true_mean == pytest.approx(88.0 / 10)


def test_unknown_hat():
    with pytest.raises(HexplorerError, match="Unknown HAT.*hexplorer hats"):
        hat_data(summaries(), f"{C1}/h23")
    with pytest.raises(HexplorerError, match="CELL/SLOT"):
        hat_data(summaries(), "nonsense")


def test_split_hat():
    assert split_hat(f"{C1}/2024-03-05T08:00") == (C1, "2024-03-05T08:00")
    for bad in ["abc/h08", f"{C1}", f"{C1}/", None]:
        with pytest.raises(HexplorerError, match="'hat'"):
            split_hat(bad)


def test_hat_means_in_hat_table_order():
    from core.data import hat_means

    means = hat_means(summaries())
    assert means["hat"].tolist() == hat_table(summaries())["hat"].tolist()
    assert means.set_index("hat")["mean"].to_dict() == {
        f"{C2}/h07": 10.0,
        f"{C2}/h09": 10.0,
        f"{C1}/h08": 8.8,
    }


def test_the_two_busiest_are_defined_once_and_named_apart():
    """One module (core.data.busiest) defines both: the busiest hexagon-hour (the default HAT,
    its slot the default slot of the CLI and the dashboard) and the busiest hour (most records
    city-wide, the head of the slot lists), which here are different slots."""
    from core.citywide import gridset

    rows = [
        (f"{C1}/h08", C1, "h08", "a", 6, 60.0, 600.0),
        (f"{C1}/h09", C1, "h09", "a", 4, 40.0, 400.0),
        (f"{C2}/h09", C2, "h09", "b", 4, 40.0, 400.0),
    ]
    s = pd.DataFrame(rows, columns=["hat", "cell", "slot", "user_id", "m", "s", "q"])
    assert s.groupby("slot")["m"].sum().idxmax() == "h09"  # the old CLI default
    t = hat_table(s)
    assert busiest_hexagon_hour(t) == f"{C1}/h08" and default_slot(t) == "h08"
    assert busiest_hour(t) == "h09" == slot_table(t)["slot"].iloc[0]
    assert slot_table(t)["records"].tolist() == [8, 6]
    assert slot_names(t) == {"h09": BUSIEST_HOUR, "h08": f"holds the {BUSIEST_HEXAGON_HOUR}"}
    assert hat_data(s).n_records == 6  # hat_data's default HAT is the busiest hexagon-hour
    assert not hasattr(gridset, "busiest_slot")  # no second definition
    for f in (busiest_hexagon_hour, default_slot, busiest_hour):
        with pytest.raises(HexplorerError, match="no HATs"):
            f(t.iloc[:0])
