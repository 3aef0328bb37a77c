"""What attention costs for a real model: parameters, FLOPs, memory, KV cache, serving, decode.

Cards 9 (parameters), 11 (FLOPs and the crossover), 12 (score memory), 13 (KV cache and the
serving budget), 14 (GQA/MQA and decode intensity). Names as in the cards: L layers, d width,
h query heads, H_kv KV heads, d_h head width, d_ff feed-forward width, T tokens, B batch,
b bytes per number.

Every function of T is vectorized: pass a Python int and get an exact Python int (or float
where the formula divides); pass an array (any array-like) and get a float64 numpy array of
the same shape — exact for integers below 2^53 ≈ 9.0e15 and within one part in 10^16 above,
so a 10,000-point sweep is a handful of numpy operations.

The general formulas use h·d_h where the cards write d; they coincide in every preset
(h·d_h = d) and stay right for models where they differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core import memory
from attn_core.gpus import GPU
from attn_core.models import ModelShape

Tokens = int | np.ndarray

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}  # b, bytes per number


def bytes_per_value(dtype: str) -> int:
    """b for a dtype name: fp32 4, fp16/bf16 2, int8 1."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def _tokens(value: Any, name: str = "T", minimum: int = 0) -> Tokens:
    """A count of tokens as an exact int (scalar) or a float64 array (sweep); rejects negatives."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int | np.integer):
        if value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {value}")
        return int(value)
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        if not float(arr).is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        return _tokens(int(arr), name, minimum)
    if not np.all(np.isfinite(arr)) or np.any(arr < minimum) or np.any(arr != np.floor(arr)):
        raise ValueError(f"every {name} must be a whole number ≥ {minimum}")
    return arr


def _minimum(a: Tokens, b: int | None) -> Tokens:
    """min(a, b) for an int or an array; b = None means no cap."""
    if b is None:
        return a
    return np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)


# -- Card 13: KV cache -----------------------------------------------------------------------
def kv_cache_bytes_per_token(shape: ModelShape, bytes_per_value: int = 2) -> int:
    """2 · L · H_kv · d_h · b: a key and a value per layer per KV head (card 13).

    Uses H_kv, never h — sizing the cache with query heads is card 13's slip."""
    return 2 * shape.n_layers * shape.n_kv_heads * shape.head_dim * bytes_per_value


def cached_tokens(shape: ModelShape, T: Any, use_window: bool = True) -> Tokens:
    """Tokens actually held per sequence: min(T, W) with a sliding window W (rolling buffer)."""
    T = _tokens(T)
    return _minimum(T, shape.sliding_window if use_window else None)


def kv_cache_bytes(
    shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2, use_window: bool = True
) -> Tokens:
    """2 · L · H_kv · d_h · b · T · B bytes, T capped at the sliding window if any (card 13).

    Llama 2 7B, fp16: 524,288 B = 512 KiB per token; × 4,096 = 2 GiB; × 8 sequences = 16 GiB."""
    batch = _tokens(batch, "batch", 1)
    return kv_cache_bytes_per_token(shape, bytes_per_value) * cached_tokens(shape, T, use_window) * batch


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
    biases, h·d_h + 2·H_kv·d_h + d more (= 4d for MHA). ``bias=None`` takes the model's own.

    Card 9: 67,108,864 for Llama 2 7B whatever h is; GPT-2 small with biases 2,362,368."""
    d, q_width, kv_width = shape.d_model, shape.q_width, shape.kv_width
    weights = d * q_width + 2 * d * kv_width + q_width * d
    with_bias = shape.attention_bias if bias is None else bias
    biases = q_width + 2 * kv_width + d if with_bias else 0
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


# -- Cards 13 and 14: serving capacity, decode bound, intensity ------------------------------
@dataclass(frozen=True)
class ServingCapacity:
    """How many sequences of T tokens fit beside the weights — an UPPER bound: activations,
    fragmentation, the framework and the CUDA context all take memory this ignores."""

    memory_bytes: int  # n_gpus × GPU memory (vendor GB)
    weight_bytes: int
    free_bytes: int  # memory − weights (negative: the weights alone do not fit)
    kv_bytes_per_sequence: Tokens
    max_sequences: Tokens  # ⌊free / per-sequence⌋, 0 when the weights do not fit


def serving_capacity(
    shape: ModelShape,
    gpu: GPU,
    T: Any,
    n_gpus: int = 1,
    weight_bytes_per_param: int = 2,
    kv_bytes_per_value: int = 2,
    weights: int | None = None,
) -> ServingCapacity:
    """⌊(n_gpus · memory − weight bytes) / KV bytes per sequence⌋ (card 13).

    Llama 2 7B on 80 GB at 4,096 tokens: ⌊(80·10^9 − 13,476,831,232) / 2 GiB⌋ = 30.
    ``weights`` overrides the weight bytes, for card 14's cache-only what-if (MHA vs GQA with
    the same weights: Llama 2 70B on 2 × 80 GB fits 16 GQA sequences, 2 MHA)."""
    T = _tokens(T, minimum=1)
    n_gpus = _tokens(n_gpus, "n_gpus", 1)
    memory = n_gpus * gpu.memory_bytes
    w = weight_bytes(shape, weight_bytes_per_param) if weights is None else int(weights)
    per_seq = kv_cache_bytes(shape, T, 1, kv_bytes_per_value)
    free = memory - w
    max_seq = max(free, 0) // per_seq
    return ServingCapacity(memory, w, free, per_seq, max_seq)


@dataclass(frozen=True)
class DecodeBound:
    """Bandwidth floor on one decode step: every weight and the whole cache are read once."""

    weight_bytes: int
    kv_bytes: Tokens  # all B sequences' caches
    bandwidth_bytes_per_s: int  # n_gpus × per-GPU bandwidth
    batch: int

    @property
    def weight_seconds(self) -> float:
        return self.weight_bytes / self.bandwidth_bytes_per_s

    @property
    def kv_seconds(self) -> Tokens:
        return self.kv_bytes / self.bandwidth_bytes_per_s

    @property
    def seconds_per_step(self) -> Tokens:
        """t_token ≥ (weight bytes + KV bytes) / bandwidth — a LOWER bound on time per step."""
        return self.weight_seconds + self.kv_seconds

    @property
    def tokens_per_s(self) -> Tokens:
        """B / t_step — an UPPER bound on generated tokens per second (all sequences)."""
        return self.batch / self.seconds_per_step


def decode_lower_bound(
    shape: ModelShape,
    gpu: GPU,
    T: Any,
    batch: int = 1,
    n_gpus: int = 1,
    weight_bytes_per_param: int = 2,
    kv_bytes_per_value: int = 2,
) -> DecodeBound:
    """Memory-bandwidth floor on decoding one token per sequence with T cached (card 13).

    Llama 2 7B on an A100 (2,039 GB/s), batch 1, 4K: 6.61 ms weights + 1.05 ms cache, so at
    most 130 tokens/s. Multi-GPU assumes perfect sharding (bandwidths add)."""
    batch = _tokens(batch, "batch", 1)
    n_gpus = _tokens(n_gpus, "n_gpus", 1)
    return DecodeBound(
        weight_bytes=weight_bytes(shape, weight_bytes_per_param),
        kv_bytes=kv_cache_bytes(shape, T, batch, kv_bytes_per_value),
        bandwidth_bytes_per_s=n_gpus * gpu.bandwidth_bytes_per_s,
        batch=batch,
    )


def decode_intensity(shape: ModelShape, bytes_per_value: int = 2) -> float:
    """FLOPs per byte of decode attention: h·4T·d_h / (H_kv·2T·d_h·b) = 2h / (b·H_kv) (card 14).

    = h / H_kv at b = 2: 1 for Llama 2 7B, 4 for Llama 3 8B, 8 for Llama 2 70B — far below an
    A100's ridge of 153, so decode attention is bound by memory traffic."""
    return 2 * shape.n_heads / (bytes_per_value * shape.n_kv_heads)


# -- One what-if, everything at once (the CLI's and the page's single call) ------------------
@dataclass(frozen=True)
class CostReport:
    """Every cost of one configuration; ``to_json()`` is the CLI's ``--json`` contract."""

    model: ModelShape
    seq_len: int
    batch: int
    dtype: str  # weights and activations
    kv_dtype: str  # the KV cache
    causal: bool
    kv_cache_bytes_per_token: int
    kv_cache_bytes: int
    attention_params: AttentionParams
    flops: LayerFlops
    crossover_seq_len: float | None
    score_bytes_naive_per_layer: int
    score_bytes_online_per_layer: int
    weight_bytes: int
    decode_intensity: float
    gpu: GPU | None = None
    n_gpus: int = 1
    serving: ServingCapacity | None = None
    decode: DecodeBound | None = None

    @property
    def beyond_max_context(self) -> bool:
        """T exceeds the context the model was trained for (the numbers still hold as arithmetic)."""
        return self.model.max_context is not None and self.seq_len > self.model.max_context

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready dict: ints stay exact ints, T* is an int when integral, null if never."""
        T_star = self.crossover_seq_len
        if T_star is not None and float(T_star).is_integer():
            T_star = int(T_star)
        out: dict[str, Any] = {
            "model": self.model.name,
            "seq_len": self.seq_len,
            "batch": self.batch,
            "dtype": self.dtype,
            "kv_dtype": self.kv_dtype,
            "causal": self.causal,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token,
            "kv_cache_bytes": self.kv_cache_bytes,
            "attention_params_per_layer": self.attention_params.total,
            "flops_per_layer": {
                "projections": self.flops.projections,
                "attention": self.flops.attention,
                "mlp": self.flops.mlp,
                "total": self.flops.total,
            },
            "attention_flop_share": self.flops.attention_share,
            "crossover_seq_len": T_star,
            "score_bytes_naive_per_layer": self.score_bytes_naive_per_layer,
            "score_bytes_online_per_layer": self.score_bytes_online_per_layer,
            "weight_bytes": self.weight_bytes,
            "decode_attention_intensity_flop_per_byte": self.decode_intensity,
            "beyond_max_context": self.beyond_max_context,
        }
        if self.gpu is not None and self.serving is not None and self.decode is not None:
            out.update(
                gpu=self.gpu.name,
                n_gpus=self.n_gpus,
                max_sequences=self.serving.max_sequences,
                max_sequences_is_upper_bound=True,
                decode_ms_per_token_lower_bound=1e3 * self.decode.seconds_per_step,
                decode_tokens_per_s_upper_bound=self.decode.tokens_per_s,
                ridge_flop_per_byte=self.gpu.ridge_flop_per_byte,
            )
        return out


def cost_report(
    shape: ModelShape,
    T: int,
    batch: int = 1,
    dtype: str = "fp16",
    causal: bool = False,
    gpu: GPU | None = None,
    n_gpus: int = 1,
    kv_dtype: str | None = None,
) -> CostReport:
    """All of cards 9, 11–14 for one model at one T (scalar T only; use the functions above
    for sweeps). ``dtype`` sizes weights and scores, ``kv_dtype`` (default: dtype) the cache."""
    T = _tokens(T, minimum=1)
    if not isinstance(T, int):
        raise ValueError("cost_report takes one sequence length; sweep with layer_flops/kv_cache_bytes")
    batch = _tokens(batch, "batch", 1)
    kv_dtype = dtype if kv_dtype is None else kv_dtype
    b, b_kv = bytes_per_value(dtype), bytes_per_value(kv_dtype)
    serving = decode = None
    if gpu is not None:
        serving = serving_capacity(shape, gpu, T, n_gpus, b, b_kv)
        decode = decode_lower_bound(shape, gpu, T, batch, n_gpus, b, b_kv)
    return CostReport(
        model=shape,
        seq_len=T,
        batch=batch,
        dtype=dtype,
        kv_dtype=kv_dtype,
        causal=causal,
        kv_cache_bytes_per_token=kv_cache_bytes_per_token(shape, b_kv),
        kv_cache_bytes=kv_cache_bytes(shape, T, batch, b_kv),
        attention_params=attention_params(shape),
        flops=layer_flops(shape, T, batch, causal),
        crossover_seq_len=crossover_seq_len(shape, causal),
        score_bytes_naive_per_layer=score_bytes_naive(shape, T, batch, b),
        score_bytes_online_per_layer=score_bytes_online(shape, T, batch),
        weight_bytes=weight_bytes(shape, b),
        decode_intensity=decode_intensity(shape, b_kv),
        gpu=gpu,
        n_gpus=n_gpus,
        serving=serving,
        decode=decode,
    )


# -- Tables and sweeps for the cost page -----------------------------------------------------
@dataclass(frozen=True)
class KVHeadVariant:
    """One row of the MHA / GQA / MQA comparison for the same model (card 14)."""

    n_kv_heads: int
    kind: str  # "MHA", "GQA" or "MQA"
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int
    cache_ratio_to_mha: float  # h / H_kv: how many times smaller than MHA's cache
    attention_params_per_layer: int
    decode_intensity: float  # FLOP per byte of decode attention
    max_sequences: int | None  # with the model's own weights held fixed (cache-only what-if)
    decode_ms_lower_bound: float | None


def kv_head_variants(
    shape: ModelShape,
    T: int,
    gpu: GPU | None = None,
    n_gpus: int = 1,
    batch: int = 1,
    weight_bytes_per_param: int = 2,
    kv_bytes_per_value: int = 2,
) -> list[KVHeadVariant]:
    """The same model with H_kv = h (MHA), its own H_kv, a middle GQA group and 1 (MQA).

    Query heads, FLOPs and — to isolate the cache — the weight bytes stay those of the model
    as configured, as in card 14's serving comparison (16 GQA vs 2 MHA sequences)."""
    h = shape.n_heads
    divisors = [g for g in range(1, h + 1) if h % g == 0]
    middle = divisors[len(divisors) // 2]  # a representative GQA group count
    counts = sorted({h, shape.n_kv_heads, middle, 1}, reverse=True)
    weights = weight_bytes(shape, weight_bytes_per_param)
    rows = []
    for n_kv in counts:
        variant = shape.with_kv_heads(n_kv)
        serving = decode = None
        if gpu is not None:
            serving = serving_capacity(
                variant, gpu, T, n_gpus, weight_bytes_per_param, kv_bytes_per_value, weights
            )
            kv = kv_cache_bytes(variant, T, batch, kv_bytes_per_value)
            decode = DecodeBound(weights, kv, n_gpus * gpu.bandwidth_bytes_per_s, batch)
        rows.append(
            KVHeadVariant(
                n_kv_heads=n_kv,
                kind=variant.attention_kind,
                kv_bytes_per_token=kv_cache_bytes_per_token(variant, kv_bytes_per_value),
                kv_bytes_per_sequence=kv_cache_bytes(variant, T, 1, kv_bytes_per_value),
                cache_ratio_to_mha=h / n_kv,
                attention_params_per_layer=attention_params(variant).total,
                decode_intensity=decode_intensity(variant, kv_bytes_per_value),
                max_sequences=None if serving is None else serving.max_sequences,
                decode_ms_lower_bound=None if decode is None else 1e3 * decode.seconds_per_step,
            )
        )
    return rows


def sweep_grid(T: int, points: int = 121, extra: tuple[float | None, ...] = ()) -> np.ndarray:
    """Log-spaced whole T from 1 to 4·max(T, extra…), with T and the extra points included
    (so a chart's markers sit exactly on its curve). At most points + len(extra) + 1 values."""
    top = 4 * max([T, *[int(x) for x in extra if x is not None]])
    grid = np.unique(np.geomspace(1, top, points).round())
    marks = [T, *[round(x) for x in extra if x is not None and x >= 1]]
    return np.unique(np.r_[grid, marks]).astype(np.float64)


@dataclass(frozen=True)
class CostSweep:
    """Costs over a grid of T (arrays, float64), for the page's charts and CSV downloads."""

    seq_len: np.ndarray
    full: LayerFlops
    causal: LayerFlops
    kv_cache_bytes: np.ndarray  # all B sequences
    score_bytes_naive_per_layer: np.ndarray
    score_bytes_online_per_layer: np.ndarray

    def columns(self, group: str | None = None) -> dict[str, np.ndarray]:
        """Named columns (units in the names) for a DataFrame / CSV: all of them, or one group
        ('flops', 'kv' or 'scores') after the T column."""
        groups = {
            "flops": {
                "projections (FLOP)": self.full.projections,
                "attention, all pairs (FLOP)": self.full.attention,
                "attention, causal pairs (FLOP)": self.causal.attention,
                "mlp (FLOP)": self.full.mlp,
                "attention share, all pairs": self.full.attention_share,
                "attention share, causal": self.causal.attention_share,
            },
            "kv": {"KV cache (B)": self.kv_cache_bytes},
            "scores": {
                "scores naive per layer (B)": self.score_bytes_naive_per_layer,
                "scores online per layer (B)": self.score_bytes_online_per_layer,
            },
        }
        if group is not None and group not in groups:
            raise ValueError(f"group must be one of {', '.join(groups)}, not {group!r}")
        chosen = groups.values() if group is None else [groups[group]]
        out = {"T (tokens)": self.seq_len}
        for cols in chosen:
            out |= cols
        return out


def cost_sweep(
    shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2, kv_bytes_per_value: int = 2
) -> CostSweep:
    """Every T-dependent cost over an array of T, vectorized (10,000 points: about a millisecond)."""
    T = _tokens(np.atleast_1d(np.asarray(T)), minimum=1)
    return CostSweep(
        seq_len=T,
        full=layer_flops(shape, T, batch, causal=False),
        causal=layer_flops(shape, T, batch, causal=True),
        kv_cache_bytes=kv_cache_bytes(shape, T, batch, kv_bytes_per_value),
        score_bytes_naive_per_layer=score_bytes_naive(shape, T, batch, bytes_per_value),
        score_bytes_online_per_layer=score_bytes_online(shape, T, batch),
    )
