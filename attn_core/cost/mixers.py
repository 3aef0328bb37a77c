"""Linear-attention and state-space token mixers: what one layer holds, multiplies and keeps.

Four kinds, each read from its config keys (`attn_core.cost.layer_config.read_state_mixer`):

- ``gdn``: Gated DeltaNet (Qwen3-Next's ``linear_*`` keys): H_k key heads of d_k, H_v value heads
  of d_v; a d × (2H_k·d_k + 2H_v·d_v) projection (q, k, v and the output gate z), a d × 2H_v one
  (β and the decay a), a depthwise causal conv of K taps over q, k and v, an output map H_v·d_v × d.
- ``kda``: Kimi Delta Attention (Kimi Linear): H heads of d_h; q, k, v maps d × H·d_h each, a conv
  over all three, low-rank forget gate and output gate (d × d_h then d_h × H·d_h), β (d × H).
- ``mamba``: Mamba (Jamba's ``mamba_*`` keys): d_in = expand·d channels, N states, rank R for Δ.
- ``mamba2``: Mamba-2 / SSD (Nemotron-H): H heads of P (d_in = H·P), G groups of B and C with N
  states each, one in-projection d × (2·d_in + 2GN + H).

FLOPs follow the cost model's convention (2 per multiply-add, matrix products only; gates,
decays, norms and the convolution are elementwise and left out). A mixer's FLOPs per token are
its projections, 2 × `matrix_weights`, plus its core (`core_flops`):

- prefill runs the chunked form (chunks of C tokens; the last chunk has r = T mod C): per head,
  inside each chunk the C × C products are computed whole (pairs(T) = n·C² + r²), and every
  token meets the running state in products of d_k × d_v (or N × P) numbers;
- decode (one token, the recurrent form) does only the state products.

What a layer keeps per sequence (`conv_state_elements`, `recurrent_state_elements`) is what
transformers' cache allocates (``cache_utils.LinearAttentionLayer``): the conv state is
conv channels × K columns at the activation dtype, the recurrent state is fp32 there. vLLM keeps
K − 1 conv columns and the recurrent state at the model dtype unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.dtypes import Tokens, _tokens

STATE_KINDS = ("gdn", "kda", "mamba", "mamba2")
STATE_KIND_NAMES = {
    "gdn": "Gated DeltaNet",
    "kda": "Kimi Delta Attention",
    "mamba": "Mamba",
    "mamba2": "Mamba-2",
}
DELTA_CHUNK = 64  # the chunk of flash-linear-attention's chunked delta-rule kernels (GDN, KDA)


def chunk_pairs(T: Any, C: int) -> Tokens:
    """Query–key pairs a chunked kernel computes inside its chunks: n·C² + r² for T = n·C + r
    (whole C × C blocks, masked after, as the kernels do)."""
    T = _tokens(T)
    n = T // C
    r = T - n * C
    return n * C * C + r * r


@dataclass(frozen=True)
class GatedDeltaNet:
    """Qwen3-Next's linear attention (the delta rule with a gate α per token and head)."""

    d_model: int  # d
    n_key_heads: int  # H_k
    n_value_heads: int  # H_v (a multiple of H_k; keys and queries are shared across H_v / H_k)
    key_head_dim: int  # d_k
    value_head_dim: int  # d_v
    conv_kernel: int  # K
    kind: str = "gdn"
    chunk: int = DELTA_CHUNK

    @property
    def key_dim(self) -> int:
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_channels(self) -> int:
        """q, k and v go through the conv: 2·H_k·d_k + H_v·d_v."""
        return 2 * self.key_dim + self.value_dim

    def matrix_weights(self) -> int:
        """d(2H_k·d_k + 2H_v·d_v) + d·2H_v + H_v·d_v·d: the maps one token multiplies."""
        d = self.d_model
        return d * (2 * self.key_dim + 2 * self.value_dim) + d * 2 * self.n_value_heads + self.value_dim * d

    def params(self) -> int:
        """Matrices + conv (channels × K, no bias) + dt bias and A (H_v each) + the gated norm (d_v)."""
        return (
            self.matrix_weights()
            + self.conv_channels * self.conv_kernel
            + 2 * self.n_value_heads
            + self.value_head_dim
        )

    def core_flops(self, T: Any, decode: bool = False) -> Tokens:
        """Per sequence of T tokens, per layer: H_v heads, each token 6·d_k·d_v with the state
        (read-out q·S, the delta correction k·S, the update kᵀ·δ) and, in prefill, the chunk's
        pairs × 2(3·d_k + 2·d_v) (QKᵀ, KKᵀ and the triangular solve's T·K against K; T·V, P·V).
        ``decode``: T recurrent steps, state products only."""
        T = _tokens(T)
        dk, dv = self.key_head_dim, self.value_head_dim
        state = 6 * dk * dv * T
        if decode:
            return self.n_value_heads * state
        return self.n_value_heads * (state + 2 * (3 * dk + 2 * dv) * chunk_pairs(T, self.chunk))

    def conv_state_elements(self) -> int:
        return self.conv_channels * self.conv_kernel

    def recurrent_state_elements(self) -> int:
        """One d_k × d_v matrix per value head."""
        return self.n_value_heads * self.key_head_dim * self.value_head_dim


@dataclass(frozen=True)
class KimiDeltaAttention:
    """Kimi Linear's KDA: Gated DeltaNet with a decay per channel, H heads with d_k = d_v = d_h."""

    d_model: int  # d
    n_heads: int  # H
    head_dim: int  # d_h
    conv_kernel: int  # K
    kind: str = "kda"
    chunk: int = DELTA_CHUNK

    @property
    def width(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        return 3 * self.width

    def matrix_weights(self) -> int:
        """q, k, v: 3d·H·d_h; forget and output gates: 2(d·d_h + d_h·H·d_h); β: d·H; out: H·d_h·d."""
        d, w, dh = self.d_model, self.width, self.head_dim
        return 3 * d * w + 2 * (d * dh + dh * w) + d * self.n_heads + w * d

    def params(self) -> int:
        """Matrices + conv (3H·d_h × K) + dt bias (H·d_h) + A (H) + the gated output norm (d_h)."""
        return (
            self.matrix_weights()
            + self.conv_channels * self.conv_kernel
            + self.width
            + self.n_heads
            + self.head_dim
        )

    def core_flops(self, T: Any, decode: bool = False) -> Tokens:
        """As Gated DeltaNet with d_k = d_v = d_h: H·(6·d_h²·T + 10·d_h·pairs(T)); decode 6·d_h²·T·H."""
        T = _tokens(T)
        dh = self.head_dim
        state = 6 * dh * dh * T
        if decode:
            return self.n_heads * state
        return self.n_heads * (state + 2 * 5 * dh * chunk_pairs(T, self.chunk))

    def conv_state_elements(self) -> int:
        return self.conv_channels * self.conv_kernel

    def recurrent_state_elements(self) -> int:
        return self.n_heads * self.head_dim * self.head_dim


@dataclass(frozen=True)
class Mamba:
    """Mamba (selective scan) as Jamba builds it, with its three inner RMSNorms on Δ, B and C."""

    d_model: int  # d
    d_inner: int  # d_in = expand · d
    d_state: int  # N
    dt_rank: int  # R
    conv_kernel: int  # K
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = True  # Jamba's dt/B/C norms (R + 2N weights)
    kind: str = "mamba"

    @property
    def conv_channels(self) -> int:
        return self.d_inner

    def matrix_weights(self) -> int:
        """in: d·2d_in; x (Δ, B, C): d_in(R + 2N); Δ up: R·d_in; out: d_in·d."""
        d, di, N, R = self.d_model, self.d_inner, self.d_state, self.dt_rank
        return d * 2 * di + di * (R + 2 * N) + R * di + di * d

    def params(self) -> int:
        """Matrices + conv (d_in·K, + d_in bias) + Δ bias (d_in) + A (d_in·N) + D (d_in) + biases and norms."""
        di, N = self.d_inner, self.d_state
        extra = di * self.conv_kernel + (di if self.conv_bias else 0) + di + di * N + di
        extra += (2 * di + self.d_model) if self.proj_bias else 0
        extra += (self.dt_rank + 2 * N) if self.inner_norms else 0
        return self.matrix_weights() + extra

    def core_flops(self, T: Any, decode: bool = False) -> Tokens:
        """The scan's products per token: the update Δ·B·x (d_in × N) and the read-out C·h
        (d_in × N): 4·d_in·N·T, in prefill and decode alike (a scan has no chunk products)."""
        return 4 * self.d_inner * self.d_state * _tokens(T)

    def conv_state_elements(self) -> int:
        return self.d_inner * self.conv_kernel

    def recurrent_state_elements(self) -> int:
        return self.d_inner * self.d_state


@dataclass(frozen=True)
class Mamba2:
    """Mamba-2 (state-space duality) as Nemotron-H builds it."""

    d_model: int  # d
    n_heads: int  # H
    head_dim: int  # P
    d_state: int  # N
    n_groups: int  # G
    conv_kernel: int  # K
    chunk: int = 128  # Q, the SSD chunk
    conv_bias: bool = True
    proj_bias: bool = False
    kind: str = "mamba2"

    @property
    def d_inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """x, B and C go through the conv: d_in + 2GN."""
        return self.d_inner + 2 * self.n_groups * self.d_state

    def matrix_weights(self) -> int:
        """in: d(2·d_in + 2GN + H) (z, x, B, C, Δ); out: d_in·d."""
        return self.d_model * (self.d_inner + self.conv_channels + self.n_heads) + self.d_inner * self.d_model

    def params(self) -> int:
        """Matrices + conv (channels·K, + bias) + Δ bias, A, D (H each) + gated norm (d_in) + biases."""
        extra = self.conv_channels * (self.conv_kernel + (1 if self.conv_bias else 0)) + 3 * self.n_heads
        extra += self.d_inner
        if self.proj_bias:
            extra += self.d_inner + self.conv_channels + self.n_heads + self.d_model
        return self.matrix_weights() + extra

    def core_flops(self, T: Any, decode: bool = False) -> Tokens:
        """Each token meets the state: 4·H·P·N (chunk states Bᵀx and the read-out C·h); in prefill
        each chunk also forms C·Bᵀ per group (2·G·N per pair) and applies it to x per head
        (2·H·P per pair): 4HPN·T + 2(GN + HP)·pairs(T)."""
        T = _tokens(T)
        state = 4 * self.n_heads * self.head_dim * self.d_state * T
        if decode:
            return state
        return state + 2 * (self.n_groups * self.d_state + self.d_inner) * chunk_pairs(T, self.chunk)

    def conv_state_elements(self) -> int:
        return self.conv_channels * self.conv_kernel

    def recurrent_state_elements(self) -> int:
        """One P × N matrix per head."""
        return self.n_heads * self.head_dim * self.d_state


StateMixer = GatedDeltaNet | KimiDeltaAttention | Mamba | Mamba2


def state_bytes_per_layer(mixer: StateMixer, conv_bytes: float, recurrent_bytes: float) -> float:
    """One sequence's fixed state in one layer: conv elements·b_conv + recurrent elements·b_rec."""
    return mixer.conv_state_elements() * conv_bytes + mixer.recurrent_state_elements() * recurrent_bytes


# Config keys that state the recurrent state's dtype (Nemotron-H's class: mamba_ssm_cache_dtype,
# default float32; Qwen3.5 configs: mamba_ssm_dtype), and the dtype names they use.
STATE_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
TORCH_DTYPE_NAMES = {"float32": "fp32", "fp32": "fp32", "bfloat16": "bf16", "bf16": "bf16",
                     "float16": "fp16", "fp16": "fp16"}  # fmt: skip


def read_state_dtype(config: Mapping[str, Any]) -> str | None:
    """The recurrent state's dtype where the config states it (fp32, bf16, fp16), else None (the
    cache's dtype then). A stated name not among the dtypes sized here is refused."""
    for key in STATE_DTYPE_KEYS:
        value = config.get(key)
        if value is None or value == "auto":
            continue
        name = TORCH_DTYPE_NAMES.get(str(value).removeprefix("torch."))
        if name is None:
            raise ConfigError(
                f"config key {key!r} = {value!r}: not a dtype sized here (float32, bfloat16, float16)"
            )
        return name
    return None
