"""The run and the result: the built layers timed (prefills, decode steps), each phase's counts,
bound, estimate and measurement, and `verify`, which does it all, one check at a time.

The method, for the whole check (every module of `attn_core.verify` follows it):

The cost model checked against a real run on this machine: a model's layers built at their true
shapes with random weights, a prefill of T tokens and M decode steps timed, beside the roofline
bound and a calibrated estimate.

Who builds them: given the model's config.json that transformers builds, transformers itself
(`hf`: its base model of the planned layers and experts, run through its own forward and cache,
``built_by`` "transformers"); otherwise — remote code, a type transformers does not have, a
shape with no config — the lab's layers below, from the cost model's reading (``built_by``
"lab"). The counts, the probe and the estimate are the cost model's either way.

Three figures per phase (the prefill, one decode step), each from a different source:

- ``flops`` and ``bytes`` come from the cost model (`attn_core.cost`) for exactly what was built
  (`plan_build`: the first N layers, fewer routed experts when one layer is over the memory cap
  on the planned peak, at most MAX_EXPERTS;
  a hybrid's first layer of each kind when no run of first layers holding them all fits),
  in the convention of ``python -m attn_core cost``: matrix products only, 2 FLOPs per
  multiply-add (a Gated DeltaNet or Mamba-2 layer: its maps and its core's products,
  `cost.mixers`, chunked in prefill, recurrent in decode); bytes = the active weights of the built layers (top-k experts:
  the floor) plus the KV cache and the linear layers' state, written (prefill) or read (decode).
  The embedding table and output head are not built.
- ``bound_ms`` = max(flops / peak, bytes / bandwidth) at this device's probed peaks (the fastest
  matmul and the fastest streaming read or copy the probe saw): the roofline, a lower bound.
- ``estimate_ms``, calibrated: Σ over the phase's matrix products of 2·m·k·n / rate(m, k, n), the
  rate the probe measured at that product's shape (weights cold in cache, as in a forward),
  plus the attention kernel's time probed at the layer's shape. A mixture of experts' routed
  products are counted over the E·(1 − (1 − k/E)^N) distinct experts that N tokens touch under
  uniform routing, k·N / that many rows each: the same FLOPs as the cost model's, at the shapes
  that run. A linear layer's core (its conv, its scan — the delta rule or SSD — and gated norm:
  small per-head products over chunks, far below the matmul rate) is probed alone at the layer's
  head shapes on random inputs, with the cache flushed before each call, as attention is probed. The terms are summed, not maxed: a layer's products
  and its mixer run one after another, each already at its own mix of compute and memory time.
  Norms, rotary, the activation and the residual adds are left out (as in the cost model's FLOPs).
- ``measured_ms``: the fastest of ``PREFILL_REPEATS`` prefills, and of the M decode steps (which
  differ by one cached token each). On a CPU the check runs on one thread by default and every
  time, probe and run alike, is that thread's CPU time (`clock`): on a machine shared with other
  work, wall time measures the others' time slices too (on the dev machine's 2 cores at load 6–8
  the same product timed 2–4× apart a few seconds later), CPU time does not. The wall time
  is kept beside it (``measured_wall_ms``). On a GPU: wall time, synchronized.

The probe runs before the layers are built and on tensors of its own, so no estimate ever sees
the model run's timing. A layer kind is one entry in each of three tables: ``MIXERS`` (its torch
module, `layers`), ``MIXER_GEMMS`` (its matrix products, `counts`) and ``ATTENTION_KEYS`` (the keys
a query sees, for the run and for the kernel probe, `layers`); counting, probing and timing are
shared. A linear-attention or state-space kind adds its module, its products and, in place of the
keys, its core for the probe (``STATE_CORES``): Gated DeltaNet (`deltanet`) and Mamba-2
(`mamba2`) are built; Mamba and KDA are refused by name. Attention is torch SDPA (its fused CPU
flash kernel, GQA without repeating K/V): the kernel a serving stack runs, with no L × S matrix, as
the cost model's bytes assume — `attn_core.attention` is the teaching reference and keeps every
weight.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import torch

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.roofline import Roofline, time_phase
from attn_core.kernels.records import DTYPES
from attn_core.verify import hf
from attn_core.verify.counts import PhaseCounts, decode_counts, prefill_counts
from attn_core.verify.layers import Layers, build_layers
from attn_core.verify.plan import Plan, VerifyRequest, plan_build, select_device
from attn_core.verify.probe import (
    PROBE_ROUNDS,
    Probe,
    bound_ms,
    clock,
    estimate_ms,
    probe_device,
    time_call,
)

PREFILL_REPEATS = 2  # the first run also warms the allocator and the thread pool
# For the time a check is expected to take, before it runs: a slow rate (one CPU thread of the dev
# machine at load 6–8 ran fp32 products at 8–40 GFLOP/s), each module call's Python overhead and
# each module's construction (both measured at ~20–60 µs on the dev machine), the child's start
# (importing torch: 2–6 s there) and the probe (PROBE_ROUNDS + 1 calls of each phase's products).
SLOW_FLOP_PER_S = {"cpu": 4e9, "cuda": 1e12}
CALL_S = 1e-4
START_S = 8.0


def _ms(runs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(1e3 * c, 1e3 * w) for c, w in runs]


def measure(layers: Layers, request: VerifyRequest, device: str) -> tuple[list, list]:
    """([(ms, wall ms)] of PREFILL_REPEATS prefills, [(ms, wall ms)] of each decode step), ms on
    ``clock(device)``."""
    d, dtype = layers.blocks[0].norms[0].weight.shape[0], DTYPES[request.dtype]
    B, T = request.batch, request.seq_len
    with torch.random.fork_rng(devices=[]), torch.inference_mode():
        torch.manual_seed(1)
        x = torch.randn(B, T, d, dtype=dtype, device=device)
        steps = torch.randn(request.decode_steps, B, 1, d, dtype=dtype, device=device)
        prefill = [time_call(lambda: layers(x, 0), device) for _ in range(PREFILL_REPEATS)]
        decode = [time_call(lambda i=i: layers(steps[i], T + i), device) for i in range(request.decode_steps)]
    return _ms(prefill), _ms(decode)


@dataclass(frozen=True)
class PhaseResult:
    """One phase: the cost model's counts, the bound, the calibrated estimate, the measurement.
    A model the formulas do not read (`model_read`) has counts from its build and no estimate."""

    counts: PhaseCounts
    bound_ms: float
    estimate_ms: float | None
    measured_ms: float  # on the run's clock (see `clock`)
    measured_wall_ms: float  # the same run's wall time

    @property
    def error_pct(self) -> float | None:
        """(estimate − measured) / measured × 100: positive when the estimate is too slow."""
        if self.estimate_ms is None:
            return None
        return 100.0 * (self.estimate_ms - self.measured_ms) / self.measured_ms

    def to_json(self) -> dict:
        c = self.counts
        return {
            "flops": c.flops,
            "bytes": c.bytes,
            "bound_ms": self.bound_ms,
            "estimate_ms": self.estimate_ms,
            "measured_ms": self.measured_ms,
            "measured_wall_ms": self.measured_wall_ms,
            "error_pct": self.error_pct,
            "bound_over_measured": self.bound_ms / self.measured_ms,
            "bytes_expected": c.bytes_expected,
        }


@dataclass(frozen=True)
class ModelBuilt:
    """What a check built where the formulas do not read the model (`model_read`, no `Plan`):
    transformers' first layers, their sizes counted from the model itself."""

    layers_built: int
    model_layers: int
    experts_built: int | None
    model_experts: int | None
    params_built: int
    weight_bytes: int
    cache_bytes: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class VerifyResult:
    """A whole check: what was built, the probe, and the two phases. Counted by the formulas,
    ``plan`` says what was built; counted from the model itself (`model_read`), ``plan`` is None
    and ``built`` says it."""

    model: str
    device: str  # "cpu" or "cuda"
    device_name: str
    dtype: str
    clock: str  # "thread CPU time" (a CPU on one thread) or "wall"
    request: VerifyRequest
    plan: Plan | None  # None: counted from the model itself (``built``)
    probe: Probe
    prefill: PhaseResult
    decode_step: PhaseResult
    decode_context: int  # tokens cached at the decode step counted (the middle step)
    decode_ms_each: tuple[float, ...]
    load_average: tuple[float | None, float | None]  # before, after
    seconds: float
    built: ModelBuilt | None = None  # what was built where ``plan`` is None

    def to_json(self) -> dict:
        if self.plan is None:
            return self._model_read_json()
        r, p = self.request, self.plan
        return {
            "model": self.model,
            "device": self.device,
            "device_name": self.device_name,
            "dtype": self.dtype,
            "clock": self.clock,
            "threads": torch.get_num_threads() if self.device == "cpu" else None,
            # "transformers": its own modules of the named model (`hf`); "lab": the lab's layers,
            # built from the formulas' reading (the reason is the first note)
            "built_by": p.built_by,
            "params_built": p.params_built,
            "layers_built": p.layers_built,
            "model_layers": p.model_layers,
            "layer_indices_built": list(p.layer_indices),
            "layer_kinds_built": dict(p.shape.kind_counts),
            "experts_built": p.experts_built,
            "model_experts": p.model_experts,
            "weight_bytes_built": p.weight_bytes,
            "cache_bytes": p.cache_bytes,
            "memory_cap_bytes": r.memory_bytes,
            "seq_len": r.seq_len,
            "batch": r.batch,
            "decode_steps": r.decode_steps,
            "decode_context": self.decode_context,
            "probe": self.probe.to_json(),
            "prefill": self.prefill.to_json(),
            "decode_step": self.decode_step.to_json(),
            "decode_ms_each": list(self.decode_ms_each),
            "notes": list(p.notes),
            "load_average": list(self.load_average),
            "seconds": self.seconds,
        }

    def _model_read_json(self) -> dict:
        """The JSON of a check counted from the model itself (``counts_by`` "model")."""
        r, b = self.request, self.built
        return {
            "model": self.model,
            "counts_by": "model",
            "built_by": "transformers",
            "device": self.device,
            "device_name": self.device_name,
            "dtype": self.dtype,
            "clock": self.clock,
            "layers_built": b.layers_built,
            "model_layers": b.model_layers,
            "experts_built": b.experts_built,
            "model_experts": b.model_experts,
            "params_built": b.params_built,
            "weight_bytes_built": b.weight_bytes,
            "cache_bytes": b.cache_bytes,
            "seq_len": r.seq_len,
            "batch": r.batch,
            "decode_steps": r.decode_steps,
            "decode_context": self.decode_context,
            "probe": self.probe.to_json(),
            "prefill": self.prefill.to_json(),
            "decode_step": self.decode_step.to_json(),
            "notes": list(b.notes),
            "load_average": list(self.load_average),
            "seconds": self.seconds,
        }


_RUN_LOCK = threading.Lock()  # one check at a time on this machine: each one uses every core


class VerifyBusy(RuntimeError):
    """Another check holds the machine."""


def expected_seconds(plan: Plan, request: VerifyRequest, device: str) -> float:
    """A generous guess of a check's time, shown before it runs and checked against its limit:
    the FLOPs of the probe and the runs at SLOW_FLOP_PER_S, every module call and construction at
    CALL_S, the child's start."""
    b = DTYPE_BYTES[request.dtype]
    s, B, T, M = plan.shape, request.batch, request.seq_len, request.decode_steps
    prefill, decode = prefill_counts(s, T, B, b), decode_counts(s, T + M // 2, B, b)
    runs = PREFILL_REPEATS + M
    slow = Roofline(SLOW_FLOP_PER_S[device], math.inf)  # the products' FLOPs at a slow rate, nothing else
    compute_s = [time_phase(c.as_count(), slow).bound_s for c in (prefill, decode)]
    work_s = (PREFILL_REPEATS + PROBE_ROUNDS + 1) * compute_s[0] + (M + PROBE_ROUNDS + 1) * compute_s[1]
    experts = (s.moe.n_experts + s.moe.n_shared) * s.n_moe_layers if s.moe is not None else 0
    heads = s.n_layers * s.n_heads * B  # SDPA's and the scans' work is split per head and sequence
    calls = runs * (4 * s.n_layers + experts + heads) + experts + s.n_layers
    return START_S + work_s + calls * CALL_S


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    from attn_core.kernels.device import _cpu_name

    return f"{_cpu_name()}, {torch.get_num_threads()} threads"


def verify(
    shape: ModelShape, request: VerifyRequest, wait: bool = True, config: dict | None = None
) -> VerifyResult:
    """Plan, count, probe, build, run: see the module docstring. With the model's ``config``
    (config.json) that transformers builds, its own modules are built and run (`hf`); else the
    lab's layers from ``shape``. VerifyError for what cannot be built; VerifyBusy when ``wait`` is
    False and another check is running."""
    from attn_core.kernels.device import load_average

    if not _RUN_LOCK.acquire(blocking=wait):
        raise VerifyBusy("another check is running on this machine; try again when it ends")
    threads = torch.get_num_threads()
    try:
        start, load_before = time.perf_counter(), load_average()
        device = select_device(request.device)
        if device == "cpu" and request.threads is not None:
            torch.set_num_threads(request.threads)
        plan = plan_build(shape, request, config)
        b = DTYPE_BYTES[request.dtype]
        context = request.seq_len + (request.decode_steps - 1) // 2
        counts = (
            prefill_counts(plan.shape, request.seq_len, request.batch, b),
            decode_counts(plan.shape, context, request.batch, b),
        )
        probe = probe_device(plan, request, device, counts)  # before any layer exists
        if plan.built_by == "transformers":
            model = hf.build_model(plan.hf_config, DTYPES[request.dtype], device)
            runs = hf.measure_hf(model, request, device, time_call, PREFILL_REPEATS)
            prefill, decode = _ms(runs[0]), _ms(runs[1])
        else:
            model = build_layers(plan, request, device)
            prefill, decode = measure(model, request, device)
        del model
        phases = [
            PhaseResult(c, bound_ms(c, probe), estimate_ms(c, probe), *min(runs))
            for c, runs in zip(counts, (prefill, decode), strict=True)
        ]
        return VerifyResult(
            model=shape.name,
            device=device,
            device_name=device_name(device),
            dtype=request.dtype,
            clock="thread CPU time" if clock(device) is time.thread_time else "wall",
            request=request,
            plan=plan,
            probe=probe,
            prefill=phases[0],
            decode_step=phases[1],
            decode_context=context,
            decode_ms_each=tuple(ms for ms, _ in decode),
            load_average=(load_before, load_average()),
            seconds=time.perf_counter() - start,
        )
    finally:
        torch.set_num_threads(threads)
        _RUN_LOCK.release()
