"""The Serving page's figures (plotly): latency against throughput per GPU as concurrency rises, with
others' published measurements drawn on it, and a replica's batch and KV occupancy over time."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attn_core.views.serving_curve import CurveView
from lab_ui import figures

OTHERS = "others' measurements"


def _estimate(rows: list[dict], x: np.ndarray, key: str, dash: str) -> dict:
    """The estimate's line with its 80% interval as error bars."""
    y = np.array([r[f"{key} (ms)"] for r in rows])
    lo = np.array([r[f"{key} low (ms)"] for r in rows])
    hi = np.array([r[f"{key} high (ms)"] for r in rows])
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "lines+markers",
        "name": f"{key} estimate (80% interval)",
        "line": {"dash": dash},
        "error_y": {"type": "data", "array": hi - y, "arrayminus": y - lo, "visible": True},
        "text": [f"concurrency {r['concurrency']}" for r in rows],
    }


def _bound(rows: list[dict], key: str) -> dict:
    return {
        "type": "scatter",
        "x": np.array([r["bound tok/s per GPU"] for r in rows]),
        "y": np.array([r[f"{key} bound (ms)"] for r in rows]),
        "mode": "lines",
        "name": f"{key} roofline bound",
        "line": {"dash": "dot", "width": 1},
    }


def _published(view: CurveView, which: str, y_range: tuple[float, float]) -> list[dict]:
    """Others' runs: points where a run gives both axes, vertical lines for a throughput alone,
    horizontal lines for a latency alone (each labelled with its source in the hover)."""
    pub = view.published
    traces = []
    key = f"{which.lower()}_ms"
    pts = [p for p in pub.points if key in p]
    if pts:
        traces.append(
            {
                "type": "scatter",
                "x": [p["x"] for p in pts],
                "y": [p[key] for p in pts],
                "mode": "markers",
                "name": f"{OTHERS} (batch-1 decode)",
                "marker": {"symbol": "x", "size": 11},
                "text": [p["label"] for p in pts],
                "hovertemplate": "%{text}<br>%{x:,.1f} tok/s/GPU, %{y:,.2f} ms",
            }
        )
    lines = pub.ttft_lines if which == "TTFT" else pub.tpot_lines
    xs = [r["output tok/s per GPU"] for r in view.rows] + [p["x"] for p in pub.points + pub.x_lines]
    x_lo, x_hi = min(xs) / 1.5, max(xs) * 1.5
    for i, ln in enumerate(lines):
        traces.append(
            {
                "type": "scatter",
                "x": [x_lo, x_hi],
                "y": [ln["y"], ln["y"]],
                "mode": "lines",
                "name": OTHERS if i == 0 else ln["label"],
                "showlegend": i == 0,
                "legendgroup": "pub_y",
                "line": {"dash": "dashdot", "width": 1, "color": "gray"},
                "hovertext": ln["label"],
                "hoverinfo": "text+y",
            }
        )
    if pub.x_lines:  # a throughput alone has no latency: a rug of ticks along the x axis
        traces.append(
            {
                "type": "scatter",
                "x": [ln["x"] for ln in pub.x_lines],
                "y": [y_range[0] * 1.15] * len(pub.x_lines),
                "mode": "markers",
                "name": f"{OTHERS} (throughput only)",
                "marker": {"symbol": "triangle-up", "size": 10, "color": "gray"},
                "text": [ln["label"] for ln in pub.x_lines],
                "hovertemplate": "%{text}<br>%{x:,.0f} tok/s/GPU",
            }
        )
    return traces


def latency_vs_throughput(view: CurveView, which: str) -> go.Figure:
    """``which`` (TTFT or TPOT) p50 and p99 in ms against output tok/s per GPU, log–log, one point
    per concurrency; the bound and others' measurements on the same axes."""
    rows = view.rows
    x = np.array([r["output tok/s per GPU"] for r in rows])
    traces = [_estimate(rows, x, f"{which} p50", "solid"), _estimate(rows, x, f"{which} p99", "dash")]
    traces.append(_bound(rows, f"{which} p50"))
    ys = [r[f"{which} {q}{s} (ms)"] for r in rows for q in ("p50", "p99") for s in ("", " high", " bound")]
    pub = view.published
    ys += [p[f"{which.lower()}_ms"] for p in pub.points if f"{which.lower()}_ms" in p]
    ys += [ln["y"] for ln in (pub.ttft_lines if which == "TTFT" else pub.tpot_lines)]
    y_range = (min(ys) / 1.5, max(ys) * 1.5)
    traces += _published(view, which, y_range)
    fig = figures.traces_figure(
        traces,
        f"{which} vs output throughput per GPU (TP {view.tp}, concurrency {rows[0]['concurrency']}–"
        f"{rows[-1]['concurrency']})",
        "output tok/s per GPU",
        f"{which} (ms)",
        log_x=True,
        log_y=True,
        height=460,
    )
    return fig.update_xaxes(dtick=1).update_yaxes(dtick=1)


def timeline(series: dict[str, np.ndarray]) -> go.Figure:
    """Replica 0's running batch (left axis) and KV occupancy in % (right axis) over time."""
    t = series["time (s)"]
    traces = [
        {
            "type": "scatter",
            "x": t,
            "y": series["batch (sequences)"],
            "mode": "lines",
            "name": "batch (sequences)",
        },
        {
            "type": "scatter",
            "x": t,
            "y": series["KV occupancy (%)"],
            "mode": "lines",
            "name": "KV occupancy (%)",
            "yaxis": "y2",
        },
    ]
    fig = figures.traces_figure(
        traces, "Batch and KV cache occupancy over time (replica 0)", "time (s)", "sequences"
    )
    return fig.update_layout(
        yaxis2={"title": {"text": "KV occupancy (%)"}, "overlaying": "y", "side": "right", "range": [0, 105]}
    )
