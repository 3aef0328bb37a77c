"""Figures of the Trained heads page: the live loss curve with the phase change marked, and the
QK / OV circuits over the vocabulary (its attention maps are lab_ui/head_maps.py's); and the Train
section's controls (`train_controls`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from attn_core.views import trained_heads
from attn_core.views.trained_heads import TASKS, TaskId
from lab_ui import figures, widgets
from lab_ui.badges import table


def loss_figure(
    steps: list[int], losses: list[float], lines: dict[str, float], phase_step: int | None, title: str
) -> go.Figure:
    """The smoothed training loss; dashed levels (unigram baseline, threshold …); the phase change."""
    fig = figures.lines(
        steps, {"training loss (50-step mean)": losses}, title=title, x_title="step", y_title="loss (nats)"
    )
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
    return figures.heatmap(
        matrix,
        labels,
        labels,
        title=title,
        x_title=x_title,
        y_title=y_title,
        colorscale="RdBu",
        zmin=-m,
        zmax=m,
        zmid=0,
        height=560,
    )


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


def head_scores(df: pd.DataFrame) -> None:
    """The heads' scores as two tables that each fit the page: on the probe (with the ablation),
    then on the visitor's text."""
    on_text = [c for c in df.columns if "(your text)" in c]
    st.markdown("**Head scores on the probe**")
    probe = df.drop(columns=on_text)
    table(probe, "head_scores_probe.csv", key="th_scores", hide_index=True)
    st.markdown("**Head scores on your text**")
    table(df[["head", *on_text]], "head_scores_text.csv", key="th_scores_text", hide_index=True)


def train_controls() -> tuple[TaskId, str, int, int]:
    """The run's task, size, steps and seed, the caps, and the three buttons."""
    c = st.columns(4)
    with c[0]:
        task_ = widgets.selectbox("task", list(TaskId), key="th_task", format_func=lambda t: TASKS[t].label)
    with c[1]:
        size = widgets.selectbox(
            "model size",
            list(trained_heads.SIZES),
            key="th_size",
            default=trained_heads.DEFAULT_SIZE,
            ids=trained_heads.SIZE_IDS,
        )
    with c[2]:
        steps = widgets.slider("steps", 50, trained_heads.MAX_RUN_STEPS, 1500, key="th_steps", step=50)
    with c[3]:
        seed = int(widgets.number("seed", 0, 10_000, 0, key="th_seed", step=1))
    st.caption(
        f"{TASKS[task_].how}. Caps: {trained_heads.MAX_RUN_STEPS:,} steps, {trained_heads.MAX_RUN_S} s per "
        f"press (press Resume to go on), one run per visitor, {trained_heads.MAX_CONCURRENT_RUNS} on the "
        "whole server at a time."
    )
    b = st.columns([1, 1, 1, 3])
    b[0].button(
        "▶ Train", key="th_go", type="primary", on_click=st.session_state.update, args=({"th_do": "new"},)
    )
    current = st.session_state.get("th_run")
    if current is not None and not current.done:
        b[1].button("Resume", key="th_resume", on_click=st.session_state.update, args=({"th_do": "resume"},))
    b[2].button(
        "■ Stop", key="th_stop", help="Stops the run; the model trained so far stays (Resume goes on)."
    )
    return task_, size, steps, seed
