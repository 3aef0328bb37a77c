"""The time of one engine step (`step_work.count_step`'s `PhaseCount`) on t tensor-parallel GPUs:
the roofline bound from `attn_core.cost.roofline.time_phase`, and an estimate from a few fitted,
physically named coefficients (`TimeModelCoefficients`):

    t_step = max(F_dense / (P·η_c(n)) + F_e·λ / (P·η_c(m_e)),  W / (B·η_bw))     products over weights
           + max(F_a / (P·η_c(n)) + F_c / (P·η_c(n)),  M / (B·η_bw))             attention, cache
           + L · (τ_layer + τ_launch·[eager])                                    per-layer floors
           + 2·L · [2(t−1)/t · n·d·b / link + τ_ar]     (t > 1)                   all-reduce
           + 2·L_moe · [(e−1)/e · k·n·d·b / link + τ_ar] (experts over e GPUs)    all-to-all

τ_layer is the GPU's own time per layer outside the GEMMs (norms, rotary, activation, residual adds,
each kernel's floor): Vidur times kernels on the GPU, so its profile gives it. τ_launch is the host's
cost of launching a layer's kernels one by one, paid by an eager engine and not by one that replays
the step as a captured CUDA graph (vLLM, SGLang, TensorRT-LLM's PyTorch flow and gpt-fast's
compiled decode do: ``Engine.cuda_graphs``).

P, B: peak FLOP/s (of the compute dtype: fp8 rows at the fp8 peak, `GPU.dense_flops`) and HBM
bandwidth of the t GPUs; n tokens in the step; η_c(n) = η_max · n / (n + n_½), the achieved
fraction of peak of a GEMM with n rows (small-M GEMMs do not fill the Tensor Cores), η_max its own
for 16-bit and for 8/4-bit GEMMs (`eta_max`); m_e = k·n / (experts touched), the mean rows of a touched routed expert's GEMM, and λ =
E[max load]/mean load of the k·n expert draws over the e expert-parallel ranks (a multinomial;
with e = E, one expert per rank, it is the busiest expert's load): every rank waits for the
slowest (λ = 1 without expert parallelism). Every
η ≤ 1 and λ ≥ 1, so the estimate is never below max(F/P, bytes/B), the bound.

η_max (16-bit), n_½, η_bw and τ_layer are fitted on Vidur's profiled layers (microsoft/vidur, MIT:
`attn_core.serving.operator_check.vidur_layer_coefficients`), the all-reduce's link and τ_ar on its
profiled all-reduces; only τ_launch and the 8-bit η_max are fitted on published runs
(`attn_core.serving.fit`; the table is in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.gpus import GPU
from attn_core.cost.inputs import Precision
from attn_core.cost.phases import PhaseCount
from attn_core.cost.roofline import Roofline, time_phase


@dataclass(frozen=True)
class TimeModelCoefficients:
    """The estimate's coefficients (module docstring); the defaults are the Vidur fit rounded,
    refitted by scripts/fit_time_model.py into assets/derived/time_model.json."""

    compute_fraction: float = 0.65  # η_max: achieved fraction of peak of a large 16-bit GEMM
    half_rows: float = 47.0  # n_½: GEMM rows at which half of η_max is reached
    bandwidth_fraction: float = 0.9  # η_bw: achieved fraction of HBM bandwidth
    layer_overhead_s: float = 62e-6  # τ_layer: the GPU's time per layer outside the GEMMs
    link_bytes_per_s: float = 268e9  # all-reduce algorithm bandwidth per GPU (NVLink, effective)
    collective_latency_s: float = 26e-6  # τ_ar: fixed cost per collective call
    fp8_compute_fraction: float = 0.47  # η_max of an 8-bit (fp8/int8) or fp4 GEMM, of its own peak
    launch_overhead_s: float = 58e-6  # τ_launch: the host's launches per layer, eager engines only

    def __post_init__(self) -> None:
        for name in ("compute_fraction", "bandwidth_fraction", "fp8_compute_fraction"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {v!r}")
        for name in ("half_rows", "layer_overhead_s", "collective_latency_s", "launch_overhead_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)!r}")
        if not self.link_bytes_per_s > 0:
            raise ValueError(f"link_bytes_per_s must be > 0, got {self.link_bytes_per_s!r}")

    def to_json(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


def compute_peak(gpu: GPU, dtype: str) -> int:
    """Dense Tensor Core FLOP/s of one GPU at a compute dtype, from the one table of peaks
    (`GPU.dense_flops`: assets/gpus.json's bf16 peak and ``dense_peaks``, each with its datasheet);
    ValueError naming the formats the GPU has when it has no ``dtype`` peak."""
    return gpu.dense_flops(dtype)


@dataclass(frozen=True)
class Engine:
    """One replica: a model at a precision on ``tp`` GPUs (tensor parallel), experts spread over
    ``ep`` of them (1: every expert split by TP), priced with ``coefficients``; ``cuda_graphs``:
    steps replayed as captured graphs (no host launch cost per layer), else eager."""

    shape: ModelShape
    gpu: GPU
    precision: Precision
    tp: int = 1
    compute: str = "bf16"
    ep: int = 1
    coefficients: TimeModelCoefficients = TimeModelCoefficients()
    cuda_graphs: bool = True

    def __post_init__(self) -> None:
        if self.tp not in (1, 2, 4, 8, 16):
            raise ValueError(f"tensor parallelism must be 1, 2, 4, 8 or 16 GPUs, got {self.tp!r}")
        if not 1 <= self.ep <= self.tp:
            raise ValueError(f"expert parallelism must be 1 … {self.tp} GPUs, got {self.ep!r}")
        t = self.tp  # ValueError below for a dtype without a peak
        peaks = Roofline(t * compute_peak(self.gpu, self.compute), t * self.gpu.bandwidth_bytes_per_s)
        object.__setattr__(self, "_peaks", peaks)  # read once per step: kept, not recomputed

    @property
    def layer_floor_s(self) -> float:
        """Seconds per layer per step outside the products and collectives: τ_layer, and τ_launch
        when eager (module docstring)."""
        c = self.coefficients
        return c.layer_overhead_s + (0.0 if self.cuda_graphs else c.launch_overhead_s)

    @property
    def peaks(self) -> Roofline:
        """The t GPUs' summed peak at the compute dtype and summed bandwidth."""
        return self._peaks


def busiest_share(draws: float | np.ndarray, bins: int) -> float | np.ndarray:
    """E[max load] / mean load of a multinomial of ``draws`` over ``bins`` equal bins (≥ 1):
    mean μ = n/G, σ = √(n·(1/G)·(1 − 1/G)); the max of G near-normal loads ≈ μ + σ·√(2 ln G),
    at least ⌈n/G⌉ (some bin holds that many) and at most n. 1 when G = 1."""
    n = np.maximum(np.asarray(draws, dtype=float), 1e-12)
    if bins <= 1:
        return np.ones_like(n) if n.ndim else 1.0
    mean = n / bins
    sigma = np.sqrt(n * (1 / bins) * (1 - 1 / bins))
    busiest = np.maximum(np.ceil(n / bins), mean + sigma * math.sqrt(2 * math.log(bins)))
    share = np.minimum(n, busiest) / mean
    return share if share.ndim else float(share)


def eta_max(engine: Engine) -> float:
    """η_max at the engine's compute dtype: an 8-bit or 4-bit GEMM reaches its own (2× or 4×)
    peak less fully than a 16-bit one (scaling, narrower accumulate paths), so it has its own."""
    c = engine.coefficients
    return c.compute_fraction if engine.compute in ("bf16", "fp16") else c.fp8_compute_fraction


def _eta(engine: Engine, rows: float | np.ndarray) -> float | np.ndarray:
    rows = np.maximum(rows, 1e-9)
    return eta_max(engine) * rows / (rows + engine.coefficients.half_rows)


def _collectives_s(engine: Engine, tokens: float | np.ndarray) -> float | np.ndarray:
    """Tensor-parallel all-reduce (2 per layer) and expert-parallel all-to-all (2 per MoE layer)."""
    c, s, t = engine.coefficients, engine.shape, engine.tp
    b = engine.precision.b
    total = 0.0
    if t == 1 and engine.ep == 1:
        return 0.0
    if t > 1:
        ring = 2 * (t - 1) / t * tokens * s.d_model * b / c.link_bytes_per_s
        total += 2 * s.n_layers * (ring + c.collective_latency_s)
    e = engine.ep
    if e > 1 and s.moe is not None and s.n_moe_layers:
        sent = (e - 1) / e * s.moe.top_k * tokens * s.d_model * b / (t * c.link_bytes_per_s)
        total += 2 * s.n_moe_layers * (sent + c.collective_latency_s)
    return total


def _dense_estimate_s(engine: Engine, count: PhaseCount) -> float | np.ndarray:
    """`estimate_s` for steps of one token count without routed experts (the simulator's hot
    path): plain floats, numpy only where attention and cache are arrays over steps."""
    n = count.tokens
    c, peaks = engine.coefficients, engine.peaks
    P, B = peaks.flops_per_s, peaks.bandwidth_bytes_per_s * c.bandwidth_fraction
    rate = P * eta_max(engine) * n / (n + c.half_rows)
    products_s = max(count.product_flops / rate, count.weight_bytes / B)
    mixing = (count.attention_flops + count.core_flops) / rate, (count.cache_bytes + count.state_bytes) / B
    mixing_s = np.maximum(*mixing) if np.ndim(mixing[0]) or np.ndim(mixing[1]) else max(mixing)
    return products_s + mixing_s + engine.shape.n_layers * engine.layer_floor_s + _collectives_s(engine, n)


def estimate_s(engine: Engine, count: PhaseCount) -> float | np.ndarray:
    """The step's estimated seconds (module docstring); 0 for an empty step. Array fields (many
    steps at once) give an array."""
    ef = count.expert_flops  # a scalar on the simulator's hot path: tested without numpy
    if np.ndim(count.tokens) == 0 and (not ef if isinstance(ef, int | float) else not np.any(ef)):
        return _dense_estimate_s(engine, count) if count.tokens else 0.0
    n = np.asarray(count.tokens, dtype=float)
    c, peaks, s = engine.coefficients, engine.peaks, engine.shape
    P, B = peaks.flops_per_s, peaks.bandwidth_bytes_per_s * c.bandwidth_fraction
    eta_n = _eta(engine, n)
    F_e = count.expert_flops
    products_s = (count.product_flops - F_e) / (P * eta_n)
    if np.any(F_e):
        lam = busiest_share(s.moe.top_k * n, engine.ep)  # the slowest expert-parallel rank
        products_s = products_s + F_e * lam / (P * _eta(engine, count.expert_rows))
    mixing_s = (count.attention_flops + count.core_flops) / (P * eta_n)
    seconds = np.maximum(products_s, count.weight_bytes / B) + np.maximum(mixing_s, count.mixing_bytes / B)
    seconds = seconds + s.n_layers * engine.layer_floor_s + _collectives_s(engine, n)
    seconds = np.where(n > 0, seconds, 0.0)
    return seconds if seconds.ndim else float(seconds)


def bound_s(engine: Engine, count: PhaseCount) -> float | np.ndarray:
    """max(FLOPs / P, bytes / B) of the t GPUs: `roofline.time_phase`'s bound, never above the estimate."""
    bound = time_phase(count, engine.peaks).bound_s
    return bound if np.ndim(bound) else float(bound)
