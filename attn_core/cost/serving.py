"""The KV cache (card 13), the fixed state of linear-attention and state-space layers, the experts a
decode step touches, and what a GPU can serve: sequences that fit and decode intensity (cards 13
and 14). The decode step's time is `whole_model.decode_lower_bound`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import Tokens, _minimum, _tokens
from attn_core.cost.flops import pair_flops
from attn_core.cost.gpus import MemoryConvention
from attn_core.cost.inputs import DEFAULT_PRECISION, Hardware, Precision
from attn_core.cost.mixers import state_bytes_per_layer
from attn_core.cost.params import decode_weight_bytes, expert_params, weight_bytes


# -- Card 13: KV cache -----------------------------------------------------------------------
def kv_bytes_per_token_per_layer(shape: ModelShape, bytes_per_value: int = 2, kind: str | None = None) -> int:
    """One layer's cache for one token: a key and a value per KV head, 2·H_kv·d_h·b; with MLA
    one latent and one shared rotary key, (r_kv + d_rope)·b (DeepSeek-V3: 576·b). ``kind`` picks
    that kind's H_kv and d_h (Gemma 4's full layers: 512-wide heads); None the model's base ones."""
    if shape.mla is not None:
        return shape.mla.cache_width * bytes_per_value
    return 2 * shape.kv_heads_of(kind) * shape.head_dim_of(kind) * bytes_per_value


def kv_cache_bytes_per_token(shape: ModelShape, bytes_per_value: int = 2) -> int:
    """2 · L · H_kv · d_h · b: a key and a value per layer per KV head (card 13), before any
    window or chunk caps it. Uses H_kv, never h — sizing the cache with query heads is card 13's slip.
    L counts attention layers only: a hybrid's linear and state-space layers keep a fixed state,
    and a layer that reuses an earlier layer's K and V (Gemma 4's KV sharing) keeps none. Summed
    per kind where kinds differ in H_kv or d_h (Gemma 4)."""
    return sum(
        n * kv_bytes_per_token_per_layer(shape, bytes_per_value, kind)
        for kind, n in shape.caching_counts.items()
    )


def layer_cached_tokens(shape: ModelShape, T: Any, kind: str, use_window: bool = True) -> Tokens:
    """Tokens one layer holds per sequence after T: full T, sliding min(T, W − 1), chunked
    min(T, C − 1) — what transformers' dynamic cache keeps (`DynamicSlidingWindowLayer`, used for
    both: the last W − 1 keys, the query's own key making W; docs/cost-model.md, cache
    conventions). A chunked layer needs only the current chunk, but its buffer fills at the end of
    each chunk, so a cache sized to fit (the "fits" answers) counts the full buffer."""
    T = _tokens(T)
    if not use_window or kind == "full":
        return T
    cap = shape.sliding_window if kind == "sliding" else shape.attention_chunk_size
    return _minimum(T, cap - 1)


def cached_tokens(shape: ModelShape, T: Any, use_window: bool = True) -> Tokens:
    """Token-layers held per sequence: Σ over caching attention layers of each layer's cached
    tokens (L·T when every layer is full, L·min(T, W − 1) with Mistral's window on every layer; none
    for a linear-attention or state-space layer, or for a layer sharing another's K and V)."""
    return sum(
        n * layer_cached_tokens(shape, T, kind, use_window) for kind, n in shape.caching_counts.items()
    )


def kv_cache_bytes(
    shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2, use_window: bool = True
) -> Tokens:
    """Σ_layers per-layer bytes × cached tokens × B: 2·L·H_kv·d_h·b·T·B when every layer is
    full (card 13), honouring each layer's window or chunk, MLA's latent, each kind's own H_kv
    and d_h, and KV sharing (no cache of a sharing layer's own).

    Llama 2 7B, fp16: 524,288 B = 512 KiB per token; × 4,096 = 2 GiB; × 8 sequences = 16 GiB."""
    batch = _tokens(batch, "batch", 1)
    return (
        sum(
            n
            * kv_bytes_per_token_per_layer(shape, bytes_per_value, kind)
            * layer_cached_tokens(shape, T, kind, use_window)
            for kind, n in shape.caching_counts.items()
        )
        * batch
    )


# -- The fixed state of linear-attention and state-space layers -------------------------------
def state_bytes_per_sequence(
    shape: ModelShape, conv_bytes: float = 2, recurrent_bytes: float | None = None
) -> int:
    """Σ over linear/state layers of conv elements·b_conv + recurrent elements·b_rec for one
    sequence, whatever T is (0 for a transformer). ``recurrent_bytes`` None: the same as the conv's.
    transformers keeps the conv state at the model dtype and the recurrent state in fp32 (4 B)."""
    if not shape.n_state_layers:
        return 0
    b_rec = conv_bytes if recurrent_bytes is None else recurrent_bytes
    return math.ceil(shape.n_state_layers * state_bytes_per_layer(shape.state_mixer, conv_bytes, b_rec))


def state_bytes(
    shape: ModelShape, batch: int = 1, conv_bytes: float = 2, recurrent_bytes: float | None = None
) -> int:
    """The whole batch's fixed state: B × `state_bytes_per_sequence`."""
    return _tokens(batch, "batch", 1) * state_bytes_per_sequence(shape, conv_bytes, recurrent_bytes)


# -- Mixture of experts: the experts one decode step touches ----------------------------------
def experts_touched_expected(n_experts: int, top_k: int, batch: int) -> float:
    """E·(1 − (1 − k/E)^B): the expected distinct routed experts one MoE layer reads in a decode
    step of B sequences when each picks k of E uniformly (an expert is missed by one sequence
    with probability 1 − k/E). k at B = 1; DeepSeek-V3 (E 256, k 8) at B = 64: 222.4."""
    return n_experts * (1 - (1 - top_k / n_experts) ** batch)


def decode_weight_bytes_expected(
    shape: ModelShape, batch: int = 1, bytes_per_param: float = 2, expert_bytes_per_param: float | None = None
) -> int:
    """The floor of `params.decode_weight_bytes` with the k experts per MoE layer replaced by the
    expected distinct experts under uniform routing (= the floor for a dense model or B = 1)."""
    floor = decode_weight_bytes(shape, batch, bytes_per_param, expert_bytes_per_param)
    m = shape.moe
    if m is None or not shape.n_moe_layers:
        return floor
    b_e = bytes_per_param if expert_bytes_per_param is None else expert_bytes_per_param
    extra = experts_touched_expected(m.n_experts, m.top_k, batch) - m.top_k
    one = expert_params(shape, m.expert_d_ff, m.expert_bias)
    return math.ceil(floor + shape.n_moe_layers * extra * one * b_e)


# -- Cards 13 and 14: serving capacity, intensity ------------------------------
@dataclass(frozen=True)
class ServingCapacity:
    """How many sequences of T tokens fit beside the weights — an UPPER bound: activations,
    fragmentation, the framework and the CUDA context all take memory this ignores."""

    memory_bytes: int  # n_gpus × GPU memory, under the convention below
    memory_convention: MemoryConvention  # "device" (reported) or "vendor" (cards 13/14)
    weight_bytes: int
    free_bytes: int  # memory − weights (negative: the weights alone do not fit)
    kv_bytes_per_sequence: Tokens
    max_sequences: Tokens  # ⌊free / (cache + state) per sequence⌋, 0 when the weights do not fit
    state_bytes_per_sequence: int = 0  # the fixed state of a hybrid's linear/state layers


def serving_capacity(
    shape: ModelShape,
    hardware: Hardware,
    T: Any,
    precision: Precision = DEFAULT_PRECISION,
    weights: int | None = None,
    memory: MemoryConvention = "device",
) -> ServingCapacity:
    """⌊(n_gpus · memory − weight bytes) / (KV + state bytes per sequence)⌋ (card 13). Tensor-parallel
    sharding is assumed perfect: weights and caches split evenly, nothing replicated. A hybrid's
    state: conv at the cache dtype (``precision.kv``), recurrent at ``precision.state``; weights at
    ``precision.weights`` (routed experts at ``precision.experts``).

    ``memory='vendor'`` is card 13's convention: Llama 2 7B on 80 GB at 4,096 tokens,
    ⌊(80·10^9 − 13,476,831,232) / 2 GiB⌋ = 30. The default, the memory the device reports
    (81,920 MiB on an A100 80GB), gives 33.
    ``weights`` overrides the weight bytes, for card 14's cache-only what-if (MHA vs GQA with
    the same weights: Llama 2 70B on 2 × 80 GB fits 16 GQA sequences, 2 MHA)."""
    T = _tokens(T, minimum=1)
    total = hardware.n_gpus * hardware.gpu.memory(memory)
    w = weight_bytes(shape, precision.b_weight, precision.b_expert) if weights is None else int(weights)
    per_seq = kv_cache_bytes(shape, T, 1, precision.b_kv)
    state = state_bytes_per_sequence(shape, precision.b_kv, precision.b_state)
    free = total - w
    max_seq = max(free, 0) // (per_seq + state)
    return ServingCapacity(total, memory, w, free, per_seq, max_seq, state)


def decode_intensity(shape: ModelShape, bytes_per_value: int = 2) -> float:
    """FLOPs per byte of decode attention: h·4T·d_h / (H_kv·2T·d_h·b) = 2h / (b·H_kv) (card 14).

    = h / H_kv at b = 2: 1 for Llama 2 7B, 4 for Llama 3 8B, 8 for Llama 2 70B — far below an
    A100's ridge of 153, so decode attention is bound by memory traffic. MLA decodes in the
    absorbed form: 2h(2·r_kv + d_rope) / ((r_kv + d_rope)·b), 242 for DeepSeek-V3 in bf16."""
    return pair_flops(shape, absorbed=True) / kv_bytes_per_token_per_layer(shape, bytes_per_value)
