"""Figures of the two theory pages (Scaling; What one head can express) that lab_ui.figures does
not cover. Each builder takes plain numbers from attn_core.views and returns one go.Figure,
built as one dict (fast, and a title AppTests can find)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lab_ui.figures import _base_layout

HIST_BINS = 60


def _np(x) -> np.ndarray:
    return np.asarray(x.detach() if hasattr(x, "detach") else x, dtype=np.float64)


def _vline(x: float, dash: str = "dash", text: str = "", log_x: bool = False) -> tuple[dict, list[dict]]:
    """A vertical line at x and its label (plotly places annotations on a log axis by log10 x)."""
    shape = {"type": "line", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": {"dash": dash}}
    at = float(np.log10(x)) if log_x else x
    notes = (
        [{"x": at, "y": 1, "yref": "paper", "text": text, "showarrow": False, "yanchor": "bottom"}]
        if text
        else []
    )
    return shape, notes


def _figure(traces: list[dict], title: str, x_title: str, y_title: str, *, log_x=False, log_y=False,
            height=400, shapes=(), annotations=()) -> go.Figure:  # fmt: skip
    layout = {
        **_base_layout(title, height),
        "xaxis": {"title": {"text": x_title}, "type": "log" if log_x else "linear"},
        "yaxis": {"title": {"text": y_title}, "type": "log" if log_y else "linear"},
        "legend": {"orientation": "h", "y": -0.25},
        "shapes": list(shapes),
        "annotations": list(annotations),
    }
    return go.Figure({"data": traces, "layout": layout})


def logit_histogram(scores: Sequence[float], variance: float, title: str) -> go.Figure:
    """A density histogram of simulated logits with the normal density N(0, theoretical variance)."""
    sd = max(variance, 1e-300) ** 0.5
    x = np.linspace(-4 * sd, 4 * sd, 161)
    pdf = np.exp(-(x**2) / (2 * sd**2)) / (sd * np.sqrt(2 * np.pi))
    traces = [
        {"type": "histogram", "x": _np(scores), "histnorm": "probability density", "name": "simulated",
         "opacity": 0.6, "nbinsx": HIST_BINS},
        {"type": "scatter", "x": x, "y": pdf, "mode": "lines", "name": "N(0, theory)"},
    ]  # fmt: skip
    return _figure(traces, title, "logit α q·k", "density", height=330)


def entropy_curve(
    sigmas, simulated, approximation, breakdown: float, max_entropy: float, title: str
) -> go.Figure:
    """Median row entropy against the logit spread σ, ln T − σ²/2, and √(2 ln T) marked."""
    x = _np(sigmas)
    traces = [
        {"type": "scatter", "x": x, "y": _np(simulated), "mode": "lines+markers", "name": "simulated median H"},
        {"type": "scatter", "x": x, "y": _np(approximation), "mode": "lines", "name": "ln T − σ²/2",
         "line": {"dash": "dot"}},
    ]  # fmt: skip
    shape, notes = _vline(breakdown, text=f"√(2 ln T) = {breakdown:.2f}")
    fig = _figure(traces, title, "logit spread σ", "entropy H (nats)", shapes=[shape], annotations=notes)
    fig.update_layout(yaxis={"range": [0.0, max_entropy * 1.05]})
    return fig


def effective_keys_curve(sigmas, simulated, breakdown: float, title: str) -> go.Figure:
    """e^H of the simulated median entropy against σ (log y), with √(2 ln T) marked."""
    x = _np(sigmas)
    traces = [
        {"type": "scatter", "x": x, "y": np.exp(_np(simulated)), "mode": "lines+markers", "name": "e^H"}
    ]
    shape, notes = _vline(breakdown, text=f"√(2 ln T) = {breakdown:.2f}")
    return _figure(traces, title, "logit spread σ", "effective keys e^H", log_y=True, shapes=[shape],
                   annotations=notes, height=320)  # fmt: skip


def two_key_curves(widths, exact: dict, gaussian: dict, simulated: dict, se: dict, title: str) -> go.Figure:
    """P(max p > 0.99) over two keys against d_k: exact integral, Gaussian approximation, simulation ± 2 SE."""
    x = _np(widths)
    traces = []
    for name in exact:
        traces.append(
            {"type": "scatter", "x": x, "y": _np(exact[name]), "mode": "lines", "name": f"{name}: exact"}
        )
        traces.append({"type": "scatter", "x": x, "y": _np(gaussian[name]), "mode": "lines",
                       "name": f"{name}: Gaussian approx.", "line": {"dash": "dot"}})  # fmt: skip
        traces.append({"type": "scatter", "x": x, "y": _np(simulated[name]), "mode": "markers",
                       "name": f"{name}: simulated ± 2 SE", "error_y": {"type": "data", "array": 2 * _np(se[name])}})  # fmt: skip
    return _figure(traces, title, "d_k", "P(max p > 0.99)", log_x=True, log_y=True)


def alignment_plot(
    d_ks, by_rule: dict[str, tuple[Sequence[float], Sequence[float]]], current: int, title: str
) -> go.Figure:
    """Mean ± sd of the scaled logit against d_k for each rule (rule -> (means, sds))."""
    x = _np(d_ks)
    traces = []
    for name, (mean, sd) in by_rule.items():
        m, s = _np(mean), _np(sd)
        traces.append({"type": "scatter", "x": x, "y": m, "mode": "lines+markers", "name": f"{name}: mean",
                       "error_y": {"type": "data", "array": s}})  # fmt: skip
    shape, notes = _vline(current, text=f"d_k = {current}", log_x=True)
    return _figure(traces, title, "d_k", "α q·k: mean ± sd", log_x=True, shapes=[shape], annotations=notes)


def cap_curves(gains, caps: dict[str, Sequence[float]], target: float, title: str) -> go.Figure:
    """The QK-norm cap against the gain g for several T, with the target weight as a dotted line."""
    x = _np(gains)
    traces = [
        {"type": "scatter", "x": x, "y": _np(c), "mode": "lines", "name": name} for name, c in caps.items()
    ]
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": target,
        "y1": target,
        "line": {"dash": "dot"},
    }
    return _figure(traces, title, "gain g", "largest possible weight", shapes=[shape])


def eviction_chart(positions, errors: dict[str, Sequence[float]], title: str) -> go.Figure:
    """Relative output error per query position for each cache policy (log y; zeros clipped)."""
    x = _np(positions)
    traces = [{"type": "scatter", "x": x, "y": np.maximum(_np(e), 1e-17), "mode": "lines", "name": name}
              for name, e in errors.items()]  # fmt: skip
    return _figure(traces, title, "query position t", "‖o − o_full‖ / ‖o_full‖", log_y=True)


def smoothing_chart(x, y, grid, curves: dict[str, Sequence[float]], title: str) -> go.Figure:
    """The noisy points and each smoother over the grid."""
    traces = [{"type": "scatter", "x": _np(x), "y": _np(y), "mode": "markers", "name": "noisy points"}]
    dashes = ("solid", "dash", "dot", "dashdot")
    for i, (name, c) in enumerate(curves.items()):
        traces.append({"type": "scatter", "x": _np(grid), "y": _np(c), "mode": "lines", "name": name,
                       "line": {"dash": dashes[i % len(dashes)]}})  # fmt: skip
    return _figure(traces, title, "x (query / key position)", "f̂(x)")


def singular_values(values: dict[str, Sequence[float]], d_k: int, title: str) -> go.Figure:
    """Singular values by index (log y) for each matrix, with d_k marked."""
    traces = []
    for name, s in values.items():
        s = _np(s)
        traces.append({"type": "scatter", "x": np.arange(1, s.size + 1), "y": np.maximum(s, 1e-300),
                       "mode": "lines+markers", "name": name})  # fmt: skip
    shape, notes = _vline(d_k + 0.5, text=f"d_k = {d_k}")
    return _figure(traces, title, "index", "singular value", log_y=True, shapes=[shape], annotations=notes)


def one_dim_winners(q, k, top, title: str) -> go.Figure:
    """d_k = 1: each query (x = q_i) against the key it picks (y = k at its argmax); every point
    lands on one of the two dotted lines, max k or min k."""
    kv = _np(k)
    picked = kv[np.asarray(top, dtype=np.int64)]
    traces = [{"type": "scatter", "x": _np(q), "y": picked, "mode": "markers", "name": "top key of query i",
               "marker": {"size": 10}}]  # fmt: skip
    shapes = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": v, "y1": v, "line": {"dash": "dot"}}
              for v in (kv.max(), kv.min())]  # fmt: skip
    return _figure(traces, title, "query q_i", "value k_j of its top key", shapes=shapes, height=330)


def selection_bars(counts: dict[str, Sequence[int]], title: str) -> go.Figure:
    """How many queries pick each key as their top key, per head."""
    traces = [{"type": "bar", "x": [str(j) for j in range(len(c))], "y": list(c), "name": name}
              for name, c in counts.items()]  # fmt: skip
    fig = _figure(traces, title, "key j (at angle 360°·j / n on the circle)", "queries whose top key is j")
    fig.update_layout(barmode="group", xaxis={"type": "category"})
    return fig


def collapse_chart(layers, curves: dict[str, Sequence[float]], title: str) -> go.Figure:
    """Distance from rank 1 by depth (log y), one line per stack kind."""
    traces = [{"type": "scatter", "x": list(layers), "y": np.maximum(_np(c), 1e-17), "mode": "lines+markers",
               "name": name} for name, c in curves.items()]  # fmt: skip
    return _figure(traces, title, "layer l (0 = input)", "r_l = ‖X − 1x̄ᵀ‖_F / ‖X‖_F", log_y=True)


def identity_bars(diffs: dict[str, float], tol: float, title: str) -> go.Figure:
    """max |Δ| per identity on a log axis, with the tolerance as a dotted line."""
    names = list(diffs)
    y = [max(diffs[n], 1e-18) for n in names]
    colors = ["seagreen" if d <= tol else "crimson" for d in diffs.values()]
    traces = [{"type": "bar", "x": names, "y": y, "marker": {"color": colors}, "name": "max |Δ|"}]
    shape = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": tol, "y1": tol, "line": {"dash": "dot"}}
    fig = _figure(traces, title, "", "max |Δ|", log_y=True, shapes=[shape], height=440)
    fig.update_layout(xaxis={"type": "category"}, showlegend=False)
    return fig
