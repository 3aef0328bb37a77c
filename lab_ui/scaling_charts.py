"""Figures of the Scaling page that lab_ui.figures does not cover: logits under each scale,
row entropy and effective keys against σ, the two-key probability, alignment, sink caps and cache
eviction. Each builder takes plain numbers from attn_core.views.scaling and returns one go.Figure,
built as one dict (fast, and a title AppTests can find); and the Sinks section's sliders (`sink_inputs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attn_core.views.scaling import ScalingInputs
from lab_ui import widgets
from lab_ui.figures import as_float64, traces_figure, vline

HIST_BINS = 60


def logit_histogram(scores: Sequence[float], variance: float, title: str) -> go.Figure:
    """A density histogram of simulated logits with the normal density N(0, theoretical variance)."""
    sd = max(variance, 1e-300) ** 0.5
    x = np.linspace(-4 * sd, 4 * sd, 161)
    pdf = np.exp(-(x**2) / (2 * sd**2)) / (sd * np.sqrt(2 * np.pi))
    traces = [
        {
            "type": "histogram",
            "x": as_float64(scores),
            "histnorm": "probability density",
            "name": "simulated",
            "opacity": 0.6,
            "nbinsx": HIST_BINS,
        },
        {"type": "scatter", "x": x, "y": pdf, "mode": "lines", "name": "N(0, theory)"},
    ]
    return traces_figure(traces, title, "logit α q·k", "density", height=330)


def entropy_curve(
    sigmas, simulated, approximation, breakdown: float, max_entropy: float, title: str
) -> go.Figure:
    """Median row entropy against the logit spread σ, ln T − σ²/2, and √(2 ln T) marked."""
    x = as_float64(sigmas)
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": as_float64(simulated),
            "mode": "lines+markers",
            "name": "simulated median H",
        },
        {
            "type": "scatter",
            "x": x,
            "y": as_float64(approximation),
            "mode": "lines",
            "name": "ln T − σ²/2",
            "line": {"dash": "dot"},
        },
    ]
    shape, notes = vline(breakdown, text=f"√(2 ln T) = {breakdown:.2f}")
    fig = traces_figure(
        traces, title, "logit spread σ", "entropy H (nats)", shapes=[shape], annotations=notes
    )
    fig.update_layout(yaxis={"range": [0.0, max_entropy * 1.05]})
    return fig


def effective_keys_curve(sigmas, simulated, breakdown: float, title: str) -> go.Figure:
    """e^H of the simulated median entropy against σ (log y), with √(2 ln T) marked."""
    x = as_float64(sigmas)
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": np.exp(as_float64(simulated)),
            "mode": "lines+markers",
            "name": "e^H",
        }
    ]
    shape, notes = vline(breakdown, text=f"√(2 ln T) = {breakdown:.2f}")
    return traces_figure(
        traces,
        title,
        "logit spread σ",
        "effective keys e^H",
        log_y=True,
        shapes=[shape],
        annotations=notes,
        height=320,
    )


def two_key_curves(widths, exact: dict, gaussian: dict, simulated: dict, se: dict, title: str) -> go.Figure:
    """P(max p > 0.99) over two keys against d_k: exact integral, Gaussian approximation, simulation ± 2 SE."""
    x = as_float64(widths)
    traces = []
    for name in exact:
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": as_float64(exact[name]),
                "mode": "lines",
                "name": f"{name}: exact",
            }
        )
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": as_float64(gaussian[name]),
                "mode": "lines",
                "name": f"{name}: Gaussian approx.",
                "line": {"dash": "dot"},
            }
        )
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": as_float64(simulated[name]),
                "mode": "markers",
                "name": f"{name}: simulated ± 2 SE",
                "error_y": {"type": "data", "array": 2 * as_float64(se[name])},
            }
        )
    return traces_figure(traces, title, "d_k", "P(max p > 0.99)", log_x=True, log_y=True)


def alignment_plot(
    d_ks, by_rule: dict[str, tuple[Sequence[float], Sequence[float]]], current: int, title: str
) -> go.Figure:
    """Mean ± sd of the scaled logit against d_k for each rule (rule -> (means, sds))."""
    x = as_float64(d_ks)
    traces = []
    for name, (mean, sd) in by_rule.items():
        m, s = as_float64(mean), as_float64(sd)
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": m,
                "mode": "lines+markers",
                "name": f"{name}: mean",
                "error_y": {"type": "data", "array": s},
            }
        )
    shape, notes = vline(current, text=f"d_k = {current}", log_x=True)
    return traces_figure(
        traces, title, "d_k", "α q·k: mean ± sd", log_x=True, shapes=[shape], annotations=notes
    )


def cap_curves(gains, caps: dict[str, Sequence[float]], target: float, title: str) -> go.Figure:
    """The QK-norm cap against the gain g for several T, with the target weight as a dotted line."""
    x = as_float64(gains)
    traces = [
        {"type": "scatter", "x": x, "y": as_float64(c), "mode": "lines", "name": name}
        for name, c in caps.items()
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
    return traces_figure(traces, title, "gain g", "largest possible weight", shapes=[shape])


def eviction_chart(positions, errors: dict[str, Sequence[float]], title: str) -> go.Figure:
    """Relative output error per query position for each cache policy (log y; zeros clipped)."""
    x = as_float64(positions)
    traces = [
        {"type": "scatter", "x": x, "y": np.maximum(as_float64(e), 1e-17), "mode": "lines", "name": name}
        for name, e in errors.items()
    ]
    return traces_figure(traces, title, "query position t", "‖o − o_full‖ / ‖o_full‖", log_y=True)


def sink_inputs(x: ScalingInputs) -> ScalingInputs:
    """The sink calculator's sliders (Scaling page, Sinks section): ``x`` with them set."""
    c = st.columns(3)
    with c[0]:
        w = widgets.slider("target weight w", 0.01, 0.99, 0.9, key="sc_w", step=0.01)
    with c[1]:
        a = widgets.slider("sink advantage a", 0.0, 20.0, 5.0, key="sc_a", step=0.1)
    with c[2]:
        g = widgets.slider("QK-norm gain g", 0.0, 10.0, 5.0, key="sc_g", step=0.05)
    window = widgets.slider("eviction: cache budget (tokens kept)", 8, 128, 32, key="sc_window")
    return replace(x, target_weight=w, advantage=a, gain=g, window=window)
