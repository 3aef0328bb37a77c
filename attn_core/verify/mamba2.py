"""Mamba-2 (state-space duality), Nemotron-H's state-space layer, for verify: the layer at its true
shape (its parameters named and shaped as transformers' ``NemotronHMamba2Mixer``), the state it
keeps per sequence, and its core — everything between its input map and its output map — which
the probe times alone on random inputs.

The core runs transformers' torch fallbacks from its Nemotron-H module: the depthwise causal conv
(with bias) over x, B and C, the SSD scan (``mamba2_chunk_scan`` over a prompt: chunks of Q tokens,
each chunk's C·Bᵀ and its states in einsums, the chunk-to-chunk recurrence; one token:
``mamba2_selective_state_update``), and the grouped RMSNorm gated by z. The cost model counts the
scan's products (`attn_core.cost.mixers.Mamba2`, ``core_flops``: C·Bᵀ per group of B and C, the
fallback forms it per head; the chunk recurrence it leaves out); the conv, the gate, Δ and the
norm are elementwise and left out, as everywhere. Its state (`linear.LinearState`): the last K conv
inputs per channel at the model dtype and one P × N matrix per head in fp32.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.mixers import Mamba2 as Mamba2Shape
from attn_core.verify.linear import LinearState, causal_conv, nemotron_h

ACTIVATION = "silu"  # Nemotron-H's mamba_hidden_act
TIME_STEP_MIN = 0.001  # NemotronHConfig's time_step_min: Δ is clamped below at it (no upper limit)
NORM_EPS = 1e-5  # Nemotron-H's layer_norm_epsilon


def mamba2_state(m: Mamba2Shape, batch: int, dtype: torch.dtype, device: str) -> LinearState:
    """The conv window (B, H·P + 2G·N, K) and h (B, H, P, N)."""
    return LinearState.zeros(
        m.conv_channels, m.conv_kernel, (m.n_heads, m.head_dim, m.d_state), batch, dtype, device
    )


class Mamba2Core(nn.Module):
    """Conv, scan and gated norm: z, x, B, C, Δ (B, T, 2H·P + 2G·N + H), as transformers'
    ``in_proj`` gives them, → the normed, gated read-out (B, T, H·P). Its parameters: the conv
    (channels × 1 × K, and a bias per channel), Δ's bias, A and D (H each), the norm (H·P)."""

    def __init__(self, m: Mamba2Shape, **kw) -> None:
        super().__init__()
        self.m = m
        C, K, H = m.conv_channels, m.conv_kernel, m.n_heads
        self.conv1d = nn.Conv1d(C, C, K, groups=C, bias=m.conv_bias, padding=K - 1, **kw)
        self.dt_bias = nn.Parameter(torch.ones(H, **kw))  # transformers' init
        A = torch.arange(1, H + 1, dtype=kw.get("dtype", torch.float32), device=kw.get("device"))
        self.A_log = nn.Parameter(A.log())
        self.D = nn.Parameter(torch.ones(H, **kw))
        group = m.d_inner // m.n_groups
        self.norm = nemotron_h().NemotronHRMSNormGated(m.d_inner, group_size=group, eps=NORM_EPS).to(**kw)

    def forward(self, zxbcdt: torch.Tensor, state: LinearState, fresh: bool) -> torch.Tensor:
        """``fresh``: a prompt from an empty state (the chunked scan); else continue from ``state``
        (one token: the recurrent update)."""
        f, m = nemotron_h(), self.m
        Bt, T, _ = zxbcdt.shape
        H, P, N, G = m.n_heads, m.head_dim, m.d_state, m.n_groups
        z, xBC, dt = zxbcdt.split([m.d_inner, m.conv_channels, H], dim=-1)
        xBC = causal_conv(f, self.conv1d, xBC.transpose(1, 2), state, fresh, ACTIVATION).transpose(1, 2)
        x, B, C = xBC.split([m.d_inner, G * N, G * N], dim=-1)
        A = -torch.exp(self.A_log.float())
        if not fresh and T == 1:
            y = f.mamba2_selective_state_update(
                state.recurrent,
                x.view(Bt, H, P),
                dt.transpose(1, 2).expand(-1, -1, P),
                A[:, None, None].expand(-1, P, N),
                B.view(Bt, G, N),
                C.view(Bt, G, N),
                self.D[:, None].expand(-1, P),
                z=None,
                dt_bias=self.dt_bias[:, None].expand(-1, P),
                dt_softplus=True,
            )
        else:
            y, h = f.mamba2_chunk_scan(
                x.view(Bt, T, H, P),
                dt,
                A,
                B.view(Bt, T, G, N),
                C.view(Bt, T, G, N),
                chunk_size=m.chunk,
                D=self.D,
                z=None,
                return_final_states=True,
                dt_bias=self.dt_bias,
                dt_softplus=True,
                initial_states=None if fresh else state.recurrent,
                dt_limit=(TIME_STEP_MIN, float("inf")),
            )
            state.recurrent.copy_(h)
        return self.norm(y.reshape(Bt, T, m.d_inner), z)


class Mamba2Layer(nn.Module):
    """One Mamba-2 layer: the input map (z, x, B, C, Δ: d × (2H·P + 2G·N + H)), the core, the output
    map (H·P × d), and its state (allocated per sequence, like a cache)."""

    def __init__(self, shape: ModelShape, kind: str, **kw) -> None:
        super().__init__()
        m, d = shape.state_mixer, shape.d_model
        self.kind = kind
        self.in_proj = nn.Linear(d, m.d_inner + m.conv_channels + m.n_heads, bias=m.proj_bias, **kw)
        self.core = Mamba2Core(m, **kw)
        self.out_proj = nn.Linear(m.d_inner, d, bias=m.proj_bias, **kw)
        self.state: LinearState | None = None

    def allocate(self, batch: int, max_tokens: int) -> None:
        w = self.out_proj.weight
        self.state = mamba2_state(self.core.m, batch, w.dtype, w.device)

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) at positions pos … pos + T − 1: pos 0 starts a sequence (the state is
        overwritten), a later pos continues it. No rotary: the conv and the decay carry position."""
        y = self.core(self.in_proj(x), self.state, fresh=pos == 0)
        return self.out_proj(y.to(x.dtype))


def mamba2_core_call(
    shape: ModelShape, q_len: int, kv_len: int, batch: int, dtype: torch.dtype, device: str
) -> Callable[[], object]:
    """The core alone at this layer's head shapes on seeded random inputs, for the probe: a prompt
    of q_len tokens when q_len = kv_len (the chunked scan), else q_len tokens after a state.
    Inputs are N(0, 1/3), what a default-initialized map gives a unit-RMS token (as in the run)."""
    m = shape.state_mixer
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        core = Mamba2Core(m, dtype=dtype, device="cpu").requires_grad_(False).to(device)
        width = m.d_inner + m.conv_channels + m.n_heads
        zxbcdt = (torch.randn(batch, q_len, width, dtype=dtype) / 3**0.5).to(device)
    state = mamba2_state(m, batch, dtype, device)
    fresh = q_len == kv_len

    def run() -> torch.Tensor:
        with torch.inference_mode():
            return core(zxbcdt, state, fresh)

    return run
