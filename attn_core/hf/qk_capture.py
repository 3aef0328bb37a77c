"""Every layer's q and k for long inputs, with no L × L anywhere (the long-sequence views).

``capture.capture`` keeps each layer's eager probabilities, (Hq, L, L) per layer: at 4,096
tokens that is 805 MB per layer of a GPT-2-small shape, and the eager forward forms as much again
while it runs. Here the same capture function (transformers' attention interface,
``capture.use_capture``) records only what the layer received — q and k after rotary, the KV heads not repeated, ``scaling``, ``sliding_window`` —
and computes the layer's output without an L × L: torch's fused SDPA with ``is_causal`` (its CPU
kernel walks key blocks), or, for a sliding-window layer, the lab's own tiled kernel
``online.online_attention`` with the window planned in closed form.

The model's own mask would be one (1, 1, L, L) float tensor per forward (64 MiB at 4,096
tokens). It is not built: the forward receives a prepared 4-D mask that is a stride-0 view of one
zero (transformers passes a 4-D mask through untouched), and each layer applies the mask the
lab's recompute assumes anyway — causal, within the layer's sliding window — exactly the mask of
``attention_maps.allowed_mask``. The body runs without the LM head (no L × vocab logits), and the
forward stops as soon as the layers asked for are recorded.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn_core.attention import expand_kv
from attn_core.hf.capture import recording, use_capture
from attn_core.online import online_attention
from attn_core.tile_maps import LayerQK

UNSUPPORTED = {"softcap": "soft-capped scores", "s_aux": "learned sinks"}  # not plain softmax(QKᵀ) tiles


class _Enough(Exception):
    """Raised inside the forward once the layers asked for are recorded: the rest is not run."""


def layer_output(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, window: int | None):
    """softmax(q kᵀ · scale) v under the causal mask (and the window): (1, Hq, L, d_v). q (1, Hq,
    L, d), k, v (1, Hkv, L, ·); K and V repeated for SDPA only (O(L·d), no L × L)."""
    if window is not None:  # the lab's tiled kernel: only the tiles along the diagonal run
        return online_attention(q, k, v, scale=scale, causal=True, window=window).output
    group = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(
        q, expand_kv(k, group), expand_kv(v, group), scale=scale, is_causal=True
    )


def capture_qk(
    model: torch.nn.Module,
    idx: torch.Tensor,
    layers: int | None = None,
    on_layer: Callable[[int, LayerQK], None] | None = None,
) -> list[LayerQK]:
    """One forward of the model's body on idx (1, L) recording layers 0 … ``layers`` − 1 (all by
    default): per layer q (Hq, L, d), k (Hkv, L, d) as compact float copies, the scale and the
    sliding window. With ``on_layer``, each record is handed to it as its layer runs and not kept
    (the list returned is empty): one layer's q and k at a time. The layers' outputs follow the
    module docstring, so later layers see the eager model's hidden states up to float rounding.
    ValueError for a model whose attention is not softmax(q kᵀ · scale) under a causal (sliding)
    mask, or a batch of more than one sequence."""
    if idx.ndim != 2 or idx.shape[0] != 1:
        raise ValueError(f"one sequence of token ids (1, L), got {tuple(idx.shape)}")
    records: list[LayerQK] = []
    wanted = min(layers or model.config.num_hidden_layers, model.config.num_hidden_layers)
    seen, L = 0, idx.shape[1]
    no_mask = torch.zeros((), dtype=model.dtype).expand(1, 1, L, L)  # prepared 4-D, no memory

    def recorder(eager, module, query, key, value, attention_mask, *args, **kwargs):
        nonlocal seen
        if bad := [what for name, what in UNSUPPORTED.items() if kwargs.get(name) is not None]:
            raise ValueError(
                f"{type(module).__name__} has {bad[0]}: the long read tiles plain attention only"
            )
        if attention_mask is not no_mask or query.shape[-2] != key.shape[-2]:
            raise ValueError(f"{type(module).__name__} reshapes its mask: not a plain causal model")
        scale = kwargs.get("scaling")
        scale = float(scale if scale is not None else query.shape[-1] ** -0.5)
        window = int(kwargs["sliding_window"]) if kwargs.get("sliding_window") else None
        record = LayerQK(_compact(query[0]), _compact(key[0]), scale, window)
        out = None if seen + 1 >= wanted else layer_output(query, key, value, scale, window)
        if on_layer is None:
            records.append(record)
        else:
            on_layer(seen, record)
        seen += 1
        if out is None:
            raise _Enough
        return out.transpose(1, 2).contiguous(), None  # (1, L, Hq, d_v), as eager returns it

    use_capture(model)
    body = model.base_model  # GPT2LMHeadModel.transformer, MistralForCausalLM.model: no LM head
    try:
        with recording(recorder), torch.no_grad():
            body(input_ids=idx, attention_mask=no_mask, use_cache=False)
    except _Enough:
        pass
    if seen < wanted:
        raise ValueError(
            f"{type(model).__name__}'s attention did not go through transformers' attention interface "
            f"in every layer ({seen} of {wanted} recorded): not readable here"
        )
    return records


def _compact(x: torch.Tensor) -> torch.Tensor:
    """A contiguous copy that owns its memory: q of GPT-2 is a view into the fused q|k|v
    projection, which a kept view would keep whole."""
    return x.detach().clone(memory_format=torch.contiguous_format)
