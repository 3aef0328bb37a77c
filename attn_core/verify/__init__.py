"""The cost model checked against a real run on this machine: a model's layers built at their true
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

Its modules, by job (each imports only those above it):

- `hf`: transformers' own build: the config cut to the planned layers and experts, its weights
  counted on the meta device for the plan, the build and its timed forward.
- `peak`: the planned peak of a check (probe buffers, weights, cache, activations, expert
  modules, scan intermediates) and the caps on what one check builds (experts, scan chunks,
  B·T × width).
- `plan`: the request (`VerifyRequest`), `select_device`, and `plan_build`: the first layers (and
  routed experts) whose planned peak fits the memory cap.
- `counts`: the cost model's FLOPs and bytes of what was built, each phase's matrix products
  (``MIXER_GEMMS``) and mixer calls.
- `linear`: what the linear layers share: their state, the causal conv, the transformers modules
  whose torch fallbacks are their cores.
- `deltanet`, `mamba2`: the Gated DeltaNet and Mamba-2 layers, each with its core alone for the
  probe.
- `layers`: the torch layers (``ATTENTION_KEYS``, attention, MLP, mixture of experts, ``MIXERS``)
  and `build_layers`.
- `probe`: the device's rates at those shapes, the clock, and `bound_ms` / `estimate_ms`.
- `run`: the timed prefills and decode steps, the result and its JSON, `verify`, and
  `expected_seconds` (a generous guess shown before a check runs).
- `examples`: tiny configs of each kind a check builds, shared by the tests and benchmarks.
- `wire`: the child's pipe as JSON (the job and the result, dataclasses to and from dicts).
- `child`: `start_check`, the one runner: a check in a child process capped at its planned peak
  and a wall-clock limit, stoppable, every failure one line (`CheckFailed`).
"""

from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.kernels.records import DTYPES
from attn_core.verify.child import ADDRESS_SLACK, Check, CheckFailed, running, start_check
from attn_core.verify.counts import (
    MIXER_GEMMS,
    AttentionCall,
    Gemm,
    PhaseCounts,
    attention_gemms,
    decode_counts,
    deltanet_gemms,
    mamba2_gemms,
    mlp_gemms,
    prefill_counts,
)
from attn_core.verify.deltanet import DeltaCore, GatedDeltaNetLayer, delta_core_call
from attn_core.verify.layers import (
    ATTENTION_KEYS,
    MIXERS,
    STATE_CORES,
    Attention,
    Block,
    GatedMLP,
    Keys,
    Layers,
    MoEMLP,
    attend,
    build_layers,
)
from attn_core.verify.linear import LinearState
from attn_core.verify.mamba2 import Mamba2Core, Mamba2Layer, mamba2_core_call
from attn_core.verify.peak import (
    FLOOR_BYTES,
    MAX_EXPERTS,
    MAX_TOKEN_WIDTH,
    MIN_SCAN_CHUNK,
    Peak,
)
from attn_core.verify.plan import (
    BUILT_STATE_KINDS,
    DEFAULT_DECODE_STEPS,
    DEFAULT_MEMORY_GIB,
    DEFAULT_SEQ_LEN,
    MAX_LAYERS,
    RECURRENT_DTYPE,
    Plan,
    VerifyError,
    VerifyRequest,
    active_layer_params,
    cache_bytes,
    cut_shape,
    kind_name,
    layer_params,
    plan_build,
    planned_peak,
    refuse_unbuilt,
    select_device,
)
from attn_core.verify.probe import (
    COLD_BYTES,
    COMPUTE_ROWS,
    PEAK_N,
    PROBE_COLS,
    PROBE_ROUNDS,
    PROBE_ROWS,
    STREAM_BYTES,
    Probe,
    bound_ms,
    clock,
    estimate_ms,
    probe_attention,
    probe_core,
    probe_device,
    probe_gemm,
    probe_stream,
    probed_shape,
)
from attn_core.verify.run import (
    PREFILL_REPEATS,
    PhaseResult,
    VerifyBusy,
    VerifyResult,
    device_name,
    expected_seconds,
    measure,
    verify,
)

__all__ = [
    "ADDRESS_SLACK",
    "ATTENTION_KEYS",
    "BUILT_STATE_KINDS",
    "COLD_BYTES",
    "COMPUTE_ROWS",
    "DEFAULT_DECODE_STEPS",
    "DEFAULT_MEMORY_GIB",
    "DEFAULT_SEQ_LEN",
    "DTYPES",
    "DTYPE_BYTES",
    "FLOOR_BYTES",
    "MAX_EXPERTS",
    "MAX_LAYERS",
    "MAX_TOKEN_WIDTH",
    "MIN_SCAN_CHUNK",
    "MIXERS",
    "MIXER_GEMMS",
    "PEAK_N",
    "PREFILL_REPEATS",
    "PROBE_COLS",
    "PROBE_ROUNDS",
    "PROBE_ROWS",
    "RECURRENT_DTYPE",
    "STATE_CORES",
    "STREAM_BYTES",
    "Attention",
    "AttentionCall",
    "Block",
    "Check",
    "CheckFailed",
    "DeltaCore",
    "GatedDeltaNetLayer",
    "GatedMLP",
    "Gemm",
    "Keys",
    "Layers",
    "LinearState",
    "Mamba2Core",
    "Mamba2Layer",
    "MoEMLP",
    "Peak",
    "PhaseCounts",
    "PhaseResult",
    "Plan",
    "Probe",
    "VerifyBusy",
    "VerifyError",
    "VerifyRequest",
    "VerifyResult",
    "active_layer_params",
    "attend",
    "attention_gemms",
    "bound_ms",
    "build_layers",
    "cache_bytes",
    "clock",
    "cut_shape",
    "decode_counts",
    "delta_core_call",
    "deltanet_gemms",
    "device_name",
    "estimate_ms",
    "expected_seconds",
    "kind_name",
    "layer_params",
    "mamba2_core_call",
    "mamba2_gemms",
    "measure",
    "mlp_gemms",
    "plan_build",
    "planned_peak",
    "prefill_counts",
    "probe_attention",
    "probe_core",
    "probe_device",
    "probe_gemm",
    "probe_stream",
    "probed_shape",
    "refuse_unbuilt",
    "running",
    "select_device",
    "start_check",
    "verify",
]
