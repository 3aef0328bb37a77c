"""Whole-model answers: parameters total and active, prefill FLOPs, and the time bounds
on a GPU setup — time to first token, one decode step, a prompt of P tokens plus N generated.

Conventions, stated once and shown wherever these numbers are:
- FLOPs: matrix products only, 2 per multiply-add (`flops.prefill_flops`); norms, softmax and
  rotary are excluded. Time to first token counts the causal pairs each layer's pattern allows:
  the fewest a decoder must compute, so the bound stays a bound. Peak is the GPU's dense bf16
  rate, whatever the weight dtype.
- Bytes a pass must read, at least: the active weights (top-k experts per MoE layer, the fewest any
  batch can touch; an untied embedding table only for the rows looked up), the KV cache and a
  hybrid's fixed state (conv and recurrent states of its linear/state layers).
- Tensor parallelism over n GPUs is perfect: FLOP/s and bandwidth add, nothing is replicated.
- ``efficiency`` η (the achieved fraction of peak) turns each bound into an estimate, bound / η.
  η = 1 is the bound itself; anything else is labelled an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attn_core.cost.flops import PrefillFlops, prefill_flops
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.params import ParamCount, decode_weight_bytes, model_params
from attn_core.cost.serving import kv_cache_bytes, state_bytes
from attn_core.cost.shapes import ModelShape

PETABYTE = 10**15  # a KV cache past this is flagged as absurd (it still answers)


@dataclass(frozen=True)
class Timing:
    """Time bounds for B sequences: prefill of P tokens, then N decode steps (seconds)."""

    prompt_len: int  # P
    gen_len: int  # N
    batch: int
    efficiency: float  # η; 1.0 means every figure below is a bound
    prefill: PrefillFlops  # at P
    prefill_bytes: int  # weights read once + the cache written
    flops_per_s: int  # n_gpus × peak
    bandwidth_bytes_per_s: int  # n_gpus × bandwidth
    decode_weight_bytes: int  # read by every decode step
    first_step_kv_bytes: int  # the cache (and a hybrid's state) read by the first decode step (P tokens)
    decode_kv_bytes_total: float  # the caches (and states) read by all N steps (P, …, P + N − 1 tokens)

    @property
    def ttft_compute_s(self) -> float:
        return self.prefill.total / self.flops_per_s

    @property
    def ttft_memory_s(self) -> float:
        return self.prefill_bytes / self.bandwidth_bytes_per_s

    @property
    def ttft_s(self) -> float:
        """max(prefill FLOPs / peak, bytes read / bandwidth) / η: a lower bound at η = 1."""
        return max(self.ttft_compute_s, self.ttft_memory_s) / self.efficiency

    @property
    def ttft_bound(self) -> str:
        return "compute" if self.ttft_compute_s >= self.ttft_memory_s else "memory"

    @property
    def decode_step_s(self) -> float:
        """(active weights + the cache of P tokens) / bandwidth / η: the first step's lower bound."""
        return (
            (self.decode_weight_bytes + self.first_step_kv_bytes)
            / self.bandwidth_bytes_per_s
            / self.efficiency
        )

    @property
    def decode_s(self) -> float:
        """All N steps: N reads of the weights and of a cache growing from P to P + N − 1 tokens."""
        read = self.gen_len * self.decode_weight_bytes + self.decode_kv_bytes_total
        return read / self.bandwidth_bytes_per_s / self.efficiency

    @property
    def total_s(self) -> float:
        return self.ttft_s + self.decode_s

    @property
    def tokens_per_s(self) -> float:
        """B·N generated tokens over the whole time (0 when N = 0): an upper bound at η = 1."""
        return self.batch * self.gen_len / self.total_s if self.gen_len else 0.0

    @property
    def is_estimate(self) -> bool:
        return self.efficiency != 1.0


def timing(shape: ModelShape, workload: Workload, precision: Precision, hardware: Hardware) -> Timing:
    """The bounds of `Timing` for this model on the hardware (see the module's conventions), for
    the workload's B prompts of P tokens and its N generated tokens, at its efficiency.

    Prefill reads the active weights once (an untied table for its B·P rows) and writes the cache
    of B·P tokens; its FLOPs count the causal pairs, whatever the workload's causal toggle. Decode
    step i (i = 0 … N − 1) reads the active weights and a cache of P + i tokens per sequence; the
    routed experts are sized at the precision's expert dtype. Card 13's example, Llama 2 7B on one
    A100 at P = 4,096: the first step is (13,214,695,424 + 2 GiB) / 2,039 GB/s = 7.53 ms."""
    P, N, B = workload.prompt, workload.gen_len, workload.batch
    b_w, b_e, b_kv = precision.b_weight, precision.b_expert, precision.b_kv
    steps = np.arange(P, P + N, dtype=np.float64)
    state = state_bytes(shape, B, b_kv, precision.b_state)  # the same at every T
    kv_total = float(np.sum(kv_cache_bytes(shape, steps, B, b_kv))) if N else 0.0
    kv_total += N * state
    n, gpu = hardware.n_gpus, hardware.gpu
    return Timing(
        prompt_len=P,
        gen_len=N,
        batch=B,
        efficiency=workload.efficiency,
        prefill=prefill_flops(shape, P, B, causal=True),
        prefill_bytes=decode_weight_bytes(shape, B * P, b_w, b_e) + kv_cache_bytes(shape, P, B, b_kv) + state,
        flops_per_s=n * gpu.bf16_flops_per_s,
        bandwidth_bytes_per_s=n * gpu.bandwidth_bytes_per_s,
        decode_weight_bytes=decode_weight_bytes(shape, B, b_w, b_e),
        first_step_kv_bytes=kv_cache_bytes(shape, P, B, b_kv) + state,
        decode_kv_bytes_total=kv_total,
    )


@dataclass(frozen=True)
class Parameters:
    """Parameters by role, with the publisher's count where a preset has one."""

    count: ParamCount
    published: tuple[float, float | None, str] | None  # (total, active or None, source)
    nextn_layers_left_out: int  # DeepSeek's next-token-prediction layers, not counted


# What the publishers state (rounded as they round it), for the presets that have a count.
PUBLISHED_PARAMS: dict[str, tuple[float, float | None, str]] = {
    "gpt2": (124_439_808, None, "Hugging Face model page (safetensors)"),
    "llama-2-7b": (6_738_415_616, None, "card 13: 13,476,831,232 B of fp16 weights"),
    "llama-2-70b": (68_976_648_192, None, "card 14: 137.95 GB of fp16 weights"),
    "llama-3-8b": (8_030_261_248, None, "Hugging Face model page (safetensors)"),
    "mistral-7b": (7_241_732_096, None, "Hugging Face model page (safetensors)"),
    "qwen2.5-7b": (7_615_616_512, None, "Qwen2.5-7B model card"),
    "mixtral-8x7b": (46.7e9, 12.9e9, "Mixtral of Experts (Jiang et al. 2024)"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, "Qwen3-30B-A3B model card"),
    "deepseek-v3": (671e9, 37e9, "DeepSeek-V3 technical report (MTP module excluded)"),
    "gpt-oss-120b": (116.83e9, 5.13e9, "gpt-oss model card, Table 1 (active without the input embeddings)"),
    "gemma-3-27b": (27e9, None, "Gemma 3 technical report (27B; includes the vision encoder)"),
    "llama-4-scout": (109e9, 17e9, "Llama 4 model card (109B includes the vision encoder)"),
    "qwen3-next-80b-a3b": (80e9, 3e9, "Qwen3-Next-80B-A3B model card: 80B total, 3B activated"),
    "kimi-linear-48b-a3b": (48e9, 3e9, "Kimi Linear report and model card: 48B total, 3B activated"),
    "jamba-1.5-mini": (52e9, 12e9, "Jamba 1.5 model card: 52B total, 12B active"),
    "nemotron-h-8b": (8e9, None, "Nemotron-H model card: 8B"),
}


def parameters(shape: ModelShape, preset: str | None = None) -> Parameters:
    """`model_params` plus the published count of the named preset (None for a pasted config)."""
    return Parameters(model_params(shape), PUBLISHED_PARAMS.get(preset or ""), shape.nextn_layers_left_out)
