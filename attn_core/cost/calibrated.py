"""Time at a calibration's attained rates (`attn_core.cost.calibration`): the phases of the one count
(`phases.count_work`, the same FLOPs and bytes as the roofline bounds of `whole_model.Timing`)
priced by `roofline.time_phase` at the run's rates, with the rates' sources for the page and the CLI.
The formula and why it is max within a part and a sum across parts: `attn_core.cost.roofline`.
A decode step uses the attention rate of the bench case nearest P (the bench times L = S calls):
its compute term is small beside its cache read. A run without a rows curve gives every product
the square rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.calibration import AttentionRate, Calibration, CalibrationError, Rate
from attn_core.cost.config_reader import ModelShape
from attn_core.cost.gpus import GPU, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.phases import count_work, expert_flops
from attn_core.cost.roofline import FORMULA, AttainedRates, AttainedTime, roofline, time_phase
from attn_core.cost.units import format_rate, format_seconds

__all__ = ["FORMULA", "CalibratedTiming", "calibrated_timing", "calibration_hardware", "expert_flops"]


@dataclass(frozen=True)
class CalibratedTiming:
    """Prefill, the first decode step and all N steps of B sequences, at attained rates."""

    calibration: Calibration
    n_devices: int
    dtype: str  # the rates' dtype: the activations'
    matmul: Rate  # per device
    bandwidth: Rate
    attention: AttentionRate | None  # the bench case used; None for a model without attention layers
    prefill: AttainedTime
    decode_step: AttainedTime  # the first step: P tokens cached
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
    n, dtype = hardware.n_gpus, precision.activations
    matmul, attention = _rates(shape, dtype, workload.prompt, calibration)

    def rate(rows: float) -> float:
        return n * calibration.matmul_at(dtype, rows)

    R_attn = None if attention is None else n * attention.flop_per_s
    rates = AttainedRates(rate, n * matmul.value, R_attn, n * calibration.bandwidth.value)
    work, peaks = count_work(shape, workload, precision), roofline(hardware, precision)
    steps = 0.0
    if work.decode_steps is not None:
        steps = float(np.sum(time_phase(work.decode_steps, peaks, rates=rates).calibrated_s))
    return CalibratedTiming(
        calibration=calibration,
        n_devices=n,
        dtype=dtype,
        matmul=matmul,
        bandwidth=calibration.bandwidth,
        attention=attention,
        prefill=time_phase(work.prefill, peaks, rates=rates).attained,
        decode_step=time_phase(work.decode, peaks, rates=rates).attained,
        decode_s=steps,
        batch=workload.batch,
        gen_len=workload.gen_len,
    )
