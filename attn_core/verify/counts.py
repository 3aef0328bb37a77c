"""What the cost model counts for what was built: each phase's FLOPs and bytes (from
`attn_core.cost`), its matrix products at the shapes that run and its token mixers' kernel calls
(attention, or a linear layer's core)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.flops import prefill_flops
from attn_core.cost.inputs import Precision
from attn_core.cost.params import decode_weight_bytes
from attn_core.cost.phases import PhaseCount, decode_count, prefill_count
from attn_core.cost.serving import decode_weight_bytes_expected, experts_touched_expected
from attn_core.verify.plan import RECURRENT_DTYPE, active_layer_params


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

    flops: int  # projections + attention + linear maps and core + MLP (+ per-layer input maps), no head
    bytes: int  # active weights (top-k experts: the floor) + KV cache and linear state, written or read
    bytes_expected: int  # the same with the expected distinct experts (= bytes when dense)
    gemms: tuple[Gemm, ...]
    attention: tuple[AttentionCall, ...]

    def as_count(self) -> PhaseCount:
        """These totals as the cost model's phase count, for `roofline.time_phase` (the bound reads
        only the FLOPs and the bytes)."""
        return PhaseCount(
            tokens=0,
            product_flops=self.flops,
            expert_flops=0,
            expert_rows=0.0,
            attention_flops=0,
            core_flops=0,
            weight_bytes=self.bytes,
            cache_bytes=0,
            state_bytes=0,
        )


def attention_gemms(shape: ModelShape, tokens: int, kind: str = "full", shared: bool = False) -> list[Gemm]:
    """An attention layer's products for ``tokens`` tokens: fused QKV (with the output gate's
    h·d_h columns in gated attention), then O, at the kind's d_h and H_kv (Gemma 4's full layers:
    wider heads); a KV-sharing layer maps Q alone, a layer whose V is its K maps Q and K."""
    d, q, kv = (
        shape.d_model,
        shape.n_heads * shape.head_dim_of(kind),
        shape.kv_heads_of(kind) * shape.head_dim_of(kind),
    )
    kv_maps = 0 if shared else 1 if shape.value_is_key(kind) else 2
    gate = q if shape.attention_output_gate else 0
    return [Gemm(tokens, d, q + gate + kv_maps * kv), Gemm(tokens, q, d)]


def deltanet_gemms(shape: ModelShape, tokens: int, kind: str = "gdn", shared: bool = False) -> list[Gemm]:
    """A Gated DeltaNet layer's maps: q, k, v, z (d × (2H_k·d_k + 2H_v·d_v)), β and a (d × 2H_v),
    then out (H_v·d_v × d): its ``matrix_weights``. Its core is timed as a call, not a product.
    (``kind`` and ``shared`` are attention's: a linear layer has one form.)"""
    m, d = shape.state_mixer, shape.d_model
    return [
        Gemm(tokens, d, 2 * m.key_dim + 2 * m.value_dim),
        Gemm(tokens, d, 2 * m.n_value_heads),
        Gemm(tokens, m.value_dim, d),
    ]


def mamba2_gemms(shape: ModelShape, tokens: int, kind: str = "mamba2", shared: bool = False) -> list[Gemm]:
    """A Mamba-2 layer's maps: in (z, x, B, C, Δ: d × (2H·P + 2G·N + H)), then out (H·P × d): its
    ``matrix_weights``. Its scan is timed as a call, not a product. (``kind`` and ``shared`` as above.)"""
    m, d = shape.state_mixer, shape.d_model
    return [Gemm(tokens, d, m.d_inner + m.conv_channels + m.n_heads), Gemm(tokens, m.d_inner, d)]


def mlp_gemms(shape: ModelShape, moe: bool, tokens: int, wide: bool = False) -> list[Gemm]:
    """The feed-forward products: the MLP (gate and up fused; ``wide``: Gemma 4's 2·d_ff on its
    KV-sharing layers), or the router, the routed experts (k·tokens rows over the expected
    touched experts) and the shared experts."""
    d = shape.d_model
    if not moe:
        d_ff = shape.d_ff * (2 if wide else 1)
        return [Gemm(tokens, d, (shape.mlp_matrices - 1) * d_ff), Gemm(tokens, d_ff, d)]
    m = shape.moe
    touched = experts_touched_expected(m.n_experts, m.top_k, tokens)
    rows = m.top_k * tokens / touched
    up = m.expert_matrices - 1  # gate and up fused (SwiGLU), or up alone (Nemotron-H)
    out = [
        Gemm(tokens, d, m.n_experts),
        Gemm(rows, d, up * m.expert_d_ff, touched),
        Gemm(rows, m.expert_d_ff, d, touched),
    ]
    if m.n_shared:
        out += [Gemm(tokens, d, up * m.shared_d_ff, m.n_shared), Gemm(tokens, m.shared_d_ff, d, m.n_shared)]
    if m.shared_gate:
        out.append(Gemm(tokens, d, 1))
    return out


def per_layer_input_gemms(shape: ModelShape, tokens: int) -> list[Gemm]:
    """Gemma 4's per-layer input maps (none without them): the token's embedding mapped d → L·p
    once, then in each layer a d → p gate and a p → d map (`PerLayerEmbeddings.projections`)."""
    ple, d, L = shape.per_layer_embeddings, shape.d_model, shape.n_layers
    if ple is None:
        return []
    p = ple.width
    return [Gemm(tokens, d, L * p), Gemm(tokens, d, p, L), Gemm(tokens, p, d, L)]


# The mixer products of each layer kind (with MIXERS and ATTENTION_KEYS below: a new kind adds one
# entry to each), called with the layer's kind and whether it shares an earlier layer's K and V.
# Every kind's products plus the MLP's and the per-layer input maps sum to the cost model's
# product FLOPs of the layers (`phases.PhaseCount.product_flops` less the output head).
MIXER_GEMMS: dict[str, Callable[[ModelShape, int, str, bool], list[Gemm]]] = {
    "full": attention_gemms,
    "sliding": attention_gemms,
    "chunked": attention_gemms,
    "gdn": deltanet_gemms,
    "mamba2": mamba2_gemms,
}


def _block_gemms(shape: ModelShape, kind: str, moe: bool, shared: bool, tokens: int) -> list[Gemm]:
    """One block's products: its mixer's and its feed-forward part's (a Nemotron-H block has one)."""
    mixer = MIXER_GEMMS[kind](shape, tokens, kind, shared) if kind in MIXER_GEMMS else []
    wide = shared and shape.double_wide_shared_mlp
    return mixer + (mlp_gemms(shape, moe, tokens, wide) if shape.has_mlp(kind) else [])


def _gemms(shape: ModelShape, tokens: int) -> tuple[Gemm, ...]:
    """Every block's products, grouped by (layer kind, MoE or dense, KV-shared or not) as the cost
    model sums, then the per-layer input maps."""
    blocks = tuple(
        dataclasses.replace(g, count=g.count * n)
        for (kind, moe, shared), n in shape.layer_groups.items()
        for g in _block_gemms(shape, kind, moe, shared, tokens)
    )
    return blocks + tuple(per_layer_input_gemms(shape, tokens))


def _weight_bytes(shape: ModelShape, b: int, tokens: int) -> tuple[int, int]:
    """(floor, expected) bytes of the built layers' weights a pass over ``tokens`` tokens reads:
    top-k routed experts per MoE layer, or the expected distinct ones (the cost model's extra,
    `serving.decode_weight_bytes_expected` over `params.decode_weight_bytes`)."""
    floor = active_layer_params(shape) * b
    extra = decode_weight_bytes_expected(shape, tokens, b) - decode_weight_bytes(shape, tokens, b)
    return floor, floor + extra


def _phase(shape: ModelShape, count: PhaseCount, q_len: int, kv_len: int, batch: int, b: int) -> PhaseCounts:
    """A phase of B sequences of ``q_len`` new tokens over ``kv_len`` keys: the cost model's
    ``count`` (`phases`) less the output head, which is not built: its FLOPs, the active weights
    of the built layers plus its KV cache and linear state (written or read, once), its products
    and its mixers' calls."""
    head = prefill_flops(shape, q_len, batch, causal=True).lm_head
    floor, expected = _weight_bytes(shape, b, batch * q_len)
    calls = tuple(
        AttentionCall(kind, q_len, kv_len, n) for kind, n in shape.kind_counts.items() if kind in MIXER_GEMMS
    )
    kv = int(count.mixing_bytes)
    return PhaseCounts(
        int(count.flops - head), floor + kv, expected + kv, _gemms(shape, batch * q_len), calls
    )


def _precision(b: int) -> Precision:
    """The check's dtype as the cost model's precision: weights, activations and cache at b bytes
    (fp32 or a 16-bit format: the bytes are what is counted), the recurrent state at RECURRENT_DTYPE."""
    return Precision("fp32" if b == 4 else "bf16", state=RECURRENT_DTYPE)


def prefill_counts(shape: ModelShape, T: int, batch: int, b: int) -> PhaseCounts:
    """The cost model's causal prefill of B × T tokens over the built layers (`phases.prefill_count`,
    no head; a linear layer's core in its chunked form) and the KV cache and linear state it writes."""
    return _phase(shape, prefill_count(shape, T, batch, _precision(b)), T, T, batch, b)


def decode_counts(shape: ModelShape, context: int, batch: int, b: int) -> PhaseCounts:
    """One decode step with ``context`` tokens cached (`phases.decode_count`, no head: a linear
    layer's core in its recurrent form), the active weights and the cache and state read."""
    return _phase(shape, decode_count(shape, context, batch, _precision(b)), 1, context + 1, batch, b)
