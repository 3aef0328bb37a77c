"""FLOPs per layer and for the whole model, the crossover T* (card 11), and score memory, naive vs
online (card 12). Parameters (card 9) live in `attn_core.cost.params`.

Convention: 2 FLOPs per multiply-add, matrix products only (norms, softmax, rotary and the
router's top-k are left out). A weight matrix costs 2 FLOPs per weight per token, so the
projection and MLP FLOPs are twice the weights `params` counts: one home for both formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.cost import score_memory
from attn_core.cost.dtypes import Tokens, _minimum, _tokens
from attn_core.cost.model_shape import LayerGroup, ModelShape
from attn_core.cost.params import attention_params, mlp_matrix_weights


# -- Per-token pieces: each formula once ------------------------------------------------------
def projection_flops_per_token(shape: ModelShape, kind: str | None = None, shared: bool = False) -> int:
    """2 × the attention weights: 2d(2h·d_h + 2H_kv·d_h) = 8d² for MHA (card 11). MLA counts its
    four low-rank maps, the same whether or not the up-projections are absorbed. ``kind`` and
    ``shared``: a Gemma 4 layer's own heads, and no K, V maps on a KV-sharing layer."""
    return 2 * attention_params(shape, False, kind, shared).weights


def mlp_flops_per_token(
    shape: ModelShape, layer: int | None = None, moe: bool | None = None, wide: bool | None = None
) -> int:
    """2 × the MLP weights a token multiplies: 6d·d_ff gated, 4d·d_ff plain; an MoE layer counts
    its top-k routed and its shared experts and the router. ``layer`` None: the last layer;
    ``moe`` says the layer's kind directly; ``wide``, Gemma 4's double-wide MLP (None: the layer's)."""
    i = shape.n_layers - 1 if layer is None else layer
    if moe is None:
        moe = shape.is_moe_layer(i)
    if wide is None:
        wide = shape.double_wide_shared_mlp and shape.is_shared_layer(i)
    return 2 * mlp_matrix_weights(shape, moe, wide)


def pair_flops(shape: ModelShape, absorbed: bool = False, kind: str | None = None) -> int:
    """FLOPs per allowed query–key pair per layer: QKᵀ and PV over h heads, 2h(d_qk + d_v)
    (= 4·h·d_h with per-head K and V; ``kind`` picks its d_h, Gemma 4's full layers 512). MLA naive
    (K, V expanded per head): 2h(d_nope + d_rope + d_v); absorbed (queries and outputs mapped into
    the latent): 2h(2·r_kv + d_rope)."""
    h, m = shape.n_heads, shape.mla
    if m is None:
        return 4 * h * shape.head_dim_of(kind)
    if absorbed:
        return 2 * h * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    return 2 * h * (m.qk_head_dim + m.v_head_dim)


# -- Query–key pairs per attention pattern ----------------------------------------------------
def attention_pairs(
    T: Any, causal: bool = False, window: int | None = None, chunk: int | None = None
) -> Tokens:
    """Query–key pairs a kernel must compute for T queries over T keys.

    Full: T². Causal: T(T + 1)/2 — realized only by a kernel that skips masked blocks.
    Causal with window W (each query sees at most W keys, itself included):
    W'(W' + 1)/2 + (T − W')·W with W' = min(T, W). Causal in chunks of C (a query sees the
    earlier keys of its own chunk): n·C(C + 1)/2 + r(r + 1)/2 with T = n·C + r.
    ``window`` and ``chunk`` are ignored when not causal: such a kernel computes every pair."""
    T = _tokens(T)
    if not causal:
        return T * T
    if chunk is not None:
        n = T // chunk
        r = T - n * chunk
        return n * (chunk * (chunk + 1) // 2) + r * (r + 1) // 2
    if window is None:
        return T * (T + 1) // 2
    Tw = _minimum(T, window)
    return Tw * (Tw + 1) // 2 + (T - Tw) * window


def layer_pairs(shape: ModelShape, T: Any, causal: bool, kind: str, use_window: bool = True) -> Tokens:
    """Pairs one layer of attention pattern ``kind`` ('full', 'sliding', 'chunked') computes
    (0 for a linear-attention, state-space or feed-forward-only layer)."""
    if not shape.is_attention(kind):
        return 0 * _tokens(T)
    window = shape.sliding_window if kind == "sliding" and use_window else None
    chunk = shape.attention_chunk_size if kind == "chunked" and use_window else None
    return attention_pairs(T, causal, window, chunk)


# -- Card 11: one layer, the crossover --------------------------------------------------------
@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one layer for B sequences of T tokens (2 FLOPs per multiply-add)."""

    seq_len: Tokens
    batch: int
    causal: bool
    projections: Tokens  # Q, K, V, O: 2Td(2h·d_h + 2H_kv·d_h) = 8Td² for MHA (a linear layer: its maps)
    attention: Tokens  # QKᵀ and PV: 4·h·d_h per pair = 4T²d (full); a linear layer: its chunked core
    mlp: Tokens  # 6Td·d_ff gated, 4Td·d_ff plain (MoE: the active experts)

    @property
    def total(self) -> Tokens:
        return self.projections + self.attention + self.mlp

    @property
    def attention_share(self) -> Tokens:
        """Quadratic part ÷ total (card 11: 14.2% for Llama 2 7B at 4K, 7.66% causal)."""
        return self.attention / self.total

    def shares(self) -> tuple[Tokens, Tokens, Tokens, Tokens]:
        """(projections, attention, mlp, total) as fractions of the total."""
        return (self.projections / self.total, self.attention / self.total, self.mlp / self.total, 1.0)

    def per_token(self) -> LayerFlops:
        """The same split divided by the B·T tokens (card 11: 134M + 271M + 67M at 4K)."""
        n = self.seq_len * self.batch
        return LayerFlops(self.seq_len, self.batch, self.causal, self.projections / n,
                          self.attention / n, self.mlp / n)  # fmt: skip


def layer_flops(
    shape: ModelShape,
    T: Any,
    batch: int = 1,
    causal: bool = False,
    use_window: bool = True,
    layer: int | None = None,
    group: LayerGroup | None = None,
) -> LayerFlops:
    """FLOPs of one layer, forward, split into projections + quadratic part + MLP (card 11).

    2Td(2h·d_h + 2H_kv·d_h) + 4·h·d_h·pairs(T) + 2·m·T·d·d_ff, with m = 3 matrices (gated,
    6Td·d_ff) or 2 (plain, 4Td·d_ff), times B. Full attention counts all T² pairs; ``causal``
    counts only allowed ones (and the layer's window or chunk) — a saving only a block-skipping
    kernel realizes. ``layer`` picks the layer (its pattern, dense or MoE); None: the
    representative one (`ModelShape.representative_layer`: the last layer in a transformer).
    ``group`` (a key of `ModelShape.layer_groups`) names a layer's kind, MLP and KV sharing directly,
    for sums over layer groups (a Gemma 4 KV-sharing layer: no K, V maps; its MLP double-wide if
    the model says).
    A linear-attention or state-space layer (`attn_core.cost.mixers`) counts its maps as
    projections and its chunked core as attention; Nemotron-H's blocks hold a mixer or an MLP.
    Llama 2 7B at 4,096: 549.8 + 274.9 + 1,108.1 GFLOP."""
    T = _tokens(T)
    batch = _tokens(batch, "batch", 1)
    if group is not None:
        kind, moe, shared = group
    elif layer is None:
        kind, moe = shape.representative_layer
        shared = shape.kv_shared_layers > 0  # the last layer
    else:
        kind, moe, shared = shape.layer_kinds[layer], shape.is_moe_layer(layer), shape.is_shared_layer(layer)
    projections, core = mixer_flops(shape, kind, T, causal, use_window, shared)
    wide = shared and shape.double_wide_shared_mlp
    mlp = mlp_flops_per_token(shape, moe=moe, wide=wide) * T if shape.has_mlp(kind) else 0 * T
    return LayerFlops(
        T, batch, causal, projections=projections * batch, attention=core * batch, mlp=mlp * batch
    )


def mixer_flops(
    shape: ModelShape, kind: str, T: Any, causal: bool, use_window: bool = True, shared: bool = False
) -> tuple[Tokens, Tokens]:
    """(projections, core) of one layer's token mixer for one sequence of T tokens: attention's
    2·weights·T and pair_flops·pairs; a linear/state mixer's 2·matrix weights·T and its chunked
    core (`mixers`); a feed-forward-only layer (Nemotron-H's '-' and 'E') has none."""
    T = _tokens(T)
    if shape.is_attention(kind):
        return projection_flops_per_token(shape, kind, shared) * T, pair_flops(
            shape, kind=kind
        ) * layer_pairs(shape, T, causal, kind, use_window)
    m = shape.state_mixer
    if m is not None and kind == m.kind:
        return 2 * m.matrix_weights() * T, m.core_flops(T)
    return 0 * T, 0 * T


def crossover_seq_len(shape: ModelShape, causal: bool = False, use_window: bool = True) -> float | None:
    """T* where the quadratic part equals projections + MLP, solved for this architecture (its last layer).

    With a = the FLOPs per pair (4·h·d_h) and C = the linear FLOPs per token (projections +
    MLP): full a·T² = C·T gives T* = C/a (= 2d + 1.5·d_ff for MHA with a gated MLP: 24,704 for
    Llama 2 7B); causal a·T(T+1)/2 = C·T gives T* = 2C/a − 1 (49,407). With a window W on
    every layer and T* > W the causal quadratic part grows only like a·W·T, so it catches up
    at a·W(W−1) / (2(a·W − C)) if a·W > C and never otherwise (returns None)."""
    kind, moe = shape.representative_layer
    a = pair_flops(shape, kind=kind)
    C = projection_flops_per_token(shape, kind, shape.kv_shared_layers > 0) + (
        mlp_flops_per_token(shape, moe=moe) if shape.has_mlp(kind) else 0
    )
    if not causal:
        return C / a
    T_star = 2 * C / a - 1
    W = shape.uniform_window if use_window else None
    if W is None or T_star <= W:
        return T_star
    slope = a * W - C
    return a * W * (W - 1) / (2 * slope) if slope > 0 else None


def doubling_ratio(shape: ModelShape, T: Any, causal: bool = False) -> Tokens:
    """FLOPs(2T) ÷ FLOPs(T) per layer: 4 only if everything were quadratic (card 11's slip)."""
    T = _tokens(T, minimum=1)
    return layer_flops(shape, 2 * T, causal=causal).total / layer_flops(shape, T, causal=causal).total


# -- The whole model: prefill ------------------------------------------------------------------
@dataclass(frozen=True)
class PrefillFlops:
    """Forward FLOPs of the whole model over B prompts of T tokens (matrix products only)."""

    seq_len: Tokens
    batch: int
    causal: bool
    projections: Tokens  # every attention layer's Q, K, V, O (MLA: its low-rank maps)
    attention: Tokens  # the pairs each layer's pattern allows; MLA in the naive form
    attention_absorbed: Tokens  # MLA with the up-projections absorbed (= attention otherwise)
    mlp: Tokens  # dense MLPs and the active experts
    lm_head: Tokens  # 2·d·V per token
    state_projections: Tokens = 0  # linear/state layers' maps, 2·matrix weights per token
    state_core: Tokens = 0  # linear/state layers' chunked core (mixers.py)
    per_layer_inputs: Tokens = (
        0  # Gemma 4's per-layer embeddings: their d → L·p map and each layer's gate and map
    )

    @property
    def total(self) -> Tokens:
        """Projections + attention (naive form) + linear/state mixers + MLP + output head (+ Gemma 4's
        per-layer input maps)."""
        return (
            self.projections
            + self.attention
            + self.state_projections
            + self.state_core
            + self.mlp
            + self.lm_head
            + self.per_layer_inputs
        )


def prefill_flops(shape: ModelShape, T: Any, batch: int = 1, causal: bool = False) -> PrefillFlops:
    """Σ over layers of projections + pair_flops·pairs(pattern) + active MLP, plus the head's
    2·d·V per token, times B. Norms, softmax, rotary and the embedding lookup are excluded.
    MLA is counted naive (the cheaper form for prefill); ``attention_absorbed`` gives the other.
    A hybrid's linear/state layers add their maps and their chunked core (`mixers`)."""
    T = _tokens(T, minimum=1)
    batch = _tokens(batch, "batch", 1)
    groups = shape.layer_groups
    pairs = {  # per attention kind: Σ over its layers of the pairs its pattern allows
        kind: sum(n for (k, _, _), n in groups.items() if k == kind) * layer_pairs(shape, T, causal, kind)
        for kind in shape.kind_counts
        if shape.is_attention(kind)
    }
    mlp = sum(
        n * 2 * mlp_matrix_weights(shape, moe, shared and shape.double_wide_shared_mlp)
        for (kind, moe, shared), n in groups.items()
        if shape.has_mlp(kind)
    )
    projections = sum(
        n * projection_flops_per_token(shape, kind, shared)
        for (kind, _, shared), n in groups.items()
        if shape.is_attention(kind)
    )
    tokens = T * batch
    m, n_state = shape.state_mixer, shape.n_state_layers
    return PrefillFlops(
        T, batch, causal,
        projections=projections * tokens,
        attention=sum(pair_flops(shape, kind=k) * p for k, p in pairs.items()) * batch,
        attention_absorbed=sum(pair_flops(shape, True, k) * p for k, p in pairs.items()) * batch,
        mlp=mlp * tokens,
        lm_head=2 * shape.d_model * shape.vocab_size * tokens,
        state_projections=2 * m.matrix_weights() * n_state * tokens if n_state else 0,
        state_core=n_state * m.core_flops(T) * batch if n_state else 0,
        per_layer_inputs=2 * ple.projections(shape.d_model, shape.n_layers) * tokens if (ple := shape.per_layer_embeddings) else 0,
    )  # fmt: skip


# -- Card 12: score memory, naive vs online --------------------------------------------------
def score_bytes_naive(shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2) -> Tokens:
    """B·h·T²·b bytes per layer to keep the T×T weights of every head (card 12).
    Llama 2 7B at 4,096, fp16: 1 GiB per layer. The coefficient B·h·b comes from
    attn_core.cost.score_memory (the bill both pages show); here it is vectorized over T."""
    T = _tokens(T)
    return (
        score_memory.naive_score_bytes(1, shape.n_heads, bytes_per_value, _tokens(batch, "batch", 1)) * T * T
    )


def score_bytes_online(shape: ModelShape, T: Any, batch: int = 1) -> Tokens:
    """B·h·T·4 bytes per layer: one fp32 logsumexp per query row (card 12; 0.5 MiB at 4K)."""
    T = _tokens(T)
    return score_memory.online_state_bytes(1, shape.n_heads, _tokens(batch, "batch", 1)) * T


def recompute_flops(shape: ModelShape, T: Any, batch: int = 1) -> Tokens:
    """Extra backward FLOPs per layer of rebuilding P from the logsumexp: QKᵀ again,
    2·T²·h·d_h·B = 2T²d, half the forward quadratic part (card 12; attn_core.cost.score_memory)."""
    T = _tokens(T)
    return score_memory.recompute_flops(1, shape.q_width, _tokens(batch, "batch", 1)) * T * T
