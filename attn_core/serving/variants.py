"""The same model with another attention: MHA, GQA, MLA and a linear-attention hybrid built from a
preset's own config fields, so a side-by-side shows how the cache per token sets the batch a GPU
holds and so the GPUs a load needs.

- MHA: H_kv = h.  GQA: H_kv = 8 (or h where h < 8 or 8 does not divide h).
- MLA: DeepSeek-V3's latent (r_kv 512, rotary 64) on the same heads: 576 numbers a token a layer.
- hybrid: three of every four layers Gated DeltaNet (Qwen3-Next's mixer: d_k = d_v = d_h, H_v = h
  value heads over h/2 key heads, conv 4), the rest the model's own attention.
Widths, layer count, MLP and vocabulary stay; the weights change only by the attention maps.
"""

from __future__ import annotations

import dataclasses

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.layers import LayerKinds
from attn_core.cost.mixers import GatedDeltaNet
from attn_core.cost.mla import MLA

VARIANTS = ("MHA", "GQA", "MLA", "linear hybrid")


def _gqa_heads(h: int) -> int:
    return 8 if h >= 8 and h % 8 == 0 else h


def attention_variant(shape: ModelShape, variant: str) -> ModelShape:
    """``shape`` with its attention replaced by ``variant`` (one of `VARIANTS`)."""
    plain = dataclasses.replace(
        shape,
        mla=None,
        layer_types=None,
        state_mixer=None,
        sliding_window=None,
        name=f"{shape.name} ({variant})",
    )
    h = shape.n_heads
    if variant == "MHA":
        return dataclasses.replace(plain, n_kv_heads=h)
    if variant == "GQA":
        return dataclasses.replace(plain, n_kv_heads=_gqa_heads(h))
    if variant == "MLA":
        d_h = shape.head_dim
        mla = MLA(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=d_h, v_head_dim=d_h)
        return dataclasses.replace(plain, n_kv_heads=h, mla=mla)
    if variant == "linear hybrid":
        L = shape.n_layers
        kinds = tuple("full" if i % 4 == 3 else "gdn" for i in range(L))
        mixer = GatedDeltaNet(shape.d_model, max(h // 2, 1), h, shape.head_dim, shape.head_dim, 4)
        return dataclasses.replace(
            plain, n_kv_heads=_gqa_heads(h), layer_types=LayerKinds(L, listed=kinds), state_mixer=mixer
        )
    raise ValueError(f"unknown attention variant {variant!r}; choose one of {', '.join(VARIANTS)}")
