"""The CLI's readable table of one what-if (`report.CostReport`): ``python -m attn_core cost`` without
``--json``. Every time in it is the report's (`whole_model`), priced once by `roofline.time_phase`."""

from __future__ import annotations

from attn_core.cost.calibration import SERVER_GPU
from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import weight_bytes_per_param
from attn_core.cost.mixers import STATE_KIND_NAMES
from attn_core.cost.params import mtp_layer_params
from attn_core.cost.report import CostReport
from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)


def _ffn_text(s: ModelShape) -> str:
    """The feed-forward widths the layers use: d_ff only where a dense layer exists, the experts'
    width where experts exist (Qwen3-30B-A3B's intermediate_size is no layer's width)."""
    m = s.moe
    dense = s.n_mlp_layers - s.n_moe_layers
    if m is None:
        return f"d_ff={s.d_ff:,} ({s.mlp_kind} MLP)"
    gated = "gated" if m.expert_matrices == 3 else "plain"
    shared = f", {m.n_shared} shared of width {m.shared_d_ff:,}" if m.n_shared else ", no shared expert"
    experts = f"MoE {m.n_experts} experts of width {m.expert_d_ff:,} ({gated}, top-{m.top_k}{shared})"
    if not dense:
        return f"{experts}, no dense layer"
    return f"d_ff={s.d_ff:,} ({s.mlp_kind} MLP, {dense:,} dense layers), {experts}"


def _shape_line(s: ModelShape) -> str:
    window = f", sliding window {s.sliding_window:,}" if s.sliding_window else ""
    chunk = f", chunks of {s.attention_chunk_size:,}" if s.attention_chunk_size else ""
    kinds = s.kind_counts
    layers = ", layers: " + " + ".join(f"{n} {k}" for k, n in kinds.items()) if len(kinds) > 1 else ""
    mla = f", MLA cache r_kv {s.mla.kv_lora_rank} + d_rope {s.mla.qk_rope_head_dim}" if s.mla else ""
    mla += ", gated attention" if s.attention_output_gate else ""
    return (
        f"{s.name}: {s.attention_kind}, L={s.n_layers}, d={s.d_model:,}, h={s.n_heads}, "
        f"H_kv={s.n_kv_heads}, d_h={s.head_dim}, {_ffn_text(s)}{window}{chunk}{layers}{mla}"
    )


def kind_line(s: ModelShape) -> str:
    """What kind of model this is, in words: dense, a mixture of experts (k of E, shared, in how
    many layers), or a hybrid (which mixers, how many layers of each)."""
    m = s.moe
    moe = ""
    if m is not None:
        shared = f" + {m.n_shared} shared" if m.n_shared else ""
        moe = (f"mixture of experts: {m.top_k} of {m.n_experts} routed experts per token{shared}, "
               f"in {s.n_moe_layers:,} of {s.n_mlp_layers:,} feed-forward layers")  # fmt: skip
    if s.n_state_layers:
        mixer = STATE_KIND_NAMES[s.state_mixer.kind]
        head = f"hybrid: {s.n_state_layers:,} {mixer} + {s.n_attention_layers:,} attention layers"
        return f"Kind: {head}" + (f"; {moe}" if moe else "")
    if moe:
        return f"Kind: transformer, {moe}"
    return "Kind: dense transformer (every parameter runs for every token)"


def _layers_differ(s: ModelShape) -> bool:
    """Layers not all alike: several kinds, one block per layer, or MoE beside dense layers."""
    return (
        len(s.kind_counts) > 1
        or s.one_mixer_per_layer
        or (s.moe is not None and s.n_moe_layers != s.n_mlp_layers)
    )


def _prefill_line(r: CostReport) -> str:
    """The whole model's prefill FLOPs, every term it sums named (a hybrid's mixers too)."""
    f, s = r.prefill, r.model
    mixers = (
        f" + {STATE_KIND_NAMES[s.state_mixer.kind]} mixers {format_flops(f.state_projections + f.state_core)}"
        if s.state_mixer is not None and (f.state_projections or f.state_core)
        else ""
    )
    return (
        f"Prefill FLOPs, whole model, B × T  {format_flops(f.total)} = projections {format_flops(f.projections)} + "
        f"attention {format_flops(f.attention)} ({format_percent(f.attention / f.total)} of the whole model)"
        + mixers
        + f" + MLP {format_flops(f.mlp)} + head {format_flops(f.lm_head)}"
        + (f" + per-layer input maps {format_flops(f.per_layer_inputs)}" if f.per_layer_inputs else "")
    )


def _whole_lines(r: CostReport) -> list[str]:
    """The whole-model answers: parameters, prefill, time bounds (or estimates)."""
    p, f, s = r.params.count, r.prefill, r.model
    pub = r.params.published
    published = "" if pub is None else f"   (published: {format_count_short(pub[0], 2)}" + (
        f" / {format_count_short(pub[1], 2)} active" if pub[1] else "") + f"; {pub[2]})"  # fmt: skip
    lines = [
        "",
        f"Parameters  total {p.total:,} ({format_count_short(p.total, 2)}), active per token {p.active:,} "
        f"({format_count_short(p.active, 2)}) with the input embeddings (Mistral's, Qwen's, Meta's, Google's "
        f"published counts match this); {format_count_short(p.active_without_embeddings, 2)} without them "
        "(the gpt-oss model card's)" + published,
        f"  weights {r.weight_dtype}: {8 * weight_bytes_per_param(r.weight_dtype):g} bits per weight (scales included)"
        + (
            f"; routed experts {r.expert_dtype}: {8 * weight_bytes_per_param(r.expert_dtype):g}"
            if r.expert_dtype != r.weight_dtype
            else ""
        ),
    ]
    if r.params.nextn_layers_left_out:
        n, one = r.params.nextn_layers_left_out, mtp_layer_params(s)
        lines.append(
            f"  next-token prediction (MTP): {n} layer(s) the config declares, {one:,} parameters each "
            f"({format_count_short(one, 2)}; transformers' MtpLayer: a 2d × d map, three norms, a decoder layer "
            "like the last), left out of the counts above as of transformers' build of the model: "
            f"total with them {format_count_short(p.total + n * one, 2)}"
        )
    if s.quantization:
        lines.append(f"  the config's quantization_config ({s.quantization}) is reported, not applied")
    if s.attention_sinks:
        lines.append(
            "  attention sinks: one learned logit per query head per layer (softmax mass with no value)"
        )
    lines += [
        _prefill_line(r),
        "  (matrix products only, 2 per multiply-add; norms, softmax and rotary excluded)",
    ]
    if s.mla:
        lines.append(
            f"  MLA attention counted naive; with the up-projections absorbed: {format_flops(f.attention_absorbed)}"
        )
    t = r.timing
    if t is not None:
        kind = f"estimates at {t.efficiency:g} of peak" if t.is_estimate else "lower bounds"
        lines += [
            f"Time on {r.n_gpus} × {r.gpu.label} ({kind}; "
            f"{'measured peaks' if r.gpu.name == SERVER_GPU else t.prefill_time.roofline.compute + ' peak'}, "
            "perfect tensor parallelism)",
            f"  time to first token, P = {t.prompt_len:,}  {format_seconds(t.ttft_s)} ({t.ttft_bound}-bound, "
            "causal pairs)",
            f"  decode step at P                 {format_seconds(t.decode_step_s)} ({t.decode_time.bound_by}-bound)",
        ]
        if t.gen_len:
            lines.append(
                f"  P + {t.gen_len:,} generated tokens   {format_seconds(t.total_s)}, {t.tokens_per_s:,.1f} tokens/s"
            )
    return lines


def _state_lines(r: CostReport) -> list[str]:
    """A hybrid's fixed state beside the cache that grows."""
    if not r.state_bytes:
        return []
    s = r.model
    return [
        f"Fixed state, {s.n_state_layers:,} {STATE_KIND_NAMES[s.state_mixer.kind]} layers "
        f"(conv {r.kv_dtype}, recurrent {r.state_dtype})",
        f"  per sequence              {r.state_bytes_per_sequence:>22,} B  {format_bytes(r.state_bytes_per_sequence)}",
        f"  all B sequences           {r.state_bytes:>22,} B  {format_bytes(r.state_bytes)}",
    ]


def _routing_lines(r: CostReport) -> list[str]:
    """The decode step under uniform routing, beside the floor (k experts per MoE layer)."""
    d, touched = r.decode, r.experts_touched_expected
    if touched is None:
        return []
    m = r.model.moe
    return [
        f"  floor above: every sequence routes to the same {m.top_k} experts; under uniform routing "
        f"{r.batch:,} sequence{'' if r.batch == 1 else 's'} touch{'es' if r.batch == 1 else ''} {touched:,.1f} of {m.n_experts} per MoE layer:",
        f"    {format_seconds(d.expected_seconds_per_step)} per step, at most {d.expected_tokens_per_s:,.1f} tokens/s",
    ]


def _score_lines(r: CostReport) -> list[str]:
    """One layer's attention scores held at once: naive (every score) and online (fp32 lse)."""
    return [
        "Score memory per layer",
        f"  naive (B·h·T²·b)          {r.score_bytes_naive_per_layer:>22,} B  "
        f"{format_bytes_binary(r.score_bytes_naive_per_layer)}",
        f"  online (B·h·T·4, fp32 lse){r.score_bytes_online_per_layer:>22,} B  "
        f"{format_bytes_binary(r.score_bytes_online_per_layer)}",
    ]


def _kv_per_token_lines(r: CostReport) -> list[str]:
    """Bytes per token: for a model whose layers hold a window or chunk, that is the growth rate
    while every layer still grows; the average over the T·B tokens held is given beside it."""
    s, per = r.model, r.kv_cache_bytes_per_token
    if not (s.sliding_window or s.attention_chunk_size):
        return [f"  per token                 {per:>22,} B  {format_bytes(per)}"]
    avg = r.kv_cache_bytes // (r.seq_len * r.batch)
    return [
        f"  per token, growth rate    {per:>22,} B  {format_bytes(per)} (while T is below the window or chunk)",
        f"  average per token at T    {avg:>22,} B  {format_bytes(avg)} (the cache at T ÷ T·B)",
    ]


def _per_layer_title(s: ModelShape, pairs: str) -> str:
    """The per-layer block's title: every layer, or the one attention layer it shows where the
    layers differ (the whole-model line below sums them all)."""
    if not _layers_differ(s):
        return f"FLOPs per layer, forward, {pairs}"
    kind, moe = s.representative_layer
    n = s.layer_census.get((kind, moe)) or s.kind_counts.get(kind, 0)
    mlp = ("its experts" if moe else "its dense MLP") if s.has_mlp(kind) else "no MLP"
    return (
        f"FLOPs of one {kind} attention layer with {mlp} ({n:,} such of {s.n_layers:,} layers; the layers "
        f"differ, the whole-model line below sums them all), forward, {pairs}"
    )


def format_report(r: CostReport) -> str:
    """The readable table the CLI prints without --json."""
    f = r.flops
    pairs = "only allowed query–key pairs (causal)" if r.causal else "every query–key pair"
    T_star = (
        "never: the sliding window keeps the quadratic part below the rest"
        if r.crossover_seq_len is None
        else f"{r.crossover_seq_len:,.0f} tokens"
    )
    lines = [
        kind_line(r.model),
        _shape_line(r.model),
        f"T = {r.seq_len:,} tokens, batch {r.batch:,}, weights {r.weight_dtype}, activations {r.dtype}, "
        f"KV cache {r.kv_dtype}",
    ]
    if r.beyond_max_context:
        lines.append(f"note: T is beyond the model's trained context of {r.model.max_context:,} tokens")
    if r.kv_cache_over_a_petabyte:
        lines.append(f"note: the KV cache ({format_bytes(r.kv_cache_bytes)}) is past a petabyte")
    lines += [
        "",
        "KV cache",
        *_kv_per_token_lines(r),
        f"  all B sequences           {r.kv_cache_bytes:>22,} B  {format_bytes(r.kv_cache_bytes)}",
        *_state_lines(r),
        f"Weights                     {r.weight_bytes:>22,} B  {format_bytes(r.weight_bytes)}",
        f"Attention params per layer  {r.attention_params.total:>22,}",
        "",
        _per_layer_title(r.model, pairs),
        f"  projections  {format_flops(f.projections, unit='GFLOP'):>20}",
        f"  attention    {format_flops(f.attention, unit='GFLOP'):>20}  {format_percent(f.attention_share)} of this layer",
        f"  mlp          {format_flops(f.mlp, unit='GFLOP'):>20}",
        f"  total        {format_flops(f.total, unit='GFLOP'):>20}",
        f"Crossover T* (quadratic part = the rest)  {T_star}",
        "",
        *_score_lines(r),
        f"Decode attention intensity  {r.decode_intensity:g} FLOP/byte",
    ]
    if r.gpu is not None and r.serving is not None and r.decode is not None:
        g, d = r.gpu, r.decode
        peak = d.floor.roofline  # the dense peak of the compute format, summed over the GPUs
        lines += [
            "",
            f"{r.n_gpus} × {g.label}: {format_rate(g.bandwidth_bytes_per_s, 'B/s', prefix='G')}, "
            f"{format_rate(peak.flops_per_s / r.n_gpus, 'FLOP/s')} {peak.compute} (the compute format's "
            f"dense peak), ridge {g.ridge_flop_per_byte:.0f} FLOP/byte at bf16",
            f"  sequences of T that fit beside the weights (upper bound)  {r.serving.max_sequences:,} in the "
            f"{format_bytes_binary(r.serving.memory_bytes)} the device reports",
            f"    card 13's convention, {format_bytes_decimal(r.serving_card13.memory_bytes)} (vendor GB, 10^9 B): "
            f"{r.serving_card13.max_sequences:,}",
            f"  decode time per step (lower bound)  {format_seconds(d.weight_seconds)} weights + "
            f"{format_seconds(d.kv_seconds)} cache"
            + (" = " if d.bound_by == "memory" else "; the step's FLOPs at peak take longer: ")
            + format_seconds(d.seconds_per_step),
            f"  tokens/s over the batch of {r.batch:,} (upper bound)  {d.tokens_per_s:,.1f}",
            f"    card 13 reads every weight: {format_seconds(d.card13_seconds_per_step)} per step",
            *_routing_lines(r),
        ]
    lines += _whole_lines(r)
    return "\n".join(lines)
