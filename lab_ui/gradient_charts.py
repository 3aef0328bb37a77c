"""Figures of the Gradients page that the shared builders in lab_ui.figures do not cover."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from lab_ui import figures
from lab_ui.figures import font_size


def _guides(bound: float, current: float) -> tuple[list[dict], list[dict]]:
    """The dotted line at ``bound`` and the dashed line at the current τ, with their labels."""
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
    return shapes, annotations


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
    shapes, annotations = _guides(bound, current)
    layout = {
        "title": {"text": title},
        "font": {"size": font_size()},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "height": height,
        "xaxis": figures.axis("temperature τ", log=True, values=x),
        "yaxis": {"title": {"text": "value"}},
        "legend": {"orientation": "h", "y": -0.2},
        "shapes": shapes,
        "annotations": annotations,
    }
    return go.Figure({"data": traces, "layout": layout})


def backward_heatmaps(back, qkv, head: int) -> None:
    """dS and dQ of query head ``head`` on the left, dK and dV of its KV head on the right."""
    group = qkv.heads // qkv.k.shape[-3]
    kv = head // group
    q_tok, k_tok = qkv.query_tokens, qkv.key_tokens
    suffix = f" (KV head {kv})" if group > 1 else ""
    coords = [str(c) for c in range(qkv.q.shape[-1])]
    panels = (
        (back.dscores[0, head], k_tok, q_tok, "dS = ∂L/∂S", "key", "query", "gr_dS"),
        (back.dk[0, kv], coords, k_tok, f"dK{suffix}", "d_k coordinate", "key", "gr_dK"),
        (back.dq[0, head], coords, q_tok, "dQ", "d_k coordinate", "query", "gr_dQ"),
        (back.dv[0, kv], list(qkv.value_names), k_tok, f"dV{suffix}", "value coordinate", "key", "gr_dV"),
    )
    cols = st.columns(2)
    for n, (z, x, y, title, x_title, y_title, key) in enumerate(panels):
        with cols[n % 2]:
            fig = figures.heatmap(
                z, x, y, title=title, x_title=x_title, y_title=y_title, colorscale="RdBu_r", zmid=0
            )
            figures.show(fig, key=key)
    if group > 1:
        st.caption(
            f"GQA: KV head {kv} is shared by {group} query heads; its dK and dV add their contributions."
        )
