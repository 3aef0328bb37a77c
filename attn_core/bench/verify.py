"""The cost model checked against a real run on this machine: a model's layers built at their true
shapes with random weights, a prefill of T tokens and M decode steps timed, beside the roofline
bound and a calibrated estimate.

Three figures per phase (the prefill, one decode step), each from a different source:

- ``flops`` and ``bytes`` come from the cost model (`attn_core.cost`) for exactly what was built
  (`plan_build`: the first N layers, fewer routed experts when one layer is over the memory cap),
  in the convention of ``python -m attn_core cost``: matrix products only, 2 FLOPs per
  multiply-add; bytes = the active weights of the built layers (top-k experts: the floor) plus the
  KV cache written (prefill) or read (decode). The embedding table and output head are not built.
- ``bound_ms`` = max(flops / peak, bytes / bandwidth) at this device's probed peaks (the fastest
  matmul and the fastest streaming read or copy the probe saw): the roofline, a lower bound.
- ``estimate_ms``, calibrated: Σ over the phase's matrix products of 2·m·k·n / rate(m, k, n), the
  rate the probe measured at that product's shape (weights cold in cache when it has few rows),
  plus the attention kernel's time probed at the layer's shape. A mixture of experts' routed
  products are counted over the E·(1 − (1 − k/E)^N) distinct experts that N tokens touch under
  uniform routing, k·N / that many rows each: the same FLOPs as the cost model's, at the shapes
  that run. The terms are summed, not maxed: a layer's products and its attention run one after
  another, each already at its own mix of compute and memory time. Norms, rotary, the activation
  and the residual adds are left out (as in the cost model's FLOPs).
- ``measured_ms``: the fastest of ``PREFILL_REPEATS`` prefills, and of the M decode steps (which
  differ by one cached token each). On a CPU the check runs on one thread by default and every
  time, probe and run alike, is that thread's CPU time (`clock`): on a machine shared with other
  work, wall time measures the others' time slices too (on the dev machine's 2 cores at load 6–8
  the same product timed 2–4× apart a few seconds later), CPU time does not. The wall time
  is kept beside it (``measured_wall_ms``). On a GPU: wall time, synchronized.

The probe runs before the layers are built and on tensors of its own, so no estimate ever sees
the model run's timing. A layer kind is one entry in each of three tables: ``MIXERS`` (its torch
module), ``MIXER_GEMMS`` (its matrix products) and ``ATTENTION_KEYS`` (the keys a query sees, for
the run and for the kernel probe); counting, probing and timing are shared. A linear-attention or
state-space kind, once the cost model sizes it, adds its module, its products and its scan in place
of the keys. Attention is torch SDPA (its fused CPU flash kernel, GQA without repeating
K/V): the kernel a serving stack runs, with no L × S matrix, as the cost model's bytes assume —
`attn_core.attention` is the teaching reference and keeps every weight.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from attn_core.bench.records import DTYPES
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.flops import prefill_flops
from attn_core.cost.layers import LayerKinds, LayerSet
from attn_core.cost.params import expert_params, model_params
from attn_core.cost.serving import experts_touched_expected, kv_cache_bytes
from attn_core.cost.shapes import ModelShape

DEFAULT_SEQ_LEN = 256
DEFAULT_DECODE_STEPS = 8
DEFAULT_MEMORY_GIB = 2.0  # weights + KV cache of what is built (the dev machine: 23 GiB, shared)
MAX_LAYERS = 64  # a config may declare millions of layers; we never build more than this
PREFILL_REPEATS = 2  # the first run also warms the allocator and the thread pool
PROBE_ROUNDS = 3
PROBE_ROWS = {"cpu": 256, "cuda": 4096}  # a product with more rows is probed at this many (same rate)
PROBE_COLS = {"cpu": 2048, "cuda": 16384}  # … and at most this many output columns
COLD_BYTES = {"cpu": 96 * 2**20, "cuda": 512 * 2**20}  # > 3× the last-level cache: weights come from DRAM
COMPUTE_ROWS = 64  # from this many rows on a product is compute-bound here: no need for cold copies
STREAM_BYTES = {"cpu": 128 * 2**20, "cuda": 2 * 2**30}
PEAK_N = {"cpu": 1024, "cuda": 8192}  # the square matmul every probe also runs


class VerifyError(ValueError):
    """What cannot be built or run as asked: one line for the CLI (exit 2) and the page."""


# -- The request and what is built -------------------------------------------------------------
@dataclass(frozen=True)
class VerifyRequest:
    """A run: B sequences of T prompt tokens, then M decode steps, on ``device`` in ``dtype``.
    ``layers`` None builds as many as fit ``memory_bytes`` (weights + KV cache)."""

    seq_len: int = DEFAULT_SEQ_LEN
    batch: int = 1
    decode_steps: int = DEFAULT_DECODE_STEPS
    layers: int | None = None
    memory_bytes: int = int(DEFAULT_MEMORY_GIB * 2**30)
    dtype: str = "fp32"
    device: str = "auto"
    threads: int | None = 1  # CPU: torch threads for the check (1: timed on its own CPU time); None: as set


def select_device(requested: str = "auto") -> str:
    """'cuda' when asked for (VerifyError if absent) or when 'auto' finds one; else 'cpu'."""
    if requested not in ("auto", "cpu", "cuda"):
        raise VerifyError(f"--device must be auto, cpu or cuda, got {requested!r}")
    if requested == "cuda" and not torch.cuda.is_available():
        raise VerifyError("--device cuda: no CUDA device on this machine")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


@dataclass(frozen=True)
class Plan:
    """What is built: ``shape`` is the model cut to ``layers_built`` layers and ``experts_built``
    routed experts (same k, same expert width), the input the cost model counts."""

    shape: ModelShape
    layers_built: int
    experts_built: int | None  # None: a dense model
    model_layers: int
    model_experts: int | None
    weight_bytes: int  # every built weight, all experts
    cache_bytes: int  # the KV cache for T + M tokens
    notes: tuple[str, ...] = ()


def refuse_unbuilt(shape: ModelShape) -> None:
    """VerifyError naming what this module does not build (rather than time something else)."""
    if shape.is_hybrid or shape.state_mixer is not None:
        mixer = type(shape.state_mixer).__name__ if shape.state_mixer is not None else "one-block-per-layer"
        raise VerifyError(
            f"linear-attention / state-space layers ({mixer}) are not built by verify yet; "
            "`python -m attn_core cost` sizes them"
        )
    if shape.mla is not None:
        raise VerifyError("multi-head latent attention (config key 'kv_lora_rank') is not built by verify")
    if shape.attention_sinks:
        raise VerifyError("attention sinks (gpt-oss) are not built by verify: SDPA has no sink logit")
    if shape.learned_positions:
        raise VerifyError("learned position tables (GPT-2 style) are not built by verify; rotary models are")
    if shape.head_dim % 2:
        raise VerifyError(f"rotary embedding needs an even head width, got {shape.head_dim}")


def cut_shape(shape: ModelShape, n_layers: int, n_experts: int | None) -> ModelShape:
    """The first ``n_layers`` layers of ``shape`` (their kinds and MoE placement kept), with
    ``n_experts`` routed experts per MoE layer."""
    kinds = shape.layer_kinds
    listed = tuple(kinds[i] for i in range(n_layers))
    moe = shape.moe
    if moe is not None:
        moe_layers = LayerSet.listed(i for i in range(n_layers) if shape.is_moe_layer(i))
        moe = dataclasses.replace(moe, n_experts=n_experts or moe.n_experts, moe_layers=moe_layers)
    return dataclasses.replace(
        shape, n_layers=n_layers, layer_types=LayerKinds(n_layers, listed=listed), moe=moe,
        nextn_layers_left_out=0,
    )  # fmt: skip


def layer_params(shape: ModelShape) -> int:
    """Every weight of the layers (all routed experts), without embeddings, head and final norm."""
    p = model_params(shape)
    final_norm = p.norms // (shape.norms_per_layer * shape.n_layers + 1)
    return p.attention + p.mlp + p.experts + p.norms - final_norm


def active_layer_params(shape: ModelShape) -> int:
    """The weights one token runs through in the layers: top-k routed experts per MoE layer."""
    p = model_params(shape)
    return layer_params(shape) - p.experts + p.experts_active


def plan_build(shape: ModelShape, request: VerifyRequest) -> Plan:
    """As many of the first layers as fit the cap (at most ``request.layers``); when one layer does
    not fit and it has routed experts, as many experts as fit (never fewer than k)."""
    refuse_unbuilt(shape)
    if request.dtype not in DTYPES:
        raise VerifyError(f"dtype must be one of {', '.join(DTYPES)}, got {request.dtype!r}")
    b = DTYPE_BYTES[request.dtype]
    tokens = request.seq_len + request.decode_steps

    def need(s: ModelShape) -> tuple[int, int]:
        return layer_params(s) * b, int(kv_cache_bytes(s, tokens, request.batch, b))

    wanted = min(request.layers or shape.n_layers, shape.n_layers, MAX_LAYERS)
    notes = []
    if request.layers and request.layers > min(shape.n_layers, MAX_LAYERS):
        notes.append(
            f"asked for {request.layers:,} layers; the model has {shape.n_layers:,}, at most {MAX_LAYERS} are built"
        )
    experts = shape.moe.n_experts if shape.moe is not None else None
    for n in range(wanted, 0, -1):
        cut = cut_shape(shape, n, experts)
        if sum(need(cut)) <= request.memory_bytes:
            break
    else:
        cut = cut_shape(shape, 1, experts)
        if cut.moe is None or cut.n_moe_layers == 0:
            raise VerifyError(
                f"one layer with its KV cache needs {sum(need(cut)) / 2**30:.2f} GiB, over the "
                f"{request.memory_bytes / 2**30:.2f} GiB cap: raise the memory cap or shorten T"
            )
        per_expert = expert_params(cut, cut.moe.expert_d_ff, cut.moe.expert_bias) * b
        rest = sum(need(cut)) - cut.moe.n_experts * per_expert
        experts = min(cut.moe.n_experts, (request.memory_bytes - rest) // per_expert)
        if experts < cut.moe.top_k:
            raise VerifyError(
                f"the {request.memory_bytes / 2**30:.2f} GiB cap holds {max(experts, 0)} routed experts of "
                f"{per_expert / 2**20:,.0f} MiB, fewer than the k = {cut.moe.top_k} each token runs: raise the cap"
            )
        cut = cut_shape(shape, 1, experts)
        notes.append(
            f"one layer does not fit the cap: built with {experts} of its {shape.moe.n_experts} routed experts "
            f"(same k = {shape.moe.top_k}, same expert shape)"
        )
    if cut.n_layers < wanted:
        notes.append(f"{cut.n_layers} of {wanted} layers fit the {request.memory_bytes / 2**30:.2f} GiB cap")
    weights, cache = need(cut)
    return Plan(
        shape=cut, layers_built=cut.n_layers, experts_built=cut.moe.n_experts if cut.moe else None,
        model_layers=shape.n_layers, model_experts=shape.moe.n_experts if shape.moe else None,
        weight_bytes=weights, cache_bytes=cache, notes=tuple(notes),
    )  # fmt: skip


# -- What the cost model counts for what was built ------------------------------------------
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
    """``count`` layers' attention kernel calls of one kind: B sequences of ``q_len`` queries over
    ``kv_len`` keys (their FLOPs are in the cost model's attention term; the estimate times them)."""

    kind: str
    q_len: int
    kv_len: int
    count: int = 1


@dataclass(frozen=True)
class PhaseCounts:
    """One phase as the cost model counts it, and the pieces the estimate times."""

    flops: int  # projections + attention + MLP of the built layers (no head)
    bytes: int  # active weights (top-k experts: the floor) + KV cache written or read
    bytes_expected: int  # the same with the expected distinct experts (= bytes when dense)
    gemms: tuple[Gemm, ...]
    attention: tuple[AttentionCall, ...]


def attention_gemms(shape: ModelShape, tokens: int) -> list[Gemm]:
    """An attention layer's products for ``tokens`` tokens: fused QKV, then O."""
    d, q, kv = shape.d_model, shape.q_width, shape.kv_width
    return [Gemm(tokens, d, q + 2 * kv), Gemm(tokens, q, d)]


def mlp_gemms(shape: ModelShape, moe: bool, tokens: int) -> list[Gemm]:
    """The feed-forward products: the MLP (gate and up fused), or the router, the routed experts
    (k·tokens rows over the expected touched experts) and the shared experts."""
    d = shape.d_model
    if not moe:
        return [Gemm(tokens, d, (shape.mlp_matrices - 1) * shape.d_ff), Gemm(tokens, shape.d_ff, d)]
    m = shape.moe
    touched = experts_touched_expected(m.n_experts, m.top_k, tokens)
    rows = m.top_k * tokens / touched
    out = [Gemm(tokens, d, m.n_experts), Gemm(rows, d, 2 * m.expert_d_ff, touched),
           Gemm(rows, m.expert_d_ff, d, touched)]  # fmt: skip
    if m.n_shared:
        out += [Gemm(tokens, d, 2 * m.shared_d_ff, m.n_shared), Gemm(tokens, m.shared_d_ff, d, m.n_shared)]
    if m.shared_gate:
        out.append(Gemm(tokens, d, 1))
    return out


# The mixer products of each layer kind (with MIXERS and ATTENTION_KEYS below: a new kind adds one
# entry to each). Every kind's products plus the MLP's sum to the cost model's projections + MLP.
MIXER_GEMMS: dict[str, Callable[[ModelShape, int], list[Gemm]]] = {
    "full": attention_gemms,
    "sliding": attention_gemms,
    "chunked": attention_gemms,
}


def _gemms(shape: ModelShape, tokens: int) -> tuple[Gemm, ...]:
    """Every block's products, grouped by (layer kind, MoE or dense) as the cost model sums."""
    return tuple(
        dataclasses.replace(g, count=g.count * n)
        for (kind, moe), n in shape.layer_census.items()
        for g in MIXER_GEMMS[kind](shape, tokens) + mlp_gemms(shape, moe, tokens)
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


def prefill_counts(shape: ModelShape, T: int, batch: int, b: int) -> PhaseCounts:
    """The cost model's causal prefill of B × T tokens over the built layers (no head) and the KV
    cache it writes."""
    f = prefill_flops(shape, T, batch, causal=True)
    kv = int(kv_cache_bytes(shape, T, batch, b))
    floor, expected = _weight_bytes(shape, b, batch * T)
    calls = tuple(AttentionCall(kind, T, T, n) for kind, n in shape.kind_counts.items())
    return PhaseCounts(int(f.projections + f.attention + f.mlp), floor + kv, expected + kv,
                       _gemms(shape, batch * T), calls)  # fmt: skip


def decode_counts(shape: ModelShape, context: int, batch: int, b: int) -> PhaseCounts:
    """One decode step with ``context`` tokens cached: the cost model's FLOPs of token context + 1
    (prefill to context + 1 minus prefill to context), the active weights and the cache read."""
    f1, f0 = (prefill_flops(shape, t, batch, causal=True) for t in (context + 1, context))
    flops = sum(getattr(f1, p) - getattr(f0, p) for p in ("projections", "attention", "mlp"))
    kv = int(kv_cache_bytes(shape, context, batch, b))
    floor, expected = _weight_bytes(shape, b, batch)
    calls = tuple(AttentionCall(kind, 1, context + 1, n) for kind, n in shape.kind_counts.items())
    return PhaseCounts(int(flops), floor + kv, expected + kv, _gemms(shape, batch), calls)


# -- The probe: this device's rates, measured apart from the model -----------------------------
def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def clock(device: str) -> Callable[[], float]:
    """The clock every time here is read on: on a CPU running one thread, that thread's own CPU
    time (``time.thread_time``), which other processes' time slices on a shared machine do not
    inflate; otherwise wall time (after a synchronize on a GPU)."""
    return time.thread_time if device == "cpu" and torch.get_num_threads() == 1 else time.perf_counter


def _timed(fn: Callable[[], object], device: str) -> tuple[float, float]:
    """(seconds on ``clock(device)``, wall seconds) of one call."""
    now = clock(device)
    _sync(device)
    start, wall = now(), time.perf_counter()
    fn()
    _sync(device)
    return now() - start, time.perf_counter() - wall


def _best_s(fn: Callable[[], object], device: str, rounds: int = PROBE_ROUNDS) -> float:
    """Best time of ``rounds`` calls after one warm-up, on ``clock(device)``."""
    fn()
    return min(_timed(fn, device)[0] for _ in range(rounds))


@dataclass
class Probe:
    """What the probe measured: the fastest matmul and stream (the roofline's peaks), each product
    shape's rate with cold weights, and each attention call's time."""

    device: str
    dtype: str
    matmul_flop_per_s: float = 0.0
    bandwidth_bytes_per_s: float = 0.0
    gemm_flop_per_s: dict[tuple[int, int, int], float] = field(default_factory=dict)
    attention_s: dict[tuple[str, int, int], float] = field(default_factory=dict)
    seconds: float = 0.0  # how long probing took

    def to_json(self) -> dict:
        gemms = [{"m": m, "k": k, "n": n, "flop_per_s": r} for (m, k, n), r in self.gemm_flop_per_s.items()]
        calls = [
            {"kind": kind, "q_len": q, "kv_len": s, "ms": 1e3 * t}
            for (kind, q, s), t in self.attention_s.items()
        ]
        return {
            "matmul_flop_per_s": self.matmul_flop_per_s,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "gemm_flop_per_s": gemms,
            "attention_ms": calls,
            "seconds": self.seconds,
        }


def probed_shape(m: int, k: int, n: int, device: str) -> tuple[int, int, int]:
    """The shape the probe times for a product of (m × k) by (k × n): at most PROBE_ROWS rows
    and PROBE_COLS columns (beyond them the rate no longer changes much)."""
    return min(m, PROBE_ROWS[device]), k, min(n, PROBE_COLS[device])


def probe_gemm(m: int, k: int, n: int, dtype: torch.dtype, device: str) -> float:
    """FLOP/s of (m × k) @ (k × n) as given. With few rows the (k × n) operand is streamed, so the
    probe cycles through enough distinct copies of it to exceed COLD_BYTES: cold in cache, as the
    weights of a model larger than the cache are."""
    b = torch.finfo(dtype).bits // 8
    cold = m < COMPUTE_ROWS  # few rows: the product streams its weights, which must come from DRAM
    copies = max(1, min(64, math.ceil(COLD_BYTES[device] / (k * n * b)))) if cold else 1
    x = torch.randn(m, k, device=device, dtype=dtype)
    ws = [torch.randn(k, n, device=device, dtype=dtype) for _ in range(copies)]
    out = torch.empty(m, n, device=device, dtype=dtype)

    def run() -> None:
        for w in ws:
            torch.matmul(x, w, out=out)

    return 2.0 * m * k * n * copies / _best_s(run, device)


def probe_stream(device: str, dtype: torch.dtype) -> float:
    """Bytes/s of the faster of a streaming read (a sum) and a copy (2 × bytes moved)."""
    n = STREAM_BYTES[device] // (torch.finfo(dtype).bits // 8)
    src = torch.randn(n, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    nbytes = src.numel() * src.element_size()
    read = nbytes / _best_s(lambda: src.sum(), device)
    copy = 2 * nbytes / _best_s(lambda: dst.copy_(src), device)
    return max(read, copy)


def probe_attention(
    shape: ModelShape, call: AttentionCall, batch: int, dtype: torch.dtype, device: str
) -> float:
    """Seconds of one attention kernel call at this layer kind's shape (q, and the cache's K, V)."""
    h, kv_h, dh = shape.n_heads, shape.n_kv_heads, shape.head_dim
    q = torch.randn(batch, h, call.q_len, dh, device=device, dtype=dtype)
    k, v = (torch.randn(batch, kv_h, call.kv_len, dh, device=device, dtype=dtype) for _ in range(2))
    keys = ATTENTION_KEYS[call.kind](shape, call.q_len, call.kv_len)
    return _best_s(lambda: attend(q, k, v, keys), device)


def probe_device(plan: Plan, request: VerifyRequest, device: str, phases: tuple[PhaseCounts, ...]) -> Probe:
    """Probe every product shape and attention call of ``phases`` and the device's peaks, before
    any layer is built."""
    start = time.perf_counter()
    dtype = DTYPES[request.dtype]
    probe = Probe(device, request.dtype)
    peak_n = PEAK_N[device]
    rates = [probe_gemm(peak_n, peak_n, peak_n, dtype, device)]
    timed: dict[tuple[int, int, int], float] = {}
    for phase in phases:
        for g in phase.gemms:
            shape = probed_shape(*g.probe_shape, device)
            if shape not in timed:
                timed[shape] = probe_gemm(*shape, dtype, device)
            probe.gemm_flop_per_s[g.probe_shape] = timed[shape]
        for call in phase.attention:
            key = (call.kind, call.q_len, call.kv_len)
            if key not in probe.attention_s:
                probe.attention_s[key] = probe_attention(plan.shape, call, request.batch, dtype, device)
    probe.matmul_flop_per_s = max([*rates, *timed.values()])
    # a product with few rows streams its weights: its bytes / time is a bandwidth the roofline must allow
    b = DTYPE_BYTES[request.dtype]
    streamed = [r / (2 * m) * b for (m, _, _), r in timed.items()]
    probe.bandwidth_bytes_per_s = max([probe_stream(device, dtype), *streamed])
    probe.seconds = time.perf_counter() - start
    return probe


# -- Bound and estimate: counts × probe, never the model's own timing ------------------------
def bound_ms(counts: PhaseCounts, probe: Probe) -> float:
    """max(FLOPs / peak matmul rate, bytes / peak bandwidth): the roofline at this device's peaks."""
    return 1e3 * max(counts.flops / probe.matmul_flop_per_s, counts.bytes / probe.bandwidth_bytes_per_s)


def estimate_ms(counts: PhaseCounts, probe: Probe) -> float:
    """Σ products 2mkn / rate(m, k, n) + Σ attention calls' probed time (see the module docstring)."""
    gemm_s = sum(g.flops / probe.gemm_flop_per_s[g.probe_shape] for g in counts.gemms)
    attn_s = sum(c.count * probe.attention_s[(c.kind, c.q_len, c.kv_len)] for c in counts.attention)
    return 1e3 * (gemm_s + attn_s)


# -- The layers, in torch: which keys each kind sees, and one block ---------------------------
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
    q_len: int, kv_len: int, allowed: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
) -> Keys:
    i = torch.arange(kv_len - q_len, kv_len)[:, None]  # query positions
    j = torch.arange(kv_len)[None, :]
    return Keys(0, allowed(i, j) & (j <= i))


def _sliding_keys(shape: ModelShape, q_len: int, kv_len: int) -> Keys:
    W = shape.sliding_window
    if q_len == 1:  # decode: the last W keys
        return Keys(max(0, kv_len - W), "all")
    if kv_len <= W:
        return _full_keys(shape, q_len, kv_len)
    return _band_keys(q_len, kv_len, lambda i, j: j > i - W)


def _chunked_keys(shape: ModelShape, q_len: int, kv_len: int) -> Keys:
    C = shape.attention_chunk_size
    if q_len == 1:  # decode: the keys of the query's own chunk
        return Keys((kv_len - 1) // C * C, "all")
    if kv_len <= C:
        return _full_keys(shape, q_len, kv_len)
    return _band_keys(q_len, kv_len, lambda i, j: j // C == i // C)


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


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, half-split form (Llama): x·cos + rotate_half(x)·sin. x (B, H, T, d_h)."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    """One attention layer of ``kind``: fused QKV, QK-norm if the model has it, rotary, its own KV
    cache (B, H_kv, T_max, d_h), SDPA, O."""

    def __init__(self, shape: ModelShape, kind: str, **kw) -> None:
        super().__init__()
        self.shape, self.kind = shape, kind
        d, q, kv = shape.d_model, shape.q_width, shape.kv_width
        out_bias = shape.attention_bias if shape.output_bias is None else shape.output_bias
        self.qkv = nn.Linear(d, q + 2 * kv, bias=shape.attention_bias, **kw)
        self.o = nn.Linear(q, d, bias=out_bias, **kw)
        self.q_norm = nn.RMSNorm(shape.head_dim, **kw) if shape.qk_norm else None
        self.k_norm = nn.RMSNorm(shape.head_dim, **kw) if shape.qk_norm else None
        self.cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def allocate(self, batch: int, max_tokens: int) -> None:
        w = self.o.weight
        size = (batch, self.shape.n_kv_heads, max_tokens, self.shape.head_dim)
        self.cache = (
            torch.zeros(size, dtype=w.dtype, device=w.device),
            torch.zeros(size, dtype=w.dtype, device=w.device),
        )

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        s = self.shape
        q, k, v = self.qkv(x).split([s.q_width, s.kv_width, s.kv_width], dim=-1)
        q = q.view(B, T, s.n_heads, s.head_dim).transpose(1, 2)  # (B, h, T, d_h)
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
        return self.o(o.transpose(1, 2).reshape(B, T, s.q_width))


class GatedMLP(nn.Module):
    """SwiGLU (gate and up fused) or, ``gated=False``, up → GELU → down."""

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
        self.experts = nn.ModuleList(
            GatedMLP(d, m.expert_d_ff, bias=m.expert_bias, **kw) for _ in range(m.n_experts)
        )
        self.shared = nn.ModuleList(GatedMLP(d, m.shared_d_ff, **kw) for _ in range(m.n_shared))
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
    has four norms a layer."""

    def __init__(self, shape: ModelShape, layer: int, **kw) -> None:
        super().__init__()
        norm = (lambda: nn.RMSNorm(shape.d_model, **kw)) if shape.norm_kind == "rms" else (
            lambda: nn.LayerNorm(shape.d_model, **kw))  # fmt: skip
        self.norms = nn.ModuleList(norm() for _ in range(shape.norms_per_layer))
        self.mixer = MIXERS[shape.layer_kinds[layer]](shape, shape.layer_kinds[layer], **kw)
        if shape.is_moe_layer(layer):
            self.mlp = MoEMLP(shape, **kw)
        else:
            self.mlp = GatedMLP(shape.d_model, shape.d_ff, shape.mlp_kind == "gated", shape.mlp_bias, **kw)

    def forward(self, x: torch.Tensor, pos: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        post = len(self.norms) == 4
        h = self.mixer(self.norms[0](x), pos, cos, sin)
        x = x + (self.norms[2](h) if post else h)
        h = self.mlp(self.norms[1](x))
        return x + (self.norms[3](h) if post else h)


# The mixer each layer kind builds: (shape, kind, dtype=, device=) -> a module with allocate(B, T_max)
# and forward(x, pos, cos, sin). A linear-attention or state-space kind adds one entry here.
MIXERS: dict[str, Callable[..., nn.Module]] = {"full": Attention, "sliding": Attention, "chunked": Attention}


class Layers(nn.Module):
    """The built layers, one rotary table and every layer's cache."""

    def __init__(self, shape: ModelShape, max_tokens: int, **kw) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(shape, i, **kw) for i in range(shape.n_layers))
        half = shape.head_dim // 2
        freqs = torch.outer(
            torch.arange(max_tokens, dtype=torch.float32), 10_000.0 ** (-torch.arange(half) / half)
        )
        angles = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = (t.to(**kw) for t in (angles.cos(), angles.sin()))

    def allocate(self, batch: int, max_tokens: int) -> None:
        for block in self.blocks:
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


# -- The run and the result ----------------------------------------------------------------------
def measure(layers: Layers, request: VerifyRequest, device: str) -> tuple[list, list]:
    """([(ms, wall ms)] of PREFILL_REPEATS prefills, [(ms, wall ms)] of each decode step), ms on
    ``clock(device)``."""
    d, dtype = layers.blocks[0].norms[0].weight.shape[0], DTYPES[request.dtype]
    B, T = request.batch, request.seq_len
    with torch.random.fork_rng(devices=[]), torch.inference_mode():
        torch.manual_seed(1)
        x = torch.randn(B, T, d, dtype=dtype, device=device)
        steps = torch.randn(request.decode_steps, B, 1, d, dtype=dtype, device=device)
        prefill = [_timed(lambda: layers(x, 0), device) for _ in range(PREFILL_REPEATS)]
        decode = [_timed(lambda i=i: layers(steps[i], T + i), device) for i in range(request.decode_steps)]
    return [(1e3 * c, 1e3 * w) for c, w in prefill], [(1e3 * c, 1e3 * w) for c, w in decode]


@dataclass(frozen=True)
class PhaseResult:
    """One phase: the cost model's counts, the bound, the calibrated estimate, the measurement."""

    counts: PhaseCounts
    bound_ms: float
    estimate_ms: float
    measured_ms: float  # on the run's clock (see `clock`)
    measured_wall_ms: float  # the same run's wall time

    @property
    def error_pct(self) -> float:
        """(estimate − measured) / measured × 100: positive when the estimate is too slow."""
        return 100.0 * (self.estimate_ms - self.measured_ms) / self.measured_ms

    def to_json(self) -> dict:
        c = self.counts
        return {"flops": c.flops, "bytes": c.bytes, "bound_ms": self.bound_ms, "estimate_ms": self.estimate_ms,
                "measured_ms": self.measured_ms, "measured_wall_ms": self.measured_wall_ms, "error_pct": self.error_pct, "bytes_expected": c.bytes_expected}  # fmt: skip


@dataclass(frozen=True)
class VerifyResult:
    """A whole check: what was built, the probe, and the two phases."""

    model: str
    device: str  # "cpu" or "cuda"
    device_name: str
    dtype: str
    clock: str  # "thread CPU time" (a CPU on one thread) or "wall"
    request: VerifyRequest
    plan: Plan
    probe: Probe
    prefill: PhaseResult
    decode_step: PhaseResult
    decode_context: int  # tokens cached at the decode step counted (the middle step)
    decode_ms_each: tuple[float, ...]
    load_average: tuple[float | None, float | None]  # before, after
    seconds: float

    def to_json(self) -> dict:
        r, p = self.request, self.plan
        return {
            "model": self.model, "device": self.device, "device_name": self.device_name, "dtype": self.dtype, "clock": self.clock,
            "threads": torch.get_num_threads() if self.device == "cpu" else None,
            "layers_built": p.layers_built, "model_layers": p.model_layers,
            "experts_built": p.experts_built, "model_experts": p.model_experts,
            "weight_bytes_built": p.weight_bytes, "cache_bytes": p.cache_bytes, "memory_cap_bytes": r.memory_bytes,
            "seq_len": r.seq_len, "batch": r.batch, "decode_steps": r.decode_steps, "decode_context": self.decode_context,
            "probe": self.probe.to_json(), "prefill": self.prefill.to_json(), "decode_step": self.decode_step.to_json(),
            "decode_ms_each": list(self.decode_ms_each), "notes": list(p.notes),
            "load_average": list(self.load_average), "seconds": self.seconds,
        }  # fmt: skip


_RUN_LOCK = threading.Lock()  # one check at a time on this machine: each one uses every core


class VerifyBusy(RuntimeError):
    """Another check holds the machine."""


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    from attn_core.bench.device import _cpu_name

    return f"{_cpu_name()}, {torch.get_num_threads()} threads"


def verify(shape: ModelShape, request: VerifyRequest, wait: bool = True) -> VerifyResult:
    """Plan, count, probe, build, run: see the module docstring. VerifyError for what cannot be
    built; VerifyBusy when ``wait`` is False and another check is running."""
    from attn_core.bench.device import load_average

    if not _RUN_LOCK.acquire(blocking=wait):
        raise VerifyBusy("another check is running on this machine; try again when it ends")
    threads = torch.get_num_threads()
    try:
        start, load_before = time.perf_counter(), load_average()
        device = select_device(request.device)
        if device == "cpu" and request.threads is not None:
            torch.set_num_threads(request.threads)
        plan = plan_build(shape, request)
        b = DTYPE_BYTES[request.dtype]
        context = request.seq_len + (request.decode_steps - 1) // 2
        counts = (prefill_counts(plan.shape, request.seq_len, request.batch, b),
                  decode_counts(plan.shape, context, request.batch, b))  # fmt: skip
        probe = probe_device(plan, request, device, counts)  # before any layer exists
        layers = build_layers(plan, request, device)
        prefill, decode = measure(layers, request, device)
        del layers
        phases = [PhaseResult(c, bound_ms(c, probe), estimate_ms(c, probe), *min(runs))
                  for c, runs in zip(counts, (prefill, decode), strict=True)]  # fmt: skip
        return VerifyResult(
            model=shape.name, device=device, device_name=device_name(device), dtype=request.dtype,
            clock="thread CPU time" if clock(device) is time.thread_time else "wall",
            request=request, plan=plan, probe=probe, prefill=phases[0], decode_step=phases[1],
            decode_context=context, decode_ms_each=tuple(ms for ms, _ in decode),
            load_average=(load_before, load_average()), seconds=time.perf_counter() - start,
        )  # fmt: skip
    finally:
        torch.set_num_threads(threads)
        _RUN_LOCK.release()
