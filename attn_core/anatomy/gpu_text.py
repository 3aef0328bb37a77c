"""Where a model only transformers' build sizes runs on a GPU: from the build's record alone (its
parameters, its active parameters, its cache at T: `Anatomy.to_json`) and the GPU's datasheet
(`attn_core.cost.gpus`). The CLI prints these lines under the build's answer on ``--gpu``; the Cost
page shows the same rows. No torch: the record is plain numbers.

- weights: every parameter at the weights' bits (routed experts at theirs), split over the n GPUs;
- sequences of T that fit beside them: (n · reported memory − weights) ÷ one sequence's cache at T
  (the build's cache, in bf16 as transformers holds it, and its fixed state);
- decode step at T, batch 1: one token reads the active parameters and one sequence's cache;
- prefill of T tokens: 2 FLOPs per multiply-add over the active parameters without the input
  embeddings (a lookup), T tokens, reading the weights once. The attention scores' own FLOPs are
  left out (stated): the formulas count them where they read the config.

Both are priced as every time of the lab is (`attn_core.cost.roofline.time_phase`: max(FLOPs ÷
peak, bytes ÷ bandwidth) over the n GPUs, the peak of the compute format).

All are lower bounds on time and an upper bound on sequences, as the formulas' own serving lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.cost.derived_records import recorded_cache_bytes
from attn_core.cost.gpus import GPU
from attn_core.cost.inputs import Hardware, Precision
from attn_core.cost.phases import PhaseCount
from attn_core.cost.roofline import roofline, time_phase
from attn_core.cost.units import format_bytes, format_bytes_binary, format_count_short, format_seconds


@dataclass(frozen=True)
class OnGpu:
    """The module docstring's figures for one model on n GPUs."""

    gpu: GPU
    n_gpus: int
    T: int
    weights_bytes: float
    sequences: int | None  # None: no cache (bounded by compute); 0: the weights alone do not fit
    decode_s: float
    prefill_flops: int
    prefill_s: float
    active_params: int
    weights_dtype: str
    compute: str


def on_gpu(derived: dict[str, Any], gpu: GPU, n_gpus: int, precision: Precision, T: int) -> OnGpu:
    """The figures for a build's record ``derived`` (ValueError for a compute format without a peak)."""
    parts = derived["params_by_part"]
    experts = parts.get("routed experts", 0)
    weights = (derived["params_total"] - experts) * precision.b_weight + experts * precision.b_expert
    read = derived.get("cache_unread") is None and derived.get("cache_absent") is None
    one_seq = recorded_cache_bytes(derived, T, 1) if read else 0
    free = n_gpus * gpu.memory_bytes - weights
    fit = 0 if free < 0 else int(free // one_seq) if one_seq else None
    active = derived["params_active"]
    per_token = 2 * (active - parts.get("embeddings", 0))  # FLOPs over the weights, one token
    peaks = roofline(Hardware(gpu, n_gpus), precision)
    decode = _count(1, per_token, active * precision.b_weight, one_seq)
    prefill = _count(T, per_token * T, weights, one_seq)
    return OnGpu(
        gpu,
        n_gpus,
        T,
        weights,
        fit,
        time_phase(decode, peaks).bound_s,
        per_token * T,
        time_phase(prefill, peaks).bound_s,
        active,
        precision.weights or precision.activations,
        peaks.compute,
    )


def _count(tokens: int, flops: float, weight_bytes: float, cache_bytes: int) -> PhaseCount:
    """A phase with only products over the weights and the cache it moves."""
    return PhaseCount(tokens, flops, 0, 0.0, 0, 0, weight_bytes, cache_bytes, 0)


def fit_text(o: OnGpu) -> str:
    if o.sequences is None:
        return "no cache: bounded by compute, not memory"
    return f"{o.sequences:,}" if o.sequences else "none: the weights alone exceed the memory"


def gpu_lines(o: OnGpu) -> list[str]:
    """The CLI's lines."""
    return [
        f"On {o.n_gpus} × {o.gpu.label}, from the build's counts (lower bounds on time; weights "
        f"{o.weights_dtype}, compute {o.compute}, the cache bf16 as built)",
        f"  weights                          {format_bytes(o.weights_bytes)}; per GPU "
        f"{format_bytes_binary(o.weights_bytes / o.n_gpus)} of the {format_bytes_binary(o.gpu.memory_bytes)} it reports",
        f"  sequences of T = {o.T:,} that fit   {fit_text(o)}",
        f"  decode step at T, batch 1        {format_seconds(o.decode_s)} (reads the "
        f"{format_count_short(o.active_params, 2)} active parameters and one sequence's cache)",
        f"  prefill of T tokens              {format_seconds(o.prefill_s)} "
        f"({o.prefill_flops / 1e12:,.1f} TFLOP over the weights; the attention scores' own FLOPs left out)",
    ]


def gpu_rows(o: OnGpu) -> list[dict[str, str]]:
    """The page's table: figure, value."""
    return [
        {"figure": "weights", "value": format_bytes(o.weights_bytes)},
        {
            "figure": "weights per GPU",
            "value": f"{format_bytes_binary(o.weights_bytes / o.n_gpus)} of "
            f"{format_bytes_binary(o.gpu.memory_bytes)} reported",
        },
        {"figure": f"sequences of T = {o.T:,} that fit (upper bound)", "value": fit_text(o)},
        {"figure": "decode step at T, batch 1 (lower bound)", "value": format_seconds(o.decode_s)},
        {
            "figure": "prefill of T tokens (lower bound, attention scores left out)",
            "value": f"{format_seconds(o.prefill_s)} ({o.prefill_flops / 1e12:,.1f} TFLOP)",
        },
    ]
