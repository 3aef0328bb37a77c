"""Chart builders for cost curves over T: stacked shares and log-log lines with marked points.

Generic (x values, named series, labelled marks); the numbers come from attn_core.cost.
Figures are built from plain dicts in one go (faster than trace-by-trace plotly calls).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lab_ui.figures import axis, font_size, trace_values

Marks = Sequence[tuple[float | None, str]]


def _valid(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _marks(x_marks: Marks, y_marks: Marks) -> tuple[list[dict], list[dict]]:
    """Dashed vertical lines at x (log axes take log10 in annotations) and dotted horizontal
    lines at y, each with a label."""
    shapes, notes = [], []
    for n, (x, label) in enumerate(m for m in x_marks if _valid(m[0])):
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dash", "color": "#555", "width": 1.5},
            }
        )
        # Alternate labels above and inside the plot so that neighbouring marks stay readable.
        notes.append(
            {
                "xref": "x",
                "yref": "paper",
                "x": math.log10(x),
                "y": 1.0 if n % 2 == 0 else 0.9,
                "text": label,
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "bgcolor": "rgba(255,255,255,0.7)",
            }
        )
    for y, label in y_marks:
        if _valid(y):
            shapes.append(
                {
                    "type": "line",
                    "xref": "paper",
                    "yref": "y",
                    "x0": 0,
                    "x1": 1,
                    "y0": y,
                    "y1": y,
                    "line": {"dash": "dot", "color": "#b22", "width": 1.5},
                }
            )
            notes.append(
                {
                    "xref": "paper",
                    "yref": "y",
                    "x": 1.0,
                    "y": math.log10(y),
                    "text": label,
                    "showarrow": False,
                    "xanchor": "right",
                    "yanchor": "bottom",
                }
            )
    return shapes, notes


def _layout(
    traces: list[dict],
    title: str,
    x_title: str,
    y_title: str,
    log_y: bool,
    height: int,
    x_marks: Marks,
    y_marks: Marks,
) -> dict:
    shapes, notes = _marks(x_marks, y_marks)
    xs = trace_values(traces, "x") + [x for x, _ in x_marks if _valid(x)]
    ys = trace_values(traces, "y") + [y for y, _ in y_marks if _valid(y)]
    if not log_y:  # annotations on a linear y axis take the value itself
        for note in notes:
            if note["yref"] == "y":
                note["y"] = 10 ** note["y"]
    return {
        "title": {"text": title},
        "font": {"size": font_size()},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 70, "b": 50},
        "xaxis": axis(x_title, log=True, values=xs),
        "yaxis": axis(y_title, log=log_y, values=ys if log_y else None),
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "x unified",
        "shapes": shapes,
        "annotations": notes,
    }


def stacked_shares(
    x,
    series: dict[str, Sequence[float]],
    *,
    title: str,
    x_title: str,
    x_marks: Marks = (),
    overlay: dict[str, Sequence[float]] | None = None,
    height: int = 400,
) -> go.Figure:
    """Each series as its share of the sum at every x, stacked to 100%, on a log x axis;
    ``overlay`` adds dashed lines already in percent (not stacked)."""
    x = np.asarray(x, dtype=np.float64)
    lines = [
        {
            "type": "scatter",
            "x": x,
            "y": np.asarray(y, dtype=np.float64),
            "name": name,
            "mode": "lines",
            "line": {"dash": "dash", "color": "#222", "width": 2},
            "hovertemplate": f"{name}: %{{y:.1f}}%<extra></extra>",
        }
        for name, y in (overlay or {}).items()
    ]
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": np.asarray(y, dtype=np.float64),
            "name": name,
            "mode": "lines",
            "stackgroup": "one",
            "groupnorm": "percent",
            "hovertemplate": f"{name}: %{{y:.1f}}%<extra></extra>",
        }
        for name, y in series.items()
    ]
    layout = _layout(traces, title, x_title, "share of the layer's FLOPs (%)", False, height, x_marks, ())
    layout["yaxis"]["range"] = [0, 100]
    return go.Figure({"data": traces + lines, "layout": layout})


def log_lines(
    x,
    series: dict[str, Sequence[float]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    x_marks: Marks = (),
    y_marks: Marks = (),
    height: int = 400,
) -> go.Figure:
    """One line per series on log-log axes, hover to 4 significant figures, with labelled marks."""
    x = np.asarray(x, dtype=np.float64)
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": np.asarray(y, dtype=np.float64),
            "name": name,
            "mode": "lines",
            "hovertemplate": f"{name}: %{{y:.4g}}<extra></extra>",
        }
        for name, y in series.items()
    ]
    return go.Figure(
        {"data": traces, "layout": _layout(traces, title, x_title, y_title, True, height, x_marks, y_marks)}
    )


LAYER_COLOURS = {
    "full": "#1f77b4",
    "sliding": "#2ca02c",
    "chunked": "#ff7f0e",
    "MLA": "#9467bd",
    "linear": "#7f7f7f",
    "gdn": "#8c564b",
    "kda": "#e377c2",
    "mamba": "#17becf",
    "mamba2": "#bcbd22",
    "mlp": "#c7c7c7",
    "moe": "#7f7f7f",
}


def layer_strip(cells: Sequence[str], *, title: str, height: int = 150) -> go.Figure:
    """One cell per layer, coloured by its kind (full / sliding / chunked / MLA attention, Gated DeltaNet,
    KDA, Mamba, Mamba-2, and Nemotron-H's MLP-only and MoE-only blocks)."""
    traces = [
        {
            "type": "bar",
            "x": [i for i, c in enumerate(cells) if c == kind],
            "y": [1] * cells.count(kind),
            "name": f"{kind} ({cells.count(kind)})",
            "marker": {"color": colour},
            "width": 0.9,
            "hovertemplate": f"layer %{{x}}: {kind}<extra></extra>",
        }
        for kind, colour in LAYER_COLOURS.items()
        if kind in cells
    ]
    layout = {
        "title": {"text": title},
        "font": {"size": font_size()},
        "height": height,
        "margin": {"l": 20, "r": 20, "t": 60, "b": 30},
        "barmode": "overlay",
        "xaxis": {"title": {"text": "layer"}, "range": [-0.5, len(cells) - 0.5]},
        "yaxis": {"visible": False, "range": [0, 1]},
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
    }
    return go.Figure({"data": traces, "layout": layout})


def memory_vs_T(x, series: dict[str, Sequence[float]], *, T: int) -> go.Figure:
    """A hybrid's memory against T beside its all-attention twin: the flat state and the slope of
    the few attention layers, on log-log axes (GiB)."""
    return log_lines(
        x,
        series,
        title="Memory vs T: a hybrid's flat state and few-layer slope, beside all attention",
        x_title="T (tokens)",
        y_title="GiB",
        x_marks=[(T, f"T = {T:,}")],
    )


def total_vs_active(
    parts: Sequence[str], total: Sequence[float], active: Sequence[float], *, title: str
) -> go.Figure:
    """Stacked bars of parameters by part: everything the model holds beside what a token runs."""
    traces = [
        {
            "type": "bar",
            "x": ["total", "active per token"],
            "y": [t / 1e9, a / 1e9],
            "name": part,
            "hovertemplate": f"{part}: %{{y:.3f}}B<extra></extra>",
        }
        for part, t, a in zip(parts, total, active, strict=True)
    ]
    layout = {
        "title": {"text": title},
        "font": {"size": font_size()},
        "height": 360,
        "barmode": "stack",
        "yaxis": {"title": {"text": "parameters (billions)"}},
        "legend": {"orientation": "h", "y": -0.2},
    }
    return go.Figure({"data": traces, "layout": layout})
