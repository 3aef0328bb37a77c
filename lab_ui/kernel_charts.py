"""Charts of the Kernels page: one line per contestant against L, and a roofline.

Input rows are the plain dicts of attn_core.views.kernels (``perf_rows``); nothing is computed
here beyond grouping them by contestant.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import plotly.graph_objects as go

from lab_ui.figures import axis, font_size, trace_values


def _by_contestant(rows: list[dict], y: str) -> dict[str, tuple[list, list]]:
    series: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for r in rows:
        if r.get(y) is not None:
            series[r["contestant"]][0].append(r["L"])
            series[r["contestant"]][1].append(r[y])
    return dict(series)


def _layout(traces: list[dict], title: str, x_title: str, y_title: str, log_y: bool) -> dict:
    return {
        "title": {"text": title},
        "font": {"size": font_size()},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "height": 360,
        "xaxis": axis(x_title, log=True, values=trace_values(traces, "x")),
        "yaxis": axis(y_title, log=log_y, values=trace_values(traces, "y")),
        "legend": {"orientation": "h", "y": -0.25},
    }


def per_length(rows: list[dict], y: str, title: str, y_title: str, log_y: bool = True) -> go.Figure:
    """``y`` (a perf_rows column) against sequence length L, one line with markers per contestant."""
    traces = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": name,
            "x": np.asarray(xs, dtype=np.float64),
            "y": np.asarray(ys, dtype=np.float64),
        }
        for name, (xs, ys) in _by_contestant(rows, y).items()
    ]
    return go.Figure(
        {"data": traces, "layout": _layout(traces, title, "sequence length L = S", y_title, log_y)}
    )


def roofline(rows: list[dict], peak_flops: float | None, bandwidth: float | None, title: str) -> go.Figure:
    """Achieved TFLOP/s against arithmetic intensity (FLOP per byte of least traffic), under the
    roof min(peak, bandwidth × intensity); the ridge is where the two meet."""
    fig = per_length(rows, "TFLOP/s", title, "achieved TFLOP/s")
    for trace, (name, (_, xs)) in zip(fig.data, _by_contestant(rows, "FLOP/byte").items(), strict=False):
        trace.x = np.asarray(xs, dtype=np.float64)
        trace.name = name
    xs = [r["FLOP/byte"] for r in rows if r.get("FLOP/byte")]
    ridge = peak_flops / bandwidth if peak_flops and bandwidth else 1.0
    lo, hi = min([*xs, ridge / 4]) / 2, max([*xs, 4 * ridge]) * 2
    x_range = [math.log10(lo), math.log10(hi)]
    fig.layout.xaxis = axis("arithmetic intensity (FLOP/byte)", log=True, range=x_range)
    achieved = [r["TFLOP/s"] for r in rows if r.get("TFLOP/s") is not None]
    if peak_flops and bandwidth:
        grid = np.logspace(math.log10(lo), math.log10(hi), 60)
        roof = np.minimum(peak_flops, bandwidth * grid) / 1e12
        fig.add_trace(
            go.Scatter(x=grid, y=roof, mode="lines", name="roof", line={"dash": "dash", "color": "#555"})
        )
        achieved += roof.tolist()
        fig.add_vline(
            x=ridge, line_dash="dot", line_color="#b22", annotation_text=f"ridge {ridge:,.0f} FLOP/byte"
        )
    fig.layout.yaxis = axis("achieved TFLOP/s", log=True, values=achieved)  # replaced, range and all
    return fig
