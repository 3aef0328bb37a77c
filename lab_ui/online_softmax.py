"""Figures and widgets of the Online-softmax page: a highlighted tile, the tile grid, the player.

Generic plotting over numbers that attn_core.online and attn_core.online_views computed; no
attention math here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attn_core.units import format_bytes_binary
from lab_ui import figures

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


def scientific(df_columns: Sequence[str]) -> dict:
    """column_config that shows the named float columns as 1.2e-16."""
    return {c: st.column_config.NumberColumn(format="%.2e") for c in df_columns}


def key_range(tokens: Sequence[str], start: int, stop: int) -> str:
    """Keys start…stop-1 by name: "the, river" for a few, "k0…k9" for many."""
    names = list(tokens[start:stop])
    return ", ".join(names) if len(names) <= 4 else f"{names[0]}…{names[-1]}"
