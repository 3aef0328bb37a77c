"""Cost calculator: FLOPs, memory, KV cache, GQA, serving budget and decode speed (cards 9, 11–14)."""

import inspect

import pandas as pd
import streamlit as st

from attn_core import cost as costs
from attn_core.cost import memory
from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.shapes import MAX_INT, list_presets, load_preset, parse_config_bytes, parse_config_text
from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)
from lab_ui import cost_charts, figures, state
from lab_ui.page import header
from lab_ui.widgets import attempt, table

MAX_T = MAX_INT  # 16,777,216 tokens: every number here is O(1) in T, the charts use ~240 points
MAX_BATCH = 4096
MAX_GPUS = 64
DTYPES = ["fp16", "bf16", "fp32", "int8"]  # b = 2, 2, 4, 1 bytes per number
SOURCES = ("preset", "paste or upload config.json")
SECTIONS = ("FLOPs", "KV cache & GQA", "Serving & decode", "Score memory", "How it's asked")

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
    shape = None
    if source == SOURCES[0]:
        name = state.selectbox("Preset", list_presets(), key="co_model", default="llama-2-7b")
        shape = load_preset(name)
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
    st.caption(f"Caps: T ≤ {MAX_T:,} tokens, batch ≤ {MAX_BATCH:,}, GPUs ≤ {MAX_GPUS}.")
    T = int(state.number("T (tokens in the sequence)", 1, MAX_T, 4096, key="co_T", step=1024))
    batch = int(state.number("batch B (sequences)", 1, MAX_BATCH, 1, key="co_B", step=1))
    dtype = state.selectbox("weights & scores dtype", DTYPES, key="co_dtype")
    kv_choice = state.selectbox("KV cache dtype", ["same as weights", *DTYPES], key="co_kvdtype")
    kv_dtype = dtype if kv_choice == "same as weights" else kv_choice
    causal = state.toggle(
        "causal: count only allowed pairs",
        key="co_causal",
        help="Realized only by a kernel that skips masked blocks.",
    )
    gpu_name = state.selectbox("GPU", list_gpus(), key="co_gpu")
    n_gpus = int(state.number("GPUs (weights and cache sharded)", 1, MAX_GPUS, 1, key="co_ngpu", step=1))

report = None
if shape is not None:
    gpu = load_gpu(gpu_name)
    report = attempt(costs.cost_report, shape, T, batch, dtype, causal, gpu, n_gpus, kv_dtype)
if shape is None or report is None:
    st.info("Fix the model in the sidebar; the page updates as soon as the config can be sized.")
    st.stop()

s, r, f = report.model, report, report.flops
b, b_kv = costs.bytes_per_value(dtype), costs.bytes_per_value(kv_dtype)
params = costs.model_params(s)

# -- The model's shape card -----------------------------------------------------------------------
extras = [
    f"sliding window {s.sliding_window:,} (caps the cache)" if s.sliding_window else "no sliding window",
    f"trained context {s.max_context:,}" if s.max_context else "context not stated",
    "biases on the projections" if s.attention_bias else "no projection biases",
    "tied embeddings" if s.tie_embeddings else "untied embeddings",
]
with st.container(border=True):
    st.markdown(
        f"**{s.name}** — **{s.attention_kind}**: L = {s.n_layers} layers · d = {s.d_model:,} · "
        f"h = {s.n_heads} query heads · H_kv = {s.n_kv_heads} KV heads (group G = {s.group_size}) · "
        f"d_h = {s.head_dim} · d_ff = {s.d_ff:,} ({s.mlp_kind} MLP, {s.mlp_matrices} matrices) · "
        f"**{format_count_short(params.total, 2)} parameters** ({params.total:,}) = "
        f"**{format_bytes_decimal(r.weight_bytes)}** of {dtype} weights ({format_bytes_binary(r.weight_bytes)})"
    )
    st.caption(" · ".join(extras) + (f" · from {s.source}" if s.source else ""))
if r.beyond_max_context:
    st.warning(
        f"T = {T:,} is beyond this model's trained context of {s.max_context:,} tokens: the numbers are "
        "what the arithmetic gives, not a claim the model works there."
    )

if r.serving.free_bytes < 0:
    st.warning(
        f"{format_bytes(r.weight_bytes)} of weights do not fit in {n_gpus} × {gpu.label} "
        f"({format_bytes(r.serving.memory_bytes)}): no sequence fits, and the decode bound describes a setup "
        "that cannot run. Add GPUs in the sidebar or pick a smaller dtype."
    )
T_star = r.crossover_seq_len
T_star_text = "never" if T_star is None else f"{T_star:,.0f}"
c = st.columns(6)
c[0].metric(
    "KV cache / token",
    format_bytes_binary(r.kv_cache_bytes_per_token),
    help=f"{r.kv_cache_bytes_per_token:,} B",
)
c[1].metric(
    "KV cache, B × T",
    format_bytes_binary(r.kv_cache_bytes),
    help=f"{batch} × {T:,} tokens: {r.kv_cache_bytes:,} B",
)
c[2].metric(
    "attention FLOPs",
    format_percent(f.attention_share),
    help="share of a layer's FLOPs, " + ("causal pairs" if causal else "all pairs"),
)
c[3].metric(
    "crossover T*" + (" (causal)" if causal else ""),
    T_star_text,
    help="where the quadratic part equals the rest",
)
c[4].metric(
    "seqs that fit (≤)",
    f"{r.serving.max_sequences:,}",
    help="An upper bound: activations, fragmentation and the framework also take memory.",
)
c[5].metric("decode step (≥)", format_seconds(r.decode.seconds_per_step), help=f"≤ {r.decode.tokens_per_s:,.1f} tokens/s over the batch")  # fmt: skip

section = state.radio("Section", SECTIONS, key="co_section", horizontal=True, label_visibility="collapsed")
T_full, T_causal = costs.crossover_seq_len(s), costs.crossover_seq_len(s, causal=True)
grid = costs.sweep_grid(T, extra=(T_full, T_causal))
sweep = costs.cost_sweep(s, grid, batch, b, b_kv)


def sweep_table(group: str, what: str) -> None:
    """The chart's numbers over T as a table with its CSV (exact integers below 2⁵³)."""
    with st.expander(f"{what} at every T of the chart (table and CSV)"):
        table(
            pd.DataFrame(sweep.columns(group)), f"{group}_vs_T.csv", key=f"co_sweep_{group}", hide_index=True
        )


# -- FLOPs ----------------------------------------------------------------------------------------
def show_flops() -> None:
    full, masked = costs.layer_flops(s, T, batch), costs.layer_flops(s, T, batch, causal=True)
    rows = [("projections Q, K, V, O", full.projections, masked.projections),
            ("attention QKᵀ and PV", full.attention, masked.attention),
            ("MLP", full.mlp, masked.mlp), ("total", full.total, masked.total)]  # fmt: skip
    unit = "TFLOP" if full.total >= 1e14 else "GFLOP" if full.total >= 1e8 else "MFLOP"
    df = pd.DataFrame(
        {
            "part": [p for p, _, _ in rows],
            "all pairs (FLOP)": [format_count(x) for _, x, _ in rows],
            f"all pairs ({unit})": [format_flops(x, 1, unit) for _, x, _ in rows],
            "share": [format_percent(x) for x in full.shares()],
            "causal (FLOP)": [format_count(y) for _, _, y in rows],
            f"causal ({unit})": [format_flops(y, 1, unit) for _, _, y in rows],
            "share, causal": [format_percent(y) for y in masked.shares()],
        }
    )
    st.markdown(f"**FLOPs of one layer's forward pass, {batch} sequence(s) of {T:,} tokens**")
    table(df, "flops_per_layer.csv", key="co_flops", hide_index=True)
    per = full.per_token()
    st.caption(
        f"Per token: projections {format_count_short(per.projections)} + MLP {format_count_short(per.mlp)} "
        f"(constant) + attention {format_count_short(per.attention)} (grows with T: 4·h·d_h·T). Causal counts "
        "only allowed pairs — a saving only a kernel that skips masked blocks realizes."
    )
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
        x_marks=[(T, f"T = {T:,}"), (s.sliding_window, "window")],
        y_marks=[(memory / 2**30, f"{n_gpus} × {gpu.label}: {format_bytes(memory)}"),
                 (free / 2**30, f"left after weights: {format_bytes_binary(max(free, 0))}")],
    )  # fmt: skip
    figures.show(fig, key="co_kv")
    sweep_table("kv", "KV cache bytes")
    if free <= 0:
        st.warning(f"The {format_bytes(r.weight_bytes)} of weights alone exceed {format_bytes(memory)}.")
    st.markdown(f"**MHA vs GQA vs MQA for {s.name}** — same query heads, same weights, only H_kv changes")
    variants = costs.kv_head_variants(s, T, gpu, n_gpus, batch, b, b_kv)
    df = pd.DataFrame(
        {
            "H_kv": [v.n_kv_heads for v in variants],
            "kind": [v.kind + (" (this model)" if v.n_kv_heads == s.n_kv_heads else "") for v in variants],
            "KV per token": [format_bytes_binary(v.kv_bytes_per_token) for v in variants],
            "KV per token (B)": [v.kv_bytes_per_token for v in variants],
            f"KV per {T:,}-token sequence": [format_bytes_binary(v.kv_bytes_per_sequence) for v in variants],
            "cache ÷ MHA's": [f"1/{v.cache_ratio_to_mha:g}" for v in variants],
            "attention params per layer": [format_count(v.attention_params_per_layer) for v in variants],
            "decode FLOP/byte": [f"{v.decode_intensity:g}" for v in variants],
            "sequences that fit (≤)": [v.max_sequences for v in variants],
            "decode step (≥, ms)": [f"{v.decode_ms_lower_bound:.2f}" for v in variants],
        }
    )
    table(df, "kv_heads_comparison.csv", key="co_variants", hide_index=True)
    st.caption(
        "Sequences that fit keep the weights of the model as configured (card 14's cache-only comparison); "
        "a real MHA model would also have larger K and V projections."
    )


# -- Serving & decode ----------------------------------------------------------------------------
def show_serving() -> None:
    d = r.decode
    c = st.columns(4)
    c[0].metric("sequences of T that fit (upper bound)", f"{r.serving.max_sequences:,}")
    c[1].metric("decode step, lower bound", format_seconds(d.seconds_per_step))
    c[2].metric("tokens/s, upper bound", f"{d.tokens_per_s:,.1f}")
    c[3].metric(
        "decode attention FLOP/byte", f"{r.decode_intensity:g}", help="2h / (b·H_kv) = h / H_kv at b = 2"
    )
    st.markdown(
        f"⌊({n_gpus} × {format_bytes(gpu.memory_bytes)} − {format_bytes(r.weight_bytes)} of weights) ÷ "
        f"{format_bytes_binary(r.serving.kv_bytes_per_sequence)} per sequence⌋ = **{r.serving.max_sequences:,}**. "
        f"Each decode step reads every weight once ({format_seconds(d.weight_seconds)}) and all {batch} "
        f"cache(s) ({format_seconds(d.kv_seconds)}) at "
        f"{format_rate(n_gpus * gpu.bandwidth_bytes_per_s, 'B/s', prefix='G')}."
    )
    ridge = gpu.ridge_flop_per_byte
    verdict = "memory-bound: GQA helps by reading less" if r.decode_intensity < ridge else "compute-bound"
    st.markdown(f"Decode attention does **{r.decode_intensity:g} FLOP/byte** against the {gpu.label}'s ridge of "
                f"**{ridge:.0f} FLOP/byte** → {verdict}.")  # fmt: skip
    reports = [
        costs.cost_report(s, T, batch, dtype, causal, load_gpu(g), n_gpus, kv_dtype) for g in list_gpus()
    ]
    df = pd.DataFrame(
        {
            "GPU": [x.gpu.label for x in reports],
            "memory (vendor GB)": [format_count(x.gpu.memory_bytes / 1e9) for x in reports],
            "bandwidth": [format_rate(x.gpu.bandwidth_bytes_per_s, "B/s", prefix="G") for x in reports],
            "bf16 dense": [format_rate(x.gpu.bf16_flops_per_s, "FLOP/s") for x in reports],
            "ridge (FLOP/byte)": [f"{x.gpu.ridge_flop_per_byte:.0f}" for x in reports],
            "sequences that fit (≤)": [x.serving.max_sequences for x in reports],
            "decode step (≥, ms)": [f"{1e3 * x.decode.seconds_per_step:.2f}" for x in reports],
            "tokens/s (≤)": [f"{x.decode.tokens_per_s:,.1f}" for x in reports],
        }
    )
    st.markdown(f"**Every GPU preset, {n_gpus} of each**")
    table(df, "serving_by_gpu.csv", key="co_gpus", hide_index=True)
    st.caption(
        "Bounds, not predictions: real serving also holds activations and allocator slack, and real kernels "
        "reach a fraction of peak bandwidth. Multi-GPU assumes perfect sharding."
    )


# -- Score memory ---------------------------------------------------------------------------------
def show_score_memory() -> None:
    bill = memory.memory_bill(T, layers=s.n_layers, heads=s.n_heads, d_model=s.q_width, bytes_per_value=b,
                              batch=batch)  # fmt: skip
    c = st.columns(5)
    c[0].metric(
        "naive, per head",
        format_bytes_binary(bill.naive_per_head),
        help=f"B·T²·b = {bill.naive_per_head:,} B",
    )
    c[1].metric(
        "naive, per layer",
        format_bytes_binary(bill.naive_per_layer),
        help=f"B·h·T²·b = {bill.naive_per_layer:,} B",
    )
    c[2].metric(f"naive, {s.n_layers} layers", format_bytes_binary(bill.naive_per_model))
    c[3].metric(
        "online, per layer",
        format_bytes_binary(bill.online_per_layer),
        help=f"B·h·T·4 = {bill.online_per_layer:,} B (fp32 lse)",
    )
    c[4].metric(f"online, {s.n_layers} layers", format_bytes_binary(bill.online_per_model))  # fmt: skip
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
    ratio_full = costs.doubling_ratio(s, T)
    ratio_causal = costs.doubling_ratio(s, T, causal=True)
    share = costs.layer_flops(s, T).attention_share
    mha = s.with_kv_heads(s.n_heads)
    variants = costs.kv_head_variants(s, T, kv_bytes_per_value=b_kv)  # MHA, …, MQA
    bill = memory.memory_bill(T, layers=s.n_layers, heads=s.n_heads, d_model=s.q_width, bytes_per_value=b)
    qa = [
        ("“Doubling the context quadruples the cost.” True for this model?",
         f"No at T = {T:,}: only the quadratic part quadruples, and it is {format_percent(share)} of a layer's "
         f"FLOPs. Going to {2 * T:,} multiplies a layer's FLOPs by {ratio_full:.2f} (causal: {ratio_causal:.2f}). "
         f"The quadratic part overtakes the rest at T* = {T_full:,.0f} (all pairs)."),
        (f"How much KV cache for a {T:,}-token conversation, and how many fit on {n_gpus} × {gpu.label}?",
         f"{format_bytes_binary(r.kv_cache_bytes_per_token)} per token (2·L·H_kv·d_h·b = 2·{s.n_layers}·"
         f"{s.n_kv_heads}·{s.head_dim}·{b_kv}), {format_bytes_binary(costs.kv_cache_bytes(s, T, 1, b_kv))} per sequence, "
         f"at most {r.serving.max_sequences:,} sequences beside {format_bytes(r.weight_bytes)} of weights."),
        ("Why doesn't adding heads add attention parameters?",
         f"With h·d_h = d the projections hold 4d² = {format_count(costs.attention_params(mha, bias=False).total)} "
         "weights whatever h is; "
         f"this model has {format_count(costs.attention_params(s).total)} per layer"
         f"{' (GQA shrinks K and V)' if s.n_kv_heads < s.n_heads else ''}."),
        ("Should we retrain this model with GQA to serve long contexts?",
         f"The cache shrinks by h/H_kv: with {s.n_heads} query heads, MHA needs "
         f"{format_bytes_binary(variants[0].kv_bytes_per_token)} per token, {variants[-1].kind} with "
         f"H_kv = {variants[-1].n_kv_heads} needs {format_bytes_binary(variants[-1].kv_bytes_per_token)}, and this "
         f"model ({s.attention_kind}, H_kv = {s.n_kv_heads}) {format_bytes_binary(r.kv_cache_bytes_per_token)}. "
         f"Decode attention does h/H_kv = {r.decode_intensity:g} FLOP/byte, "
         f"{'below' if r.decode_intensity < gpu.ridge_flop_per_byte else 'above'} the {gpu.label}'s ridge of "
         f"{gpu.ridge_flop_per_byte:.0f}, so reading fewer bytes is what speeds decoding up; GQA leaves the "
         "FLOPs unchanged. Uptraining an MHA checkpoint to GQA costs about 5% of its pre-training compute."),
        (f"Training at {T:,} tokens runs out of memory at batch 1. Where did it go?",
         f"Keeping P costs {format_bytes_binary(bill.naive_per_head)} per head, {format_bytes_binary(bill.naive_per_layer)} "
         f"per layer and {format_bytes_binary(bill.naive_per_model)} for all {s.n_layers} layers; the online softmax "
         f"keeps {format_bytes_binary(bill.online_per_layer)} per layer instead. At inference the KV cache ({format_bytes_binary(costs.kv_cache_bytes(s, T, 1, b_kv))} "
         "per sequence) is the O(T) bill, not this O(T²) one."),
    ]  # fmt: skip
    for question, answer in qa:
        with st.container(border=True):
            st.markdown(f"**{question}**")
            st.markdown(answer)


SHOW = {
    "FLOPs": show_flops,
    "KV cache & GQA": show_kv_cache,
    "Serving & decode": show_serving,
    "Score memory": show_score_memory,
    "How it's asked": show_how_its_asked,
}
SHOW[section]()

with st.expander("Show the code (attn_core.cost)"):
    for fn in (
        costs.kv_cache_bytes_per_token,
        costs.layer_flops,
        costs.crossover_seq_len,
        costs.serving_capacity,
    ):
        st.code(inspect.getsource(fn), language="python")
