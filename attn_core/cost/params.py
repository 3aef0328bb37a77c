"""Parameters (card 9): attention, MLP or experts, norms and embeddings, total and active per token,
and their bytes at a weight dtype.

Counting conventions (each test states which it checks):
- total: every weight the served model holds; DeepSeek's next-token-prediction layers are left
  out (``ModelShape.nextn_layers_left_out`` says how many).
- active: what one token runs through: everything outside the routed experts (attention,
  dense MLPs, shared experts, routers, norms, the embedding table and the head) plus top-k
  routed experts per MoE layer. This is how Mixtral's 12.9B is counted.
- active without embeddings: the same minus the input embedding table (untied models only),
  how gpt-oss's model card counts its 5.1B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attn_core.cost.config_reader import ModelShape


@dataclass(frozen=True)
class AttentionParams:
    """Attention parameters of one layer (card 9)."""

    weights: int  # W_Q d×h·d_h, W_K and W_V d×H_kv·d_h, W_O h·d_h×d (MLA: its four low-rank maps)
    biases: int  # h·d_h + 2·H_kv·d_h + d when the projections carry biases, else 0
    extra: int = 0  # sink logits (h), QK-norm weights (2·d_h), MLA's latent norms (r_q + r_kv)

    @property
    def total(self) -> int:
        return self.weights + self.biases + self.extra


def _mla_weights(shape: ModelShape) -> tuple[int, int, int]:
    """(weights, biases, latent-norm weights) of one MLA layer.

    Q: d·r_q + r_q·h·d_qk (or d·h·d_qk without q_lora_rank); KV down: d·(r_kv + d_rope);
    KV up: r_kv·h·(d_nope + d_v); O: h·d_v·d. Biases, if any, on the down maps and O."""
    m, d, h = shape.mla, shape.d_model, shape.n_heads
    q = d * m.q_lora_rank + m.q_lora_rank * h * m.qk_head_dim if m.q_lora_rank else d * h * m.qk_head_dim
    weights = (
        q
        + d * m.cache_width
        + m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)
        + h * m.v_head_dim * d
    )
    biases = (m.q_lora_rank or 0) + m.cache_width + d if shape.attention_bias else 0
    return weights, biases, (m.q_lora_rank or 0) + m.kv_lora_rank


def attention_params(
    shape: ModelShape, bias: bool | None = None, kind: str | None = None, shared: bool = False
) -> AttentionParams:
    """2·d·h·d_h + 2·d·H_kv·d_h weights (= 4d² for MHA, 2d² + 2d·H_kv·d_h for GQA) and, with
    biases, h·d_h + 2·H_kv·d_h on Q, K, V and d on O (= 4d for MHA; Qwen2 has no O bias).
    ``bias=None`` takes the model's own; True or False sets all four. MLA: see `_mla_weights`.
    ``kind`` picks a layer kind's d_h and H_kv (Gemma 4's full layers: 512-wide heads), None the
    model's base ones; a ``shared`` layer (KV sharing) holds W_Q, W_O and the query norm only,
    and a layer whose V is its K (``attention_k_eq_v``) has no W_V.

    Card 9: 67,108,864 for Llama 2 7B whatever h is; GPT-2 small with biases 2,362,368."""
    d_h, n_kv = shape.head_dim_of(kind), shape.kv_heads_of(kind)
    qk_norm = (d_h if shared else 2 * d_h) if shape.qk_norm else 0
    extra = (shape.n_heads if shape.attention_sinks else 0) + qk_norm
    if shape.mla is not None:
        weights, biases, norms = _mla_weights(shape)
        return AttentionParams(weights, biases if bias is not False else 0, extra + norms)
    d, q_width = shape.d_model, shape.n_heads * d_h
    kv_maps = 0 if shared else 1 if shape.value_is_key(kind) else 2  # W_K and W_V
    kv_width = n_kv * d_h
    gate = q_width if shape.attention_output_gate else 0  # gated attention: d × h·d_h more in W_Q
    weights = d * (q_width + gate) + kv_maps * d * kv_width + q_width * d
    qkv = shape.attention_bias if bias is None else bias
    out = (shape.attention_bias if shape.output_bias is None else shape.output_bias) if bias is None else bias
    biases = (q_width + gate + kv_maps * kv_width if qkv else 0) + (d if out else 0)
    return AttentionParams(weights=weights, biases=biases, extra=extra)


def attention_groups(shape: ModelShape) -> dict[tuple[str, bool], int]:
    """Attention layers per (kind, KV-shared or not): the groups whose per-layer attention
    parameters differ. One group, ('full', False) or ('sliding', False), in most models."""
    shared = shape.shared_kv_counts
    out = {(k, False): n - shared.get(k, 0) for k, n in shape.kind_counts.items() if shape.is_attention(k)}
    out |= {(k, True): n for k, n in shared.items()}
    return {g: n for g, n in out.items() if n}


def all_attention_params(shape: ModelShape, bias: bool | None = None) -> AttentionParams:
    """Σ over attention groups of count × `attention_params`: every attention layer's weights."""
    parts = [
        (n, attention_params(shape, bias, kind, shared))
        for (kind, shared), n in attention_groups(shape).items()
    ]
    return AttentionParams(
        weights=sum(n * p.weights for n, p in parts),
        biases=sum(n * p.biases for n, p in parts),
        extra=sum(n * p.extra for n, p in parts),
    )


def expert_params(shape: ModelShape, d_ff: int, bias: bool = False) -> int:
    """One gated expert (SwiGLU): 3·d·d_ff weights, plus 2·d_ff + d biases (gpt-oss); a plain one
    (Nemotron-H, ``MoE.expert_matrices`` = 2): 2·d·d_ff."""
    m = 3 if shape.moe is None else shape.moe.expert_matrices
    return m * shape.d_model * d_ff + ((m - 1) * d_ff + shape.d_model if bias else 0)


def mlp_matrix_weights(shape: ModelShape, moe_layer: bool, wide: bool = False) -> int:
    """Matrix weights one token multiplies in one layer's feed-forward part (no biases): a dense
    MLP's m·d·d_ff (m = 3 gated, 2 plain); an MoE layer's k routed + n_shared shared experts,
    the d·E router and Qwen2-MoE's d → 1 shared gate. FLOPs per token are twice this.
    ``wide``: Gemma 4's double-wide MLP (2·d_ff) on a KV-sharing layer."""
    if not moe_layer:
        return shape.mlp_matrices * shape.d_model * shape.d_ff * (2 if wide else 1)
    m = shape.moe
    experts = m.top_k * expert_params(shape, m.expert_d_ff) + m.n_shared * expert_params(shape, m.shared_d_ff)
    return experts + shape.d_model * (m.n_experts + (1 if m.shared_gate else 0))


def dense_mlp_params(shape: ModelShape, wide: bool = False) -> int:
    """A dense MLP: m·d·d_ff weights (m = 3 gated, 2 plain), plus (m − 1)·d_ff + d biases.
    ``wide``: Gemma 4's double-wide MLP on its KV-sharing layers, d_ff → 2·d_ff."""
    d_ff = shape.d_ff * (2 if wide else 1)
    biases = (shape.mlp_matrices - 1) * d_ff + shape.d_model if shape.mlp_bias else 0
    return mlp_matrix_weights(shape, False, wide) + biases


def wide_mlp_layers(shape: ModelShape) -> int:
    """Layers whose dense MLP is 2·d_ff wide: Gemma 4's KV-sharing layers with use_double_wide_mlp."""
    return shape.kv_shared_layers if shape.double_wide_shared_mlp else 0


@dataclass(frozen=True)
class MoELayerParams:
    """One MoE layer's feed-forward parameters, by role."""

    routed: int  # all E routed experts
    routed_active: int  # the top-k a token runs
    always: int  # shared experts + router (+ its bias) + shared gate: run for every token


def moe_layer_params(shape: ModelShape) -> MoELayerParams:
    """E·expert + k·expert (active) and n_shared·shared + d·E router (+E bias) + d (shared gate)."""
    m, d = shape.moe, shape.d_model
    one = expert_params(shape, m.expert_d_ff, m.expert_bias)
    always = m.n_shared * expert_params(shape, m.shared_d_ff) + d * m.n_experts
    always += (m.n_experts if m.router_bias else 0) + (d if m.shared_gate else 0)
    return MoELayerParams(routed=m.n_experts * one, routed_active=m.top_k * one, always=always)


@dataclass(frozen=True)
class ParamCount:
    """All weights of the model, by where they sit."""

    embeddings: int  # token table, vocab × d
    positions: int  # learned position table, max_context × d (0 with RoPE)
    attention: int  # all attention layers, biases, sinks and QK-norms included
    mlp: int  # dense MLPs, shared experts and routers: run for every token
    experts: int  # all routed experts (0 for a dense model)
    experts_active: int  # the top-k routed experts a token runs, over all MoE layers
    norms: int  # per layer (2, Gemma: 4, Nemotron-H: 1) plus the final one
    lm_head: int  # vocab × d, 0 when tied to the embeddings
    state_mixers: int = 0  # linear-attention / state-space layers (mixers.py), all of them
    per_layer_embeddings: int = 0  # Gemma 4's per-layer table, vocab_p × L·p (a token indexes one row)
    per_layer_projections: int = 0  # Gemma 4's d → L·p projection and each layer's gate and projection

    @property
    def total(self) -> int:
        return (
            self.embeddings
            + self.per_layer_embeddings
            + self.per_layer_projections
            + self.positions
            + self.attention
            + self.state_mixers
            + self.mlp
            + self.experts
            + self.norms
            + self.lm_head
        )

    @property
    def active(self) -> int:
        """Parameters one token runs through: total − routed experts + its top-k (Mixtral's 12.9B)."""
        return self.total - self.experts + self.experts_active

    @property
    def active_without_embeddings(self) -> int:
        """Active minus the input embedding tables (and positions), which a token only indexes;
        a tied table is the output head and stays (gpt-oss's 5.1B). Gemma 4's per-layer table
        is indexed too: it goes."""
        return (
            self.active
            - self.positions
            - self.per_layer_embeddings
            - (0 if self.lm_head == 0 else self.embeddings)
        )


def model_params(shape: ModelShape) -> ParamCount:
    """Parameter count of a decoder-only transformer of this shape (pre-norm blocks).

    Exact for the shipped presets (Llama 2 7B: 6,738,415,616, whose fp16 bytes are card 13's
    13,476,831,232; DeepSeek-V3 671.0B total; gpt-oss-120b 116.8B). Counts embeddings,
    attention, linear-attention and state-space mixers, MLPs, experts, routers and norms, summed
    over the layer groups (`ModelShape.layer_census`), and misses extras no shipped preset has."""
    d, L = shape.d_model, shape.n_layers
    n_moe = shape.n_moe_layers
    n_dense = shape.n_mlp_layers - n_moe
    moe = moe_layer_params(shape) if n_moe else MoELayerParams(0, 0, 0)
    norm = d if shape.norm_kind == "rms" else 2 * d
    ple, wide = shape.per_layer_embeddings, wide_mlp_layers(shape)
    return ParamCount(
        embeddings=shape.vocab_size * d,
        positions=(shape.max_context or 0) * d if shape.learned_positions else 0,
        attention=all_attention_params(shape).total,
        mlp=(n_dense - wide) * dense_mlp_params(shape)
        + wide * dense_mlp_params(shape, wide=True)
        + n_moe * moe.always,
        experts=n_moe * moe.routed,
        experts_active=n_moe * moe.routed_active,
        norms=(shape.norms_per_layer * L + 1) * norm + (ple.width if ple else 0),  # PLE: a p-wide norm
        lm_head=0 if shape.tie_embeddings else shape.vocab_size * d,
        state_mixers=shape.n_state_layers * shape.state_mixer.params() if shape.n_state_layers else 0,
        per_layer_embeddings=ple.table(L) if ple else 0,
        per_layer_projections=ple.projections(d, L) if ple else 0,
    )


def weight_bytes(
    shape: ModelShape, bytes_per_param: float = 2, expert_bytes_per_param: float | None = None
) -> int:
    """Bytes of all weights: ⌈params × b⌉ (fp16: 2 × parameter count; int4 at group 64 with
    fp16 scales: 4.25 bits = 0.53125 B). ``expert_bytes_per_param`` sizes the routed experts
    apart (gpt-oss ships them in MXFP4 and the rest in bf16)."""
    p = model_params(shape)
    b_e = bytes_per_param if expert_bytes_per_param is None else expert_bytes_per_param
    return math.ceil((p.total - p.experts) * bytes_per_param + p.experts * b_e)


def decode_weight_bytes(
    shape: ModelShape, batch: int = 1, bytes_per_param: float = 2, expert_bytes_per_param: float | None = None
) -> int:
    """Weights one decode step must read, at least: the active weights (top-k experts per MoE
    layer: the fewest any batch can touch), with an untied embedding table read only for the
    B rows it looks up. Card 13 reads the whole table; this is the tighter, true lower bound."""
    p = model_params(shape)
    b_e = bytes_per_param if expert_bytes_per_param is None else expert_bytes_per_param
    rest = p.active - p.experts_active
    if p.lm_head:  # untied: of the input table only B rows are read
        rest += min(batch, shape.vocab_size) * shape.d_model - p.embeddings
    ple = shape.per_layer_embeddings
    if ple:  # Gemma 4's per-layer table: B rows read, each L·p wide
        rest += min(batch, ple.vocab) * shape.n_layers * ple.width - p.per_layer_embeddings
    return math.ceil(rest * bytes_per_param + p.experts_active * b_e)


def mtp_layer_params(shape: ModelShape) -> int:
    """One next-token-prediction (MTP) layer as DeepSeek-V3 lays it out (its report, §2.2) and
    transformers builds every model's (`transformers.modeling_layers.MtpLayer`): a 2d × d map
    joining the normed embedding and hidden state, three norms (of each, and after the layer), and
    one decoder layer like the model's last (attention; MoE where the model has experts, else its
    dense MLP); the embedding table and output head are the main model's. Checked against
    transformers' MtpModel in tests/anatomy/test_mtp_build.py."""
    d = shape.d_model
    norm = d if shape.norm_kind == "rms" else 2 * d
    ffn = (lambda m: m.routed + m.always)(moe_layer_params(shape)) if shape.moe else dense_mlp_params(shape)
    return 2 * d * d + 3 * norm + attention_params(shape).total + ffn + 2 * norm
