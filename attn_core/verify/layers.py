"""The layers, in torch: which keys each attention kind sees (SDPA, GQA without repeats), the
attention (gated attention as Qwen3-Next has it), MLP and mixture-of-experts modules, one pre-norm
block, and the built layers. ``MIXERS`` holds the module each layer kind builds; ``STATE_CORES``
the core a linear kind's probe times (`deltanet`, `mamba2`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attn_core.cost.config_reader import ModelShape
from attn_core.kernels.records import DTYPES
from attn_core.verify.deltanet import GatedDeltaNetLayer, delta_core_call
from attn_core.verify.mamba2 import Mamba2Layer, mamba2_core_call
from attn_core.verify.plan import Plan, VerifyRequest


@dataclass(frozen=True)
class Keys:
    """Which cached keys q_len queries (the last q_len positions of kv_len) may see: keys from
    ``start`` on, then "causal" (bottom-right = top-left when q_len = kv_len), "all", or a boolean
    mask (True = may attend, SDPA's convention) of (q_len, kv_len − start)."""

    start: int
    mode: str | torch.Tensor


def _full_keys(shape: ModelShape, q_len: int, kv_len: int) -> Keys:
    return Keys(0, "causal" if q_len > 1 else "all")


def _band_keys(
    shape: ModelShape,
    q_len: int,
    kv_len: int,
    span: int,
    decode_start: int,
    allowed: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> Keys:
    """A window or chunk of ``span`` keys: a decode step sees the keys from ``decode_start`` on; a
    prefill within ``span`` keys sees them all (causal), a longer one the band ``allowed`` marks."""
    if q_len == 1:
        return Keys(decode_start, "all")
    if kv_len <= span:
        return _full_keys(shape, q_len, kv_len)
    i = torch.arange(kv_len - q_len, kv_len)[:, None]  # query positions
    j = torch.arange(kv_len)[None, :]
    return Keys(0, allowed(i, j) & (j <= i))


def _sliding_keys(shape: ModelShape, q_len: int, kv_len: int) -> Keys:
    W = shape.sliding_window  # decode: the last W keys
    return _band_keys(shape, q_len, kv_len, W, max(0, kv_len - W), lambda i, j: j > i - W)


def _chunked_keys(shape: ModelShape, q_len: int, kv_len: int) -> Keys:
    C = shape.attention_chunk_size  # decode: the keys of the query's own chunk
    return _band_keys(shape, q_len, kv_len, C, (kv_len - 1) // C * C, lambda i, j: j // C == i // C)


# One entry per attention kind of the cost model: which keys a query sees (a new kind: one function).
ATTENTION_KEYS: dict[str, Callable[[ModelShape, int, int], Keys]] = {
    "full": _full_keys,
    "sliding": _sliding_keys,
    "chunked": _chunked_keys,
}


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keys: Keys) -> torch.Tensor:
    """SDPA over the allowed keys. q (B, h, L, d_h); k, v (B, H_kv, S, d_h), GQA without repeats."""
    k, v = k[:, :, keys.start :], v[:, :, keys.start :]
    if isinstance(keys.mode, torch.Tensor):  # a band: SDPA's math or memory-efficient path
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keys.mode.to(q.device), enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=keys.mode == "causal", enable_gqa=True)


# The core a linear-attention kind's probe times on random inputs, in place of attention's keys:
# (shape, q_len, kv_len, B, dtype, device) -> a call (see `deltanet.delta_core_call`).
STATE_CORES: dict[str, Callable[..., Callable[[], object]]] = {
    "gdn": delta_core_call,
    "mamba2": mamba2_core_call,
}


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, half-split form (Llama): x·cos + rotate_half(x)·sin over the first r
    channels of each head, r = cos's width (partial rotary: the rest pass). x (B, H, T, d_h)."""
    r = cos.shape[-1]
    if r < x.shape[-1]:
        return torch.cat((_rotate(x[..., :r], cos, sin), x[..., r:]), dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    """One attention layer of ``kind``: fused QKV, QK-norm if the model has it, rotary (over the
    first ``rotary_dim`` channels of a head), its own KV cache (B, H_kv, T_max, d_h), SDPA, O. In
    gated attention (Qwen3-Next) each head's query comes with d_h gate channels, as transformers
    lays out its ``q_proj``, and the output is o · sigmoid(gate) before O."""

    def __init__(self, shape: ModelShape, kind: str, **kw) -> None:
        super().__init__()
        self.shape, self.kind = shape, kind
        d, q, kv = shape.d_model, shape.q_width, shape.kv_width
        out_bias = shape.attention_bias if shape.output_bias is None else shape.output_bias
        self.gated = shape.attention_output_gate
        self.qkv = nn.Linear(d, (2 if self.gated else 1) * q + 2 * kv, bias=shape.attention_bias, **kw)
        self.o = nn.Linear(q, d, bias=out_bias, **kw)
        self.q_norm = nn.RMSNorm(shape.head_dim, **kw) if shape.qk_norm else None
        self.k_norm = nn.RMSNorm(shape.head_dim, **kw) if shape.qk_norm else None
        self.cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def allocate(self, batch: int, max_tokens: int) -> None:
        w = self.o.weight
        size = (batch, self.shape.n_kv_heads, max_tokens, self.shape.head_dim)
        self.cache = tuple(torch.zeros(size, dtype=w.dtype, device=w.device) for _ in range(2))

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        s = self.shape
        q_width = (2 if self.gated else 1) * s.q_width
        q, k, v = self.qkv(x).split([q_width, s.kv_width, s.kv_width], dim=-1)
        gate = None
        if self.gated:  # per head: d_h query channels, then d_h gate channels
            q, gate = q.view(B, T, s.n_heads, 2 * s.head_dim).chunk(2, dim=-1)
            gate = gate.reshape(B, T, s.q_width)
        q = q.reshape(B, T, s.n_heads, s.head_dim).transpose(1, 2)  # (B, h, T, d_h)
        k = k.view(B, T, s.n_kv_heads, s.head_dim).transpose(1, 2)  # (B, H_kv, T, d_h)
        v = v.view(B, T, s.n_kv_heads, s.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos, sin = cos[pos : pos + T], sin[pos : pos + T]  # (T, d_h): this chunk's positions
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        K, V = self.cache
        K[:, :, pos : pos + T], V[:, :, pos : pos + T] = k, v
        keys = ATTENTION_KEYS[self.kind](s, T, pos + T)
        o = attend(q, K[:, :, : pos + T], V[:, :, : pos + T], keys)  # (B, h, T, d_h)
        o = o.transpose(1, 2).reshape(B, T, s.q_width)
        return self.o(o * torch.sigmoid(gate) if gate is not None else o)


class GatedMLP(nn.Module):
    """SwiGLU (gate and up fused) or, ``gated=False``, up → GELU → down (Nemotron-H's squared ReLU
    is another elementwise function of the same shape)."""

    def __init__(self, d: int, d_ff: int, gated: bool = True, bias: bool = False, **kw) -> None:
        super().__init__()
        self.gated = gated
        self.up = nn.Linear(d, (2 if gated else 1) * d_ff, bias=bias, **kw)
        self.down = nn.Linear(d_ff, d, bias=bias, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.gated:
            return self.down(F.gelu(self.up(x)))
        gate, up = self.up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class MoEMLP(nn.Module):
    """Router (softmax, top-k, renormalized), the routed experts each run on the tokens routed to
    it (pairs sorted by expert once, as grouped-GEMM kernels do), plus shared experts (Qwen2-MoE's
    behind a sigmoid gate)."""

    def __init__(self, shape: ModelShape, **kw) -> None:
        super().__init__()
        m, d = shape.moe, shape.d_model
        self.top_k = m.top_k
        self.router = nn.Linear(d, m.n_experts, bias=m.router_bias, **kw)
        gated = m.expert_matrices == 3  # Nemotron-H's experts are plain (up, down)
        self.experts = nn.ModuleList(
            GatedMLP(d, m.expert_d_ff, gated, bias=m.expert_bias, **kw) for _ in range(m.n_experts)
        )
        self.shared = nn.ModuleList(GatedMLP(d, m.shared_d_ff, gated, **kw) for _ in range(m.n_shared))
        self.shared_gate = nn.Linear(d, 1, bias=False, **kw) if m.shared_gate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1])  # (N, d)
        p = torch.softmax(self.router(x2).float(), dim=-1)
        w, idx = torch.topk(p, self.top_k, dim=-1)  # (N, k)
        w = (w / w.sum(-1, keepdim=True)).to(x.dtype)
        # group the N·k (token, expert) pairs by expert once, then one contiguous slice per expert
        order = idx.flatten().argsort()
        token = order // self.top_k  # (N·k,) the token of each pair, in expert order
        counts = torch.bincount(idx.flatten(), minlength=len(self.experts)).tolist()
        xs, ys, start = x2[token], [], 0
        for e, n in enumerate(counts):
            if n:
                ys.append(self.experts[e](xs[start : start + n]))
                start += n
        y = torch.cat(ys) * w.flatten()[order, None]
        out = torch.zeros_like(x2).index_add_(0, token, y)
        if len(self.shared):
            s = sum(expert(x2) for expert in self.shared)
            out = out + (s * torch.sigmoid(self.shared_gate(x2)) if self.shared_gate is not None else s)
        return out.view_as(x)


class Block(nn.Module):
    """Pre-norm block: x + mixer(norm(x)), then x + mlp(norm(x)); Gemma's post-norms when the model
    has four norms a layer. In Nemotron-H's pattern a block is one part under one norm: a mixer
    ('M', '*') or a feed-forward part ('-', 'E'); the other is None."""

    def __init__(self, shape: ModelShape, layer: int, **kw) -> None:
        super().__init__()
        norm = (
            (lambda: nn.RMSNorm(shape.d_model, **kw))
            if shape.norm_kind == "rms"
            else (lambda: nn.LayerNorm(shape.d_model, **kw))
        )
        self.norms = nn.ModuleList(norm() for _ in range(shape.norms_per_layer))
        kind = shape.layer_kinds[layer]
        self.mixer = MIXERS[kind](shape, kind, **kw) if kind in MIXERS else None
        self.mlp = None
        if shape.has_mlp(kind) and shape.is_moe_layer(layer):
            self.mlp = MoEMLP(shape, **kw)
        elif shape.has_mlp(kind):
            self.mlp = GatedMLP(shape.d_model, shape.d_ff, shape.mlp_kind == "gated", shape.mlp_bias, **kw)

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        post = len(self.norms) == 4
        if self.mixer is not None:
            h = self.mixer(self.norms[0](x), pos, cos, sin)
            x = x + (self.norms[2](h) if post else h)
        if self.mlp is not None:
            h = self.mlp(self.norms[min(1, len(self.norms) - 1)](x))
            x = x + (self.norms[3](h) if post else h)
        return x


# The mixer each layer kind builds: (shape, kind, dtype=, device=) -> a module with allocate(B, T_max)
# and forward(x, pos, cos, sin). A linear-attention or state-space kind adds one entry here.
MIXERS: dict[str, Callable[..., nn.Module]] = {
    "full": Attention,
    "sliding": Attention,
    "chunked": Attention,
    "gdn": GatedDeltaNetLayer,
    "mamba2": Mamba2Layer,
}


class Layers(nn.Module):
    """The built layers, one rotary table (over the rotary channels of a head) and every layer's
    cache or state."""

    def __init__(self, shape: ModelShape, max_tokens: int, **kw) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(shape, i, **kw) for i in range(shape.n_layers))
        half = (shape.rotary_dim or shape.head_dim) // 2
        freqs = torch.outer(
            torch.arange(max_tokens, dtype=torch.float32), 10_000.0 ** (-torch.arange(half) / half)
        )
        angles = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = (t.to(**kw) for t in (angles.cos(), angles.sin()))

    def allocate(self, batch: int, max_tokens: int) -> None:
        for block in self.blocks:
            if block.mixer is not None:
                block.mixer.allocate(batch, max_tokens)

    def forward(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, pos, self.cos, self.sin)
        return x


def build_layers(plan: Plan, request: VerifyRequest, device: str) -> Layers:
    """The planned layers with random weights (PyTorch's default init, seeded) and their caches."""
    max_tokens = request.seq_len + request.decode_steps
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layers = Layers(plan.shape, max_tokens, dtype=DTYPES[request.dtype], device=device)
    layers.allocate(request.batch, max_tokens)
    return layers.eval()
