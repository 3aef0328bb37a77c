"""Every layer's q and k for long inputs, with no L × L kept (the long-sequence views).

``attention_maps.capture`` keeps each layer's eager probabilities, (Hq, L, L) per layer: at 4,096
tokens that is 805 MB per layer of a GPT-2-small shape, and the eager forward forms as much again
while it runs. Here the same wrapped ``eager_attention_forward`` records only what the layer
received — q and k after rotary, the KV heads not repeated, ``scaling``, ``sliding_window`` —
and computes the layer's output with torch's fused SDPA under the model's own mask (its CPU
kernel walks key blocks: no per-head L × L). The body runs without the LM head (no L × vocab
logits), and the forward stops as soon as the layers asked for are recorded.

What remains of size L × L: the model's own additive mask, one (1, 1, L, L) float tensor per
forward (per kind of mask), shared by every layer and head (64 MiB at 4,096 tokens in float32).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn_core.attention import expand_kv
from attn_core.hf.attention_maps import wrapped_attention
from attn_core.tile_maps import LayerQK

UNSUPPORTED = ("softcap", "s_aux")  # soft-capped scores, learned sinks: no longer plain softmax(QKᵀ)


class _Enough(Exception):
    """Raised inside the forward once the layers asked for are recorded: the rest is not run."""


def capture_qk(
    model: torch.nn.Module,
    idx: torch.Tensor,
    layers: int | None = None,
    on_layer: Callable[[int, LayerQK], None] | None = None,
) -> list[LayerQK]:
    """One forward of the model's body on idx (1, L) recording layers 0 … ``layers`` − 1 (all by
    default): per layer q (Hq, L, d), k (Hkv, L, d) as compact float copies, the scale and the
    sliding window. With ``on_layer``, each record is handed to it as its layer runs and not kept
    (the list returned is empty): one layer's q and k at a time. The layers' outputs are SDPA's
    under the model's mask, so later layers see the same hidden states as the eager model up to
    float rounding. ValueError for a model whose attention is not softmax(q kᵀ · scale) under a
    mask, or a batch of more than one sequence."""
    if idx.ndim != 2 or idx.shape[0] != 1:
        raise ValueError(f"one sequence of token ids (1, L), got {tuple(idx.shape)}")
    records: list[LayerQK] = []
    wanted = min(layers or model.config.num_hidden_layers, model.config.num_hidden_layers)
    seen = 0

    owner = threading.get_ident()

    def wrap(eager):
        def sdpa(module, query, key, value, attention_mask, *args, **kwargs):
            if threading.get_ident() != owner:  # another session's forward through the same modeling file
                return eager(module, query, key, value, attention_mask, *args, **kwargs)
            if bad := [name for name in UNSUPPORTED if kwargs.get(name) is not None]:
                raise ValueError(f"{type(module).__name__} adds {bad[0]} to its scores: not plain attention")
            scale = kwargs.get("scaling")
            scale = float(scale if scale is not None else query.shape[-1] ** -0.5)
            nonlocal seen
            window = kwargs.get("sliding_window")
            record = LayerQK(_compact(query[0]), _compact(key[0]), scale, int(window) if window else None)
            if on_layer is None:
                records.append(record)
            else:
                on_layer(seen, record)
            seen += 1
            group = query.shape[1] // key.shape[1]  # K, V repeated for the kernel only: O(L·d)
            out = F.scaled_dot_product_attention(
                query,
                expand_kv(key, group),
                expand_kv(value, group),
                attn_mask=attention_mask,
                scale=scale,
                is_causal=attention_mask is None and query.shape[-2] > 1,
            )  # (1, Hq, L, d_v)
            if seen >= wanted:
                raise _Enough
            return out.transpose(1, 2).contiguous(), None

        return sdpa

    body = model.base_model  # GPT2LMHeadModel.transformer, MistralForCausalLM.model: no LM head
    try:
        with wrapped_attention(model, wrap), torch.no_grad():
            body(input_ids=idx, use_cache=False)
    except _Enough:
        pass
    if seen < wanted:
        raise ValueError(
            f"{type(model).__name__}'s attention did not run through eager_attention_forward: "
            "load it with attn_implementation='eager'"
        )
    return records


def _compact(x: torch.Tensor) -> torch.Tensor:
    """A contiguous copy that owns its memory: q of GPT-2 is a view into the fused q|k|v
    projection, which a kept view would keep whole."""
    return x.detach().clone(memory_format=torch.contiguous_format)
