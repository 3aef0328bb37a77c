"""Online softmax & tiling: FlashAttention's recurrence step by step, exact, with its memory bill
(cards 12 and 15)."""

import inspect

import numpy as np
import pandas as pd
import streamlit as st

from attn_core import memory, online, online_views, precision
from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.models import list_presets, load_preset
from attn_core.units import format_bytes_binary, format_flops
from lab_ui import figures, state
from lab_ui import online_softmax as ui
from lab_ui.inputs import mask_picker, qkv_picker
from lab_ui.page import header
from lab_ui.widgets import attempt, oracle_badge, slip_columns, slip_picker, table

SECTIONS = ("Step through", "Tiles & block size", "Merge (split-K)", "Precision", "Memory bill")
PRECISION_T = (64, 256, 1024, 4096)
MEMORY_DTYPES = {"fp16": 2, "bf16": 2, "fp32": 4}  # b, bytes per stored weight
MAX_BATCH = 4096
SLIP_NAMES = {online.SLIPS[code]: code for code in online.SLIPS}

header(
    "Online softmax & tiling",
    "FlashAttention never forms the L × S score matrix. It walks the keys **block by block**, keeping "
    "for each query row a running max **m**, a normalizer **ℓ** and an unnormalized output **u** "
    "(d_v + 2 numbers, whatever S is). When a block raises the max, the past is rescaled by "
    "e^(m_old − m_new); at the end o = u / ℓ is **exactly** softmax attention — only rounding "
    "differs. The price is memory traffic saved, not FLOPs: the backward pass even recomputes P.",
)

with st.sidebar:
    st.header("Inputs")
    qkv = qkv_picker()
    mask = mask_picker(qkv.L, qkv.S) if qkv is not None else None
    if qkv is not None and (qkv.heads > 1 or qkv.L > 1):
        st.header("Which row")
    if qkv is not None:
        head = state.slider("head", 0, qkv.heads - 1, 0, key="os_head") if qkv.heads > 1 else 0
        row = state.slider("query row", 0, qkv.L - 1, qkv.L - 1, key="os_row") if qkv.L > 1 else 0

section = state.radio("Section", SECTIONS, key="os_section", horizontal=True, label_visibility="collapsed")
needs_input = section in SECTIONS[:3]
if needs_input and (qkv is None or mask is None):
    st.info("Fix the input marked in the sidebar; the page updates as soon as it is valid.")
    st.stop()


# -- Step through -------------------------------------------------------------------------------
def step_through() -> None:
    if qkv.description.startswith("toy: bank"):
        st.caption(
            "Bank's row of the toy, one key per block, replays card 15: *river* raises the max from 0 to "
            "1.414, so the past is rescaled by e^(0 − 1.414) = 0.243 and ℓ goes 1 → 1.243 → 1.736; the "
            "output (1, 0.493)/1.736 = (0.576, 0.284) is the direct answer."
        )
    block = state.slider("block size (keys per step)", 1, qkv.S, 1, key="os_block") if qkv.S > 1 else 1
    slip_label = slip_picker(
        {name: online.SLIP_EXPLANATIONS[c] for name, c in SLIP_NAMES.items()}, key="os_slip"
    )
    slip = SLIP_NAMES.get(slip_label) if slip_label else None
    dtype, logit_scale = "float64", 1.0
    if slip == "no_max":
        c1, c2 = st.columns(2)
        with c1:
            dtype = state.selectbox(
                "dtype of the walk", list(online_views.TRACE_DTYPES), key="os_dtype", default="float16"
            )
        with c2:
            logit_scale = state.slider(
                "multiply the row's scores by", 1.0, 20.0, 10.0, key="os_logit", step=0.5
            )
        st.caption("Bank's largest score is 1.414; ×10 makes it 14.1, past fp16's e^11.09 = 65,504.")
    args = (qkv.q, qkv.k, qkv.v, mask.allowed)
    kw = dict(head=head, row=row, block_size=block, dtype=dtype, logit_scale=logit_scale)
    walk = attempt(online_views.walk_row, *args, **kw)
    wrong = attempt(online_views.walk_row, *args, **kw, slip=slip) if slip else None
    if walk is None or (slip and wrong is None):
        return
    n_steps = len(walk.trace.steps)
    playing = ui.play_controls(n_steps, key="os_step")

    def body() -> None:
        ui.advance(n_steps, key="os_step")
        step = state.slider("blocks processed", 0, n_steps, n_steps, key="os_step")
        show_walk(walk, step, "ok")
        if wrong is not None:
            slip_columns(lambda: show_final(walk, step), lambda: show_final(wrong, step), slip_label)
        else:
            show_final(walk, step)

    ui.player(playing, body)


def show_walk(walk: online_views.RowWalk, step: int, key: str) -> None:
    steps = walk.trace.steps
    scores = walk.scores
    fig = figures.heatmap(
        scores,
        qkv.key_tokens,
        qkv.query_tokens,
        title=f"Scores S of head {walk.head}; query row {qkv.query_tokens[walk.row]}, tile of step {step}",
        colorscale="RdBu_r",
        zmid=0,
    )
    ui.highlight_tile(fig, (walk.row, walk.row + 1), (0, scores.shape[1]), color="#555", width=1, dash="dot")
    if step >= 1:
        s = steps[step - 1]
        ui.highlight_tile(fig, walk.query_block, (s.start, s.stop))
    figures.show(fig, key=f"os_scores_{key}")
    if step == 0:
        st.markdown("**Before any block:** m = −∞, ℓ = 0, u = 0.")
        return
    s = steps[step - 1]
    c = st.columns(4)
    c[0].metric("m (running max)", ui.fmt(s.m_after))
    c[1].metric("rescale e^(m_old − m_new)", ui.fmt(s.rescale, 3))
    c[2].metric("ℓ (normalizer)", ui.fmt(s.l_after))
    c[3].metric("u (unnormalized output)", ui.fmt(s.u_after, 3))
    if s.max_moved:
        st.info(
            f"Block {step} raised the max from {s.m_before:.4g} to {s.m_after:.4g}: the old ℓ and u are "
            f"multiplied by e^({s.m_before:.4g} − {s.m_after:.4g}) = {s.rescale:.3f} before the new keys "
            "are added."
        )
    shown = steps[:step]
    df = pd.DataFrame(
        {
            "block": [t.index + 1 for t in shown],
            "keys": [ui.key_range(qkv.key_tokens, t.start, t.stop) for t in shown],
            "block max": [t.block_max for t in shown],
            "m before": [t.m_before for t in shown],
            "m after": [t.m_after for t in shown],
            "rescale": [t.rescale for t in shown],
            "ℓ": [t.l_after for t in shown],
            "u": [ui.fmt(t.u_after) for t in shown],
        }
    )
    table(df, "online_softmax_steps.csv", key=f"os_steps_{key}", hide_index=True)


def show_final(walk: online_views.RowWalk, step: int) -> None:
    n = len(walk.trace.steps)
    if step < n:
        st.caption(f"u / ℓ after all {n} blocks appears at the last step.")
        return
    c = st.columns(2)
    c[0].metric("online: u_N / ℓ_N", ui.fmt(walk.trace.output.double().tolist(), 3))
    c[1].metric("direct: softmax(s) · V", ui.fmt(walk.direct.tolist(), 3))
    oracle_badge(
        f"torch SDPA (float64) for this row, walk in {walk.dtype}", walk.max_abs_diff, walk.tolerance
    )
    st.caption(f"logsumexp m_N + log ℓ_N = {walk.trace.lse:.6g}: the one number per row kept for backward.")


# -- Tiles & block size -------------------------------------------------------------------------
def tiles() -> None:
    L, S = qkv.L, qkv.S
    smallest = online_views.smallest_block(L, S)
    st.caption(
        f"Square tiles of b queries × b keys. A tile the mask removes entirely is skipped: never "
        f"multiplied, never exponentiated. Cap: {online_views.MAX_TILES:,} tiles per rerun (here b ≥ {smallest})."
    )
    block = state.slider("block size b", 1, max(L, S), smallest, key="os_tile_block") if max(L, S) > 1 else 1
    view = attempt(online_views.tile_view, qkv.q, qkv.k, qkv.v, mask.allowed, block_size=block)
    if view is None:
        return
    oracle_badge("torch SDPA (float64), whole output", view.max_abs_diff, 1e-12)
    c = st.columns(4)
    c[0].metric("tiles computed", f"{view.tiles_computed:,}")
    c[1].metric("tiles skipped", f"{view.tiles_skipped:,}")
    c[2].metric("tiles in all", f"{view.tiles_total:,}")
    c[3].metric("max |lse − logsumexp(S)|", f"{view.lse_max_abs_diff:.1e}")
    figures.show(ui.tile_grid(view.computed.numpy(), block, L, S), key="os_tile_grid")
    sweep = pd.DataFrame(
        {
            "block size": [r.block_size for r in view.sweep],
            "tiles computed": [r.tiles_computed for r in view.sweep],
            "tiles skipped": [r.tiles_skipped for r in view.sweep],
            "max |online − attention|": [r.max_abs_error for r in view.sweep],
        }
    )
    errors = np.maximum(sweep["max |online − attention|"].to_numpy(), 1e-18)  # 0 on a log axis
    fig = figures.lines(
        sweep["block size"],
        {"max |online − direct| (float64)": errors},
        title="Error vs block size: every block size is exact up to rounding",
        x_title="block size b",
        y_title="max abs error",
        log_x=True,
        log_y=True,
        height=320,
    )
    ui.exact_x_ticks(fig, sweep["block size"].tolist())
    fig.update_yaxes(exponentformat="power")
    figures.show(fig, key="os_tile_sweep")
    table(
        sweep,
        "online_block_sizes.csv",
        key="os_sweep",
        hide_index=True,
        column_config=ui.scientific(["max |online − attention|"]),
    )


# -- Merge --------------------------------------------------------------------------------------
def merge() -> None:
    st.caption(
        "Two devices each see half of the keys and return (m, ℓ, u). Merging is the same rescale: "
        "m = max(m_a, m_b), ℓ = e^(m_a − m)ℓ_a + e^(m_b − m)ℓ_b, and u likewise."
    )
    drill = online.merge_partials(
        online.PartialState(3.0, 1.1353, 2.1353), online.PartialState(5.0, 1.0498, 4.1494)
    )
    st.markdown(
        f"Drill 11: (3, 1.1353, 2.1353) ⊕ (5, 1.0498, 4.1494) → o = **{float(drill.output):.4f}**, "
        f"logsumexp **{float(drill.lse):.4f}**."
    )
    if qkv.S < 2:
        st.info("Splitting needs at least two keys: pick an input with S ≥ 2.")
        return
    split = state.slider("keys on device a", 1, qkv.S - 1, (qkv.S + 1) // 2, key="os_split")
    res = attempt(
        online_views.row_split_merge, qkv.q, qkv.k, qkv.v, mask.allowed, head=head, row=row, split=split
    )
    if res is None:
        return

    def part(name: str, keys: str, m, l, u, out) -> dict:
        return {"partial": name, "keys": keys, "m": float(m), "ℓ": float(l), "u": ui.fmt(u.tolist()),
                "u / ℓ": ui.fmt(out.tolist()) if float(l) > 0 else "— (no allowed key)"}  # fmt: skip

    rows = [
        part("a", ui.key_range(qkv.key_tokens, 0, split), res.a.m, res.a.l, res.a.u, res.a.output),
        part("b", ui.key_range(qkv.key_tokens, split, qkv.S), res.b.m, res.b.l, res.b.u, res.b.output),
        part(
            "merged",
            ui.key_range(qkv.key_tokens, 0, qkv.S),
            res.merged.state.m,
            res.merged.state.l,
            res.merged.state.u,
            res.merged.output,
        ),
    ]
    table(pd.DataFrame(rows), "online_merge.csv", key="os_merge", hide_index=True)
    st.metric("direct softmax(s) · V", ui.fmt(res.direct.tolist()))
    oracle_badge("torch.softmax over all keys (float64)", res.max_abs_error, 1e-12)


# -- Precision ----------------------------------------------------------------------------------
@st.cache_data(show_spinner="Running the kernel in four dtypes…")
def precision_table() -> pd.DataFrame:
    rows = precision.precision_study(PRECISION_T)
    return pd.DataFrame(
        {
            "T (keys)": [r.T for r in rows],
            "dtype": [r.dtype for r in rows],
            "state in": [r.dtype if r.accumulate == "input" else "float32" for r in rows],
            "relative error": [r.rel_error for r in rows],
            "error / unit roundoff": [r.rel_error / UNIT_ROUNDOFF[r.dtype] for r in rows],
            "input rounding (abs.)": [r.input_rounding_error for r in rows],
            "finite": [r.finite for r in rows],
        }
    )


def precision_section() -> None:
    st.caption(
        "The tiled kernel on 16 query rows of T random keys (d = 64, blocks of 128), in each dtype, with "
        "its running state kept in the input dtype or in fp32 as FlashAttention does. Error: max |o − o_fp64| "
        "/ max |o_fp64|, against float64 attention on the *same rounded inputs*."
    )
    df = precision_table()
    series = {
        f"{d} (state in {s})": df[(df["dtype"] == d) & (df["state in"] == s)]["relative error"].to_numpy()
        for d, s in dict.fromkeys(zip(df["dtype"], df["state in"], strict=True))
    }
    fig = figures.lines(
        list(PRECISION_T),
        series,
        title="Relative error vs T",
        x_title="T (keys per row)",
        y_title="max relative error",
        log_x=True,
        log_y=True,
    )
    ui.exact_x_ticks(fig, PRECISION_T)
    fig.update_yaxes(exponentformat="power")
    figures.show(fig, key="os_precision")
    columns = ["relative error", "input rounding (abs.)"]
    table(
        df, "online_precision.csv", key="os_precision", hide_index=True, column_config=ui.scientific(columns)
    )
    st.caption(
        "Unit roundoff u: float64 2⁻⁵³ ≈ 1.1e-16, float32 2⁻²⁴ ≈ 6.0e-8, float16 2⁻¹¹ ≈ 4.9e-4, bfloat16 2⁻⁸ ≈ "
        "3.9e-3. With fp32 state, the error is the final rounding of o to the dtype (≤ u); with state in "
        "the input dtype it grows with T."
    )


# -- Memory bill --------------------------------------------------------------------------------
def memory_section() -> None:
    c = st.columns(4)
    with c[0]:
        name = state.selectbox("model", list_presets(), key="os_model", default="llama-2-7b")
    with c[1]:
        T = state.number("T (tokens)", 1, memory.MAX_T, 4096, key="os_T", step=1)
    with c[2]:
        dtype = state.selectbox("weights stored as", list(MEMORY_DTYPES), key="os_dtype_mem")
    with c[3]:
        batch = state.number("batch B", 1, MAX_BATCH, 1, key="os_B", step=1)
    shape = load_preset(name)
    kw = dict(
        layers=shape.n_layers,
        heads=shape.n_heads,
        d_model=shape.d_model,
        bytes_per_value=MEMORY_DTYPES[dtype],
        batch=int(batch),
    )
    bill = attempt(memory.memory_bill, int(T), **kw)
    if bill is None:
        return
    st.caption(
        f"{name}: {shape.n_layers} layers × {shape.n_heads} query heads, d = {shape.d_model:,}. Every query "
        f"head has its own T × T weights, GQA or not. Caps: T ≤ {memory.MAX_T:,}, B ≤ {MAX_BATCH:,}."
    )
    m = st.columns(3)
    m[0].metric("naive, per head", format_bytes_binary(bill.naive_per_head))
    m[1].metric("naive, per layer", format_bytes_binary(bill.naive_per_layer))
    m[2].metric(f"naive, all {bill.layers} layers", format_bytes_binary(bill.naive_per_model))
    m = st.columns(3)
    m[0].metric("online (fp32 lse), per layer", format_bytes_binary(bill.online_per_layer))
    m[1].metric(f"online, all {bill.layers} layers", format_bytes_binary(bill.online_per_model))
    m[2].metric("backward recompute, per layer", format_flops(bill.recompute_flops_per_layer))
    st.caption(
        f"Naive / online = T·b/4 = {bill.saving:,.0f}×. Recomputing S = QKᵀ costs 2·T²·d = "
        f"{format_flops(bill.recompute_flops_per_layer)} per layer, half of the forward's 4·T²·d = "
        f"{format_flops(bill.forward_quadratic_flops_per_layer)}: FlashAttention does more FLOPs, not fewer, "
        "and wins on memory traffic. Not the KV cache (card 13): that is inference, linear in T."
    )
    grid = sorted({1 << n for n in range(9, 18)} | {int(T)})
    bills = attempt(memory.memory_sweep, grid, **kw)
    if bills is None:
        return
    fig = figures.lines(
        grid,
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
    ui.exact_x_ticks(fig, grid)
    ui.binary_byte_ticks(fig, bills[0].online_per_layer, bills[-1].naive_per_model)
    figures.show(fig, key="os_memory")
    df = pd.DataFrame(
        {
            "T": grid,
            "naive per head": [format_bytes_binary(b.naive_per_head) for b in bills],
            "naive per layer": [format_bytes_binary(b.naive_per_layer) for b in bills],
            "naive per model": [format_bytes_binary(b.naive_per_model) for b in bills],
            "online per layer": [format_bytes_binary(b.online_per_layer) for b in bills],
            "online per model": [format_bytes_binary(b.online_per_model) for b in bills],
            "naive per layer (bytes)": [b.naive_per_layer for b in bills],
            "online per layer (bytes)": [b.online_per_layer for b in bills],
        }
    )
    table(df, "online_memory.csv", key="os_memory", hide_index=True)


{
    SECTIONS[0]: step_through,
    SECTIONS[1]: tiles,
    SECTIONS[2]: merge,
    SECTIONS[3]: precision_section,
    SECTIONS[4]: memory_section,
}[section]()

with st.expander("Show the code (attn_core.online: one tile of the recurrence)"):
    st.code(inspect.getsource(online._tile_step), language="python")
