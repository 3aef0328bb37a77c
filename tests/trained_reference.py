"""The tiny transformer's forward written again with torch's SDPA and explicit matrix products: the
oracle of the trained model and the Trained heads page."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attn_core.trained.model import TinyTransformer


def reference_forward(model: TinyTransformer, idx: torch.Tensor, head_mask=None):
    """Written from the module docstring with SDPA: logits (B, T, V) and each layer's weights."""
    cfg = model.config
    B, T = idx.shape
    nh, hs = cfg.n_head, cfg.head_size
    x = model.wte.weight[idx] + model.wpe.weight[:T]
    maps = []
    for layer, block in enumerate(model.h):
        qkv = x @ block.attn.c_attn.weight.T  # (B, T, 3C)
        q, k, v = (qkv[..., i * cfg.n_embd : (i + 1) * cfg.n_embd] for i in range(3))
        q, k, v = (t.reshape(B, T, nh, hs).permute(0, 2, 1, 3) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        s = q @ k.transpose(-1, -2) / math.sqrt(hs)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        maps.append(torch.softmax(s, dim=-1))
        if head_mask is not None:
            y = y * head_mask[layer].view(1, nh, 1, 1)
        x = x + y.permute(0, 2, 1, 3).reshape(B, T, cfg.n_embd) @ block.attn.c_proj.weight.T
        if block.mlp is not None:
            x = x + F.gelu(x @ block.mlp.c_fc.weight.T) @ block.mlp.c_proj.weight.T
    return x @ model.lm_head.weight.T, maps
