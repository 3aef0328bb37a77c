"""The Cost page's tables and text, each from one report (cards 9, 11–14): the model card, the
headline numbers, the FLOPs, variants and GPU tables, the serving sums and the "how it's asked"
answers. `attn_core.views.costs` assembles them into the page's one call.

Tables come back as {column: values} with the units written into the numbers; the "how it's
asked" answers are worked out here from the model's own numbers. Numpy only, like the cost model.
"""

from __future__ import annotations

from attn_core.cost import score_memory
from attn_core.cost.config_reader import ModelShape
from attn_core.cost.flops import crossover_seq_len, doubling_ratio, layer_flops
from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.params import attention_params
from attn_core.cost.report import CostReport, cost_report, kv_head_variants
from attn_core.cost.serving import kv_cache_bytes
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


def flops_table(s: ModelShape, T: int, batch: int) -> tuple[dict[str, list], str]:
    """One layer's forward FLOPs split into projections / attention / MLP, all pairs and causal."""
    full, masked = layer_flops(s, T, batch), layer_flops(s, T, batch, causal=True)
    parts = ("projections Q, K, V, O", "attention QKᵀ and PV", "MLP", "total")
    rows = [
        (full.projections, masked.projections),
        (full.attention, masked.attention),
        (full.mlp, masked.mlp),
        (full.total, masked.total),
    ]
    unit = "TFLOP" if full.total >= 1e14 else "GFLOP" if full.total >= 1e8 else "MFLOP"
    table = {
        "part": list(parts),
        "all pairs (FLOP)": [format_count(x) for x, _ in rows],
        f"all pairs ({unit})": [format_flops(x, 1, unit) for x, _ in rows],
        "share": [format_percent(x) for x in full.shares()],
        "causal (FLOP)": [format_count(y) for _, y in rows],
        f"causal ({unit})": [format_flops(y, 1, unit) for _, y in rows],
        "share, causal": [format_percent(y) for y in masked.shares()],
    }
    per = full.per_token()
    caption = (
        f"Per token: projections {format_count_short(per.projections)} + MLP {format_count_short(per.mlp)} "
        f"(constant) + attention {format_count_short(per.attention)} (grows with T: 4·h·d_h·T). Causal counts only "
        "allowed pairs — a saving only a kernel that skips masked blocks realizes."
    )
    return table, caption


def variants_table(r: CostReport) -> dict[str, list]:
    """MHA vs GQA vs MQA for this model: only H_kv changes (card 14); the weights, their dtypes and a
    hybrid's state held at the report's, so the row of the model's own H_kv is the headline's."""
    s, T = r.model, r.seq_len
    variants = kv_head_variants(s, r.workload, r.precision, r.hardware)
    return {
        "H_kv": [v.n_kv_heads for v in variants],
        "kind": [v.kind + (" (this model)" if v.n_kv_heads == s.n_kv_heads else "") for v in variants],
        "KV per token": [format_bytes_binary(v.kv_bytes_per_token) for v in variants],
        "KV per token (B)": [v.kv_bytes_per_token for v in variants],
        f"KV per {T:,}-token sequence": [format_bytes_binary(v.kv_bytes_per_sequence) for v in variants],
        "cache ÷ MHA's": [f"1/{v.cache_ratio_to_mha:g}" for v in variants],
        "attention params per layer": [format_count(v.attention_params_per_layer) for v in variants],
        "decode FLOP/byte": [f"{v.decode_intensity:g}" for v in variants],
        "sequences that fit (≤)": [v.max_sequences for v in variants],
        "fit, card 14's 80×10⁹ B/GPU (≤)": [v.max_sequences_card14 for v in variants],
        "decode step (≥, ms)": [f"{v.decode_ms_lower_bound:.2f}" for v in variants],
    }


def decode_verdict(r: CostReport) -> str:
    """Decode attention's intensity against the GPU's ridge, in one line of markdown."""
    ridge = r.gpu.ridge_flop_per_byte
    verdict = "memory-bound: GQA helps by reading less" if r.decode_intensity < ridge else "compute-bound"
    return (
        f"Decode attention does **{r.decode_intensity:g} FLOP/byte** against the {r.gpu.label}'s ridge of "
        f"**{ridge:.0f} FLOP/byte** → {verdict}."
    )


def gpu_table(r: CostReport) -> dict[str, list]:
    """The same what-if (workload and dtypes) on every GPU preset, as many of each as the report uses."""
    reports = [
        cost_report(r.model, r.workload, r.precision, Hardware(load_gpu(g), r.n_gpus)) for g in list_gpus()
    ]
    return {
        "GPU": [x.gpu.label for x in reports],
        "memory reported": [format_bytes_binary(x.gpu.memory_bytes) for x in reports],
        "vendor label": [format_bytes_decimal(x.gpu.vendor_memory_bytes, 0) for x in reports],
        "bandwidth": [format_rate(x.gpu.bandwidth_bytes_per_s, "B/s", prefix="G") for x in reports],
        "dense 16-bit peak": [format_rate(x.gpu.bf16_flops_per_s, "FLOP/s") for x in reports],
        "ridge (FLOP/byte)": [f"{x.gpu.ridge_flop_per_byte:.0f}" for x in reports],
        "sequences that fit (≤)": [x.serving.max_sequences for x in reports],
        "fit at the vendor label (≤)": [x.serving_card13.max_sequences for x in reports],
        "decode step (≥, ms)": [f"{1e3 * x.decode.seconds_per_step:.2f}" for x in reports],
        "tokens/s (≤)": [f"{x.decode.tokens_per_s:,.1f}" for x in reports],
    }


def kv_formula(s: ModelShape, b_kv: int) -> str:
    """The per-token cache formula with this model's numbers (before any window or chunk caps it)."""
    capped = (
        "; windows and chunks cap some layers' tokens" if {"sliding", "chunked"} & set(s.kind_counts) else ""
    )
    L = s.n_attention_layers  # a hybrid's linear and state-space layers cache nothing per token
    if s.mla is not None:
        return f"L·(r_kv + d_rope)·b = {L}·({s.mla.kv_lora_rank} + {s.mla.qk_rope_head_dim})·{b_kv}{capped}"
    caching = s.caching_counts
    widths = {(s.kv_heads_of(k), s.head_dim_of(k)) for k in caching}
    if len(widths) > 1 or sum(caching.values()) != L:  # Gemma 4: wider global heads, KV-sharing layers
        shared = (
            f"; {s.kv_shared_layers} layers reuse another's K and V and keep none"
            if s.kv_shared_layers
            else ""
        )
        terms = " + ".join(f"2·{n}·{s.kv_heads_of(k)}·{s.head_dim_of(k)}·{b_kv}" for k, n in caching.items())
        return f"Σ over layer kinds of 2·L_kind·H_kv·d_h·b = {terms}{shared}{capped}"
    return f"2·L·H_kv·d_h·b = 2·{L}·{s.n_kv_heads}·{s.head_dim}·{b_kv}{capped}"


def mla_answer(r: CostReport) -> str:
    m, s = r.model.mla, r.model
    return (
        f"It already caches less than GQA could: MLA keeps {m.cache_width} numbers per token per layer, where "
        f"per-head K and V would be {s.n_heads} × ({m.qk_head_dim} + {m.v_head_dim}) = "
        f"{s.n_heads * (m.qk_head_dim + m.v_head_dim):,}. Decoding in the absorbed form does "
        f"{r.decode_intensity:.0f} FLOP/byte against the {r.gpu.label}'s ridge of {r.gpu.ridge_flop_per_byte:.0f}."
    )


def how_its_asked(r: CostReport) -> list[tuple[str, str]]:
    """The interview questions of cards 11–14, answered with this model's numbers."""
    s, T, gpu, n_gpus = r.model, r.seq_len, r.gpu, r.n_gpus
    b, b_kv = r.precision.b, r.precision.b_kv
    share = layer_flops(s, T).attention_share
    variants = kv_head_variants(s, Workload(T), Precision(kv=r.kv_dtype))  # MHA, …, MQA
    bill = score_memory.model_memory_bill(s, T, b)
    per_seq = format_bytes_binary(kv_cache_bytes(s, T, 1, b_kv))
    T_full = crossover_seq_len(s)
    T_star = "never" if T_full is None else f"{T_full:,.0f}"
    mha_params = attention_params(s.with_kv_heads(s.n_heads), bias=False).total
    side = "below" if r.decode_intensity < gpu.ridge_flop_per_byte else "above"
    return [
        (
            "“Doubling the context quadruples the cost.” True for this model?",
            f"No at T = {T:,}: only the quadratic part quadruples, and it is {format_percent(share)} of a layer's FLOPs. "
            f"Going to {2 * T:,} multiplies a layer's FLOPs by {doubling_ratio(s, T):.2f} (causal: "
            f"{doubling_ratio(s, T, causal=True):.2f}). The quadratic part overtakes the rest at T* = {T_star} (all pairs).",
        ),
        (
            f"How much KV cache for a {T:,}-token conversation, and how many fit on {n_gpus} × {gpu.label}?",
            f"{format_bytes_binary(r.kv_cache_bytes_per_token)} per token ({kv_formula(s, b_kv)}), {per_seq} per sequence, at most {r.serving.max_sequences:,} sequences beside "
            f"{format_bytes(r.weight_bytes)} of weights in the {format_bytes_binary(r.serving.memory_bytes)} the "
            f"device reports ({r.serving_card13.max_sequences:,} in the vendor's "
            f"{format_bytes_decimal(r.serving_card13.memory_bytes)}, card 13's convention).",
        ),
        (
            "Why doesn't adding heads add attention parameters?",
            f"With h·d_h = d the projections hold 4d² = {format_count(mha_params)} weights whatever h is; this model has "
            f"{format_count(r.attention_params.total)} per layer{' (GQA shrinks K and V)' if s.n_kv_heads < s.n_heads else ''}.",
        ),
        (
            "Should we retrain this model with GQA to serve long contexts?",
            mla_answer(r)
            if s.mla
            else f"The cache shrinks by h/H_kv: with {s.n_heads} query heads, MHA needs {format_bytes_binary(variants[0].kv_bytes_per_token)} "
            f"per token, {variants[-1].kind} with H_kv = {variants[-1].n_kv_heads} needs "
            f"{format_bytes_binary(variants[-1].kv_bytes_per_token)}, and this model ({s.attention_kind}, H_kv = "
            f"{s.n_kv_heads}) {format_bytes_binary(r.kv_cache_bytes_per_token)}. Decode attention does h/H_kv = "
            f"{r.decode_intensity:g} FLOP/byte, {side} the {gpu.label}'s ridge of {gpu.ridge_flop_per_byte:.0f}, so reading "
            "fewer bytes is what speeds decoding up; GQA leaves the FLOPs unchanged. Uptraining an MHA checkpoint to "
            "GQA costs about 5% of its pre-training compute.",
        ),
        (
            f"Training at {T:,} tokens runs out of memory at batch 1. Where did it go?",
            f"Keeping P costs {format_bytes_binary(bill.naive_per_head)} per head, {format_bytes_binary(bill.naive_per_layer)} "
            f"per layer and {format_bytes_binary(bill.naive_per_model)} for all {s.n_layers} layers; the online softmax "
            f"keeps {format_bytes_binary(bill.online_per_layer)} per layer instead. At inference the KV cache ({per_seq} "
            "per sequence) is the O(T) bill, not this O(T²) one.",
        ),
    ]


def serving_metrics(r: CostReport) -> list[tuple[str, str, str]]:
    d = r.decode
    return [
        (
            "sequences of T that fit (upper bound)",
            f"{r.serving.max_sequences:,}",
            f"card 13's vendor-GB convention: {r.serving_card13.max_sequences:,}",
        ),
        (
            "decode step, lower bound",
            format_seconds(d.seconds_per_step),
            f"card 13 reads every weight: {format_seconds(d.card13_seconds_per_step)}",
        ),
        (
            "tokens/s, upper bound",
            f"{d.tokens_per_s:,.1f}",
            "B / decode step"
            + (
                ""
                if r.experts_touched_expected is None
                else f"; under uniform routing ≤ {d.expected_tokens_per_s:,.1f} ({format_seconds(d.expected_seconds_per_step)})"
            ),
        ),
        ("decode attention FLOP/byte", f"{r.decode_intensity:g}", "2h / (b·H_kv) = h / H_kv at b = 2"),
    ]


def serving_sum(r: CostReport) -> str:
    """The serving arithmetic, written out with this setup's numbers."""
    d, g, n = r.decode, r.gpu, r.n_gpus
    state = f" + {format_bytes_binary(r.state_bytes_per_sequence)} of fixed state" if r.state_bytes else ""
    text = (
        f"⌊({n} × {format_bytes(g.memory_bytes)} − {format_bytes(r.weight_bytes)} of weights) ÷ "
        f"({format_bytes_binary(r.serving.kv_bytes_per_sequence)} of cache{state}) per sequence⌋ = "
        f"**{r.serving.max_sequences:,}**. Each decode step reads the weights it uses once "
        f"({format_seconds(d.weight_seconds)}) and all {r.batch} cache(s){' and states' if state else ''} "
        f"({format_seconds(d.kv_seconds)}) at {format_rate(n * g.bandwidth_bytes_per_s, 'B/s', prefix='G')}."
    )
    if r.experts_touched_expected is not None:
        m = r.model.moe
        text += (
            f" That is the **floor**: all {r.batch:,} sequences routed to the same {m.top_k} experts. Under "
            f"**uniform routing** they touch E·(1 − (1 − k/E)^B) = {r.experts_touched_expected:,.1f} of "
            f"{m.n_experts} experts per MoE layer: {format_bytes(d.expected_weight_bytes)} of weights, "
            f"**{format_seconds(d.expected_seconds_per_step)}** a step, at most "
            f"**{d.expected_tokens_per_s:,.1f}** tokens/s."
        )
    return text


def score_metrics(s: ModelShape, bill) -> list[tuple[str, str, str]]:
    """Card 12's five numbers: naive per head / layer / model, online per layer / model."""
    return [
        ("naive, per head", format_bytes_binary(bill.naive_per_head), f"B·T²·b = {bill.naive_per_head:,} B"),
        (
            "naive, per layer",
            format_bytes_binary(bill.naive_per_layer),
            f"B·h·T²·b = {bill.naive_per_layer:,} B",
        ),
        (
            f"naive, {s.n_layers} layers",
            format_bytes_binary(bill.naive_per_model),
            f"{bill.naive_per_model:,} B",
        ),
        (
            "online, per layer",
            format_bytes_binary(bill.online_per_layer),
            f"B·h·T·4 = {bill.online_per_layer:,} B (fp32 lse)",
        ),
        (
            f"online, {s.n_layers} layers",
            format_bytes_binary(bill.online_per_model),
            f"{bill.online_per_model:,} B",
        ),
    ]
