"""An independent oracle for the cost tests: a real torch transformer built on the meta device.

Nothing here imports attn_core.cost. Parameter counts come from ``nn.Module.parameters()``,
FLOPs from ``torch.utils.flop_counter.FlopCounterMode`` (which counts a matmul as 2mnk, the
card 11 convention), bytes from ``numel() * element_size()`` of tensors of the real shape. The
meta device allocates nothing, so Llama 2 70B's 69 billion weights cost no memory.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

META = torch.device("meta")


class RefBlock(nn.Module):
    """One pre-norm decoder block: attention with GQA (K/V heads repeated per group), then MLP."""

    def __init__(self, d, h, h_kv, d_h, d_ff, gated, attn_bias, mlp_bias, layer_norm, out_bias=None):
        super().__init__()
        Norm = nn.LayerNorm if layer_norm else nn.RMSNorm
        self.h, self.h_kv, self.d_h, self.gated = h, h_kv, d_h, gated
        self.norm1, self.norm2 = Norm(d), Norm(d)
        self.q = nn.Linear(d, h * d_h, bias=attn_bias)
        self.k = nn.Linear(d, h_kv * d_h, bias=attn_bias)
        self.v = nn.Linear(d, h_kv * d_h, bias=attn_bias)
        self.o = nn.Linear(h * d_h, d, bias=attn_bias if out_bias is None else out_bias)  # Qwen2: none
        self.up = nn.Linear(d, d_ff, bias=mlp_bias)
        self.gate = nn.Linear(d, d_ff, bias=mlp_bias) if gated else None
        self.down = nn.Linear(d_ff, d, bias=mlp_bias)

    def projections_in(self, x):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.h, self.d_h).transpose(1, 2)  # (B, h, T, d_h)
        k = self.k(x).view(B, T, self.h_kv, self.d_h).transpose(1, 2)  # (B, H_kv, T, d_h)
        v = self.v(x).view(B, T, self.h_kv, self.d_h).transpose(1, 2)  # (B, H_kv, T, d_h)
        return q, k, v

    def scores_and_mix(self, q, k, v):
        G = self.h // self.h_kv
        k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)  # (B, h, T, d_h)
        P = torch.softmax(q @ k.transpose(-2, -1), dim=-1)  # (B, h, T, T)
        return P @ v  # (B, h, T, d_h)

    def projection_out(self, O):
        B, _, T, _ = O.shape
        return self.o(O.transpose(1, 2).reshape(B, T, self.h * self.d_h))  # (B, T, d)

    def mlp(self, x):
        a = nn.functional.silu(self.gate(x)) * self.up(x) if self.gated else nn.functional.gelu(self.up(x))
        return self.down(a)


class RefModel(nn.Module):
    def __init__(self, fields: dict):
        super().__init__()
        d, V = fields["d_model"], fields["vocab_size"]
        layer_norm = fields["norm_kind"] == "layer"
        self.embed = nn.Embedding(V, d)
        self.pos = nn.Embedding(fields["max_context"], d) if fields["learned_positions"] else None
        self.blocks = nn.ModuleList(
            RefBlock(
                d,
                fields["n_heads"],
                fields["n_kv_heads"],
                fields["head_dim"],
                fields["d_ff"],
                fields["mlp_kind"] == "gated",
                fields["attention_bias"],
                fields["mlp_bias"],
                layer_norm,
                fields.get("output_bias"),
            )
            for _ in range(fields["n_layers"])
        )
        self.norm = nn.LayerNorm(d) if layer_norm else nn.RMSNorm(d)
        self.lm_head = nn.Linear(d, V, bias=False)
        if fields["tie_embeddings"]:
            self.lm_head.weight = self.embed.weight


def ref_block(fields: dict) -> RefBlock:
    """One block of the given shape (a dict of ModelShape's fields) on the meta device."""
    with META:
        return RefBlock(
            fields["d_model"],
            fields["n_heads"],
            fields["n_kv_heads"],
            fields["head_dim"],
            fields["d_ff"],
            fields["mlp_kind"] == "gated",
            fields["attention_bias"],
            fields["mlp_bias"],
            fields["norm_kind"] == "layer",
            fields.get("output_bias"),
        )


def count_params(fields: dict) -> int:
    """Parameters of the whole model, shared (tied) tensors counted once."""
    with META:
        model = RefModel(fields)
    return sum(p.numel() for p in model.parameters())


def _flops(fn, *args) -> tuple[int, object]:
    with FlopCounterMode(display=False) as counter:
        out = fn(*args)
    return counter.get_total_flops(), out


def count_layer_flops(fields: dict, T: int, batch: int = 1) -> dict[str, int]:
    """FLOPs of one block's forward pass, split as card 11 splits them (all T² pairs)."""
    block = ref_block(fields)
    x = torch.empty(batch, T, fields["d_model"], device=META)  # (B, T, d)
    f_in, (q, k, v) = _flops(block.projections_in, x)
    f_attn, O = _flops(block.scores_and_mix, q, k, v)
    f_out, _ = _flops(block.projection_out, O)
    f_mlp, _ = _flops(block.mlp, x)
    return {"projections": f_in + f_out, "attention": f_attn, "mlp": f_mlp}


def count_decode_attention(fields: dict, T: int) -> int:
    """FLOPs of one decode step's attention (1 query per head over T cached keys)."""
    h, h_kv, d_h = fields["n_heads"], fields["n_kv_heads"], fields["head_dim"]
    block = ref_block(fields)
    q = torch.empty(1, h, 1, d_h, device=META)  # (B, h, 1, d_h)
    k = torch.empty(1, h_kv, T, d_h, device=META)  # (B, H_kv, T, d_h)
    v = torch.empty(1, h_kv, T, d_h, device=META)
    flops, _ = _flops(block.scores_and_mix, q, k, v)
    return flops


def cache_tensor_bytes(fields: dict, T: int, batch: int, dtype: torch.dtype) -> int:
    """Bytes of the K and V tensors a decoder keeps: L layers × (B, H_kv, T, d_h) each."""
    k = torch.empty(batch, fields["n_kv_heads"], T, fields["head_dim"], dtype=dtype, device=META)
    return fields["n_layers"] * 2 * k.numel() * k.element_size()
