"""Figures and the gallery picker of the Masks & leakage page: mask grids, the change-the-future
lines, output heatmaps."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
import torch

from attn_core.experiments.equivariance import BosShare
from attn_core.experiments.perturbation import METHODS
from attn_core.limits import LIMITS
from attn_core.masks import MaskKind
from attn_core.views.mask_gallery import (
    GALLERY_KINDS,
    MAX_GRID,
    PAINTED,
    MaskView,
    alignment_caption,
    default_grid,
    gallery_mask,
    parse_lengths,
)
from attn_core.views.masks import SLIP_ALIASES, SLIPS, FutureView, SlipView
from lab_ui import figures, widgets
from lab_ui.badges import attempt

METHOD_COLORS = dict(zip(METHODS, ("#2e7d32", "#ef6c00", "#66bb6a", "#6a1b9a", "#757575"), strict=True))


def mask_figure(
    allowed: torch.Tensor, title: str, offset: int = 0, key: str = "", additive: bool = False
) -> None:
    """1 = may attend (dark), 0 = blocked (white); queries labelled by absolute position. With
    ``additive`` the grid holds 0 / −∞ instead (drawn grey on white)."""
    L, S = allowed.shape
    colors = (
        {"colorscale": "Greys", "zmin": -1, "zmax": 0}
        if additive
        else {
            "colorscale": [[0, "#ffffff"], [1, "#1f4e9c"]],
            "zmin": 0,
            "zmax": 1,
            "value_name": "may attend",
        }
    )
    fig = figures.heatmap(
        allowed.to(torch.float64),
        [f"k{j}" for j in range(S)],
        [f"q{i + offset}" for i in range(L)],
        title=title,
        **colors,
    )
    fig.update_traces(texttemplate=None, showscale=False, xgap=1, ygap=1)
    figures.show(fig, key=key)


def leak_figure(view: FutureView, t: int) -> go.Figure:
    """‖oᵢ′ − oᵢ‖∞ per row for every masking method; the rows that must not move shaded, leaks marked."""
    report = view.report
    fig = figures.lines(
        list(range(len(report.methods[0].row_change))),
        {m.method: m.row_change.tolist() for m in report.methods},
        title=f"How far each output moved when tokens {report.changed[0]}…{report.changed[-1]} changed",
        x_title="query row i",
        y_title="‖oᵢ′ − oᵢ‖∞",
    )
    fig.update_traces(mode="lines+markers")
    for trace in fig.data:
        trace.line.color = METHOD_COLORS.get(trace.name)
        trace.line.dash = "dash" if "renormalize" in trace.name else None
    if report.kind == "future":
        fig.add_vrect(
            x0=-0.5,
            x1=t + 0.5,
            fillcolor="#2e7d32",
            opacity=0.08,
            line_width=0,
            annotation_text="rows that must not move",
            annotation_position="top left",
        )
    if view.leaks:
        fig.add_trace(
            go.Scatter(
                x=[x for x, _, _ in view.leaks],
                y=[y for _, y, _ in view.leaks],
                text=[n for _, _, n in view.leaks],
                mode="markers",
                marker={"symbol": "x", "size": 12, "color": "#c62828"},
                name="leak: a row that must not move did",
                hovertemplate="%{text}<br>row %{x}: %{y:.4g}<extra></extra>",
            )
        )
    return fig


def bos_figure(b: BosShare) -> go.Figure:
    """Card 7's BOS share: o_t under the causal mask, 1/t, and o_t without a mask, by position."""
    series = {
        "causal: o_t": b.causal.tolist(),
        "1/t": b.expected.tolist(),
        "no mask: o_t": b.unmasked.tolist(),
    }
    return figures.lines(
        list(range(1, b.T + 1)),
        series,
        title="Equal scores, v₁ = 1, others 0: output = token 1's share",
        x_title="position t (1 = first)",
        y_title="o_t",
    )


def output_heatmap(values: torch.Tensor, tokens: list[str], title: str, key: str) -> None:
    """A (T, d) block of output vectors, one row per token."""
    names = [f"o[{c}]" for c in range(values.shape[-1])]
    fig = figures.heatmap(
        values,
        names,
        tokens,
        title=title,
        x_title="output coordinate",
        y_title="token",
        colorscale="RdBu_r",
        zmid=0,
    )
    figures.show(fig, key=key)


def slip_picker() -> str:
    """The Masks page's slip, by its id in ``masks.SLIPS`` (the URL keeps an old id's alias)."""
    return widgets.selectbox(
        "slip",
        list(SLIPS),
        key="mk_slip",
        format_func=lambda i: SLIPS[i].label,
        aliases=SLIP_ALIASES,
    )


def gallery_picker() -> MaskView | None:
    """The gallery's widgets (kind, sizes and the kind's parameter); the mask, or None after a message."""
    kind = widgets.selectbox("mask kind", GALLERY_KINDS, key="mk_kind", ids={PAINTED: "painted"})
    L, S, window, valid, lengths, prefix, grid = 6, 6, 3, 6, (), 0, ""
    if kind == PAINTED:
        st.caption(
            f"Paint one row per line: 1 (or # x ■) = may attend, 0 (or . ·) = blocked. Up to {MAX_GRID} × {MAX_GRID}."
        )
        grid = widgets.text_area("painted mask", key="mk_grid", default=default_grid(), height=170)
        return attempt(gallery_mask, kind, L, S, grid_text=grid)
    c1, c2 = st.columns(2)
    cap = LIMITS.gallery_len
    with c1:
        L = widgets.slider("L (queries)", 1, cap, 6, key="mk_gL")
    with c2:
        S = widgets.slider("S (keys)", 1, cap, 6, key="mk_gS")
    st.caption(f"Caps: L, S ≤ {cap}. {alignment_caption(kind, L, S)}")
    if kind == MaskKind.SLIDING_WINDOW:
        window = widgets.slider("window (keys each query sees)", 1, max(S, 2), min(3, S), key="mk_win")
    elif kind == MaskKind.PADDING:
        valid = widgets.slider("real (non-padding) keys", 1, max(S, 2), S, key="mk_valid")
    elif kind == MaskKind.DOCUMENT:
        text = widgets.text_area(
            "document lengths (must add up to S)", key="mk_docs", default="2, 3, 1", height=68
        )
        lengths = attempt(parse_lengths, text)
        if lengths is None:
            return None
    elif kind == MaskKind.PREFIX_LM:
        prefix = widgets.slider("prefix (bidirectional) length", 0, S, min(2, S), key="mk_prefix")
    return attempt(
        gallery_mask, kind, L, S, window=window, valid_keys=valid, doc_lengths=lengths, prefix=prefix
    )


def slip_panels(view: SlipView, keys: tuple[str, str]) -> None:
    """The right computation beside the slip: each panel a mask or a weight matrix."""
    for col, panel, key in zip(st.columns(2), (view.right, view.wrong), keys, strict=True):
        with col:
            if panel.is_mask:
                mask_figure(panel.values, panel.title, panel.offset, key=key)
            else:
                T = panel.values.shape[-1]
                labels = [f"k{j}" for j in range(T)], [f"q{i}" for i in range(T)]
                fig = figures.heatmap(panel.values, *labels, title=panel.title, zmin=0, zmax=1)
                figures.show(fig, key=key)
