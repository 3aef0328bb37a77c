"""The probe: this device's rates, measured apart from the model — matmul at each product's shape
(weights cold in cache, as in a forward), the peak matmul and bandwidth, each attention kernel
call and each linear layer's core (on random inputs at the layer's head shapes) — and the clock
every time is read on; then the bound and the estimate, counts × probe."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.roofline import Roofline, time_phase
from attn_core.kernels.records import DTYPES
from attn_core.verify.counts import AttentionCall, PhaseCounts
from attn_core.verify.layers import ATTENTION_KEYS, STATE_CORES, attend
from attn_core.verify.peak import COLD_BYTES, COMPUTE_ROWS, PEAK_N, PROBE_COLS, PROBE_ROWS, STREAM_BYTES
from attn_core.verify.plan import Plan, VerifyRequest

PROBE_ROUNDS = 3


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def clock(device: str) -> Callable[[], float]:
    """The clock every time here is read on: on a CPU running one thread, that thread's own CPU
    time (``time.thread_time``), which other processes' time slices on a shared machine do not
    inflate; otherwise wall time (after a synchronize on a GPU)."""
    return time.thread_time if device == "cpu" and torch.get_num_threads() == 1 else time.perf_counter


def time_call(fn: Callable[[], object], device: str) -> tuple[float, float]:
    """(seconds on ``clock(device)``, wall seconds) of one call."""
    now = clock(device)
    _sync(device)
    start, wall = now(), time.perf_counter()
    fn()
    _sync(device)
    return now() - start, time.perf_counter() - wall


def _best_s(
    fn: Callable[[], object],
    device: str,
    rounds: int = PROBE_ROUNDS,
    before: Callable[[], object] | None = None,
) -> float:
    """Best time of ``rounds`` calls after one warm-up, on ``clock(device)``; ``before`` runs
    untimed ahead of each call."""
    fn()
    times = []
    for _ in range(rounds):
        if before is not None:
            before()
        times.append(time_call(fn, device)[0])
    return min(times)


@dataclass
class Probe:
    """What the probe measured: the fastest matmul and stream (the roofline's peaks), each product
    shape's rate with cold weights, and each mixer call's time (attention, or a linear core)."""

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
            "attention_ms": [c for c in calls if c["kind"] in ATTENTION_KEYS],
            "state_core_ms": [c for c in calls if c["kind"] not in ATTENTION_KEYS],
            "seconds": self.seconds,
        }


def probed_shape(m: int, k: int, n: int, device: str) -> tuple[int, int, int]:
    """The shape the probe times for a product of (m × k) by (k × n): one with many rows (from
    COMPUTE_ROWS on) at most PROBE_ROWS rows and PROBE_COLS columns (beyond them the rate no
    longer changes much); one with fewer rows as it is, for its rate is that of streaming its
    weights, which a longer stream does faster (on the dev machine's one thread a 470 MB matrix
    streamed at ~24 GB/s, 32 MB ones at ~21: capped, Llama 3 8B's decode bound came out above
    its run)."""
    if m < COMPUTE_ROWS:
        return m, k, n
    return min(m, PROBE_ROWS[device]), k, min(n, PROBE_COLS[device])


def flush_cache(device: str) -> Callable[[], object]:
    """A call that copies COLD_BYTES (allocated once, here): run untimed before a timed call, it
    leaves that call's operands out of the cache, as in a model's forward, where every other
    matrix of the layers passes through the cache between two uses of one."""
    src = torch.zeros(COLD_BYTES[device] // 4, device=device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def probe_gemm(m: int, k: int, n: int, dtype: torch.dtype, device: str) -> float:
    """FLOP/s of (m × k) @ (k × n) as given, the weights stored as nn.Linear holds them (n × k,
    multiplied transposed), cold in cache at the start of every timed call, as the weights of a
    model larger than the cache are in its forward (each matrix read once per pass). With few rows
    the product streams its weights, so the probe cycles through enough distinct copies of them to
    exceed COLD_BYTES (a longer stream runs faster); with many, one copy, the cache flushed
    before each call. Many rows are not enough to hide the read: on the dev machine's one thread
    in bf16, 64 rows over cold weights ran at ~400 GFLOP/s against ~600 hot, 256 rows ~5% slower
    (RESULTS.md, "Why verify's prefill estimate fell short"); a hot probe put Gemma 4's and
    OLMo 3's prefill estimates 35–46% under their runs."""
    b = dtype.itemsize
    few = m < COMPUTE_ROWS  # few rows: the product's time is its weights' stream from DRAM
    copies = max(1, min(64, math.ceil(COLD_BYTES[device] / (k * n * b)))) if few else 1
    x = torch.randn(m, k, device=device, dtype=dtype)
    ws = [torch.randn(n, k, device=device, dtype=dtype) for _ in range(copies)]
    out = torch.empty(m, n, device=device, dtype=dtype)

    def run() -> None:
        for w in ws:
            torch.mm(x, w.t(), out=out)

    return 2.0 * m * k * n * copies / _best_s(run, device, before=None if few else flush_cache(device))


def probe_stream(device: str, dtype: torch.dtype) -> float:
    """Bytes/s of the faster of a streaming read (a sum) and a copy (2 × bytes moved)."""
    n = STREAM_BYTES[device] // dtype.itemsize
    src = torch.randn(n, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    nbytes = src.numel() * src.element_size()
    read = nbytes / _best_s(lambda: src.sum(), device)
    copy = 2 * nbytes / _best_s(lambda: dst.copy_(src), device)
    return max(read, copy)


def probe_attention(
    shape: ModelShape, call: AttentionCall, batch: int, dtype: torch.dtype, device: str
) -> float:
    """Seconds of one attention kernel call at this layer kind's shape (q, and the cache's K, V;
    the kind's d_h and H_kv: Gemma 4's full layers have wider heads)."""
    h, kv_h, dh = shape.n_heads, shape.kv_heads_of(call.kind), shape.head_dim_of(call.kind)
    q = torch.randn(batch, h, call.q_len, dh, device=device, dtype=dtype)
    k, v = (torch.randn(batch, kv_h, call.kv_len, dh, device=device, dtype=dtype) for _ in range(2))
    keys = ATTENTION_KEYS[call.kind](shape, call.q_len, call.kv_len)
    return _best_s(lambda: attend(q, k, v, keys), device)


def probe_core(shape: ModelShape, call: AttentionCall, batch: int, dtype: torch.dtype, device: str) -> float:
    """Seconds of one linear layer's core (`STATE_CORES`) alone on random inputs at its head shapes:
    a prompt of q_len tokens, or q_len tokens after a state. Each call starts with the cache
    flushed (COLD_BYTES copied, untimed), as in the run, where the other layers' weights pass
    through it between two calls of one layer: its state and inputs then come from memory (a
    decode step's core: ~1.5× its hot time here)."""
    run = STATE_CORES[call.kind](shape, call.q_len, call.kv_len, batch, dtype, device)
    return _best_s(run, device, before=flush_cache(device))


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
                timer = probe_attention if call.kind in ATTENTION_KEYS else probe_core
                probe.attention_s[key] = timer(plan.shape, call, request.batch, dtype, device)
    probe.matmul_flop_per_s = max([*rates, *timed.values()])
    # a product with few rows streams its weights: its bytes / time is a bandwidth the roofline must allow
    b = DTYPE_BYTES[request.dtype]
    streamed = [r / (2 * m) * b for (m, _, _), r in timed.items()]
    probe.bandwidth_bytes_per_s = max([probe_stream(device, dtype), *streamed])
    probe.seconds = time.perf_counter() - start
    return probe


# -- Bound and estimate: counts × probe, never the model's own timing ------------------------
def bound_ms(counts: PhaseCounts, probe: Probe) -> float:
    """max(FLOPs / peak matmul rate, bytes / peak bandwidth): the built layers' counts priced by the
    cost model's `time_phase` at this device's probed peaks."""
    peaks = Roofline(probe.matmul_flop_per_s, probe.bandwidth_bytes_per_s)
    return 1e3 * time_phase(counts.as_count(), peaks).bound_s


def estimate_ms(counts: PhaseCounts, probe: Probe) -> float:
    """Σ products 2mkn / rate(m, k, n) + Σ mixer calls' probed time (see the package docstring)."""
    gemm_s = sum(g.flops / probe.gemm_flop_per_s[g.probe_shape] for g in counts.gemms)
    attn_s = sum(c.count * probe.attention_s[(c.kind, c.q_len, c.kv_len)] for c in counts.attention)
    return 1e3 * (gemm_s + attn_s)
