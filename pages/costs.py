"""Cost calculator: FLOPs, memory, KV cache, GQA, serving budget and decode speed (cards 9, 11–14), and
the whole model: total vs active parameters, MoE, MLA, per-layer attention types, time bounds."""

import inspect

import pandas as pd
import streamlit as st

from attn_core import cost as costs
from attn_core.cost import memory
from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.limits import MAX_BATCH, MAX_GPUS, MAX_SEQ_LEN
from attn_core.cost.shapes import list_presets, load_preset, parse_config_bytes, parse_config_text
from attn_core.cost.units import format_bytes, format_bytes_binary, format_flops
from attn_core.cost.whole_model import MAX_GEN_LEN
from attn_core.explore import costs as explore
from attn_core.explore import costs_whole as whole
from lab_ui import cost_charts, figures, state
from lab_ui.page import header, run_section
from lab_ui.widgets import attempt, oracle_badge, table

DTYPES = ["fp16", "bf16", "fp32", "fp8", "int8"]  # b = 2, 2, 4, 1, 1 bytes per number
WEIGHT_DTYPES = ["same as activations", *costs.WEIGHT_BITS]  # adds int4 with group scales, MXFP4
SOURCES = ("preset", "paste or upload config.json")
SECTIONS = ("Whole model", "FLOPs", "KV cache & GQA", "Serving & decode", "Score memory", "How it's asked")

header(
    "Cost calculator",
    "What attention costs for the model you actually run: parameters, FLOPs per layer, the KV cache "
    "(sized with the **KV-head** count H_kv, never the query-head count h), how many sequences fit on a "
    "GPU and how fast decoding can possibly go. Memory is in KiB/MiB/GiB (2¹⁰, 2²⁰, 2³⁰ bytes); GPU "
    "vendors' GB and GB/s are 10⁹ and say so. FLOPs count 2 per multiply-add.",
)

# -- Sidebar: the model and the what-if -----------------------------------------------------------
with st.sidebar:
    st.header("Model")
    source = state.radio("Shape from", SOURCES, key="co_src")
    shape = preset = None
    if source == SOURCES[0]:
        preset = state.selectbox("Preset", list_presets(), key="co_model", default="llama-2-7b")
        shape = load_preset(preset)
    else:
        st.caption("A Hugging Face config.json (≤ 1 MiB). An uploaded file wins over pasted text.")
        upload = st.file_uploader("Upload config.json", type=["json"], key="co_upload")
        pasted = state.text_area("…or paste it", key="co_paste", default="", max_chars=4000, height=160)
        if upload is not None:
            shape = attempt(parse_config_bytes, upload.getvalue())
        elif pasted.strip():
            shape = attempt(parse_config_text, pasted)
        else:
            st.info("Upload or paste a config.json to size it.")

    st.header("What-if")
    st.caption(f"Caps: T ≤ {MAX_SEQ_LEN:,} tokens, batch ≤ {MAX_BATCH:,}, GPUs ≤ {MAX_GPUS}.")
    T = int(state.number("T (tokens in the sequence)", 1, MAX_SEQ_LEN, 4096, key="co_T", step=1024))
    batch = int(state.number("batch B (sequences)", 1, MAX_BATCH, 1, key="co_B", step=1))
    dtype = state.selectbox("activations & scores dtype", DTYPES, key="co_dtype")
    w_choice = state.selectbox("weights dtype", WEIGHT_DTYPES, key="co_wdtype")
    weight_dtype = dtype if w_choice == WEIGHT_DTYPES[0] else w_choice
    kv_choice = state.selectbox("KV cache dtype", ["same as activations", *DTYPES], key="co_kvdtype")
    kv_dtype = dtype if kv_choice == "same as activations" else kv_choice
    st_choice = state.selectbox("hybrids' recurrent state dtype", ["same as KV cache", *DTYPES], key="co_stdtype",
                                help="Linear/state layers' fixed state; transformers keeps it in fp32.")  # fmt: skip
    state_dtype = kv_dtype if st_choice == "same as KV cache" else st_choice
    causal = state.toggle("causal: count only allowed pairs", key="co_causal",
                          help="Realized only by a kernel that skips masked blocks.")  # fmt: skip
    gpu_name = state.selectbox("GPU", list_gpus(), key="co_gpu", default="a100-80gb")
    n_gpus = int(state.number("GPUs (weights and cache sharded)", 1, MAX_GPUS, 1, key="co_ngpu", step=1))

report = None
if shape is not None:
    gpu = load_gpu(gpu_name)
    report = attempt(costs.cost_report, shape, T, batch, dtype, causal, gpu, n_gpus, kv_dtype,
                     weight_dtype=weight_dtype, preset=preset, state_dtype=state_dtype)  # fmt: skip
if shape is None or report is None:
    st.info("Fix the model in the sidebar; the page updates as soon as the config can be sized.")
    st.stop()

s, r, f = report.model, report, report.flops
b, b_kv = costs.bytes_per_value(dtype), costs.bytes_per_value(kv_dtype)
card, extras = explore.model_card(r, weight_dtype)
with st.container(border=True):
    st.markdown(card)
    st.caption(extras)
    if (cells := whole.layer_cells(s)) is not None:
        figures.show(cost_charts.layer_strip(cells, title="Attention type of each layer"), key="co_strip")
for warning in explore.warnings(r):
    st.warning(warning)
for col, (label, value, meaning) in zip(st.columns(6), explore.headline(r), strict=True):
    col.metric(label, value, help=meaning)
st.caption(explore.card_conventions(r))

section = state.radio("Section", SECTIONS, key="co_section", default="FLOPs", horizontal=True,
                      label_visibility="collapsed")  # fmt: skip
T_full, T_causal = costs.crossover_seq_len(s), costs.crossover_seq_len(s, causal=True)
grid = costs.sweep_grid(T, extra=(T_full, T_causal))
sweep = costs.cost_sweep(s, grid, batch, b, b_kv)


def sweep_table(group: str, what: str) -> None:
    """The chart's numbers over T as a table with its CSV (exact integers below 2⁵³)."""
    with st.expander(f"{what} at every T of the chart (table and CSV)"):
        table(
            pd.DataFrame(sweep.columns(group)), f"{group}_vs_T.csv", key=f"co_sweep_{group}", hide_index=True
        )


# -- Whole model ----------------------------------------------------------------------------------
def show_whole() -> None:
    c = st.columns(3)
    with c[0]:
        P = int(state.number("prompt P (tokens)", 1, MAX_SEQ_LEN, 4096, key="co_P", step=1024))
    with c[1]:
        N = int(state.number("generated tokens N", 0, MAX_GEN_LEN, 256, key="co_N", step=64))
    with c[2]:
        eff = float(state.number("efficiency (fraction of peak)", 0.01, 1.0, 1.0, key="co_eff", step=0.05,
                                 help="1 = the bounds; below 1, each bound ÷ efficiency, labelled an estimate"))  # fmt: skip
    parts, total, active = whole.param_parts(r)
    figures.show(cost_charts.total_vs_active(parts, total, active, title="Parameters: held vs run per token"),
                 key="co_params")  # fmt: skip
    table(pd.DataFrame(whole.params_rows(r)), "parameters.csv", key="co_ptable", hide_index=True)
    for note in whole.architecture_notes(s):
        st.markdown(note)
    st.markdown(f"**Ledger by layer kind** at T = {T:,}, B = {batch} (cache {kv_dtype}, state {state_dtype})")
    table(pd.DataFrame(whole.layer_type_rows(s, T, b_kv, batch, costs.bytes_per_value(state_dtype), causal)),
          "layer_kinds.csv", key="co_ltable", hide_index=True)  # fmt: skip
    if s.is_hybrid:
        figures.show(cost_charts.memory_vs_T(grid, whole.memory_series(r, grid), T=T), key="co_hybrid_mem")
    rows, note = whole.prefill_rows(r)
    st.markdown(
        f"**Prefill FLOPs, whole model, {batch} × {T:,} tokens ({'causal' if causal else 'all pairs'})**"
    )
    table(pd.DataFrame(rows), "prefill_flops.csv", key="co_prefill", hide_index=True)
    st.caption(note)
    t = whole.whole_timing(r, P, N, eff)
    st.markdown(f"**Time on {n_gpus} × {gpu.label}**, bf16 peak, perfect tensor parallelism")
    table(pd.DataFrame(whole.times_rows(t)), "time_bounds.csv", key="co_times", hide_index=True)
    st.caption(whole.times_caption(t))
    for oracle, diff in whole.whole_checks(r):
        oracle_badge(oracle, diff, 0)


# -- FLOPs ----------------------------------------------------------------------------------------
def show_flops() -> None:
    flops, caption = explore.flops_table(s, T, batch)
    st.markdown(f"**FLOPs of one layer's forward pass, {batch} sequence(s) of {T:,} tokens**")
    table(pd.DataFrame(flops), "flops_per_layer.csv", key="co_flops", hide_index=True)
    st.caption(caption)
    shown, other = (sweep.causal, sweep.full) if causal else (sweep.full, sweep.causal)
    other_name = "all pairs" if causal else "causal"
    fig = cost_charts.stacked_shares(
        grid,
        {"projections": shown.projections, "MLP": shown.mlp, "attention": shown.attention},
        title=f"Where a layer's FLOPs go ({'causal' if causal else 'all pairs'}; dashed: attention, {other_name})",
        x_title="T (tokens)",
        x_marks=[
            (T_full, "T* never" if T_full is None else f"T* = {T_full:,.0f}"),
            (T_causal, "T* causal never" if T_causal is None else f"T* causal = {T_causal:,.0f}"),
            (T, f"T = {T:,}"),
        ],
        overlay={f"attention share, {other_name}": 100 * other.attention_share},
    )
    figures.show(fig, key="co_stack")
    sweep_table("flops", "FLOPs")
    st.caption(
        "T* is solved for this architecture from the three FLOP terms: for MHA with a gated MLP it is the "
        "card's 2d + 1.5·d_ff; GQA shrinks the projections and a plain MLP has 2 matrices, not 3."
    )


# -- KV cache & GQA -------------------------------------------------------------------------------
def show_kv_cache() -> None:
    free, memory = r.serving.free_bytes, r.serving.memory_bytes
    fig = cost_charts.log_lines(
        grid,
        {f"KV cache, B = {batch} ({kv_dtype})": sweep.kv_cache_bytes / 2**30},
        title="KV cache vs T, with GPU memory", x_title="T (tokens)", y_title="GiB",
        x_marks=[(T, f"T = {T:,}"), (s.sliding_window, "window full"), (s.attention_chunk_size, "chunk full")],
        y_marks=[(memory / 2**30, f"{n_gpus} × {gpu.label}: {format_bytes(memory)}"),
                 (free / 2**30, f"left after weights: {format_bytes_binary(max(free, 0))}")],
    )  # fmt: skip
    figures.show(fig, key="co_kv")
    sweep_table("kv", "KV cache bytes")
    if free <= 0:
        st.warning(f"The {format_bytes(r.weight_bytes)} of weights alone exceed {format_bytes(memory)}.")
    if s.mla is not None:
        st.info("MLA caches one latent per token per layer, not per-head K and V: H_kv has no meaning here.")
        return
    st.markdown(f"**MHA vs GQA vs MQA for {s.name}** — same query heads, same weights, only H_kv changes")
    df = pd.DataFrame(explore.variants_table(s, T, gpu, n_gpus, batch, b, b_kv))
    table(df, "kv_heads_comparison.csv", key="co_variants", hide_index=True)
    st.caption("Sequences that fit keep the weights of the model as configured (card 14's cache-only "
               "comparison); a real MHA model would also have larger K and V projections.")  # fmt: skip


# -- Serving & decode ----------------------------------------------------------------------------
def show_serving() -> None:
    for col, (label, value, meaning) in zip(st.columns(4), explore.serving_metrics(r), strict=True):
        col.metric(label, value, help=meaning)
    st.markdown(explore.serving_sum(r))
    st.markdown(explore.decode_verdict(r))
    df = pd.DataFrame(explore.gpu_table(r, dtype, causal, kv_dtype))
    st.markdown(f"**Every GPU preset, {n_gpus} of each**")
    table(df, "serving_by_gpu.csv", key="co_gpus", hide_index=True)
    st.caption("Bounds, not predictions: real serving also holds activations and allocator slack, and real "
               "kernels reach a fraction of peak bandwidth. Multi-GPU assumes perfect sharding.")  # fmt: skip


# -- Score memory ---------------------------------------------------------------------------------
def show_score_memory() -> None:
    bill = memory.model_memory_bill(s, T, b, batch)
    for col, (label, value, meaning) in zip(st.columns(5), explore.score_metrics(s, bill), strict=True):
        col.metric(label, value, help=meaning)
    fig = cost_charts.log_lines(
        grid,
        {"naive: keep P (B·h·T²·b)": sweep.score_bytes_naive_per_layer / 2**30,
         "online: one fp32 logsumexp per row (B·h·T·4)": sweep.score_bytes_online_per_layer / 2**30},
        title="Score memory per layer vs T (training keeps it for the backward pass)",
        x_title="T (tokens)", y_title="GiB", x_marks=[(T, f"T = {T:,}")],
    )  # fmt: skip
    figures.show(fig, key="co_scores")
    sweep_table("scores", "Score bytes")
    st.caption(
        "The online softmax rebuilds P in the backward pass from one logsumexp per row, at the price of "
        f"2T²d = {format_flops(bill.recompute_flops_per_layer)} more FLOPs per layer: more FLOPs, far fewer bytes."
    )


# -- How it's asked -------------------------------------------------------------------------------
def show_how_its_asked() -> None:
    for question, answer in explore.how_its_asked(r, b, b_kv):
        with st.container(border=True):
            st.markdown(f"**{question}**")
            st.markdown(answer)


SHOW = {
    "Whole model": show_whole,
    "FLOPs": show_flops,
    "KV cache & GQA": show_kv_cache,
    "Serving & decode": show_serving,
    "Score memory": show_score_memory,
    "How it's asked": show_how_its_asked,
}
run_section(SHOW[section])

with st.expander("Show the code (attn_core.cost)"):
    for fn in (costs.kv_cache_bytes, costs.layer_flops, costs.crossover_seq_len, costs.serving_capacity):
        st.code(inspect.getsource(fn), language="python")
