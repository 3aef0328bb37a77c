"""What the linear-attention and state-space layers share: the state each keeps per sequence in
place of a KV cache — what transformers' cache (``cache_utils.LinearAttentionLayer``) holds for one
layer: the last K conv inputs per channel at the model dtype, and the recurrent state in fp32
(``RECURRENT_DTYPE``: transformers' torch fallbacks compute it in fp32 whatever the model dtype),
as `attn_core.cost.serving.state_bytes` sizes them with recurrent_bytes = 4 — the depthwise causal
conv that fills the window, and the transformers modules whose torch fallbacks are their cores'
reference code (imported only when such a layer is built or probed)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attn_core.kernels.records import DTYPES
from attn_core.verify.plan import RECURRENT_DTYPE


@dataclass
class LinearState:
    """One layer's state for B sequences, updated in place as tokens arrive."""

    conv: torch.Tensor  # (B, conv channels, K): the last K conv inputs, model dtype
    recurrent: torch.Tensor  # (B, heads, …): Gated DeltaNet's S (d_k × d_v), Mamba-2's h (P × N); fp32

    @classmethod
    def zeros(
        cls,
        conv_channels: int,
        conv_kernel: int,
        recurrent: tuple[int, ...],
        batch: int,
        dtype: torch.dtype,
        device: str,
    ) -> LinearState:
        conv = torch.zeros(batch, conv_channels, conv_kernel, dtype=dtype, device=device)
        return cls(conv, torch.zeros(batch, *recurrent, dtype=DTYPES[RECURRENT_DTYPE], device=device))

    @property
    def nbytes(self) -> int:
        return self.conv.nbytes + self.recurrent.nbytes


def qwen3_next():
    """transformers' Qwen3-Next module: its torch fallbacks are Gated DeltaNet's reference code."""
    from transformers.models.qwen3_next import modeling_qwen3_next

    return modeling_qwen3_next


def nemotron_h():
    """transformers' Nemotron-H module: its torch fallbacks are Mamba-2's reference code."""
    from transformers.models.nemotron_h import modeling_nemotron_h

    return modeling_nemotron_h


def causal_conv(
    fallbacks, conv1d: nn.Conv1d, x: torch.Tensor, state: LinearState, fresh: bool, activation: str = "silu"
) -> torch.Tensor:
    """The depthwise causal conv over x (B, C, T) with transformers' fallbacks (``causal_conv1d_fn``
    over a prompt, ``causal_conv1d_update`` for one token), keeping the last K inputs in
    ``state.conv`` (left-padded with zeros, as transformers' cache does, when fewer have come)."""
    K, T = state.conv.shape[-1], x.shape[-1]
    weight = conv1d.weight.squeeze(1)  # (C, K)
    if not fresh and T == 1:
        return fallbacks.causal_conv1d_update(x, state.conv, weight, conv1d.bias, activation)
    full = x if fresh else torch.cat((state.conv, x), dim=-1)
    state.conv.copy_(F.pad(full, (max(0, K - full.shape[-1]), 0))[..., -K:])
    return fallbacks.causal_conv1d_fn(full, weight, conv1d.bias, activation=activation)[..., -T:]
