"""The Cost page's whole-model section: parameters held vs run, attention by layer type,
experts and MLA in words, prefill FLOPs and the time bounds, each with an independent re-count.
Numpy only, like the cost model."""

from __future__ import annotations

import numpy as np

from attn_core.cost.calibrated import FORMULA, CalibratedTiming
from attn_core.cost.flops import layer_flops
from attn_core.cost.ledger import attention_twin, layer_ledger, memory_sweep_T
from attn_core.cost.mixers import STATE_KIND_NAMES
from attn_core.cost.model_shape import ModelShape
from attn_core.cost.params import mtp_layer_params, weight_bytes
from attn_core.cost.report import CostReport
from attn_core.cost.serving import kv_bytes_per_token_per_layer, layer_cached_tokens
from attn_core.cost.units import (
    format_bytes_binary,
    format_count,
    format_count_short,
    format_flops,
    format_percent,
    format_seconds,
)
from attn_core.cost.whole_model import Timing

# -- The whole model (parameters, layer types, MoE, MLA, prefill and time bounds) -----------


STRIP_LAYERS = 512  # more layers than this: the strip gives way to the count per type


def layer_cells(s: ModelShape) -> list[str] | None:
    """Each layer's attention type for the model card's strip (MLA layers attend to all keys);
    None above STRIP_LAYERS layers, where the per-type table carries the counts."""
    kinds = s.layer_kinds.each(STRIP_LAYERS)
    return None if kinds is None else ["MLA" if s.mla is not None and k == "full" else k for k in kinds]


def layer_type_rows(
    s: ModelShape, T: int, b_kv: int, batch: int, b_state: float | None = None, causal: bool = False
) -> dict[str, list]:
    """The ledger per layer kind (`attn_core.cost.ledger`): layers, span, parameters, cache per token,
    fixed state per sequence, the cache of all B at T, and forward FLOPs at T."""
    spans = {"full": "all", "sliding": s.sliding_window, "chunked": s.attention_chunk_size}
    rows: dict[str, list] = {
        "layer kind": [],
        "layers": [],
        "span (tokens)": [],
        f"cached at T = {T:,}": [],
        "parameters": [],
        "cache per token": [],
        "state per sequence": [],
        f"cache, all B, T = {T:,}": [],
        f"FLOPs at T = {T:,}": [],
    }
    for row in layer_ledger(s, T, batch, b_kv, b_state, causal):
        span = spans.get(row.kind)
        kept = 0 if span is None else layer_cached_tokens(s, T, row.kind)  # W − 1 on a sliding layer
        mla = " (MLA latent)" if s.mla is not None and s.is_attention(row.kind) else ""
        moe = f", {row.moe_layers:,} with experts" if row.moe_layers else ""
        rows["layer kind"].append(f"{row.label}{mla}{moe}")
        rows["layers"].append(row.layers)
        rows["span (tokens)"].append("–" if span is None else span if span == "all" else f"{span:,}")
        rows[f"cached at T = {T:,}"].append("–" if span is None else f"{kept:,}")
        rows["parameters"].append(format_count_short(row.params, 2))
        rows["cache per token"].append(
            format_bytes_binary(row.cache_bytes_per_token) if row.cache_bytes_per_token else "–"
        )
        rows["state per sequence"].append(
            format_bytes_binary(row.state_bytes_per_sequence) if row.state_bytes_per_sequence else "–"
        )
        rows[f"cache, all B, T = {T:,}"].append(format_bytes_binary(row.cache_bytes_per_token * kept * batch))
        rows[f"FLOPs at T = {T:,}"].append(format_flops(row.flops))
    return rows


def memory_series(r: CostReport, grid) -> dict[str, np.ndarray]:
    """GiB held against T: the hybrid (weights + cache + state), its fixed state alone, and its
    all-attention twin (the same layers with full attention in place of each linear/state layer)."""
    p = r.precision
    b_w, b_kv, b_e, b_s = p.b_weight, p.b_kv, p.b_expert, p.b_state
    s, twin = r.model, attention_twin(r.model)
    ours = memory_sweep_T(s, grid, r.weight_bytes, r.batch, b_kv, b_s)
    dense = memory_sweep_T(twin, grid, weight_bytes(twin, b_w, b_e), r.batch, b_kv)
    GiB = 2**30
    return {
        f"{s.name}: weights + cache + state": ours.total / GiB,
        f"{s.name}: cache ({s.n_attention_layers} attention layers)": ours.kv_cache_bytes / GiB,
        f"{s.name}: fixed state": np.full_like(ours.seq_len, ours.state_bytes / GiB),
        f"all-attention twin ({s.n_layers} attention layers): weights + cache": dense.total / GiB,
        f"{r.n_gpus} × {r.gpu.label}": np.full_like(ours.seq_len, r.serving.memory_bytes / GiB),
    }


def params_rows(r: CostReport) -> dict[str, list]:
    """Parameters by role, total and what one token runs (active)."""
    p = r.params.count
    routed_active = (p.experts_active, "top-k per MoE layer")
    roles = [
        (
            "embedding table",
            p.embeddings + p.positions,
            (p.embeddings + p.positions, "counted active, as Mixtral's 12.9B is (a token reads one row)"),
        ),
        ("attention (all attention layers)", p.attention, (p.attention, "")),
        *(
            [("linear-attention / state-space mixers", p.state_mixers, (p.state_mixers, ""))]
            if p.state_mixers
            else []
        ),
        ("dense MLPs, shared experts, routers", p.mlp, (p.mlp, "")),
        ("routed experts", p.experts, routed_active if p.experts else (0, "")),
        ("norms", p.norms, (p.norms, "")),
        ("output head", p.lm_head, (p.lm_head, "tied to the embeddings" if not p.lm_head else "")),
        ("total / active", p.total, (p.active, "")),
        (
            "active without the input embeddings",
            None,
            (p.active_without_embeddings, "as some model cards count"),
        ),
    ]
    pub = r.params.published
    if pub is not None:
        roles.append(("published", pub[0], (pub[1], pub[2])))
    return {
        "part": [name for name, _, _ in roles],
        "total": ["–" if t is None else format_count(t) for _, t, _ in roles],
        "total (short)": ["–" if t is None else format_count_short(t, 2) for _, t, _ in roles],
        "active per token": ["–" if a is None else format_count(a) for _, _, (a, _) in roles],
        "note": [note for _, _, (_, note) in roles],
    }


def architecture_notes(s: ModelShape) -> list[str]:
    """One line each for the experts, MLA, sinks, quantization and left-out layers."""
    notes = []
    if s.moe is not None:
        m, dense = s.moe, s.n_mlp_layers - s.n_moe_layers
        dense_text = f"{dense:,} dense (width {s.d_ff:,})" if dense > 0 else "no dense layer"
        notes.append(
            f"**Mixture of experts:** {m.n_experts} routed experts of width {m.expert_d_ff:,}, top-{m.top_k} per "
            f"token, {m.n_shared} shared; {s.n_moe_layers:,} MoE layers, {dense_text}. The router is {s.d_model:,} × {m.n_experts} weights per MoE layer "
            f"({2 * s.d_model * m.n_experts:,} FLOPs per token). FLOPs count the active experts; memory holds all."
        )
    if s.mla is not None:
        m = s.mla
        mha = s.n_heads * (m.qk_head_dim + m.v_head_dim)
        notes.append(
            f"**Multi-head latent attention:** queries through rank {m.q_lora_rank or 'none (full)'}, keys and "
            f"values through rank {m.kv_lora_rank}. The cache holds r_kv + d_rope = {m.kv_lora_rank} + "
            f"{m.qk_rope_head_dim} = {m.cache_width} numbers per token per layer, against {mha:,} for per-head K "
            f"and V ({s.n_heads} heads × ({m.qk_head_dim} + {m.v_head_dim}))."
        )
    if s.state_mixer is not None:
        m = s.state_mixer
        notes.append(
            f"**{STATE_KIND_NAMES[m.kind]} layers ({s.n_state_layers:,} of {s.n_layers:,}):** no cache that grows "
            f"with T; each keeps a conv state of {m.conv_channels:,} channels × {m.conv_kernel} columns and a "
            f"recurrent state of {m.recurrent_state_elements():,} numbers per sequence, whatever T is. Sized as "
            "transformers' cache allocates it (K conv columns at the cache dtype; it keeps the recurrent state in "
            "fp32: pick fp32 as the state dtype to match). vLLM keeps K − 1 conv columns and, unless told "
            "otherwise, the recurrent state at the model dtype. Prefill FLOPs count "
            + (f"the chunked form (chunks of {m.chunk} tokens)" if hasattr(m, "chunk") else "the scan")
            + "; decode only the state products."
        )
    if s.attention_output_gate:
        notes.append(
            f"**Gated attention:** the query map is {s.d_model:,} × 2·h·d_h; its second half gates each "
            "head's output through a sigmoid (Qwen3-Next)."
        )
    if s.one_mixer_per_layer:
        notes.append(
            "**One block per layer** (Nemotron-H's pattern): each layer holds one mixer — Mamba-2 (M), "
            "attention (*) — or one feed-forward part — MLP (-), MoE (E) — after one norm."
        )
    if s.attention_sinks:
        notes.append(
            "**Attention sinks:** one learned logit per query head per layer joins the softmax with no "
            "value: a head can put weight on nothing."
        )
    if s.quantization:
        notes.append(
            f"**quantization_config:** {s.quantization} — reported; the sizes use the dtypes chosen here."
        )
    if s.nextn_layers_left_out:
        notes.append(
            f"**{s.nextn_layers_left_out} next-token-prediction layer(s)**, {mtp_layer_params(s):,} parameters "
            "each (a 2d × d map, three norms, a decoder layer like the last), left out of every count: "
            "transformers builds them beside the model."
        )
    return notes


def prefill_rows(r: CostReport) -> tuple[dict[str, list], str]:
    """The whole model's forward FLOPs by part, and which MLA form is counted."""
    f = r.prefill
    parts = [
        ("projections (attention layers)", f.projections),
        ("attention pairs", f.attention),
        ("linear/state layers: maps", f.state_projections),
        ("linear/state layers: chunked core", f.state_core),
        ("MLP / active experts", f.mlp),
        ("output head 2·d·V per token", f.lm_head),
        ("per-layer input maps (Gemma 4)", f.per_layer_inputs),
        ("total", f.total),
    ]
    parts = [p for p in parts if p[1] or not p[0].startswith(("linear/state", "per-layer"))]
    table = {
        "part": [p for p, _ in parts],
        "FLOP": [format_count(x) for _, x in parts],
        "scaled": [format_flops(x) for _, x in parts],
        "share": [format_percent(x / f.total) for _, x in parts],
    }
    note = "Matrix products only, 2 FLOPs per multiply-add; norms, softmax and rotary excluded."
    if r.model.mla is not None:
        note += (
            f" MLA attention is counted naive (K and V expanded per head): {format_flops(f.attention)}; with the "
            f"up-projections absorbed into the queries and outputs it is {format_flops(f.attention_absorbed)}"
            " (the decode form: it reads only the latent)."
        )
    return table, note


def times_rows(t: Timing, calibrated: CalibratedTiming | None = None) -> dict[str, list]:
    """TTFT, one decode step and the end-to-end time: bound, the estimate at the efficiency, and
    the figure at a bench run's attained rates (`attn_core.cost.calibrated`) where one applies."""
    rows = [
        ("prefill compute (FLOPs / peak)", t.ttft_compute_s),
        ("prefill memory (bytes / bandwidth)", t.ttft_memory_s),
        (f"time to first token ({t.ttft_bound}-bound)", t.ttft_bound_s),
        ("decode step at P", t.decode_step_bound_s),
        (f"P + {t.gen_len:,} generated tokens", t.total_bound_s),
    ]
    table = {"quantity": [q for q, _ in rows], "lower bound": [format_seconds(x) for _, x in rows]}
    if t.is_estimate:
        estimates = (
            t.ttft_compute_s / t.efficiency,
            t.ttft_memory_s / t.efficiency,
            t.ttft_s,
            t.decode_step_s,
            t.total_s,
        )
        table[f"estimate at {t.efficiency:g} of peak"] = [format_seconds(x) for x in estimates]
    if calibrated is not None:
        c, p = calibrated.calibration, calibrated.prefill
        figures = (p.compute_s, p.memory_s, calibrated.ttft_s, calibrated.decode_step_s, calibrated.total_s)
        table[f"calibrated (measured rates, {c.run}, {c.date})"] = [format_seconds(x) for x in figures]
    return table


def whole_checks(r: CostReport) -> list[tuple[str, float]]:
    """(independent route, |Δ|) for the whole-model figures: prefill as Σ over layer groups of
    count × card 11's per-layer FLOPs plus the head; the cache as Σ over kinds of count × bytes ×
    min(T, span), a sliding or chunked layer's span W − 1 or C − 1 (transformers' dynamic cache).
    Groups, not layers: a config of 16 million layers costs what one of 60 does."""
    s, T, B = r.model, r.seq_len, r.batch
    by_layer = sum(
        n * layer_flops(s, T, B, r.causal, group=group).total for group, n in s.layer_groups.items()
    )
    # + the head, and Gemma 4's per-layer input maps from their parameter count (2 FLOPs per weight per token)
    prefill = by_layer + 2 * (s.d_model * s.vocab_size + r.params.count.per_layer_projections) * T * B
    spans = {"full": T, "sliding": (s.sliding_window or 1) - 1, "chunked": (s.attention_chunk_size or 1) - 1}
    kv = (
        sum(
            n * min(T, spans[k]) * kv_bytes_per_token_per_layer(s, r.precision.b_kv, k)
            for k, n in s.caching_counts.items()
        )
        * B
    )
    return [
        ("Σ per-layer FLOPs (card 11) + head", abs(prefill - r.prefill.total)),
        ("Σ per-layer cached tokens × bytes", abs(kv - r.kv_cache_bytes)),
    ]


def param_parts(r: CostReport) -> tuple[list[str], list[int], list[int]]:
    """(part, total, active) for the held-vs-run chart; the actives sum to ParamCount.active."""
    p = r.params.count
    rows = [
        ("embeddings", p.embeddings + p.positions, p.embeddings + p.positions),
        ("attention", p.attention, p.attention),
        ("linear/state mixers", p.state_mixers, p.state_mixers),
        ("dense MLP, shared experts, routers", p.mlp, p.mlp),
        ("routed experts", p.experts, p.experts_active),
        ("norms", p.norms, p.norms),
        ("output head", p.lm_head, p.lm_head),
    ]
    rows = [row for row in rows if row[1]]
    return [x for x, _, _ in rows], [t for _, t, _ in rows], [a for _, _, a in rows]


def times_caption(t: Timing) -> str:
    kind = f"estimates: each bound ÷ {t.efficiency:g}" if t.is_estimate else "lower bounds (efficiency 1)"
    return (
        f"{kind.capitalize()}. TTFT = max(prefill FLOPs / peak, bytes read / bandwidth), the FLOPs with the causal "
        f"pairs each layer allows (the fewest a decoder must compute, whatever the causal toggle), the bytes "
        f"the active weights once "
        f"and the cache written. A decode step is the same max: its FLOPs (one token per sequence), and the "
        f"active weights (top-k experts; an untied embedding table only for its {t.batch:,} row(s)) and every "
        f"cached token read; step i reads a cache of P + i tokens. "
        f"{t.batch * t.gen_len:,} tokens in {format_seconds(t.total_s)}: {t.tokens_per_s:,.1f} tokens/s."
    )


def calibrated_caption(c: CalibratedTiming) -> str:
    """The calibrated column's formula, why, and its rates with their sources."""
    cal = c.calibration
    return (
        f"**Calibrated** ({cal.device}, {cal.run}, {cal.date}): each phase in two parts that run one after "
        f"another, each at its own roofline, t = {FORMULA}: products over the weights (F_w FLOPs, W bytes), "
        "then attention and any recurrent core (F_a, F_c FLOPs) with the cache and state they write or read "
        "(M bytes). Max within a part, because a product's arithmetic hides under its weight stream; a sum "
        'across parts, because they are separate kernels (RESULTS.md, "Calibrated time against real runs": '
        f"the sum of compute and memory overshoots a measured decode step). Rates: {c.rates_text()}. "
        "An estimate, not a bound (the efficiency does not apply to it): a kernel may beat the bench's "
        "rates, and what is not a matrix product (norms, routing, gathers) is left out, as in the bound."
    )
