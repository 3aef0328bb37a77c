"""Figures of the Gradients page that the shared builders in lab_ui.figures do not cover."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lab_ui.figures import font_size


def saturation(
    temperatures,
    series: dict[str, Sequence[float]],
    *,
    current: float,
    bound: float = 0.5,
    title: str = "",
    height: int = 400,
) -> go.Figure:
    """Lines over a log temperature axis, a dotted horizontal line at ``bound`` and a dashed vertical
    line at the current τ. Built as one dict (plotly's add_hline/add_vline cost ~10 ms each)."""
    x = np.asarray(temperatures, dtype=np.float64)
    traces = [
        {"type": "scatter", "x": x, "y": np.asarray(y, dtype=np.float64), "mode": "lines", "name": name}
        for name, y in series.items()
    ]
    shapes = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": bound,
            "y1": bound,
            "line": {"dash": "dot"},
        },
        {
            "type": "line",
            "yref": "paper",
            "x0": current,
            "x1": current,
            "y0": 0,
            "y1": 1,
            "line": {"dash": "dash"},
        },
    ]
    annotations = [
        {
            "xref": "paper",
            "x": 0.01,
            "y": bound,
            "text": f"bound {bound:g}",
            "showarrow": False,
            "yanchor": "bottom",
        },
        {
            "yref": "paper",
            "x": float(np.log10(current)),
            "y": 1,
            "text": f"τ = {current:g}",
            "showarrow": False,
        },
    ]
    layout = {
        "title": {"text": title},
        "font": {"size": font_size()},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "height": height,
        "xaxis": {"title": {"text": "temperature τ"}, "type": "log"},
        "yaxis": {"title": {"text": "value"}},
        "legend": {"orientation": "h", "y": -0.2},
        "shapes": shapes,
        "annotations": annotations,
    }
    return go.Figure({"data": traces, "layout": layout})
