"""Figures of the What-one-head-can-express page that lab_ui.figures does not cover: kernel
smoothing, singular values, which keys a d_k = 1 or d_k = 2 head can pick, rank collapse by depth
and the change-of-basis identities. Each builder takes plain numbers from attn_core.views.one_head
and returns one go.Figure, built as one dict (fast, and a title AppTests can find)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lab_ui.figures import as_float64, traces_figure, vline


def smoothing_chart(x, y, grid, curves: dict[str, Sequence[float]], title: str) -> go.Figure:
    """The noisy points and each smoother over the grid."""
    traces = [
        {"type": "scatter", "x": as_float64(x), "y": as_float64(y), "mode": "markers", "name": "noisy points"}
    ]
    dashes = ("solid", "dash", "dot", "dashdot")
    for i, (name, c) in enumerate(curves.items()):
        traces.append(
            {
                "type": "scatter",
                "x": as_float64(grid),
                "y": as_float64(c),
                "mode": "lines",
                "name": name,
                "line": {"dash": dashes[i % len(dashes)]},
            }
        )
    return traces_figure(traces, title, "x (query / key position)", "f̂(x)")


def singular_values(values: dict[str, Sequence[float]], d_k: int, title: str) -> go.Figure:
    """Singular values by index (log y) for each matrix, with d_k marked."""
    traces = []
    for name, s in values.items():
        s = as_float64(s)
        traces.append(
            {
                "type": "scatter",
                "x": np.arange(1, s.size + 1),
                "y": np.maximum(s, 1e-300),
                "mode": "lines+markers",
                "name": name,
            }
        )
    shape, notes = vline(d_k + 0.5, text=f"d_k = {d_k}")
    return traces_figure(
        traces, title, "index", "singular value", log_y=True, shapes=[shape], annotations=notes
    )


def one_dim_winners(q, k, top, title: str) -> go.Figure:
    """d_k = 1: each query (x = q_i) against the key it picks (y = k at its argmax); every point
    lands on one of the two dotted lines, max k or min k."""
    kv = as_float64(k)
    picked = kv[np.asarray(top, dtype=np.int64)]
    traces = [
        {
            "type": "scatter",
            "x": as_float64(q),
            "y": picked,
            "mode": "markers",
            "name": "top key of query i",
            "marker": {"size": 10},
        }
    ]
    shapes = [
        {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": v, "y1": v, "line": {"dash": "dot"}}
        for v in (kv.max(), kv.min())
    ]
    return traces_figure(traces, title, "query q_i", "value k_j of its top key", shapes=shapes, height=330)


def selection_bars(counts: dict[str, Sequence[int]], title: str) -> go.Figure:
    """How many queries pick each key as their top key, per head."""
    traces = [
        {"type": "bar", "x": [str(j) for j in range(len(c))], "y": list(c), "name": name}
        for name, c in counts.items()
    ]
    fig = traces_figure(
        traces, title, "key j (at angle 360°·j / n on the circle)", "queries whose top key is j"
    )
    fig.update_layout(barmode="group", xaxis={"type": "category"})
    return fig


def collapse_chart(layers, curves: dict[str, Sequence[float]], title: str) -> go.Figure:
    """Distance from rank 1 by depth (log y), one line per stack kind."""
    traces = [
        {
            "type": "scatter",
            "x": list(layers),
            "y": np.maximum(as_float64(c), 1e-17),
            "mode": "lines+markers",
            "name": name,
        }
        for name, c in curves.items()
    ]
    return traces_figure(traces, title, "layer l (0 = input)", "r_l = ‖X − 1x̄ᵀ‖_F / ‖X‖_F", log_y=True)


def identity_bars(diffs: dict[str, float], tol: float, title: str) -> go.Figure:
    """max |Δ| per identity on a log axis, with the tolerance as a dotted line."""
    names = list(diffs)
    y = [max(diffs[n], 1e-18) for n in names]
    colors = ["seagreen" if d <= tol else "crimson" for d in diffs.values()]
    traces = [{"type": "bar", "x": names, "y": y, "marker": {"color": colors}, "name": "max |Δ|"}]
    shape = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": tol, "y1": tol, "line": {"dash": "dot"}}
    fig = traces_figure(traces, title, "", "max |Δ|", log_y=True, shapes=[shape], height=440)
    fig.update_layout(xaxis={"type": "category"}, showlegend=False)
    return fig
