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
- Each phase (`phases.count_work`) is priced once (`roofline.time_phase`): max(FLOPs / peak, bytes /
  bandwidth), the prefill and every decode step alike (a decode step of many short sequences can be
  bound by its FLOPs).
- Tensor parallelism over n GPUs is perfect: FLOP/s and bandwidth add, nothing is replicated.
- ``efficiency`` η (the achieved fraction of peak) turns each bound into an estimate, bound / η.
  η = 1 is the bound itself; anything else is labelled an estimate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.params import ParamCount, model_params
from attn_core.cost.phases import PhaseCount, WorkCount, count_work
from attn_core.cost.roofline import PhaseTime, Roofline, roofline, time_phase
from attn_core.cost.serving import experts_touched_expected

PETABYTE = 10**15  # a KV cache past this is flagged as absurd (it still answers)


@dataclass(frozen=True)
class Timing:
    """Time bounds for B sequences: prefill of P tokens, then N decode steps (seconds), each phase
    of the one count (`phases.count_work`) priced by `roofline.time_phase`."""

    prompt_len: int  # P
    gen_len: int  # N
    batch: int
    efficiency: float  # η; 1.0 means every figure below is a bound
    work: WorkCount
    prefill_time: PhaseTime
    decode_time: PhaseTime  # the first step: P tokens cached
    steps_time: PhaseTime | None  # all N steps (arrays over P … P + N − 1 cached); None when N = 0

    # The counts and peaks, read through.
    prefill = property(lambda self: self.work.prefill_flops)  # the prefill's FLOPs by part (causal)
    prefill_bytes = property(lambda self: self.work.prefill.bytes)  # weights read once + cache written
    decode_weight_bytes = property(lambda self: self.work.decode.weight_bytes)  # read by every step
    first_step_kv_bytes = property(lambda self: self.work.decode.mixing_bytes)  # cache and state at P
    flops_per_s = property(lambda self: self.prefill_time.roofline.flops_per_s)  # n_gpus × peak
    bandwidth_bytes_per_s = property(lambda self: self.prefill_time.roofline.bandwidth_bytes_per_s)
    ttft_compute_s = property(lambda self: self.prefill_time.compute_s)
    ttft_memory_s = property(lambda self: self.prefill_time.memory_s)
    ttft_bound = property(lambda self: self.prefill_time.bound_by)  # "compute" or "memory"
    ttft_bound_s = property(lambda self: self.prefill_time.bound_s)
    decode_step_bound_s = property(lambda self: self.decode_time.bound_s)

    @property
    def ttft_s(self) -> float:
        """max(prefill FLOPs / peak, bytes read / bandwidth) / η: a lower bound at η = 1."""
        return self.prefill_time.expected_s

    @property
    def decode_step_s(self) -> float:
        """max(FLOPs / peak, (active weights + the cache of P tokens) / bandwidth) / η: the first step."""
        return self.decode_time.expected_s

    @property
    def decode_s(self) -> float:
        """All N steps: N reads of the weights and of a cache growing from P to P + N − 1 tokens."""
        return float(np.sum(self.steps_time.expected_s)) if self.steps_time is not None else 0.0

    @property
    def total_s(self) -> float:
        return self.ttft_s + self.decode_s

    @property
    def total_bound_s(self) -> float:
        """TTFT + all N steps, each at its bound (η = 1)."""
        steps = float(np.sum(self.steps_time.bound_s)) if self.steps_time is not None else 0.0
        return self.ttft_bound_s + steps

    @property
    def tokens_per_s(self) -> float:
        """B·N generated tokens over the whole time (0 when N = 0): an upper bound at η = 1."""
        return self.batch * self.gen_len / self.total_s if self.gen_len else 0.0

    @property
    def is_estimate(self) -> bool:
        return self.efficiency != 1.0


def timing(
    shape: ModelShape,
    workload: Workload,
    precision: Precision,
    hardware: Hardware,
    peaks: Roofline | None = None,
) -> Timing:
    """The bounds of `Timing` for this model on the hardware (see the module's conventions), for
    the workload's B prompts of P tokens and its N generated tokens, at its efficiency.

    Prefill reads the active weights once (an untied table for its B·P rows) and writes the cache
    of B·P tokens; its FLOPs count the causal pairs, whatever the workload's causal toggle. Decode
    step i (i = 0 … N − 1) reads the active weights and a cache of P + i tokens per sequence; the
    routed experts are sized at the precision's expert dtype. Card 13's example, Llama 2 7B on one
    A100 at P = 4,096: the first step is (13,214,695,424 + 2 GiB) / 2,039 GB/s = 7.53 ms.
    ``peaks``: other than the hardware's dense peak in the precision's compute format and its
    bandwidth (`roofline.roofline`)."""
    work, eta = count_work(shape, workload, precision), workload.efficiency
    peaks = roofline(hardware, precision) if peaks is None else peaks
    steps = None if work.decode_steps is None else time_phase(work.decode_steps, peaks, eta)
    return Timing(
        prompt_len=workload.prompt,
        gen_len=workload.gen_len,
        batch=workload.batch,
        efficiency=eta,
        work=work,
        prefill_time=time_phase(work.prefill, peaks, eta),
        decode_time=time_phase(work.decode, peaks, eta),
        steps_time=steps,
    )


@dataclass(frozen=True)
class DecodeBound:
    """The floor on one decode step with T cached (cards 13, 14): the active weights, the whole
    cache and a hybrid's fixed state read once, or the step's FLOPs at peak where they take longer;
    beside it the same step under uniform expert routing and as card 13 counts it (every weight)."""

    floor: PhaseTime  # top-k experts per MoE layer, whatever B is
    uniform: PhaseTime  # the experts B sequences are expected to touch under uniform routing
    every_weight: PhaseTime  # card 13: the whole embedding table, every expert
    batch: int
    experts_touched: float | None = None  # expected distinct routed experts per MoE layer

    weight_bytes = property(lambda self: self.floor.count.weight_bytes)  # active weights
    kv_bytes = property(lambda self: self.floor.count.cache_bytes)  # all B sequences' caches
    state_bytes = property(lambda self: self.floor.count.state_bytes)  # all B fixed states
    expected_weight_bytes = property(lambda self: self.uniform.count.weight_bytes)
    card13_weight_bytes = property(lambda self: self.every_weight.count.weight_bytes)
    bandwidth_bytes_per_s = property(lambda self: self.floor.roofline.bandwidth_bytes_per_s)
    weight_seconds = property(lambda self: self.floor.weights_s)
    kv_seconds = property(lambda self: self.floor.mixing_memory_s)  # the cache and the fixed state
    bound_by = property(lambda self: self.floor.bound_by)

    @property
    def seconds_per_step(self) -> float:
        """t_token ≥ max(FLOPs / peak, (weights read + KV and state bytes) / bandwidth): the floor."""
        return self.floor.bound_s

    @property
    def expected_seconds_per_step(self) -> float:
        """The same with the experts B sequences are expected to touch under uniform routing: for a
        mixture of experts at B > 1 the likelier figure (still at full bandwidth)."""
        return self.uniform.bound_s

    @property
    def card13_seconds_per_step(self) -> float:
        """Card 13's figure, which reads every weight (the whole embedding table, every expert):
        above the true bound by the unread bytes (6.61 + 1.05 ms for Llama 2 7B on an A100)."""
        return self.every_weight.bound_s

    @property
    def tokens_per_s(self) -> float:
        """B / t_step — an UPPER bound on generated tokens per second (all sequences)."""
        return self.batch / self.seconds_per_step

    @property
    def expected_tokens_per_s(self) -> float:
        """B / the uniform-routing step: a ceiling on tokens/s under that routing."""
        return self.batch / self.expected_seconds_per_step


def decode_lower_bound(
    shape: ModelShape, workload: Workload, precision: Precision, hardware: Hardware
) -> DecodeBound:
    """Floor on decoding one token per sequence with T cached (cards 13, 14): the decode step of
    `phases.count_work` at P = T priced by `roofline.time_phase` (the bound, whatever η).

    Reads the active weights (`params.decode_weight_bytes`: B rows of an untied embedding table,
    top-k experts), every cached token and a hybrid's fixed state; beside the floor, the weights
    under uniform routing. Llama 2 7B on an A100 (2,039 GB/s), batch 1, 4K: 6.48 ms weights +
    1.05 ms cache; card 13 reads the whole table: 6.61 + 1.05 ms, at most 130 tokens/s. Multi-GPU
    assumes perfect sharding (bandwidths and peaks add)."""
    at_T = dataclasses.replace(workload, prompt_len=None, gen_len=0)
    work, peaks, m = count_work(shape, at_T, precision), roofline(hardware, precision), shape.moe
    touched = experts_touched_expected(m.n_experts, m.top_k, workload.batch) if shape.n_moe_layers else None
    return DecodeBound(
        floor=time_phase(work.decode, peaks),
        uniform=time_phase(work.decode_uniform, peaks),
        every_weight=time_phase(work.decode_every_weight, peaks),
        batch=workload.batch,
        experts_touched=touched,
    )


def decode_with_cache(bound: DecodeBound, cache_bytes: int) -> float:
    """The floor's step with only the cache changed (card 14's MHA/GQA/MQA what-if), seconds."""
    count: PhaseCount = dataclasses.replace(bound.floor.count, cache_bytes=cache_bytes)
    return time_phase(count, bound.floor.roofline).bound_s


@dataclass(frozen=True)
class Parameters:
    """Parameters by role, with the publisher's count where a preset has one."""

    count: ParamCount
    published: tuple[float, float | None, str] | None  # (total, active or None, source)
    nextn_layers_left_out: int  # the MTP layers a config declares (config_keys.MTP_KEYS), not counted


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
