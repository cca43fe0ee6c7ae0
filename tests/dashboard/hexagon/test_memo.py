"""Figures remembered by their inputs' contents (dashboard.hexagon.memo)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from dashboard.common.source.units import Units
from dashboard.hexagon import memo
from dashboard.hexagon.charts import ReleaseSet


def _build(sets, *, epsilon, units):
    return {"n": len(sets), "epsilon": epsilon, "unit": units.value}


def _sets(values):
    return [ReleaseSet(mechanism="baseline", title="Baseline", values=values, share_within=0.5)]


def test_equal_contents_give_one_key_and_any_change_another():
    v = np.linspace(0.0, 60.0, 2000)
    key = memo.digest(_build, (_sets(v),), {"epsilon": 1.0, "units": Units()})
    assert key == memo.digest(_build, (_sets(v.copy()),), {"epsilon": 1.0, "units": Units()})
    w = v.copy()
    w[1234] += 1e-9
    changed = [
        memo.digest(_build, (_sets(w),), {"epsilon": 1.0, "units": Units()}),
        memo.digest(_build, (_sets(v),), {"epsilon": 2.0, "units": Units()}),
        memo.digest(_build, (_sets(v),), {"epsilon": 1.0, "units": Units(value="knots")}),
        memo.digest(_build, (_sets(v.astype(np.float32)),), {"epsilon": 1.0, "units": Units()}),
        memo.digest(len, (_sets(v),), {"epsilon": 1.0, "units": Units()}),
        memo.digest(
            _build,
            ([dataclasses.replace(_sets(v)[0], share_within=0.6)],),
            {"epsilon": 1.0, "units": Units()},
        ),
    ]
    assert key not in changed and len(set(changed)) == len(changed)


def test_frames_are_read_by_content():
    df = pd.DataFrame({"epsilon": [0.1, 1.0], "error": [9.0, 0.9]})
    other = df.copy()
    other.loc[1, "error"] = 0.8
    assert memo.digest(_build, (df,), {}) == memo.digest(_build, (df.copy(),), {})
    assert memo.digest(_build, (df,), {}) != memo.digest(_build, (other,), {})
    renamed = df.rename(columns={"error": "err"})
    assert memo.digest(_build, (df,), {}) != memo.digest(_build, (renamed,), {})


def test_numeric_frames_are_read_by_their_columns_index_and_types():
    """A numeric frame on a range index is read column by column (the quick path): its index,
    dtypes and every value count, as they do for any other frame."""
    df = pd.DataFrame({"epsilon": [0.1, 1.0, 10.0], "a": [9.0, 0.9, 0.09], "b": [1.0, 2.0, 3.0]})
    key = memo.digest(_build, (df,), {})
    assert key == memo.digest(_build, (df.copy(),), {})
    mixed = df.assign(n=[1, 2, 3])  # int and float columns
    bumped = mixed.copy()
    bumped.loc[2, "n"] = 4
    changed = [
        memo.digest(_build, (df.set_axis(pd.RangeIndex(1, 4)),), {}),  # another index
        memo.digest(_build, (df.set_axis(pd.Index([0, 1, 2], dtype="int32")),), {}),
        memo.digest(_build, (df.astype({"b": np.float32}),), {}),
        memo.digest(_build, (df.rename(columns={"a": "b", "b": "a"}),), {}),
        memo.digest(_build, (df[["epsilon", "b", "a"]].set_axis(list(df.columns), axis=1),), {}),
        memo.digest(_build, (mixed,), {}),
        memo.digest(_build, (bumped,), {}),
        memo.digest(_build, (df.assign(s=["x", "y", "z"]),), {}),  # not numeric: pandas' hash
    ]
    assert key not in changed and len(set(changed)) == len(changed)


CALLS: list = []


def _counted(values, *, epsilon):
    CALLS.append(epsilon)
    return {"sum": float(values.sum()), "epsilon": epsilon, "call": len(CALLS)}


def test_a_figure_is_built_once_per_input():
    CALLS.clear()
    v = np.arange(5.0) + np.random.default_rng().random()  # not remembered by an earlier run
    first = memo.figure(_counted, v, epsilon=0.5)
    assert memo.figure(_counted, v.copy(), epsilon=0.5) is first
    assert memo.figure(_counted, v, epsilon=1.0)["epsilon"] == 1.0
    assert CALLS == [0.5, 1.0]


def test_what_cannot_be_trusted_is_built_every_time():
    CALLS.clear()
    v = np.arange(5.0)
    assert memo.figure(_counted, np.array([1, 2], dtype=object), epsilon=1.0)["call"] == 1
    assert memo.figure(_counted, np.array([1, 2], dtype=object), epsilon=1.0)["call"] == 2
    shift = 3.0

    def nested(values):  # depends on `shift`, which its arguments do not show
        return float(values.sum() + shift)

    assert memo.digest(nested, (v,), {}) is None
    assert memo.digest(lambda values: 0, (v,), {}) is None
    assert memo.figure(nested, v) == 13.0


def test_a_remembered_figure_is_frozen_for_the_chart_that_sends_it():
    """memo's figures are shared and never changed: the chart serialises each once
    (dashboard.common.view.liveplot.freeze)."""
    import plotly.graph_objects as go

    from dashboard.common.view import liveplot

    fig = memo.figure(_figure, [1.0, 2.0], height=222)
    assert fig is memo.figure(_figure, [1.0, 2.0], height=222)
    assert liveplot.frozen(fig)
    unremembered = memo.figure(lambda: go.Figure())  # a lambda is never remembered
    assert not liveplot.frozen(unremembered)


def _figure(y, *, height):
    import plotly.graph_objects as go

    return go.Figure(go.Scatter(y=y), layout={"height": height})
