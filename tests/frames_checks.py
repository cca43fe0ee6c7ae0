"""Figures and frames documents as the browser receives them, for the contract tests of the
frames documents (``tests/dashboard/hexagon/test_hexagon_frames.py``,
``tests/dashboard/course/test_course_frames.py``): a patch applied to one stop's figure must
equal another stop's figure after the same encoding."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import plotly.io as pio

from dashboard.common.view import frames

DTYPES = {"f8": "<f8", "f4": "<f4", "i4": "<i4", "u4": "<u4", "i2": "<i2", "u2": "<u2"}
DTYPES.update({"i1": "i1", "u1": "u1"})


def plain(value):
    """A parsed figure JSON with plotly's typed arrays ({dtype, bdata}) as lists and NaN as
    null: what the browser's renderers read either way."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            raw = np.frombuffer(base64.b64decode(value["bdata"]), dtype=DTYPES[value["dtype"]])
            return plain(raw.tolist())
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def encoded(fig) -> dict:
    """The figure as the page sends it (liveplot: ``pio.to_json``), parsed."""
    return plain(json.loads(pio.to_json(fig, validate=False)))


def sent(document: dict) -> dict:
    """The document as the browser receives it (the route's encoding)."""
    return json.loads(frames.encode(document))
