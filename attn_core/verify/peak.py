"""What one check may hold, planned before anything is built: the peak of its memory — the probe's
buffers (before any layer exists), then the built weights, their KV cache and linear state, every
expert module's own objects, and the largest layer's temporaries in the prefill (activations,
attention masks, a linear layer's scan intermediates) — and the caps on what one check may build.

Every term is an upper bound of what torch allocates for it, read off the code that runs (the
layers in `layers`, transformers' torch fallbacks for the scans); `tests/verify/test_peak.py`
runs small checks in the child process and asserts the child's measured peak resident memory
stays under the plan. Only the largest layer's temporaries count: a layer's are freed before the
next one runs (inference mode keeps no graph).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attn_core.cost.config_reader import ModelShape

# The probe's buffer sizes (`probe` reads them here so that the plan sizes what it will hold).
PROBE_ROWS = {"cpu": 256, "cuda": 4096}  # a product with more rows is probed at this many (same rate)
PROBE_COLS = {"cpu": 2048, "cuda": 16384}  # … and at most this many output columns (compute-bound ones)
COLD_BYTES = {"cpu": 96 * 2**20, "cuda": 512 * 2**20}  # > 3× the last-level cache: weights come from DRAM
# From this many rows on a product reuses its weights enough that their stream's length no longer
# sets its rate: one copy is timed, the cache flushed (COLD_BYTES copied) before each call, not
# cycled copies. Cold still matters there (bf16, one CPU thread: ~30% at 64 rows, ~5% at 256).
COMPUTE_ROWS = 64
STREAM_BYTES = {"cpu": 128 * 2**20, "cuda": 2 * 2**30}
PEAK_N = {"cpu": 1024, "cuda": 8192}  # the square matmul every probe also runs

# Caps on what one check builds, whatever the memory cap: each is far above every preset.
MAX_EXPERTS = 512  # routed experts built per MoE layer (Qwen3-Next has 512): more are cut, same k
MIN_SCAN_CHUNK = 16  # a Mamba-2 chunk below this is refused (presets: 128 and 256); the scan's
# chunk-to-chunk states grow as T / Q (at Q = 1 a 512-token Nemotron-H layer holds ~4 GB)
MAX_TOKEN_WIDTH = 2**27  # B·T × the widest activation of a layer (elements): Llama 3 8B at B = 4,
# T = 512 is 2,048 × 28,672 = 2^25.8; 131,072 tokens of it are refused here before any sizing
# Python objects of one expert module (a GatedMLP, two nn.Linear, their parameters and tensor
# headers): ~5 KiB measured per expert on torch 2.13 (1,024 tiny experts built: +5.1 MiB beyond
# their weights), doubled for other versions and allocator rounding.
MODULE_BYTES = 10 * 2**10
# What a run touches beyond its tensors: oneDNN/MKL scratch, the thread pool, allocator rounding
# of many small tensors, pages a freed buffer leaves in the heap. Measured at 25–57 MiB beyond the
# other terms in the children of the bounds test (after their warm-up, `child`); 96 MiB planned.
FLOOR_BYTES = 96 * 2**20


@dataclass(frozen=True)
class Peak:
    """The planned peak of one check, bytes: the probe runs first and frees its buffers, so the
    peak is the larger of the probe and the built layers' run, plus the floor."""

    weights: int  # every built weight, all routed experts
    cache: int  # KV cache for T + M tokens and the linear layers' state
    activations: int  # the prefill's residual stream + the largest layer's temporaries
    modules: int  # the expert modules' Python objects (MODULE_BYTES each)
    probe: int  # the probe's largest moment
    build: int = 0  # what a build holds for a moment beyond its weights (transformers': `hf`)

    @property
    def run(self) -> int:
        return self.weights + self.modules + max(self.build, self.cache + self.activations)

    @property
    def total(self) -> int:
        return max(self.probe, self.run) + FLOOR_BYTES


def _attention_bytes(shape: ModelShape, kind: str, batch: int, T: int, S: int, b: int) -> int:
    """One attention layer over T queries and S cached keys: fused QKV out, q/k/v copies, rotary's
    four temporaries of q and k, SDPA's output, its reshape and gate, O's output; a band (sliding
    window or chunk shorter than S) adds its boolean mask and SDPA's float copy of it per head."""
    N, d, q, kv = batch * T, shape.d_model, shape.q_width, shape.kv_width
    gate = 2 if shape.attention_output_gate else 1
    total = N * (gate * q + 2 * kv + 8 * q + 6 * kv + d) * b
    span = {"sliding": shape.sliding_window, "chunked": shape.attention_chunk_size}.get(kind)
    if span is not None and span < S and T > 1:
        total += T * S * (1 + 4 * batch * shape.n_heads)  # mask (bool) + SDPA's additive copy (fp32)
    return total


def _mlp_bytes(shape: ModelShape, layer: int, N: int, b: int) -> int:
    """The feed-forward part for N tokens: a gated MLP's up (2·d_ff), silu, product and down; a
    mixture of experts' router logits and softmax (fp32), the N·k routed rows gathered, every
    expert's outputs held until they are concatenated, weighted and added, one expert's
    temporaries (at most all N·k rows), and the shared experts'."""
    d, kind = shape.d_model, shape.layer_kinds[layer]
    if not shape.has_mlp(kind):
        return 0
    gated = 4 if shape.mlp_kind == "gated" else 2
    if not shape.is_moe_layer(layer):
        return N * (gated * shape.d_ff + d) * b
    m = shape.moe
    width = 4 if m.expert_matrices == 3 else 2
    routed = N * m.top_k * (4 * d + width * m.expert_d_ff) * b + N * m.top_k * 16
    router = N * m.n_experts * (b + 8)
    shared = m.n_shared * N * (width * m.shared_d_ff + d) * b + 2 * N * d * b
    return routed + router + shared + N * d * b


def _gdn_bytes(shape: ModelShape, batch: int, T: int, b: int) -> int:
    """A Gated DeltaNet layer: its input maps' outputs, the conv's copies, transformers' chunked
    delta rule (fp32: q, k repeated to the value heads, padded to 64-token chunks; per chunk a
    64 × 64 decay and attention matrix per head, k·β, v·β and the outputs) and the gated norm."""
    m = shape.state_mixer
    N = batch * T
    maps = N * (2 * m.key_dim + 2 * m.value_dim + 2 * m.n_value_heads) * b
    conv = 3 * N * m.conv_channels * b
    t_pad = math.ceil(T / m.chunk) * m.chunk
    rule = batch * m.n_value_heads * t_pad * 4 * (12 * (m.key_head_dim + m.value_head_dim) + 8 * m.chunk)
    norm = N * m.value_dim * 12
    return maps + conv + rule + norm + N * shape.d_model * b


def _mamba2_bytes(shape: ModelShape, batch: int, T: int, b: int) -> int:
    """A Mamba-2 layer: the input map's output, the conv's copies, transformers' chunked SSD scan
    (fp32: x, B, C repeated to the heads, padded to chunks of Q; per chunk the Q × Q decay, C·Bᵀ
    and their product per head; the c + 1 chunk states P × N per head, three times; the
    (c + 1)² chunk decays) and the gated norm."""
    m = shape.state_mixer
    N, Q = batch * T, m.chunk
    c = math.ceil(T / Q)
    t_pad = c * Q
    H, P, S = m.n_heads, m.head_dim, m.d_state
    maps = N * (m.d_inner + m.conv_channels + H) * b
    conv = 3 * N * m.conv_channels * b
    scan = (
        4
        * batch
        * H
        * (10 * t_pad * P + 4 * t_pad * S + 6 * t_pad * Q + 4 * (c + 1) * P * S + 4 * (c + 1) ** 2)
    )
    norm = N * m.d_inner * 12
    return maps + conv + scan + norm + N * shape.d_model * b


def mixer_bytes(shape: ModelShape, kind: str, batch: int, T: int, S: int, b: int) -> int:
    """The temporaries of one layer's token mixer of ``kind`` over T new tokens, S in all."""
    if kind == "gdn":
        return _gdn_bytes(shape, batch, T, b)
    if kind == "mamba2":
        return _mamba2_bytes(shape, batch, T, b)
    if shape.is_attention(kind):
        return _attention_bytes(shape, kind, batch, T, S, b)
    return 0  # Nemotron-H's MLP-only blocks


def matrix_sides(shape: ModelShape) -> list[int]:
    """Every weight matrix of a layer is d × n or n × d: its n's (fused QKV and gate at each
    attention kind's heads, O, the MLP's fused up and its down (Gemma 4's double-wide one), the
    router, an expert's, a linear layer's input and output maps, Gemma 4's per-layer input map)."""
    gate = 2 if shape.attention_output_gate else 1
    qkv = [
        shape.n_heads * shape.head_dim_of(k) * gate + 2 * shape.kv_heads_of(k) * shape.head_dim_of(k)
        for k in shape.kind_counts
        if shape.is_attention(k)
    ]
    wide = 2 if shape.double_wide_shared_mlp and shape.kv_shared_layers else 1
    sides = [shape.d_model, *qkv, 2 * wide * shape.d_ff]
    if shape.per_layer_embeddings is not None:
        sides.append(shape.n_layers * shape.per_layer_embeddings.width)
    if shape.moe is not None:
        m = shape.moe
        sides += [m.n_experts, 2 * m.expert_d_ff, 2 * m.shared_d_ff]
    s = shape.state_mixer
    if s is not None and s.kind == "gdn":
        sides += [2 * s.key_dim + 2 * s.value_dim, 2 * s.n_value_heads]
    if s is not None and s.kind == "mamba2":
        sides += [s.d_inner + s.conv_channels + s.n_heads]
    return sides


def widest(shape: ModelShape) -> int:
    """The widest activation of a layer, elements per token: what B·T multiplies (a map's output,
    the routed rows' expert width, a scan's per-chunk rows)."""
    widths = [*matrix_sides(shape), 3 * shape.q_width + 2 * shape.kv_width]
    if shape.moe is not None:
        widths.append(2 * shape.moe.top_k * shape.moe.expert_d_ff)
    s = shape.state_mixer
    if s is not None and s.kind in ("gdn", "mamba2"):
        widths.append((s.n_value_heads if s.kind == "gdn" else s.n_heads) * s.chunk)
    return max(widths)


def activation_bytes(shape: ModelShape, batch: int, seq_len: int, decode_steps: int, b: int) -> int:
    """The prefill's largest moment: the input, the decode steps' inputs, the residual stream and
    a block's norm and sum (B·T·d each), plus the largest layer's mixer or feed-forward
    temporaries (they run one after the other) and the rotary tables."""
    N, d = batch * seq_len, shape.d_model
    tokens = seq_len + decode_steps
    stream = (5 * N + decode_steps * batch) * d * b
    layers = max(
        max(mixer_bytes(shape, shape.layer_kinds[i], batch, seq_len, seq_len, b), _mlp_bytes(shape, i, N, b))
        for i in range(shape.n_layers)
    )
    rotary = 4 * tokens * (shape.rotary_dim or shape.head_dim) * (4 + b)
    return stream + layers + rotary


def hf_bytes(shape: ModelShape, hf_config, eager: bool, batch: int, seq_len: int, b: int) -> int:
    """What transformers' own build holds beyond the lab's terms (`hf`): the embeddings' output,
    its scaled copy and the final norm's (B·T·d each); Gemma's per-layer inputs (B·T × layers ×
    their width, four copies: the lookup, the projection, their sum, its scale); the causal masks
    it makes (two kinds, bool, and SDPA's float copy per head, B·T·S each); eager attention's
    weights (three B·H·T·S float32 copies) where the model has no SDPA path."""
    N, d, S = batch * seq_len, shape.d_model, seq_len
    per_layer = getattr(hf_config, "hidden_size_per_layer_input", 0) or 0
    ple = 4 * N * shape.n_layers * per_layer * b if isinstance(per_layer, int) else 0
    masks = 2 * batch * seq_len * S * (1 + 4 * shape.n_heads)
    eager = 3 * 4 * batch * shape.n_heads * seq_len * S if eager else 0
    return 3 * N * d * b + ple + masks + eager


def module_bytes(shape: ModelShape) -> int:
    """The expert modules' own objects: MODULE_BYTES per routed and shared expert built."""
    if shape.moe is None:
        return 0
    return shape.n_moe_layers * (shape.moe.n_experts + shape.moe.n_shared) * MODULE_BYTES


def probe_bytes(shape: ModelShape, batch: int, seq_len: int, b: int, device: str) -> int:
    """The probe's largest moment (it holds one measurement's buffers at a time): the peak matmul
    (three N × N), the stream (two copies), one product with cold weights (COLD_BYTES of copies plus
    one more matrix, at most the largest of a layer; or one matrix and the cache-flushing pair of
    COLD_BYTES), an attention call (q, k, v and the layer's
    temporaries) or a linear core (the cache-flushing pair of COLD_BYTES, and the core's
    temporaries)."""
    N = batch * seq_len
    peak = 3 * PEAK_N[device] ** 2 * b
    stream = 2 * STREAM_BYTES[device]
    d = shape.d_model
    matrix = d * max(matrix_sides(shape)) * b  # the largest: COLD_BYTES of copies + one, or one + the flush
    gemm = 2 * COLD_BYTES[device] + matrix + min(N, PROBE_ROWS[device]) * 2 * max(matrix_sides(shape)) * b
    mixers = max(
        mixer_bytes(shape, k, batch, seq_len, seq_len, b) + N * (2 * shape.q_width + d) * b
        for k in shape.kind_counts
    )
    flush = 2 * COLD_BYTES[device] if shape.n_state_layers else 0
    return max(peak, stream, gemm, mixers + flush)
