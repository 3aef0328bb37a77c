"""Time at a calibration's attained rates (`attn_core.cost.calibration`), from the same counts as
the roofline bounds of `whole_model.Timing`: the same FLOPs (causal pairs in prefill), the same
bytes (active weights, the cache written or read, a hybrid's fixed state).

Each phase splits as the cost model counts it, into two parts that run one after another:
- the products over the weights (projections, MLP or active experts, the output head, a hybrid's
  maps): F_w FLOPs, each product at the rate R_mm(rows) the run attained at its number of rows
  (B·P in prefill, B in decode; a routed expert gets k·tokens / experts touched), W weight bytes
  at the attained bandwidth BW;
- the sequence mixing: attention's F_a FLOPs at the attention kernel's attained rate R_attn (and a
  hybrid's recurrent core F_c at the square-matmul rate R_mm), the cache and state bytes M it
  writes or reads at BW.

    t = max(Σ F_w / R_mm(rows), W / BW) + max(F_a / R_attn + F_c / R_mm, M / BW)

Within a part compute and memory traffic overlap (a decode step's products stream their weights;
the arithmetic hides under the stream), so the slower one counts; the parts are separate kernels,
so they add. `benchmarks/calibrated_cost.py` checks this against real runs on this machine
(RESULTS.md, "Calibrated time against real runs"). A run without a rows curve gives every product
the square rate. A decode step uses the attention rate of the bench case nearest P (the bench
times L = S calls): its compute term is small beside its cache read. Rates scale with the number
of devices (perfect tensor parallelism, as the bounds assume).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.calibration import AttentionRate, Calibration, CalibrationError, Rate
from attn_core.cost.dtypes import Tokens
from attn_core.cost.flops import prefill_flops
from attn_core.cost.gpus import GPU, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.params import decode_weight_bytes, expert_params
from attn_core.cost.serving import experts_touched_expected, kv_cache_bytes, state_bytes
from attn_core.cost.shapes import ModelShape
from attn_core.cost.units import format_rate, format_seconds

FORMULA = "max(Σ F_w / R_mm(rows), W / BW) + max(F_a / R_attn + F_c / R_mm, M / BW)"


@dataclass(frozen=True)
class PartTime:
    """One part of a phase: its FLOPs at their rates and its bytes at the bandwidth (seconds)."""

    compute_s: Tokens
    memory_s: Tokens

    @property
    def seconds(self) -> Tokens:
        return np.maximum(self.compute_s, self.memory_s)


@dataclass(frozen=True)
class PhaseTime:
    """A phase's products over the weights, then its sequence mixing (see the module docstring)."""

    products: PartTime
    mixing: PartTime

    @property
    def seconds(self) -> Tokens:
        return self.products.seconds + self.mixing.seconds

    @property
    def compute_s(self) -> Tokens:
        return self.products.compute_s + self.mixing.compute_s

    @property
    def memory_s(self) -> Tokens:
        return self.products.memory_s + self.mixing.memory_s


@dataclass(frozen=True)
class CalibratedTiming:
    """Prefill, the first decode step and all N steps of B sequences, at attained rates."""

    calibration: Calibration
    n_devices: int
    dtype: str  # the rates' dtype: the activations'
    matmul: Rate  # per device
    bandwidth: Rate
    attention: AttentionRate | None  # the bench case used; None for a model without attention layers
    prefill: PhaseTime
    decode_step: PhaseTime  # the first step: P tokens cached
    decode_s: float  # all N steps
    batch: int
    gen_len: int

    @property
    def ttft_s(self) -> float:
        return float(self.prefill.seconds)

    @property
    def decode_step_s(self) -> float:
        return float(self.decode_step.seconds)

    @property
    def total_s(self) -> float:
        return self.ttft_s + self.decode_s

    @property
    def tokens_per_s(self) -> float:
        return self.batch * self.gen_len / self.total_s if self.gen_len else 0.0

    def rates_text(self) -> str:
        """The three rates and their sources, for a caption or the CLI."""
        m, bw, a = self.matmul, self.bandwidth, self.attention
        curve = self.calibration.matmul_rows.get(self.dtype, ())
        rows = ", ".join(f"{format_rate(r, 'FLOP/s', 1)} at {k:,}" for k, r in curve)
        same = m.source == bw.source
        parts = [
            f"R_mm = {format_rate(m.value, 'FLOP/s', 1)} ({self.dtype} square matmul"
            + ("" if same else f"; {m.source}")
            + ")",
            f"R_mm(rows) = {rows} rows" if curve else "no rows curve: every product at R_mm",
            f"BW = {format_rate(bw.value, 'B/s', 1)}{'' if same else f' ({bw.source})'}",
        ]
        if a is not None:
            parts.append(f"R_attn = {format_rate(a.flop_per_s, 'FLOP/s', 1)} ({a.describe()})")
        per_device = f", per device × {self.n_devices}" if self.n_devices > 1 else ""
        return "; ".join(parts) + (f" — {m.source}" if same else "") + per_device

    def text(self) -> str:
        """The CLI's readable lines."""
        c = self.calibration
        lines = [f"Calibrated (measured rates, {c.source}): {FORMULA}",
                 f"  time to first token  {format_seconds(self.ttft_s)}",
                 f"  decode step at P     {format_seconds(self.decode_step_s)}"]  # fmt: skip
        if self.gen_len:
            lines.append(f"  P + {self.gen_len:,} generated tokens  {format_seconds(self.total_s)}, "
                         f"{self.tokens_per_s:,.1f} tokens/s")  # fmt: skip
        return "\n".join([*lines, f"  rates: {self.rates_text()}"])

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``calibrated`` object: the source, the rates, the figures (ms)."""
        c, a = self.calibration, self.attention
        return {
            "source": c.source, "run": c.run, "date": c.date, "device": c.device, "formula": FORMULA,
            "n_devices": self.n_devices, "dtype": self.dtype,
            "matmul_flop_per_s": self.matmul.value, "matmul_measured": self.matmul.measured,
            "matmul_source": self.matmul.source,
            "matmul_flop_per_s_by_rows": {str(k): r for k, r in c.matmul_rows.get(self.dtype, ())},
            "bandwidth_bytes_per_s": self.bandwidth.value, "bandwidth_measured": self.bandwidth.measured,
            "bandwidth_source": self.bandwidth.source,
            "attention_flop_per_s": None if a is None else a.flop_per_s,
            "attention_case": None if a is None else a.describe(),
            "ttft_ms": 1e3 * self.ttft_s,
            "ttft_compute_ms": 1e3 * float(self.prefill.compute_s),
            "ttft_memory_ms": 1e3 * float(self.prefill.memory_s),
            "decode_ms": 1e3 * self.decode_step_s,
            "end_to_end_ms": 1e3 * self.total_s,
            "end_to_end_tokens_per_s": self.tokens_per_s,
        }  # fmt: skip


def expert_flops(shape: ModelShape, tokens: Tokens) -> Tokens:
    """The routed experts' share of the products: 2·k·(one expert's matrix weights) per token per
    MoE layer (0 for a dense model)."""
    m = shape.moe
    if m is None or not shape.n_moe_layers:
        return 0
    return 2 * m.top_k * expert_params(shape, m.expert_d_ff) * shape.n_moe_layers * tokens


def product_seconds(shape: ModelShape, F_w: float, tokens: int, rate: Callable[[float], float]) -> float:
    """Σ F / R_mm(rows) over the products of ``tokens`` tokens at once: the routed experts' with
    k·tokens / (experts touched) rows each, the rest with ``tokens`` rows; ``rate(rows)`` is the
    FLOP/s a product of that many rows attains."""
    F_e = expert_flops(shape, tokens)
    if not F_e:
        return F_w / rate(tokens)
    m = shape.moe
    rows = m.top_k * tokens / experts_touched_expected(m.n_experts, m.top_k, tokens)
    return (F_w - F_e) / rate(tokens) + F_e / rate(rows)


def phase_time(products_s: Tokens, W: Tokens, mixing_s: Tokens, M: Tokens, BW: float) -> PhaseTime:
    """max(products_s, W / BW) + max(mixing_s, M / BW): each part's compute seconds at its rates
    against its bytes at the bandwidth (see the module docstring); scalars or arrays."""
    return PhaseTime(PartTime(products_s, W / BW), PartTime(mixing_s, M / BW))


def _rates(shape: ModelShape, dtype: str, P: int, c: Calibration) -> tuple[Rate, AttentionRate | None]:
    matmul = c.matmul_rate(dtype)
    if matmul is None:
        raise CalibrationError(f"{c.run} has no {dtype} matmul rate (it has {', '.join(sorted(c.matmul))})")
    attention = c.attention_rate(dtype, shape.head_dim, P, causal=True)
    if attention is None and shape.n_attention_layers:
        timed = ", ".join(sorted({a.dtype for a in c.attention}))
        raise CalibrationError(f"{c.run} timed no {dtype} attention kernel (it timed {timed})")
    return matmul, attention


def calibration_hardware(calibration: Calibration, gpu: GPU | None, n_gpus: int = 1) -> Hardware:
    """The hardware a run calibrates: ``gpu`` when the run was recorded on it (refused otherwise);
    None: the run's own device, a CPU with its measured peaks or a GPU as its preset."""
    c = calibration
    if gpu is None and c.kind == "cpu":
        return Hardware(c.as_gpu(), n_gpus)
    if gpu is None and c.preset is None:
        raise CalibrationError(f"{c.run}: recorded on {c.device}, which matches no GPU preset")
    if gpu is not None and gpu.name != c.preset:
        raise CalibrationError(f"{c.run}: recorded on {c.device}, not on {gpu.label}; drop the GPU "
                               "flags to time it on the run's own device")  # fmt: skip
    return Hardware(gpu or load_gpu(c.preset), n_gpus)


def calibrated_timing(
    shape: ModelShape, workload: Workload, precision: Precision, hardware: Hardware, calibration: Calibration
) -> CalibratedTiming:
    """`Timing`'s phases at the calibration's rates for the activations' dtype (see the module
    docstring for the formula). CalibrationError when the run has no rate for that dtype."""
    P, N, B, n = workload.prompt, workload.gen_len, workload.batch, hardware.n_gpus
    b_w, b_e, b_kv, dtype = precision.b_weight, precision.b_expert, precision.b_kv, precision.activations
    matmul, attention = _rates(shape, dtype, P, calibration)
    R_mm, BW = n * matmul.value, n * calibration.bandwidth.value
    R_attn = None if attention is None else n * attention.flop_per_s

    def rate(rows: float) -> float:
        return n * calibration.matmul_at(dtype, rows)

    def mixing(F_a, F_c):
        return F_c / R_mm + (F_a / R_attn if R_attn else 0.0)

    state = state_bytes(shape, B, b_kv, precision.b_state)
    # Prefill: B prompts of P tokens, causal pairs; the weights read once, the cache written.
    f = prefill_flops(shape, P, B, causal=True)
    F_w = f.projections + f.mlp + f.lm_head + f.state_projections
    W = decode_weight_bytes(shape, B * P, b_w, b_e)
    M = kv_cache_bytes(shape, P, B, b_kv) + state
    prefill = phase_time(
        product_seconds(shape, F_w, B * P, rate), W, mixing(f.attention, f.state_core), M, BW
    )
    # Decode step i (i = 0 … N − 1) with P + i tokens cached: one token per sequence; the new
    # token's pairs are prefill(P + i + 1) − prefill(P + i), MLA in the absorbed form it decodes in.
    ctx = np.arange(P, P + max(N, 1), dtype=np.float64)
    one = prefill_flops(shape, 1, B, causal=True)
    products = product_seconds(
        shape, one.projections + one.mlp + one.lm_head + one.state_projections, B, rate
    )
    F_a = prefill_flops(shape, ctx + 1, B, causal=True).attention_absorbed
    F_a = F_a - prefill_flops(shape, ctx, B, causal=True).attention_absorbed
    m = shape.state_mixer
    F_c = shape.n_state_layers * m.core_flops(1, decode=True) * B if shape.n_state_layers else 0
    W = decode_weight_bytes(shape, B, b_w, b_e)
    steps = phase_time(products, W, mixing(F_a, F_c), kv_cache_bytes(shape, ctx, B, b_kv) + state, BW)
    first = phase_time(products, W, mixing(F_a[0], F_c), kv_cache_bytes(shape, P, B, b_kv) + state, BW)
    return CalibratedTiming(
        calibration=calibration,
        n_devices=n,
        dtype=dtype,
        matmul=matmul,
        bandwidth=calibration.bandwidth,
        attention=attention,
        prefill=prefill,
        decode_step=first,
        decode_s=float(np.sum(steps.seconds)) if N else 0.0,
        batch=B,
        gen_len=N,
    )
