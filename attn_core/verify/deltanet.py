"""Gated DeltaNet, Qwen3-Next's linear attention, for verify: the layer at its true shape (its
parameters named and shaped as transformers' ``Qwen3NextGatedDeltaNet``), the state it keeps per
sequence, and its core — everything between its input maps and its output map — which the probe
times alone on random inputs.

The core runs transformers' torch fallbacks (the package's reference code; transformers is
imported only when a Gated DeltaNet layer is built or probed): the depthwise causal conv over q, k
and v (``causal_conv1d_fn`` over a prompt, ``causal_conv1d_update`` for one token against the conv
state), the delta rule (``torch_chunk_gated_delta_rule`` over a prompt: a Python loop over
64-token chunks of small per-head products; ``torch_recurrent_gated_delta_rule`` for a decode
step) and the gated RMSNorm. The cost model counts the core's products (`attn_core.cost.mixers`,
``core_flops``); the conv, the gates and the norm are elementwise and left out, as everywhere.

Its state (`linear.LinearState`) is what transformers' cache holds for one layer: the last K conv
inputs per channel at the model dtype, and one d_k × d_v matrix per value head in fp32.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.mixers import GatedDeltaNet as GatedDeltaNetShape
from attn_core.verify.linear import LinearState, causal_conv
from attn_core.verify.linear import qwen3_next as _qwen3_next

ACTIVATION = "silu"  # Qwen3-Next's hidden_act: the conv's activation and the norm's gate


def delta_state(m: GatedDeltaNetShape, batch: int, dtype: torch.dtype, device: str) -> LinearState:
    """The conv window (B, 2H_k·d_k + H_v·d_v, K) and S (B, H_v, d_k, d_v)."""
    recurrent = (m.n_value_heads, m.key_head_dim, m.value_head_dim)
    return LinearState.zeros(m.conv_channels, m.conv_kernel, recurrent, batch, dtype, device)


class DeltaCore(nn.Module):
    """Conv, delta rule and gated norm: q, k, v, z (B, T, 2H_k·d_k + 2H_v·d_v) and β, a (B, T, 2H_v),
    laid out per key head as transformers' ``in_proj_qkvz`` / ``in_proj_ba`` give them, → the
    normed, gated read-out (B, T, H_v·d_v). Its parameters: the conv (channels × 1 × K), the
    decay's dt bias and A (H_v each), the norm (d_v)."""

    def __init__(self, m: GatedDeltaNetShape, **kw) -> None:
        super().__init__()
        self.m = m
        C, K, H_v = m.conv_channels, m.conv_kernel, m.n_value_heads
        self.conv1d = nn.Conv1d(C, C, K, groups=C, bias=False, padding=K - 1, **kw)
        self.dt_bias = nn.Parameter(torch.ones(H_v, **kw))
        self.A_log = nn.Parameter(torch.empty(H_v, **kw).uniform_(0.01, 16).log())  # transformers' init
        self.norm = _qwen3_next().Qwen3NextRMSNormGated(m.value_head_dim).to(**kw)

    def _split(self, qkvz: torch.Tensor, ba: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """transformers' ordering: per key head, [q (d_k), k (d_k), v and z (G·d_v each)], [β, a (G each)]
        with G = H_v / H_k value heads per key head."""
        m = self.m
        B, T, _ = qkvz.shape
        G = m.n_value_heads // m.n_key_heads
        dk, dv = m.key_head_dim, m.value_head_dim
        q, k, v, z = qkvz.view(B, T, m.n_key_heads, -1).split([dk, dk, G * dv, G * dv], dim=-1)
        b, a = ba.view(B, T, m.n_key_heads, 2 * G).split([G, G], dim=-1)
        v, z = v.reshape(B, T, -1, dv), z.reshape(B, T, -1, dv)  # (B, T, H_v, d_v)
        return q, k, v, z, b.reshape(B, T, -1), a.reshape(B, T, -1)

    def forward(self, qkvz: torch.Tensor, ba: torch.Tensor, state: LinearState, fresh: bool) -> torch.Tensor:
        """``fresh``: a prompt from an empty state (the chunked form); else continue from ``state``
        (one token: the recurrent form)."""
        f, m = _qwen3_next(), self.m
        B, T, _ = qkvz.shape
        q, k, v, z, b, a = self._split(qkvz, ba)
        qkv = torch.cat((q.reshape(B, T, -1), k.reshape(B, T, -1), v.reshape(B, T, -1)), dim=-1)
        qkv = causal_conv(f, self.conv1d, qkv.transpose(1, 2), state, fresh, ACTIVATION).transpose(1, 2)
        q, k, v = qkv.split([m.key_dim, m.key_dim, m.value_dim], dim=-1)
        q, k = q.reshape(B, T, -1, m.key_head_dim), k.reshape(B, T, -1, m.key_head_dim)
        v = v.reshape(B, T, -1, m.value_head_dim)
        beta = b.sigmoid()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)  # log decay ≤ 0
        rule = f.torch_recurrent_gated_delta_rule if not fresh and T == 1 else f.torch_chunk_gated_delta_rule
        o, S = rule(
            q,
            k,
            v,
            g=g,
            beta=beta,
            initial_state=None if fresh else state.recurrent,
            output_final_state=True,
            use_qk_l2norm_in_kernel=True,
        )
        state.recurrent.copy_(S)
        o = self.norm(o.reshape(-1, m.value_head_dim), z.reshape(-1, m.value_head_dim))
        return o.view(B, T, m.value_dim)


class GatedDeltaNetLayer(nn.Module):
    """One Gated DeltaNet layer: the input maps (q, k, v, z: d × (2H_k·d_k + 2H_v·d_v); β, a: d × 2H_v),
    the core, the output map (H_v·d_v × d), and its state (allocated per sequence, like a cache)."""

    def __init__(self, shape: ModelShape, kind: str, **kw) -> None:
        super().__init__()
        m, d = shape.state_mixer, shape.d_model
        self.kind = kind
        self.in_proj_qkvz = nn.Linear(d, 2 * m.key_dim + 2 * m.value_dim, bias=False, **kw)
        self.in_proj_ba = nn.Linear(d, 2 * m.n_value_heads, bias=False, **kw)
        self.core = DeltaCore(m, **kw)
        self.out_proj = nn.Linear(m.value_dim, d, bias=False, **kw)
        self.state: LinearState | None = None

    def allocate(self, batch: int, max_tokens: int) -> None:
        w = self.out_proj.weight
        self.state = delta_state(self.core.m, batch, w.dtype, w.device)

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) at positions pos … pos + T − 1: pos 0 starts a sequence (the state is
        overwritten), a later pos continues it. No rotary: the conv and the decay carry position."""
        return self.out_proj(self.core(self.in_proj_qkvz(x), self.in_proj_ba(x), self.state, fresh=pos == 0))


def delta_core_call(
    shape: ModelShape, q_len: int, kv_len: int, batch: int, dtype: torch.dtype, device: str
) -> Callable[[], object]:
    """The core alone at this layer's head shapes on seeded random inputs, for the probe: a prompt
    of q_len tokens when q_len = kv_len (chunked), else q_len tokens after a state (recurrent).
    Inputs are N(0, 1/3), what a default-initialized map gives a unit-RMS token (as in the run),
    so the decays underflow as often as they do there."""
    m = shape.state_mixer
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        core = DeltaCore(m, dtype=dtype, device="cpu").requires_grad_(False).to(device)
        qkvz, ba = (
            (torch.randn(batch, q_len, n, dtype=dtype) / 3**0.5).to(device)
            for n in (2 * m.key_dim + 2 * m.value_dim, 2 * m.n_value_heads)
        )
    state = delta_state(m, batch, dtype, device)
    fresh = q_len == kv_len

    def run() -> torch.Tensor:
        with torch.inference_mode():
            return core(qkvz, ba, state, fresh)

    return run
