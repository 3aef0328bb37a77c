"""Attention maps of both heads pages (Trained heads, Hugging Face heads) and their long-input
section: every head of some layers as a grid of small heatmaps, and one head enlarged. Weights
are shown on one 0…1 scale, row = query, column = key."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lab_ui import figures


def head_grid(maps: torch.Tensor, tokens: list[str], title: str, first_layer: int = 0) -> go.Figure:
    """maps (n_layer, n_head, T, T): one small heatmap per head, layers as rows (numbered from
    ``first_layer``), 0…1 shared scale."""
    n_layer, n_head = maps.shape[:2]
    fig = make_subplots(
        n_layer,
        n_head,
        subplot_titles=[f"L{i + first_layer}H{j}" for i in range(n_layer) for j in range(n_head)],
        horizontal_spacing=0.03,
        vertical_spacing=0.08,
    )
    labels = [f"{j}:{t}" for j, t in enumerate(tokens)]
    a = maps.detach().cpu().numpy().astype(np.float32)
    for i in range(n_layer):
        for j in range(n_head):
            fig.add_trace(
                go.Heatmap(
                    z=a[i, j],
                    x=labels,
                    y=labels,
                    zmin=0,
                    zmax=1,
                    colorscale="Blues",
                    showscale=False,
                    hovertemplate=f"L{i + first_layer}H{j}<br>query %{{y}}<br>key %{{x}}<br>weight %{{z:.4f}}<extra></extra>",
                ),
                row=i + 1,
                col=j + 1,
            )
    fig.update_xaxes(showticklabels=False, type="category")
    fig.update_yaxes(showticklabels=False, type="category", autorange="reversed")
    fig.update_layout(
        title={"text": title},
        font={"size": figures.font_size()},
        height=60 + 230 * n_layer,
        margin={"l": 20, "r": 20, "t": 80, "b": 20},
    )
    return fig


def one_head(P: torch.Tensor, tokens: list[str], title: str) -> go.Figure:
    labels = [f"{j}:{t}" for j, t in enumerate(tokens)]
    return figures.heatmap(P, labels, labels, title=title, zmin=0, zmax=1, value_name="weight", height=560)
