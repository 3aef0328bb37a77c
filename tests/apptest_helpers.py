"""Readers for what an AppTest run put on the page (shared by every page's AppTest file)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pandas as pd


def badges(at) -> list[str]:
    """The markdown of every ✓/✗ badge, e.g. ':green-badge[✓ rows sum to 1] …'."""
    return [m.value for m in at.markdown if "-badge[" in m.value]


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def frame(at, column: str) -> pd.DataFrame:
    """The first dataframe on the page that has ``column``."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def chart(at, title_start: str) -> dict:
    """The plotly spec of the first chart whose title starts with ``title_start``."""
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if spec["layout"].get("title", {}).get("text", "").startswith(title_start):
            return spec
    raise AssertionError(f"no chart titled {title_start!r}")


def plotly_array(value) -> np.ndarray:
    """A data array of a plotly spec: plotly 7 ships arrays base64-encoded with dtype and shape."""
    if isinstance(value, dict):
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        if "shape" in value:
            a = a.reshape(tuple(int(n) for n in str(value["shape"]).split(",")))
        return a.copy()
    return np.asarray(value, dtype=np.float64)


def heatmap_z(spec: dict) -> np.ndarray:
    return plotly_array(spec["data"][0]["z"])


def ok(at) -> None:
    """The page ran without an exception and without an error message (each named if not)."""
    assert not at.exception, [e.message for e in at.exception]
    assert at.error.len == 0, [e.value for e in at.error]


def open_section(at, name: str, *, key: str, errors_allowed: bool = False):
    """Pick section ``name`` in the page's section radio ``key`` and run: no exception (and no error
    message unless ``errors_allowed``: a section that shows a slip's error on purpose)."""
    at.radio(key=key).set_value(name).run()
    assert not at.exception, [e.message for e in at.exception]
    if not errors_allowed:
        assert at.error.len == 0, [e.value for e in at.error]
    return at
