"""Where a model only transformers' build sizes runs on a GPU: the lines the CLI adds to the build's
answer when ``--gpu`` is given, from the build's counts alone (its parameters, its active
parameters, its cache at T) and the GPU's datasheet (`attn_core.cost.gpus`).

- weights: every parameter at the weights' bits (routed experts at theirs), split over the n GPUs;
- sequences of T that fit beside them: (n · reported memory − weights) ÷ one sequence's cache at T
  (the build's cache, in bf16 as transformers holds it, and its fixed state);
- decode step at T, batch 1 (memory-bound): one token reads the active parameters and one
  sequence's cache: bytes ÷ (n · bandwidth);
- prefill of T tokens (compute-bound): 2 FLOPs per multiply-add over the active parameters without
  the input embeddings (a lookup), T tokens: ÷ (n · the compute format's dense peak). The attention
  scores' own FLOPs are left out (stated): the formulas count them where they read the config.

All are lower bounds on time and an upper bound on sequences, as the formulas' own serving lines.
"""

from __future__ import annotations

from attn_core.cost.gpus import GPU
from attn_core.cost.inputs import Precision
from attn_core.cost.units import format_bytes, format_bytes_binary, format_count_short, format_seconds


def gpu_lines(a, gpu: GPU, n_gpus: int, precision: Precision, T: int) -> list[str]:
    """The lines of the module docstring for anatomy ``a`` (`attn_core.anatomy.derive.Anatomy`)."""
    experts = a.params_by_part.get("routed experts", 0)
    weights = (a.params_total - experts) * precision.b_weight + experts * precision.b_expert
    one_seq = a.cache_bytes(T, 1) if not (a.cache_unread or a.cache_absent) else 0
    free = n_gpus * gpu.memory_bytes - weights
    fit = (
        "none: the weights alone exceed the memory"
        if free < 0
        else (f"{int(free // one_seq):,}" if one_seq else "no cache: bounded by compute, not memory")
    )
    active_bytes = a.params_active * precision.b_weight  # batch 1: the experts one token routes to
    step = (active_bytes + one_seq) / (n_gpus * gpu.bandwidth_bytes_per_s)
    compute = precision.compute or precision.activations
    prefill_flops = 2 * (a.params_active - a.params_by_part.get("embeddings", 0)) * T
    prefill = prefill_flops / (n_gpus * gpu.dense_flops(compute))
    return [
        f"On {n_gpus} × {gpu.label}, from the build's counts (lower bounds on time; weights "
        f"{precision.weights or precision.activations}, compute {compute}, the cache bf16 as built)",
        f"  weights                          {format_bytes(weights)}; per GPU "
        f"{format_bytes_binary(weights / n_gpus)} of the {format_bytes_binary(gpu.memory_bytes)} it reports",
        f"  sequences of T = {T:,} that fit   {fit}",
        f"  decode step at T, batch 1        {format_seconds(step)} (reads the "
        f"{format_count_short(a.params_active, 2)} active parameters and one sequence's cache)",
        f"  prefill of T tokens              {format_seconds(prefill)} "
        f"({prefill_flops / 1e12:,.1f} TFLOP over the weights; the attention scores' own FLOPs left out)",
    ]
