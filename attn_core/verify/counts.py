"""What the cost model counts for what was built: each phase's FLOPs and bytes (from
`attn_core.cost`), its matrix products at the shapes that run and its token mixers' kernel calls
(attention, or a linear layer's core)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from attn_core.cost.flops import prefill_flops
from attn_core.cost.params import expert_params
from attn_core.cost.phases import PhaseCount
from attn_core.cost.serving import experts_touched_expected
from attn_core.cost.shapes import ModelShape
from attn_core.verify.plan import active_layer_params, cache_bytes


@dataclass(frozen=True)
class Gemm:
    """``count`` products of (m × k) by (k × n), 2·m·k·n FLOPs each. For routed experts m and
    count are expectations (tokens per touched expert, touched experts), so they may be fractional."""

    m: float
    k: int
    n: int
    count: float = 1

    @property
    def flops(self) -> float:
        return 2 * self.m * self.k * self.n * self.count

    @property
    def probe_shape(self) -> tuple[int, int, int]:
        return max(1, round(self.m)), self.k, self.n


@dataclass(frozen=True)
class AttentionCall:
    """``count`` layers' token-mixer kernel calls of one kind for B sequences: attention of
    ``q_len`` queries over ``kv_len`` keys, or a linear layer's core over ``q_len`` tokens, the
    last of ``kv_len`` (q_len = kv_len: a prompt from an empty state). Their FLOPs are the cost
    model's attention or state-core term; the estimate times the calls."""

    kind: str
    q_len: int
    kv_len: int
    count: int = 1


@dataclass(frozen=True)
class PhaseCounts:
    """One phase as the cost model counts it, and the pieces the estimate times."""

    flops: int  # projections + attention + linear layers' maps and core + MLP of the built layers (no head)
    bytes: int  # active weights (top-k experts: the floor) + KV cache and linear state, written or read
    bytes_expected: int  # the same with the expected distinct experts (= bytes when dense)
    gemms: tuple[Gemm, ...]
    attention: tuple[AttentionCall, ...]

    def as_count(self) -> PhaseCount:
        """These totals as the cost model's phase count, for `roofline.time_phase` (the bound reads
        only the FLOPs and the bytes)."""
        return PhaseCount(
            tokens=0, product_flops=self.flops, expert_flops=0, expert_rows=0.0, attention_flops=0,
            core_flops=0, weight_bytes=self.bytes, cache_bytes=0, state_bytes=0,
        )  # fmt: skip


def attention_gemms(shape: ModelShape, tokens: int) -> list[Gemm]:
    """An attention layer's products for ``tokens`` tokens: fused QKV (with the output gate's
    h·d_h columns in gated attention), then O."""
    d, q, kv = shape.d_model, shape.q_width, shape.kv_width
    gate = q if shape.attention_output_gate else 0
    return [Gemm(tokens, d, q + gate + 2 * kv), Gemm(tokens, q, d)]


def deltanet_gemms(shape: ModelShape, tokens: int) -> list[Gemm]:
    """A Gated DeltaNet layer's maps: q, k, v, z (d × (2H_k·d_k + 2H_v·d_v)), β and a (d × 2H_v),
    then out (H_v·d_v × d): its ``matrix_weights``. Its core is timed as a call, not a product."""
    m, d = shape.state_mixer, shape.d_model
    return [Gemm(tokens, d, 2 * m.key_dim + 2 * m.value_dim), Gemm(tokens, d, 2 * m.n_value_heads),
            Gemm(tokens, m.value_dim, d)]  # fmt: skip


def mamba2_gemms(shape: ModelShape, tokens: int) -> list[Gemm]:
    """A Mamba-2 layer's maps: in (z, x, B, C, Δ: d × (2H·P + 2G·N + H)), then out (H·P × d): its
    ``matrix_weights``. Its scan is timed as a call, not a product."""
    m, d = shape.state_mixer, shape.d_model
    return [Gemm(tokens, d, m.d_inner + m.conv_channels + m.n_heads), Gemm(tokens, m.d_inner, d)]


def mlp_gemms(shape: ModelShape, moe: bool, tokens: int) -> list[Gemm]:
    """The feed-forward products: the MLP (gate and up fused), or the router, the routed experts
    (k·tokens rows over the expected touched experts) and the shared experts."""
    d = shape.d_model
    if not moe:
        return [Gemm(tokens, d, (shape.mlp_matrices - 1) * shape.d_ff), Gemm(tokens, shape.d_ff, d)]
    m = shape.moe
    touched = experts_touched_expected(m.n_experts, m.top_k, tokens)
    rows = m.top_k * tokens / touched
    up = m.expert_matrices - 1  # gate and up fused (SwiGLU), or up alone (Nemotron-H)
    out = [Gemm(tokens, d, m.n_experts), Gemm(rows, d, up * m.expert_d_ff, touched),
           Gemm(rows, m.expert_d_ff, d, touched)]  # fmt: skip
    if m.n_shared:
        out += [Gemm(tokens, d, up * m.shared_d_ff, m.n_shared), Gemm(tokens, m.shared_d_ff, d, m.n_shared)]
    if m.shared_gate:
        out.append(Gemm(tokens, d, 1))
    return out


# The mixer products of each layer kind (with MIXERS and ATTENTION_KEYS below: a new kind adds one
# entry to each). Every kind's products plus the MLP's sum to the cost model's projections + MLP.
MIXER_GEMMS: dict[str, Callable[[ModelShape, int], list[Gemm]]] = {
    "full": attention_gemms,
    "sliding": attention_gemms,
    "chunked": attention_gemms,
    "gdn": deltanet_gemms,
    "mamba2": mamba2_gemms,
}


def _block_gemms(shape: ModelShape, kind: str, moe: bool, tokens: int) -> list[Gemm]:
    """One block's products: its mixer's and its feed-forward part's (a Nemotron-H block has one)."""
    mixer = MIXER_GEMMS[kind](shape, tokens) if kind in MIXER_GEMMS else []
    return mixer + (mlp_gemms(shape, moe, tokens) if shape.has_mlp(kind) else [])


def _gemms(shape: ModelShape, tokens: int) -> tuple[Gemm, ...]:
    """Every block's products, grouped by (layer kind, MoE or dense) as the cost model sums."""
    return tuple(
        dataclasses.replace(g, count=g.count * n)
        for (kind, moe), n in shape.layer_census.items()
        for g in _block_gemms(shape, kind, moe, tokens)
    )


def _weight_bytes(shape: ModelShape, b: int, tokens: int) -> tuple[int, int]:
    """(floor, expected) bytes of the built layers' weights a pass over ``tokens`` tokens reads:
    top-k routed experts per MoE layer, or the expected distinct ones."""
    floor = active_layer_params(shape) * b
    if shape.moe is None or shape.n_moe_layers == 0:
        return floor, floor
    m = shape.moe
    one = expert_params(shape, m.expert_d_ff, m.expert_bias) * shape.n_moe_layers * b
    return floor, floor + round((experts_touched_expected(m.n_experts, m.top_k, tokens) - m.top_k) * one)


def _phase(
    shape: ModelShape, flops: float, q_len: int, kv_len: int, cached: int, batch: int, b: int
) -> PhaseCounts:
    """A phase of B sequences of ``q_len`` new tokens over ``kv_len`` keys: the cost model's
    ``flops``, the active weights plus the KV cache of ``cached`` tokens and the linear layers'
    state (written or read, once), its products and its mixers' calls."""
    kv = cache_bytes(shape, cached, batch, b)
    floor, expected = _weight_bytes(shape, b, batch * q_len)
    calls = tuple(
        AttentionCall(kind, q_len, kv_len, n) for kind, n in shape.kind_counts.items() if kind in MIXER_GEMMS
    )
    return PhaseCounts(int(flops), floor + kv, expected + kv, _gemms(shape, batch * q_len), calls)


LINEAR_TERMS = ("projections", "attention", "mlp", "state_projections")  # per token, or per allowed pair


def prefill_counts(shape: ModelShape, T: int, batch: int, b: int) -> PhaseCounts:
    """The cost model's causal prefill of B × T tokens over the built layers (no head; a linear
    layer's core in its chunked form) and the KV cache and linear state it writes."""
    f = prefill_flops(shape, T, batch, causal=True)
    return _phase(shape, sum(getattr(f, t) for t in LINEAR_TERMS) + f.state_core, T, T, T, batch, b)


def decode_counts(shape: ModelShape, context: int, batch: int, b: int) -> PhaseCounts:
    """One decode step with ``context`` tokens cached: the cost model's FLOPs of token context + 1
    (prefill to context + 1 minus prefill to context; a linear layer's core in its recurrent
    form, ``core_flops(1, decode=True)``), the active weights and the cache and state read."""
    f1, f0 = (prefill_flops(shape, t, batch, causal=True) for t in (context + 1, context))
    flops = sum(getattr(f1, t) - getattr(f0, t) for t in LINEAR_TERMS)
    if shape.n_state_layers:
        flops += shape.n_state_layers * shape.state_mixer.core_flops(1, decode=True) * batch
    return _phase(shape, flops, 1, context + 1, context, batch, b)
