"""The KV cache (card 13) and what a GPU can serve: sequences that fit, the decode-time lower bound
and decode intensity (cards 13 and 14)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.cost.flops import weight_bytes
from attn_core.cost.gpus import GPU
from attn_core.cost.shapes import ModelShape
from attn_core.cost.tokens import Tokens, _minimum, _tokens


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
