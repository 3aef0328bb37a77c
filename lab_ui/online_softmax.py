"""Figures, tables and widgets of the Online-softmax page: a highlighted tile, the tile grid, the
player, the step/merge/memory tables and the memory chart.

Generic plotting and formatting over numbers that attn_core.views.online_softmax computed; no attention
math here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attn_core.cost.score_memory import MemoryBill
from attn_core.cost.units import format_bytes_binary, format_flops
from attn_core.online import OnlineStep
from attn_core.views import memory_bill
from attn_core.views.online_softmax import RowWalk
from lab_ui import figures, widgets
from lab_ui.badges import oracle_badge

PLAY_SECONDS = 0.8  # one block per tick while ▶ plays


def highlight_tile(
    fig: go.Figure,
    rows: tuple[int, int],
    cols: tuple[int, int],
    color: str = "#e4572e",
    width: int = 4,
    dash: str = "solid",
) -> None:
    """Outline rows [r0, r1) × columns [c0, c1) of a categorical heatmap (cell i spans i ± 0.5)."""
    (r0, r1), (c0, c1) = rows, cols
    fig.add_shape(
        type="rect",
        x0=c0 - 0.5,
        x1=c1 - 0.5,
        y0=r0 - 0.5,
        y1=r1 - 0.5,
        line={"color": color, "width": width, "dash": dash},
        name="current tile",
    )


def tile_grid(computed: np.ndarray, block_size: int, L: int, S: int) -> go.Figure:
    """The (query block × key block) grid: 1 = computed, 0 = skipped because the mask removes it."""
    n_q, n_k = computed.shape
    y = [f"q {i * block_size}–{min((i + 1) * block_size, L) - 1}" for i in range(n_q)]
    x = [f"k {j * block_size}–{min((j + 1) * block_size, S) - 1}" for j in range(n_k)]
    fig = figures.heatmap(
        computed.astype(np.float64),
        x,
        y,
        title=f"Tiles of {block_size} × {block_size}: computed (dark) vs skipped (light)",
        x_title="key block",
        y_title="query block",
        colorscale="Greys",
        zmin=-0.3,
        zmax=1,
        value_name="computed",
    )
    fig.update_traces(showscale=False, texttemplate=None)
    return fig


def play_controls(n_steps: int, key: str) -> bool:
    """▶ Play / ⏸ Pause buttons for a stepper held in st.session_state[key] (0…n_steps).

    Returns whether it is playing. Play restarts from step 0; each tick of the fragment that
    calls ``advance`` shows the next step, and the player stops itself at the last one."""
    playing_key = f"{key}_playing"

    def start() -> None:
        st.session_state[key] = 0
        st.session_state[playing_key] = True
        st.session_state[f"{key}_fresh"] = True  # show step 0 before the first tick

    def stop() -> None:
        st.session_state[playing_key] = False

    left, right, _ = st.columns([1, 1, 4])
    left.button("▶ Play", key=f"{key}_play", on_click=start, help="Step through the blocks, one per tick.")
    right.button("Pause", key=f"{key}_pause", on_click=stop, icon=":material/pause:")
    return bool(st.session_state.get(playing_key))


def advance(n_steps: int, key: str) -> None:
    """Called at the top of the player fragment, before the step slider is drawn."""
    playing_key = f"{key}_playing"
    if not st.session_state.get(playing_key):
        return
    if st.session_state.pop(f"{key}_fresh", False):
        return
    step = min(int(st.session_state.get(key, 0)) + 1, n_steps)
    st.session_state[key] = step
    if step >= n_steps:
        st.session_state[playing_key] = False
        st.rerun()  # a full rerun re-creates the fragment without its timer


def player(playing: bool, body: Callable[[], None]) -> None:
    """Run ``body`` as a fragment that reruns itself every PLAY_SECONDS while playing."""
    st.fragment(body, run_every=PLAY_SECONDS if playing else None)()


def fmt(values: Sequence[float] | float, digits: int = 4) -> str:
    """(0.576, 0.284)-style text for a vector, a plain number for a scalar; ±inf and NaN as such."""
    if isinstance(values, int | float):
        return f"{values:.{digits}g}" if np.isfinite(values) else str(values)
    return "(" + ", ".join(fmt(float(v), digits) for v in values) + ")"


def binary_byte_ticks(fig: go.Figure, low: float, high: float) -> None:
    """Label a log byte axis at powers of 1,024 (1 KiB, 1 MiB, …) instead of SI's k/M/G."""
    powers = [1024**n for n in range(7) if low / 1024 <= 1024**n <= high * 1024]
    fig.update_yaxes(tickvals=powers, ticktext=[format_bytes_binary(p) for p in powers])


def exact_x_ticks(fig: go.Figure, values: Sequence[int]) -> None:
    """Ticks at exactly the x values plotted (log axes otherwise crowd 2…9 minor labels)."""
    fig.update_xaxes(tickvals=list(values), ticktext=[f"{v:,}" for v in values])


def key_range(tokens: Sequence[str], start: int, stop: int) -> str:
    """Keys start…stop-1 by name: "the, river" for a few, "k0…k9" for many."""
    names = list(tokens[start:stop])
    return ", ".join(names) if len(names) <= 4 else f"{names[0]}…{names[-1]}"


def steps_table(steps: Sequence[OnlineStep], key_tokens: Sequence[str]) -> pd.DataFrame:
    """One row per block walked so far: its keys, block max, m before/after, rescale, ℓ, u."""
    return pd.DataFrame(
        {
            "block": [t.index + 1 for t in steps],
            "keys": [key_range(key_tokens, t.start, t.stop) for t in steps],
            "block max": [t.block_max for t in steps],
            "m before": [t.m_before for t in steps],
            "m after": [t.m_after for t in steps],
            "rescale": [t.rescale for t in steps],
            "ℓ": [t.l_after for t in steps],
            "u": [fmt(t.u_after) for t in steps],
        }
    )


def merge_table(rows: Sequence[dict], key_tokens: Sequence[str]) -> pd.DataFrame:
    """The split-K partials (``SplitMerge.rows()``) with key names and vectors as text."""
    return pd.DataFrame(
        [
            {
                "partial": r["partial"],
                "keys": key_range(key_tokens, r["start"], r["stop"]),
                "m": r["m"],
                "ℓ": r["ℓ"],
                "u": fmt(r["u"]),
                "u / ℓ": fmt(r["u / ℓ"]) if r["u / ℓ"] is not None else "— (no allowed key)",
            }
            for r in rows
        ]
    )


def memory_chart(grid: Sequence[int], bills: Sequence[MemoryBill]) -> go.Figure:
    """Naive vs online score memory, per layer and whole model, over context length (log-log)."""
    fig = figures.lines(
        list(grid),
        {
            "naive, per layer": [b.naive_per_layer for b in bills],
            "online, per layer": [b.online_per_layer for b in bills],
            "naive, whole model": [b.naive_per_model for b in bills],
            "online, whole model": [b.online_per_model for b in bills],
        },
        title="Score memory vs context length",
        x_title="T (tokens)",
        y_title="memory",
        log_x=True,
        log_y=True,
    )
    exact_x_ticks(fig, grid)
    binary_byte_ticks(fig, bills[0].online_per_layer, bills[-1].naive_per_model)
    return fig


def memory_table(grid: Sequence[int], bills: Sequence[MemoryBill]) -> pd.DataFrame:
    """The bill at each T, in KiB/MiB/GiB and (for the CSV) in bytes."""
    return pd.DataFrame(
        {
            "T": list(grid),
            "naive per head": [format_bytes_binary(b.naive_per_head) for b in bills],
            "naive per layer": [format_bytes_binary(b.naive_per_layer) for b in bills],
            "naive per model": [format_bytes_binary(b.naive_per_model) for b in bills],
            "online per layer": [format_bytes_binary(b.online_per_layer) for b in bills],
            "online per model": [format_bytes_binary(b.online_per_model) for b in bills],
            "naive per layer (bytes)": [b.naive_per_layer for b in bills],
            "online per layer (bytes)": [b.online_per_layer for b in bills],
        }
    )


def block_sweep_table(sweep: Sequence) -> pd.DataFrame:
    """Tiles computed/skipped and the max error against plain attention at each block size."""
    return pd.DataFrame(
        {
            "block size": [r.block_size for r in sweep],
            "tiles computed": [r.tiles_computed for r in sweep],
            "tiles skipped": [r.tiles_skipped for r in sweep],
            "max |online − attention|": [r.max_abs_error for r in sweep],
        }
    )


def block_sweep_chart(sweep: Sequence) -> go.Figure:
    """Max error vs block size on log-log axes (an exact 0 is drawn at 1e-18)."""
    sizes = [r.block_size for r in sweep]
    errors = np.maximum([r.max_abs_error for r in sweep], 1e-18)  # 0 has no place on a log axis
    fig = figures.lines(
        sizes,
        {"max |online − direct| (float64)": errors},
        title="Error vs block size: every block size is exact up to rounding",
        x_title="block size b",
        y_title="max abs error",
        log_x=True,
        log_y=True,
        height=320,
    )
    exact_x_ticks(fig, sizes)
    fig.update_yaxes(exponentformat="power")
    return fig


def precision_chart(T_values: Sequence[int], curves: dict[str, Sequence[float]]) -> go.Figure:
    """Relative error vs T, one line per (dtype, where the state is kept), log-log."""
    T = list(T_values)
    fig = figures.lines(
        T,
        curves,
        title="Relative error vs T",
        x_title="T (keys per row)",
        y_title="max relative error",
        log_x=True,
        log_y=True,
    )
    exact_x_ticks(fig, T)
    fig.update_yaxes(exponentformat="power")
    return fig


def walk_heatmap(
    walk: RowWalk, step: int, query_tokens: Sequence[str], key_tokens: Sequence[str]
) -> go.Figure:
    """The head's scores with the walked row dotted and, after step ≥ 1, that step's tile outlined."""
    title = f"Scores S of head {walk.head}; query row {query_tokens[walk.row]}, tile of step {step}"
    fig = figures.heatmap(walk.scores, key_tokens, query_tokens, title=title, colorscale="RdBu_r", zmid=0)
    highlight_tile(
        fig, (walk.row, walk.row + 1), (0, walk.scores.shape[1]), color="#555", width=1, dash="dot"
    )
    if step >= 1:
        s = walk.trace.steps[step - 1]
        highlight_tile(fig, walk.query_block, (s.start, s.stop))
    return fig


def state_metrics(s: OnlineStep) -> None:
    """m, the rescale factor, ℓ and u after one step, as four metrics."""
    c = st.columns(4)
    c[0].metric("m (running max)", fmt(s.m_after))
    c[1].metric("rescale e^(m_old − m_new)", fmt(s.rescale, 3))
    c[2].metric("ℓ (normalizer)", fmt(s.l_after))
    c[3].metric("u (unnormalized output)", fmt(s.u_after, 3))


def memory_metrics(bill: MemoryBill) -> None:
    """Naive score memory per head/layer/model, online state per layer/model, recompute FLOPs."""
    m = st.columns(3)
    m[0].metric("naive, per head", format_bytes_binary(bill.naive_per_head))
    m[1].metric("naive, per layer", format_bytes_binary(bill.naive_per_layer))
    m[2].metric(f"naive, all {bill.layers} layers", format_bytes_binary(bill.naive_per_model))
    m = st.columns(3)
    m[0].metric("online (fp32 lse), per layer", format_bytes_binary(bill.online_per_layer))
    m[1].metric(f"online, all {bill.layers} layers", format_bytes_binary(bill.online_per_model))
    m[2].metric("backward recompute, per layer", format_flops(bill.recompute_flops_per_layer))


def memory_inputs() -> tuple[str, int, str, int]:
    """The Memory bill's widgets in a row: (model, T, dtype, batch B)."""
    c = st.columns(4)
    with c[0]:
        name = widgets.selectbox("model", memory_bill.MODELS, key="os_model", default="llama-2-7b")
    with c[1]:
        T = widgets.number("T (tokens)", 1, memory_bill.MAX_T, 4096, key="os_T", step=1)
    with c[2]:
        dtype = widgets.selectbox("weights stored as", list(memory_bill.MEMORY_DTYPES), key="os_dtype_mem")
    with c[3]:
        batch = widgets.number("batch B", 1, memory_bill.MAX_BATCH, 1, key="os_B", step=1)
    return name, int(T), dtype, int(batch)


def show_final(walk: RowWalk, step: int) -> None:
    """The row's answer once the walk reaches its last block: online against direct, and SDPA's check."""
    n = len(walk.trace.steps)
    if step < n:
        st.caption(f"u / ℓ after all {n} blocks appears at the last step.")
        return
    c = st.columns(2)
    c[0].metric("online: u_N / ℓ_N", fmt(walk.trace.output.double().tolist(), 3))
    c[1].metric("direct: softmax(s) · V", fmt(walk.direct.tolist(), 3))
    oracle_badge(
        f"torch SDPA (float64) for this row, walk in {walk.dtype}", walk.max_abs_diff, walk.tolerance
    )
    st.caption(f"logsumexp m_N + log ℓ_N = {walk.trace.lse:.6g}: the one number per row kept for backward.")
