"""Parameters (card 9), FLOPs per layer and the crossover T* (card 11), and score memory, naive vs
online (card 12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.cost import memory
from attn_core.cost.shapes import ModelShape
from attn_core.cost.tokens import Tokens, _minimum, _tokens


# -- Card 9: parameters ----------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionParams:
    """Attention parameters of one layer (card 9)."""

    weights: int  # W_Q d×h·d_h, W_K and W_V d×H_kv·d_h, W_O h·d_h×d
    biases: int  # h·d_h + 2·H_kv·d_h + d when the projections carry biases, else 0

    @property
    def total(self) -> int:
        return self.weights + self.biases


def attention_params(shape: ModelShape, bias: bool | None = None) -> AttentionParams:
    """2·d·h·d_h + 2·d·H_kv·d_h weights (= 4d² for MHA, 2d² + 2d·H_kv·d_h for GQA) and, with
    biases, h·d_h + 2·H_kv·d_h on Q, K, V and d on O (= 4d for MHA; Qwen2 has no O bias).
    ``bias=None`` takes the model's own; True or False sets all four.

    Card 9: 67,108,864 for Llama 2 7B whatever h is; GPT-2 small with biases 2,362,368."""
    d, q_width, kv_width = shape.d_model, shape.q_width, shape.kv_width
    weights = d * q_width + 2 * d * kv_width + q_width * d
    qkv = shape.attention_bias if bias is None else bias
    out = (shape.attention_bias if shape.output_bias is None else shape.output_bias) if bias is None else bias
    biases = (q_width + 2 * kv_width if qkv else 0) + (d if out else 0)
    return AttentionParams(weights=weights, biases=biases)


@dataclass(frozen=True)
class ParamCount:
    """All weights of the model, by where they sit."""

    embeddings: int  # token table, vocab × d
    positions: int  # learned position table, max_context × d (0 with RoPE)
    attention: int  # all layers, biases included
    mlp: int  # all layers, biases included
    norms: int  # two per layer plus the final one
    lm_head: int  # vocab × d, 0 when tied to the embeddings

    @property
    def total(self) -> int:
        return self.embeddings + self.positions + self.attention + self.mlp + self.norms + self.lm_head


def model_params(shape: ModelShape) -> ParamCount:
    """Parameter count of a decoder-only transformer of this shape (pre-norm blocks).

    Exact for the shipped presets (Llama 2 7B: 6,738,415,616, whose fp16 bytes are card 13's
    13,476,831,232); for other architectures it counts embeddings, attention, MLP and norms
    and misses extras such as QK-norm weights."""
    d, L = shape.d_model, shape.n_layers
    mlp_bias = (shape.mlp_matrices - 1) * shape.d_ff + d if shape.mlp_bias else 0
    mlp = shape.mlp_matrices * d * shape.d_ff + mlp_bias
    norm = d if shape.norm_kind == "rms" else 2 * d
    return ParamCount(
        embeddings=shape.vocab_size * d,
        positions=(shape.max_context or 0) * d if shape.learned_positions else 0,
        attention=L * attention_params(shape).total,
        mlp=L * mlp,
        norms=(2 * L + 1) * norm,
        lm_head=0 if shape.tie_embeddings else shape.vocab_size * d,
    )


def weight_bytes(shape: ModelShape, bytes_per_param: int = 2) -> int:
    """Bytes of all weights at b bytes each (fp16: 2 × parameter count)."""
    return model_params(shape).total * bytes_per_param


# -- Card 11: FLOPs and the crossover ---------------------------------------------------------
def attention_pairs(T: Any, causal: bool = False, window: int | None = None) -> Tokens:
    """Query–key pairs a kernel must compute for T queries over T keys.

    Full: T². Causal: T(T + 1)/2 — realized only by a kernel that skips masked blocks.
    Causal with window W (each query sees at most W keys, itself included):
    W'(W' + 1)/2 + (T − W')·W with W' = min(T, W). ``window`` is ignored when not causal."""
    T = _tokens(T)
    if not causal:
        return T * T
    if window is None:
        return T * (T + 1) // 2
    Tw = _minimum(T, window)
    return Tw * (Tw + 1) // 2 + (T - Tw) * window


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one layer for B sequences of T tokens (2 FLOPs per multiply-add)."""

    seq_len: Tokens
    batch: int
    causal: bool
    projections: Tokens  # Q, K, V, O: 2Td(2h·d_h + 2H_kv·d_h) = 8Td² for MHA
    attention: Tokens  # QKᵀ and PV: 4·h·d_h per pair = 4T²d (full)
    mlp: Tokens  # 6Td·d_ff gated, 4Td·d_ff plain

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


def _linear_flops_per_token(shape: ModelShape) -> int:
    """FLOPs per token of everything that is linear in T: projections + MLP."""
    d = shape.d_model
    projections = 2 * d * (2 * shape.q_width + 2 * shape.kv_width)
    mlp = 2 * shape.mlp_matrices * d * shape.d_ff
    return projections + mlp


def layer_flops(
    shape: ModelShape, T: Any, batch: int = 1, causal: bool = False, use_window: bool = True
) -> LayerFlops:
    """FLOPs per layer, forward, split into projections + quadratic part + MLP (card 11).

    2Td(2h·d_h + 2H_kv·d_h) + 4·h·d_h·pairs(T) + 2·m·T·d·d_ff, with m = 3 matrices (gated,
    6Td·d_ff) or 2 (plain, 4Td·d_ff), times B. Full attention counts all T² pairs; ``causal``
    counts only allowed ones (and the sliding window's, if any) — a saving only a block-skipping
    kernel realizes. The softmax's own exponentials are not matrix products and are left out.
    Llama 2 7B at 4,096: 549.8 + 274.9 + 1,108.1 GFLOP."""
    T = _tokens(T)
    batch = _tokens(batch, "batch", 1)
    d = shape.d_model
    window = shape.sliding_window if use_window else None
    projections = 2 * T * d * (2 * shape.q_width + 2 * shape.kv_width) * batch
    attention = 4 * shape.q_width * attention_pairs(T, causal, window) * batch
    mlp = 2 * shape.mlp_matrices * T * d * shape.d_ff * batch
    return LayerFlops(T, batch, causal, projections, attention, mlp)


def crossover_seq_len(shape: ModelShape, causal: bool = False, use_window: bool = True) -> float | None:
    """T* where the quadratic part equals projections + MLP, solved for this architecture.

    With a = 4·h·d_h and C = the linear FLOPs per token (projections + MLP):
    full a·T² = C·T gives T* = C/a (= 2d + 1.5·d_ff for MHA with a gated MLP: 24,704 for
    Llama 2 7B); causal a·T(T+1)/2 = C·T gives T* = 2C/a − 1 (49,407). With a sliding window
    W and T* > W the causal quadratic part grows only like a·W·T, so it catches up at
    a·W(W−1) / (2(a·W − C)) if a·W > C and never otherwise (returns None)."""
    a = 4 * shape.q_width
    C = _linear_flops_per_token(shape)
    if not causal:
        return C / a
    T_star = 2 * C / a - 1
    W = shape.sliding_window if use_window else None
    if W is None or T_star <= W:
        return T_star
    slope = a * W - C
    return a * W * (W - 1) / (2 * slope) if slope > 0 else None


def doubling_ratio(shape: ModelShape, T: Any, causal: bool = False) -> Tokens:
    """FLOPs(2T) ÷ FLOPs(T) per layer: 4 only if everything were quadratic (card 11's slip)."""
    T = _tokens(T, minimum=1)
    return layer_flops(shape, 2 * T, causal=causal).total / layer_flops(shape, T, causal=causal).total


# -- Card 12: score memory, naive vs online --------------------------------------------------
def score_bytes_naive(shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2) -> Tokens:
    """B·h·T²·b bytes per layer to keep the T×T weights of every head (card 12).
    Llama 2 7B at 4,096, fp16: 1 GiB per layer. The coefficient B·h·b comes from
    attn_core.memory (the online-softmax page's memory bill); here it is vectorized over T."""
    T = _tokens(T)
    return memory.naive_score_bytes(1, shape.n_heads, bytes_per_value, _tokens(batch, "batch", 1)) * T * T


def score_bytes_online(shape: ModelShape, T: Any, batch: int = 1) -> Tokens:
    """B·h·T·4 bytes per layer: one fp32 logsumexp per query row (card 12; 0.5 MiB at 4K)."""
    T = _tokens(T)
    return memory.online_state_bytes(1, shape.n_heads, _tokens(batch, "batch", 1)) * T


def recompute_flops(shape: ModelShape, T: Any, batch: int = 1) -> Tokens:
    """Extra backward FLOPs per layer of rebuilding P from the logsumexp: QKᵀ again,
    2·T²·h·d_h·B = 2T²d, half the forward quadratic part (card 12; attn_core.memory)."""
    T = _tokens(T)
    return memory.recompute_flops(1, shape.q_width, _tokens(batch, "batch", 1)) * T * T
