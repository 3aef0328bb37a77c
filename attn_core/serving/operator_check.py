"""The step model's operator times held against Vidur's measured ones (microsoft/vidur, MIT; the
figures in ``assets/published/vidur/``, read by `attn_core.cost.operator_times`).

The step model (`attn_core.serving.step_time`) prices a step's products over the weights as
max(F / (P·η_c(n)), W / (B·η_bw)) with η_c(n) = η_max·n / (n + n_½). Applied to one GEMM of one
layer on one GPU of a t-way tensor-parallel group — n tokens, a K × N shard of the weights in bf16:

    F = 2·n·K·N,   W = 2·K·N bytes,   predicted = max(F / (P·η_c(n)), W / (B·η_bw))

with the shards of a Llama layer: fused QKV d × (h + 2·H_kv)·d_h / t, output h·d_h / t × d, fused
gate + up d × 2·d_ff / t, down d_ff / t × d. A layer's attention-free operators (Vidur's norms, rope,
activation, add besides the four GEMMs) are held against the four GEMMs + τ_layer. An all-reduce of
S bytes over t GPUs: 2(t − 1)/t · S / link + τ_ar. The ratio is measured ÷ predicted (> 1: the GPU
was slower than the model says).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attn_core.cost.config_reader import ModelShape, load_preset
from attn_core.cost.gpus import GPU, load_gpu
from attn_core.cost.operator_times import NODES, all_reduce_times, operator_times
from attn_core.serving.step_time import TimeModelCoefficients

GPU_PRESETS = {"a100": "a100-80gb", "h100": "h100-sxm"}  # Vidur's GPU → the lab's preset
PRESETS = {"llama-2-7b": "llama-2-7b", "llama-2-70b": "llama-2-70b", "meta-llama-3-8b": "llama-3-8b"}
CLASSES = {  # op class → Vidur's operators in it
    "projections": ("attn_pre_proj", "attn_post_proj"),
    "MLP": ("mlp_up_proj", "mlp_down_proj"),
}


@dataclass(frozen=True)
class OpRatio:
    """One measured operator beside the model's time for it."""

    gpu: str
    model: str
    op: str  # a Vidur operator, "layer", or "all_reduce"
    op_class: str  # "projections", "MLP", "layer", "all-reduce"
    tokens: int  # tokens in the batch (all-reduce: 0)
    tp: int
    measured_ms: float
    predicted_ms: float
    size_bytes: int = 0  # an all-reduce's message

    @property
    def ratio(self) -> float:
        return self.measured_ms / self.predicted_ms


def gemm_shapes(shape: ModelShape, tp: int) -> dict[str, tuple[int, int]]:
    """(K, N) of each of a layer's four GEMMs on one GPU of a t-way group (module docstring)."""
    d, h, hk, dh, ff = shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim, shape.d_ff
    up = 2 * ff if shape.mlp_kind == "gated" else ff
    return {
        "attn_pre_proj": (d, (h + 2 * hk) * dh // tp),
        "attn_post_proj": (h * dh // tp, d),
        "mlp_up_proj": (d, up // tp),
        "mlp_down_proj": (ff // tp, d),
    }


def gemm_s(gpu: GPU, c: TimeModelCoefficients, n: float, k: int, m: int) -> float:
    """The step model's seconds for an n-row GEMM against a K × N bf16 weight on one GPU."""
    eta = c.compute_fraction * n / (n + c.half_rows)
    return max(
        2 * n * k * m / (gpu.dense_flops("bf16") * eta),
        2 * k * m / (gpu.bandwidth_bytes_per_s * c.bandwidth_fraction),
    )


def operator_ratios(gpu: str, model: str, c: TimeModelCoefficients) -> list[OpRatio]:
    """Every measured (tokens, TP) of one Vidur profile: each GEMM and the whole layer."""
    g, shape = load_gpu(GPU_PRESETS[gpu]), load_preset(PRESETS[model])
    out = []
    for row in operator_times(gpu, model):
        shapes = gemm_shapes(shape, row.tp)
        preds = {op: gemm_s(g, c, row.num_tokens, *km) * 1e3 for op, km in shapes.items()}
        for cls, ops in CLASSES.items():
            for op in ops:
                out.append(OpRatio(gpu, model, op, cls, row.num_tokens, row.tp, row.median_ms[op], preds[op]))
        layer = sum(preds.values()) + c.layer_overhead_s * 1e3
        out.append(OpRatio(gpu, model, "layer", "layer", row.num_tokens, row.tp, row.layer_ms, layer))
    return out


def all_reduce_ratios(gpu: str, c: TimeModelCoefficients, min_bytes: int = 0) -> list[OpRatio]:
    """Every measured all-reduce of one DGX node of at least ``min_bytes``."""
    out = []
    for a in all_reduce_times(NODES[gpu]):
        if a.size_bytes < min_bytes:
            continue
        t = a.num_workers
        pred = (2 * (t - 1) / t * a.size_bytes / c.link_bytes_per_s + c.collective_latency_s) * 1e3
        out.append(
            OpRatio(gpu, NODES[gpu], "all_reduce", "all-reduce", 0, t, a.median_ms, pred, a.size_bytes)
        )
    return out


def all_ratios(c: TimeModelCoefficients, collectives: bool = True) -> list[OpRatio]:
    """Every Vidur profile this lab holds (H100 and A100 Llama 2 7B/70B, A100 Llama 3 8B) and, with
    ``collectives``, both nodes' all-reduces."""
    out: list[OpRatio] = []
    for gpu in GPU_PRESETS:
        for model in PRESETS:
            if gpu == "h100" and model == "meta-llama-3-8b":
                continue  # not profiled on H100 (assets/published/vidur/README.md)
            out += operator_ratios(gpu, model, c)
        if collectives:
            out += all_reduce_ratios(gpu, c)
    return out


LAYER_FIELDS = ("compute_fraction", "half_rows", "bandwidth_fraction", "layer_overhead_s")


def vidur_layer_coefficients(sweeps: int = 5) -> TimeModelCoefficients:
    """η_max, n_½, η_bw and τ_layer fitted on every layer Vidur profiled (H100 and A100, every token
    count and TP degree): `fit.descend` on the mean |log(measured / predicted)| of the whole
    attention-free layer against its four GEMMs + τ_layer; link and τ_ar from `vidur_collectives`.
    Vidur times kernels on the GPU, so τ_layer carries no host launch cost (module docstring of
    `attn_core.serving.step_time`)."""
    from attn_core.serving.fit import descend  # fit imports the simulator: only when fitting

    link, tau = vidur_collectives()
    start = TimeModelCoefficients(link_bytes_per_s=link, collective_latency_s=tau)

    def score(c: TimeModelCoefficients) -> float:
        layers = [r for r in all_ratios(c, collectives=False) if r.op_class == "layer"]
        return float(np.mean([abs(np.log(r.ratio)) for r in layers]))

    return descend(score, start, LAYER_FIELDS, sweeps)


def median_ratio(rows: list[OpRatio]) -> float:
    return float(np.median([r.ratio for r in rows])) if rows else float("nan")


def vidur_collectives() -> tuple[float, float]:
    """(link bytes/s, τ_ar seconds) of t = 2(t − 1)/t · S / link + τ_ar, least squares on relative
    error over every within-node all-reduce Vidur measured (H100 and A100 DGX, 2-8 GPUs, 2 KiB to
    64 MiB): one NVLink figure for both parts (H100's alone gives ~324 GB/s, A100's ~154)."""
    rows, times = [], []
    for node in NODES.values():
        for a in all_reduce_times(node):
            t = a.num_workers
            rows.append((2 * (t - 1) / t * a.size_bytes, 1.0))
            times.append(a.median_ms / 1e3)
    x, y = np.array(rows), np.array(times)
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)
    return float(1 / coef[0]), float(coef[1])
