"""Online softmax & tiling: FlashAttention's recurrence step by step, exact, with its memory bill
(cards 2, 12 and 15). Every number comes from one call into attn_core.views.online_softmax per section."""

from functools import partial

import pandas as pd
import streamlit as st

from attn_core.views import memory_bill, online_softmax
from attn_core.views.online_softmax import QKV, SLIPS, OnlineView, Section, format_flops
from lab_ui import figures, widgets
from lab_ui import online_softmax as ui
from lab_ui.badges import oracle_badge, scientific, slip_columns, slip_picker, table
from lab_ui.inputs import mask_picker, qkv_picker
from lab_ui.page import compute, header, require, run_section, section_picker, show_code

INPUTS = "Q, K, V, the mask, the head and the row in the sidebar"
TITLE = "Online softmax & tiling"
INTRO = (
    "FlashAttention never forms the L × S score matrix. It walks the keys **block by block**, keeping "
    "for each query row a running max **m**, a normalizer **ℓ** and an unnormalized output **u** "
    "(d_v + 2 numbers, whatever S is). When a block raises the max, the past is rescaled by "
    "e^(m_old − m_new); at the end o = u / ℓ is **exactly** softmax attention — only rounding "
    "differs. The price is memory traffic saved, not FLOPs: the backward pass even recomputes P."
)
FIX = "the input marked in the sidebar"


# -- Step through -------------------------------------------------------------------------------
def step_through(view: OnlineView) -> None:
    qkv = view.qkv
    if view.toy:
        st.caption(
            "Bank's row of the toy, one key per block, replays card 15: *river* raises the max from 0 to "
            "1.414, so the past is rescaled by e^(0 − 1.414) = 0.243 and ℓ goes 1 → 1.243 → 1.736; the "
            "output (1, 0.493)/1.736 = (0.576, 0.284) is the direct answer."
        )
    block = widgets.slider("block size (keys per step)", 1, qkv.S, 1, key="os_block") if qkv.S > 1 else 1
    slip = slip_picker(SLIPS, key="os_slip")
    dtype, logit_scale = "float64", 1.0
    if slip == "no_max":
        c1, c2 = st.columns(2)
        with c1:
            dtype = widgets.selectbox(
                "dtype of the walk", list(online_softmax.TRACE_DTYPES), key="os_dtype", default="float16"
            )
        with c2:
            logit_scale = widgets.slider(
                "multiply the row's scores by", 1.0, 20.0, 10.0, key="os_logit", step=0.5
            )
        st.caption("Bank's largest score is 1.414; ×10 makes it 14.1, past fp16's e^11.09 = 65,504.")
    walk = compute(view.walk, block, dtype, logit_scale, inputs="the block size and the dtype")
    wrong = compute(view.walk, block, dtype, logit_scale, slip, inputs="the slip") if slip else None
    if walk is None or (slip and wrong is None):
        return
    n_steps = len(walk.trace.steps)
    playing = ui.play_controls(n_steps, key="os_step")

    def frame() -> None:  # the player's fragment is named after its function
        play_step(qkv, walk, wrong, slip)

    ui.player(playing, frame)


def play_step(qkv: QKV, walk: online_softmax.RowWalk, wrong, slip: str | None) -> None:
    """One frame of the step-through: the walk up to the slider's step, and the final output."""
    n_steps = len(walk.trace.steps)
    ui.advance(n_steps, key="os_step")
    step = widgets.slider("blocks processed", 0, n_steps, n_steps, key="os_step")
    show_walk(qkv, walk, step, "ok")
    if wrong is not None:
        slip_columns(
            partial(ui.show_final, walk, step), partial(ui.show_final, wrong, step), SLIPS[slip].label
        )
    else:
        ui.show_final(walk, step)


def show_walk(qkv: QKV, walk: online_softmax.RowWalk, step: int, key: str) -> None:
    fig = ui.walk_heatmap(walk, step, qkv.query_tokens, qkv.key_tokens)
    figures.show(fig, key=f"os_scores_{key}")
    if step == 0:
        st.markdown("**Before any block:** m = −∞, ℓ = 0, u = 0.")
        return
    s = walk.trace.steps[step - 1]
    ui.state_metrics(s)
    if s.max_moved:
        st.info(
            f"Block {step} raised the max from {s.m_before:.4g} to {s.m_after:.4g}: the old ℓ and u are "
            f"multiplied by e^({s.m_before:.4g} − {s.m_after:.4g}) = {s.rescale:.3f} before the new keys "
            "are added."
        )
    df = ui.steps_table(walk.trace.steps[:step], qkv.key_tokens)
    table(df, "online_softmax_steps.csv", key=f"os_steps_{key}", hide_index=True)


# -- Tiles & block size -------------------------------------------------------------------------
def tiles(view: OnlineView) -> None:
    L, S = view.qkv.L, view.qkv.S
    smallest = online_softmax.smallest_block(L, S)
    st.caption(
        "Square tiles of b queries × b keys. A tile the mask removes entirely is skipped: never "
        f"multiplied, never exponentiated. Cap: {online_softmax.MAX_TILES:,} tiles per rerun "
        f"(here b ≥ {smallest})."
    )
    block = (
        widgets.slider("block size b", 1, max(L, S), smallest, key="os_tile_block") if max(L, S) > 1 else 1
    )
    tv = compute(view.tiles, block, inputs="the block size")
    if tv is None:
        return
    oracle_badge("torch SDPA (float64), whole output", tv.max_abs_diff, tv.tolerance)
    c = st.columns(4)
    c[0].metric("tiles computed", f"{tv.tiles_computed:,}")
    c[1].metric("tiles skipped", f"{tv.tiles_skipped:,}")
    c[2].metric("tiles in all", f"{tv.tiles_total:,}")
    c[3].metric("max |lse − logsumexp(S)|", f"{tv.lse_max_abs_diff:.1e}")
    figures.show(ui.tile_grid(tv.computed.numpy(), block, L, S), key="os_tile_grid")
    figures.show(ui.block_sweep_chart(tv.sweep), key="os_tile_sweep")
    config = scientific(["max |online − attention|"])
    table(
        ui.block_sweep_table(tv.sweep),
        "online_block_sizes.csv",
        key="os_sweep",
        hide_index=True,
        column_config=config,
    )


# -- Merge --------------------------------------------------------------------------------------
def merge(view: OnlineView) -> None:
    qkv = view.qkv
    st.caption(
        "Two devices each see half of the keys and return (m, ℓ, u). Merging is the same rescale: "
        "m = max(m_a, m_b), ℓ = e^(m_a − m)ℓ_a + e^(m_b − m)ℓ_b, and u likewise."
    )
    drill = online_softmax.drill_11()
    st.markdown(
        f"Drill 11: (3, 1.1353, 2.1353) ⊕ (5, 1.0498, 4.1494) → o = **{float(drill.output):.4f}**, "
        f"logsumexp **{float(drill.lse):.4f}**."
    )
    if qkv.S < 2:
        st.info("Splitting needs at least two keys: pick an input with S ≥ 2.")
        return
    split = widgets.slider("keys on device a", 1, qkv.S - 1, (qkv.S + 1) // 2, key="os_split")
    res = compute(view.merge, split, inputs="the split")
    if res is None:
        return
    table(ui.merge_table(res.rows(), qkv.key_tokens), "online_merge.csv", key="os_merge", hide_index=True)
    st.metric("direct softmax(s) · V", ui.fmt(res.direct.tolist()))
    oracle_badge("torch.softmax over all keys (float64)", res.max_abs_error, res.tolerance)


# -- Precision ----------------------------------------------------------------------------------
def precision_section(view: OnlineView) -> None:
    st.caption(
        "The tiled kernel on 16 query rows of T random keys (d = 64, blocks of 128), in each dtype, with "
        "its running state kept in the input dtype or in fp32 as FlashAttention does. Error: max |o − "
        "o_fp64| "
        "/ max |o_fp64|, against float64 attention on the *same rounded inputs*."
    )
    with st.spinner("Running the kernel in four dtypes…"):
        pv = compute(online_softmax.precision_view, inputs="the precision study")
    if pv is None:
        return
    figures.show(ui.precision_chart(pv.T_values, pv.curves), key="os_precision")
    df, config = pd.DataFrame(pv.rows), scientific(["relative error", "input rounding (abs.)"])
    table(df, "online_precision.csv", key="os_precision", hide_index=True, column_config=config)
    st.caption(
        "Unit roundoff u: float64 2⁻⁵³ ≈ 1.1e-16, float32 2⁻²⁴ ≈ 6.0e-8, float16 2⁻¹¹ ≈ 4.9e-4, bfloat16 2⁻⁸ "
        "≈ "
        "3.9e-3. With fp32 state, the error is the final rounding of o to the dtype (≤ u); with state in "
        "the input dtype it grows with T."
    )


# -- Memory bill --------------------------------------------------------------------------------
def memory_section(view: OnlineView) -> None:
    name, T, dtype, batch = ui.memory_inputs()
    mv = compute(memory_bill.memory_view, name, T, dtype, batch, inputs="the model, T, the dtype and B")
    if mv is None:
        return
    bill, shape = mv.bill, mv.model
    st.caption(
        f"{name}: {shape.n_layers} layers × {shape.n_heads} query heads, d = {shape.d_model:,}. Every query "
        f"head has its own T × T weights, GQA or not. "
        f"Caps: T ≤ {memory_bill.MAX_T:,}, B ≤ {memory_bill.MAX_BATCH:,}."
    )
    ui.memory_metrics(bill)
    st.caption(
        f"Naive / online = T·b/4 = {bill.saving:,.0f}×. Recomputing S = QKᵀ costs 2·T²·d = "
        f"{format_flops(bill.recompute_flops_per_layer)} per layer, half of the forward's 4·T²·d = "
        f"{format_flops(bill.forward_quadratic_flops_per_layer)}: FlashAttention does more FLOPs, not fewer, "
        "and wins on memory traffic. Not the KV cache (card 13): that is inference, linear in T."
    )
    figures.show(ui.memory_chart(mv.grid, mv.sweep), key="os_memory")
    table(ui.memory_table(mv.grid, mv.sweep), "online_memory.csv", key="os_memory", hide_index=True)


# -- The page -----------------------------------------------------------------------------------
SHOW = {
    Section.STEP: step_through,
    Section.TILES: tiles,
    Section.MERGE: merge,
    Section.PRECISION: precision_section,
    Section.MEMORY: memory_section,
}


def inputs() -> tuple:
    """The sidebar and the section: (Q, K and V or None, the mask or None, head, row, section); the
    page stops where the section needs Q, K, V and they are not valid."""
    with st.sidebar:
        st.header("Inputs")
        qkv = qkv_picker()
        mask = mask_picker(qkv.L, qkv.S) if qkv is not None else None
        head = row = 0
        if qkv is not None and (qkv.heads > 1 or qkv.L > 1):
            st.header("Which row")
        if qkv is not None:
            head = widgets.slider("head", 0, qkv.heads - 1, 0, key="os_head") if qkv.heads > 1 else 0
            row = widgets.slider("query row", 0, qkv.L - 1, qkv.L - 1, key="os_row") if qkv.L > 1 else 0
    section = section_picker(Section, key="os_section")
    if section in online_softmax.NEEDS_QKV:
        require(qkv, mask)
    return qkv, mask, head, row, section


def build(ask: tuple) -> OnlineView | None:
    qkv, mask, head, row, _ = ask
    return compute(online_softmax.view, qkv, mask.allowed if mask else None, head, row, inputs=INPUTS)


def show(ask: tuple, view: OnlineView) -> None:
    needs_qkv = ask[-1] in online_softmax.NEEDS_QKV
    run_section(SHOW[ask[-1]], view, inputs=INPUTS if needs_qkv else "the inputs of this section")
    show_code("attn_core.online: one tile of the recurrence", online_softmax.CODE)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
