"""The ledger by layer kind, and memory against T for a hybrid beside its all-attention twin.

A row per layer kind (full, sliding, chunked attention; Gated DeltaNet, KDA, Mamba, Mamba-2;
Nemotron-H's MLP-only and MoE-only blocks): how many layers, their parameters (mixer, feed-forward
part and norms), what they cache per token (attention only), what they keep per sequence (the
fixed conv + recurrent state of linear/state layers) and their forward FLOPs at T. Rows are summed
over the layer groups of `ModelShape.layer_groups`, never layer by layer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import _tokens
from attn_core.cost.flops import layer_flops
from attn_core.cost.layers import LayerKinds
from attn_core.cost.mixers import STATE_KINDS, state_bytes_per_layer
from attn_core.cost.params import attention_params, dense_mlp_params, moe_layer_params
from attn_core.cost.serving import kv_bytes_per_token_per_layer, kv_cache_bytes, state_bytes

KIND_LABELS = {
    "full": "full attention",
    "sliding": "sliding-window attention",
    "chunked": "chunked attention",
    "gdn": "Gated DeltaNet",
    "kda": "Kimi Delta Attention",
    "mamba": "Mamba",
    "mamba2": "Mamba-2",
    "mlp": "MLP block",
    "moe": "MoE block",
}


@dataclass(frozen=True)
class LedgerRow:
    """One layer kind, all its layers together (B sequences where it says so)."""

    kind: str
    layers: int
    moe_layers: int  # of them, with experts
    params: int  # mixer + feed-forward part (all experts) + norms
    cache_bytes_per_token: int  # all these layers, one token of one sequence (0: no cache)
    state_bytes_per_sequence: int  # all these layers, one sequence, whatever T is
    flops: int  # forward, B sequences of T tokens

    @property
    def label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)


def _mixer_params(shape: ModelShape, kind: str, shared: bool) -> int:
    if shape.is_attention(kind):
        return attention_params(shape, kind=kind, shared=shared).total
    m = shape.state_mixer
    return m.params() if m is not None and kind == m.kind else 0


def _ffn_params(shape: ModelShape, kind: str, moe: bool, shared: bool) -> int:
    if not shape.has_mlp(kind):
        return 0
    if moe:
        p = moe_layer_params(shape)
        return p.routed + p.always
    return dense_mlp_params(shape, wide=shared and shape.double_wide_shared_mlp)


def layer_ledger(
    shape: ModelShape,
    T: int,
    batch: int = 1,
    kv_bytes_per_value: float = 2,
    state_bytes_per_value: float | None = None,
    causal: bool = False,
) -> list[LedgerRow]:
    """Rows in the order kinds first appear in the census; their params sum to `model_params`'s
    total less the embeddings (Gemma 4's per-layer table and projections too), output head and
    final norm."""
    T = _tokens(T, minimum=1)
    b_rec = kv_bytes_per_value if state_bytes_per_value is None else state_bytes_per_value
    norm = shape.d_model * (1 if shape.norm_kind == "rms" else 2) * shape.norms_per_layer
    rows: dict[str, dict[str, int]] = {}
    for group, n in shape.layer_groups.items():
        kind, moe, shared = group
        row = rows.setdefault(kind, dict(layers=0, moe_layers=0, params=0, flops=0))
        row["layers"] += n
        row["moe_layers"] += n if moe and shape.has_mlp(kind) else 0
        row["params"] += n * (
            _mixer_params(shape, kind, shared) + _ffn_params(shape, kind, moe, shared) + norm
        )
        row["flops"] += n * int(layer_flops(shape, T, batch, causal, group=group).total)
    out = []
    for kind, row in rows.items():
        caching = shape.caching_counts.get(kind, 0)  # Gemma 4's KV-sharing layers keep no cache
        cache = caching * kv_bytes_per_token_per_layer(shape, kv_bytes_per_value, kind)
        state = 0
        if kind in STATE_KINDS:
            state = round(row["layers"] * state_bytes_per_layer(shape.state_mixer, kv_bytes_per_value, b_rec))
        out.append(LedgerRow(kind, cache_bytes_per_token=int(cache), state_bytes_per_sequence=state, **row))
    return out


def attention_twin(shape: ModelShape) -> ModelShape:
    """The same model with full attention in place of every linear-attention and state-space layer:
    the transformer a hybrid is measured against (its own d, heads, experts and layer count)."""
    if not shape.n_state_layers:
        return shape
    kinds, state = shape.layer_kinds, shape.state_mixer.kind

    def swap(k: str) -> str:
        return "full" if k == state else k

    if kinds.listed is not None:
        twin = LayerKinds(kinds.n_layers, listed=tuple(swap(k) for k in kinds.listed))
    else:
        twin = LayerKinds(kinds.n_layers, swap(kinds.base), swap(kinds.marked), kinds.marks)
    return dataclasses.replace(shape, layer_types=twin, state_mixer=None, name=f"{shape.name}, all attention")


@dataclass(frozen=True)
class MemorySweep:
    """Bytes held against T (float64 arrays): weights, the cache that grows, the state that does not."""

    seq_len: np.ndarray
    weight_bytes: int
    kv_cache_bytes: np.ndarray  # all B sequences
    state_bytes: int  # all B sequences, the same at every T

    @property
    def total(self) -> np.ndarray:
        return self.weight_bytes + self.kv_cache_bytes + self.state_bytes


def memory_sweep_T(
    shape: ModelShape,
    T: Any,
    weight_bytes: int,
    batch: int = 1,
    kv_bytes_per_value: float = 2,
    state_bytes_per_value: float | None = None,
) -> MemorySweep:
    """Weights + cache(T) + state over a grid of T, vectorized."""
    T = _tokens(np.atleast_1d(np.asarray(T)), minimum=1)
    return MemorySweep(
        seq_len=T,
        weight_bytes=int(weight_bytes),
        kv_cache_bytes=kv_cache_bytes(shape, T, batch, kv_bytes_per_value),
        state_bytes=state_bytes(shape, batch, kv_bytes_per_value, state_bytes_per_value),
    )
