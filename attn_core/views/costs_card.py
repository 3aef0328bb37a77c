"""The Cost page's first screen, from one report: what kind of model it is and its shape (the
card), the headline numbers with the decode figure's conditions, the cards' own count beside the
page's (folded under the headline), and the warnings. Numpy only, like the cost model.
"""

from __future__ import annotations

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.ledger import KIND_LABELS
from attn_core.cost.mixers import STATE_KIND_NAMES
from attn_core.cost.params import model_params
from attn_core.cost.report import CostReport
from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count_short,
    format_percent,
    format_seconds,
)


def model_kind(s: ModelShape) -> str:
    """What kind of model, in a phrase: dense; a mixture of experts (k of E per token, the expert
    width, shared experts, the layers that have them); a hybrid (its mixers, layers of each)."""
    parts = []
    if s.is_hybrid:
        mixers = " + ".join(
            f"{n:,} {KIND_LABELS.get(k, k)}" for k, n in s.kind_counts.items() if k not in ("mlp", "moe")
        )
        parts.append(f"**hybrid**: {mixers} layers")
    if s.moe is not None:
        m = s.moe
        text = f"**mixture of experts**: {m.top_k} of {m.n_experts} experts per token, expert width {m.expert_d_ff:,}"
        if m.n_shared:
            text += f" + {m.n_shared} shared expert{'s' if m.n_shared > 1 else ''} of width {m.shared_d_ff:,}"
        dense = s.n_mlp_layers - s.n_moe_layers
        if dense > 0:
            text += f"; experts in {s.n_moe_layers:,} of {s.n_mlp_layers:,} MLP layers, the others dense"
        parts.append(text)
    return " · ".join(parts) if parts else "**dense** (every token runs every weight)"


def dense_mlp(s: ModelShape) -> str:
    """The dense MLP's width, where some layer has one (an all-experts model's config width is unused)."""
    if s.moe is not None and s.n_mlp_layers - s.n_moe_layers <= 0:
        return ""
    return f" · d_ff = {s.d_ff:,} ({s.mlp_kind} MLP, {s.mlp_matrices} matrices)"


def model_card(r: CostReport, dtype: str) -> tuple[str, str]:
    """The model's kind and shape in markdown, and a caption of its extras."""
    s = r.model
    params = model_params(s)
    line = (
        f"**{s.name}** — {model_kind(s)}  \n**{s.attention_kind}** attention: L = {s.n_layers} layers · "
        f"d = {s.d_model:,} · h = {s.n_heads} query heads · H_kv = {s.n_kv_heads} KV heads (group G = "
        f"{s.group_size}) · d_h = {s.head_dim}{dense_mlp(s)} · **{format_count_short(params.total, 2)} "
        f"parameters** ({params.total:,}) = **{format_bytes_decimal(r.weight_bytes)}** of {dtype} weights "
        f"({format_bytes_binary(r.weight_bytes)})"
    )
    extras = [
        f"sliding window {s.sliding_window:,} (caps the cache)" if s.sliding_window else "no sliding window",
        *([hybrid_line(r)] if s.is_hybrid else []),
        f"trained context {s.max_context:,}" if s.max_context else "context not stated",
        "biases on the projections" if s.attention_bias else "no projection biases",
        "tied embeddings" if s.tie_embeddings else "untied embeddings",
    ]
    return line, " · ".join(extras) + (f" · from {s.source}" if s.source else "")


def hybrid_line(r: CostReport) -> str:
    """A hybrid's layers in a phrase: which kinds, how many, and its fixed state."""
    s = r.model
    kinds = " + ".join(f"{n:,} {KIND_LABELS.get(k, k)}" for k, n in s.kind_counts.items())
    return (
        f"hybrid: {kinds}; the state of its {s.n_state_layers:,} {STATE_KIND_NAMES[s.state_mixer.kind]} layers "
        f"is {format_bytes_binary(r.state_bytes_per_sequence)} per sequence at any T"
    )


def headline(r: CostReport) -> list[tuple[str, str, str]]:
    """The six numbers across the top of the page: (label, value, what it means)."""
    T_star = r.crossover_seq_len
    causal = " (causal)" if r.causal else ""
    return [
        (
            "KV cache / token",
            format_bytes_binary(r.kv_cache_bytes_per_token),
            f"{r.kv_cache_bytes_per_token:,} B",
        ),
        (
            "KV cache, B × T",
            format_bytes_binary(r.kv_cache_bytes),
            f"{r.batch} × {r.seq_len:,} tokens: {r.kv_cache_bytes:,} B",
        ),
        (
            "attention FLOPs",
            format_percent(r.flops.attention_share),
            "share of a layer's FLOPs, " + ("causal pairs" if r.causal else "all pairs"),
        ),
        (
            "crossover T*" + causal,
            "never" if T_star is None else f"{T_star:,.0f}",
            "where the quadratic part equals the rest",
        ),
        (
            "seqs that fit (≤)",
            f"{r.serving.max_sequences:,}",
            "An upper bound: activations, fragmentation and the framework also take memory.",
        ),
        ("decode step (≥)", format_seconds(r.decode.seconds_per_step), decode_conditions(r)),
    ]


def decode_conditions(r: CostReport) -> str:
    """The one decode figure's conditions: batch, context, dtypes, hardware, and what it bounds."""
    p = r.precision
    routed = " the same top-k experts for every sequence;" if r.experts_touched_expected is not None else ""
    return (
        f"B = {r.batch:,} sequence(s), T = {r.seq_len:,} tokens of context, {p.weights or p.activations} weights, "
        f"{p.kv} cache, {r.n_gpus} × {r.gpu.label};{routed} a step reads the weights it uses and every "
        f"cache once at full bandwidth: ≤ {r.decode.tokens_per_s:,.1f} tokens/s over the batch."
    )


def card_conventions(r: CostReport) -> str:
    """Cards 13 and 14 as quoted (vendor GB, every weight read) beside what this page uses."""
    g, d, n = r.gpu, r.decode, r.n_gpus
    card_weights = d.card13_seconds_per_step - d.kv_seconds
    return (
        f"**As the cards count it:** {n} × {format_bytes_decimal(g.vendor_memory_bytes)} (vendor GB, 10⁹ B) → "
        f"**{r.serving_card13.max_sequences:,}** sequences; a decode step reads every weight, "
        f"**{format_seconds(card_weights)}** + {format_seconds(d.kv_seconds)} of cache = "
        f"{format_seconds(d.card13_seconds_per_step)}. **This page:** the {format_bytes_binary(g.memory_bytes)} "
        f"the device reports ({g.memory_source}) → {r.serving.max_sequences:,} sequences, and a step reads only "
        f"the weights it uses (an untied embedding table only for its {r.batch:,} row(s), the top-k experts) → "
        f"{format_seconds(d.weight_seconds)} + {format_seconds(d.kv_seconds)}. The label is decimal GB, the "
        "device counts binary GiB (2³⁰ B, 7.4% more per unit) of its real stack, so the label's figure is not an "
        "upper bound; the true decode floor is below the card's." + uniform_routing(r)
    )


def uniform_routing(r: CostReport) -> str:
    """A mixture of experts' second decode figure: B sequences routed uniformly touch more experts."""
    if r.experts_touched_expected is None:
        return ""
    d = r.decode
    return (
        f" With experts, the headline is the floor (every sequence routed to the same top-k); under uniform "
        f"routing a step touches {r.experts_touched_expected:,.1f} of {r.model.moe.n_experts} experts per MoE "
        f"layer: {format_seconds(d.expected_seconds_per_step)}, ≤ {d.expected_tokens_per_s:,.1f} tokens/s."
    )


def warnings(r: CostReport) -> list[str]:
    """Absurd or impossible requests: still answered, and said so."""
    out, s, g = [], r.model, r.gpu
    if r.beyond_max_context:
        out.append(
            f"T = {r.seq_len:,} is beyond this model's trained context of {s.max_context:,} tokens: the "
            "numbers are what the arithmetic gives, not a claim the model works there."
        )
    if r.kv_cache_over_a_petabyte:
        out.append(f"The KV cache asked for, {format_bytes(r.kv_cache_bytes)}, is past a petabyte.")
    if r.serving.free_bytes < 0:
        out.append(
            f"{format_bytes(r.weight_bytes)} of weights do not fit in {r.n_gpus} × {g.label} "
            f"({format_bytes(r.serving.memory_bytes)}): no sequence fits, and the decode bound describes a "
            "setup that cannot run. Add GPUs in the sidebar or pick a smaller dtype."
        )
    return out
