"""Figures of the Trained heads page: the layer × head grid, one enlarged head, the live loss
curve with the phase change marked, and the QK / OV circuits over the vocabulary."""

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


def loss_figure(
    steps: list[int], losses: list[float], lines: dict[str, float], phase_step: int | None, title: str
) -> go.Figure:
    """The smoothed training loss; dashed levels (unigram baseline, threshold …); the phase change."""
    fig = figures.lines(steps, {"training loss (50-step mean)": losses}, title=title, x_title="step",
                        y_title="loss (nats)")  # fmt: skip
    for (name, y), dash in zip(lines.items(), ("dash", "dot", "dashdot"), strict=False):
        fig.add_hline(y=y, line_dash=dash, line_color="grey", annotation_text=f"{name} {y:.2f}")
    if phase_step is not None:
        fig.add_vline(
            x=phase_step,
            line_color="#c62828",
            annotation_text=f"phase change: step {phase_step}",
            annotation_position="bottom left",
        )
    return fig


def circuit(matrix: torch.Tensor, labels: list[str], title: str, y_title: str, x_title: str) -> go.Figure:
    m = float(matrix.abs().max()) or 1.0
    return figures.heatmap(matrix, labels, labels, title=title, x_title=x_title, y_title=y_title,
                           colorscale="RdBu", zmin=-m, zmax=m, zmid=0, height=560)  # fmt: skip


def phase_caption(lines: dict[str, float], phase: int | None, n_layer: int) -> str:
    """What the induction task's loss curve shows: the phase-change threshold and where (whether)
    the run passed it; ``lines`` are the view's thresholds."""
    note = (
        f"Phase change: the 50-step mean loss first at or below {lines['phase-change threshold']:.2f} "
        "nats — half the best loss without looking the current letter up "
        f"({lines['best without lookup']:.2f}), "
        f"{lines['unigram baseline'] - lines['phase-change threshold']:.2f} nats below the unigram "
        f"baseline ln 26 = {lines['unigram baseline']:.2f}. "
        + (f"Passed at step {phase:,}." if phase else "Not passed yet.")
    )
    if n_layer == 1:
        note += (
            " One layer cannot form an induction head: it needs a previous-token head in an earlier layer."
        )
    return note
