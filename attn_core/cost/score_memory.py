"""The memory bill of attention scores, naive vs online, and the FLOPs the online way pays (card 12).

Naive: keep every head's T×T weights for the backward pass, B·h·T²·b bytes per layer.
Online (FlashAttention): keep one fp32 logsumexp per query row, B·h·T·4 bytes per layer, and
rebuild P in the backward pass as p_ij = e^{s_ij − lse_i}, which recomputes S = QKᵀ: 2·T²·d
extra FLOPs per layer, half the forward quadratic part 4·T²·d (QKᵀ and PV).

Plain numbers in, exact Python ints out (no model class here: a page passes a preset's layers,
heads and width). Llama 2 7B (32 layers, 32 heads, d = 4,096) at T = 4,096 in fp16: 32 MiB per
head, 1 GiB per layer, 32 GiB per model naive; 0.5 MiB per layer, 16 MiB per model online.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attn_core.cost.limits import MAX_SEQ_LEN

LSE_BYTES = 4  # one fp32 logsumexp per query row
MAX_T = MAX_SEQ_LEN  # 16,777,216 tokens: far beyond any context, still exact in Python ints


def _positive(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_T:
        raise ValueError(f"{name} must be a whole number from 1 to {MAX_T:,}, got {value!r}")
    return value


def naive_score_bytes(T: int, heads: int, bytes_per_value: int = 2, batch: int = 1) -> int:
    """B·h·T²·b: bytes to keep the T×T weights of ``heads`` heads for one layer (card 12)."""
    for value, name in ((T, "T"), (heads, "heads"), (bytes_per_value, "bytes_per_value"), (batch, "batch")):
        _positive(value, name)
    return batch * heads * T * T * bytes_per_value


def online_state_bytes(T: int, heads: int, batch: int = 1, lse_bytes: int = LSE_BYTES) -> int:
    """B·h·T·4: bytes of the one-fp32-logsumexp-per-row state for one layer (card 12)."""
    for value, name in ((T, "T"), (heads, "heads"), (batch, "batch"), (lse_bytes, "lse_bytes")):
        _positive(value, name)
    return batch * heads * T * lse_bytes


def recompute_flops(T: int, d_model: int, batch: int = 1) -> int:
    """2·T²·d per layer (times B): recomputing S = QKᵀ in the backward pass to rebuild P."""
    for value, name in ((T, "T"), (d_model, "d_model"), (batch, "batch")):
        _positive(value, name)
    return 2 * batch * T * T * d_model


@dataclass(frozen=True)
class MemoryBill:
    """Card 12 for one model and context length. Bytes and FLOPs are exact integers."""

    T: int
    layers: int
    heads: int  # query heads h: every query head has its own T×T weights, GQA or not
    d_model: int
    bytes_per_value: int
    batch: int
    naive_per_head: int  # B·T²·b
    naive_per_layer: int  # B·h·T²·b
    naive_per_model: int  # × layers, if every layer's weights are kept for backward
    online_per_layer: int  # B·h·T·4
    online_per_model: int
    recompute_flops_per_layer: int  # 2·B·T²·d
    forward_quadratic_flops_per_layer: int  # 4·B·T²·d (QKᵀ and PV)

    @property
    def saving(self) -> float:
        """naive / online = T·b/4: how many times smaller the online state is."""
        return self.naive_per_layer / self.online_per_layer


def memory_bill(
    T: int, *, layers: int, heads: int, d_model: int, bytes_per_value: int = 2, batch: int = 1
) -> MemoryBill:
    """The naive-vs-online memory bill of card 12 for a model of ``layers`` layers of ``heads``
    query heads and width ``d_model``, at context ``T`` with ``bytes_per_value`` (2 = fp16/bf16)."""
    _positive(layers, "layers")
    per_layer = naive_score_bytes(T, heads, bytes_per_value, batch)
    online = online_state_bytes(T, heads, batch)
    flops = recompute_flops(T, d_model, batch)
    return MemoryBill(
        T=T,
        layers=layers,
        heads=heads,
        d_model=d_model,
        bytes_per_value=bytes_per_value,
        batch=batch,
        naive_per_head=naive_score_bytes(T, 1, bytes_per_value, batch),
        naive_per_layer=per_layer,
        naive_per_model=layers * per_layer,
        online_per_layer=online,
        online_per_model=layers * online,
        recompute_flops_per_layer=flops,
        forward_quadratic_flops_per_layer=2 * flops,
    )


def memory_sweep(
    T_values: Sequence[int],
    *,
    layers: int,
    heads: int,
    d_model: int,
    bytes_per_value: int = 2,
    batch: int = 1,
) -> tuple[MemoryBill, ...]:
    """``memory_bill`` at each T (for the naive-vs-online plot)."""
    return tuple(
        memory_bill(
            int(T), layers=layers, heads=heads, d_model=d_model, bytes_per_value=bytes_per_value, batch=batch
        )
        for T in T_values
    )


def model_memory_bill(shape, T: int, bytes_per_value: int = 2, batch: int = 1) -> MemoryBill:
    """Card 12's bill for a model shape (a `ModelShape`): its attention layers, its h query heads
    and the recompute width h·d_h. Every page that shows the bill calls this one."""
    return memory_bill(
        int(T), layers=shape.n_attention_layers, heads=shape.n_heads, d_model=shape.q_width,
        bytes_per_value=bytes_per_value, batch=int(batch),
    )  # fmt: skip


def model_memory_sweep(shape, grid, bytes_per_value: int = 2, batch: int = 1) -> list[MemoryBill]:
    """`model_memory_bill` at every T of ``grid``."""
    return [model_memory_bill(shape, T, bytes_per_value, batch) for T in grid]
