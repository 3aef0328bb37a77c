"""Where a count becomes a time: one phase's count (`phases.PhaseCount`) priced on hardware by
`time_phase`, the one function every time of the lab goes through (the Cost page, the CLI and its
report, the published runs, `verify`'s bound). It gives, in one `PhaseTime`:

- the roofline bound, max(FLOPs / peak, bytes / bandwidth), and which one binds: a lower bound;
- the expected time, the bound ÷ η (the efficiency; η = 1 is the bound itself);
- where a kernel bench run's attained rates are given (`attn_core.cost.calibration`), the time at
  them, each phase split as the cost model counts it into two parts that run one after another:

    t = max(Σ F_w / R_mm(rows), W / BW) + max(F_a / R_attn + F_c / R_mm, M / BW)

  the products over the weights (each at the rate R_mm(rows) the run attained at its number of
  rows: B·P in prefill, B in decode, a routed expert k·tokens / experts touched) against the weight
  bytes W, then the sequence mixing (attention at the attention kernel's attained rate, a hybrid's
  core at the square-matmul rate) against the cache and state bytes M. Within a part compute and
  memory traffic overlap (a decode step's products stream their weights; the arithmetic hides
  under the stream), so the slower one counts; the parts are separate kernels, so they add.
  `benchmarks/calibrated_cost.py` checks this against real runs on this machine (RESULTS.md,
  "Calibrated time against real runs"). It is an estimate, not a bound: η does not apply to it.

Peaks and rates are summed over the devices (perfect tensor parallelism, as the bounds assume).
The FLOP/s peak is the dense Tensor Core peak of the precision's compute format (`compute_peak`:
an fp8 run on an H100 at 1,979 TFLOP/s, not bf16's 989), so a bound stays a bound for fp8 runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attn_core.cost.dtypes import Tokens
from attn_core.cost.gpus import GPU, DensePeak
from attn_core.cost.inputs import Hardware, Precision
from attn_core.cost.phases import PhaseCount

FORMULA = "max(Σ F_w / R_mm(rows), W / BW) + max(F_a / R_attn + F_c / R_mm, M / BW)"


@dataclass(frozen=True)
class Roofline:
    """The peaks a bound divides by: FLOP/s and bytes/s of all the devices together."""

    flops_per_s: float
    bandwidth_bytes_per_s: float
    compute: str = "bf16"  # the format whose dense peak flops_per_s is


def compute_peak(gpu: GPU, precision: Precision | None = None) -> DensePeak:
    """The dense peak compute time is priced at: the precision's ``compute`` format (ValueError when
    the GPU has no peak for it), else its activations' format where the GPU has one, else bf16
    (fp32 activations, or fp8 on an A100, which dequantizes to bf16 for its products)."""
    if precision is not None and precision.compute is not None:
        return gpu.dense_peak(precision.compute)
    auto = "bf16" if precision is None else precision.activations
    return gpu.dense_peak(auto if auto in gpu.compute_dtypes() else "bf16")


def roofline(hardware: Hardware, precision: Precision | None = None) -> Roofline:
    """n × the GPU's dense peak in the compute format (`compute_peak`) and n × its bandwidth."""
    n, gpu = hardware.n_gpus, hardware.gpu
    peak = compute_peak(gpu, precision)
    return Roofline(n * peak.flops_per_s, n * gpu.bandwidth_bytes_per_s, peak.dtype)


@dataclass(frozen=True)
class AttainedRates:
    """A kernel bench run's attained rates, summed over the devices."""

    matmul_at: Callable[[float], float]  # R_mm(rows): FLOP/s of a product with that many rows
    matmul: float  # R_mm: the square matmul (a hybrid's recurrent core)
    attention: float | None  # R_attn; None for a model without attention layers
    bandwidth: float  # BW


@dataclass(frozen=True)
class PartTime:
    """One part of a phase at attained rates: its FLOPs at their rates, its bytes at BW (seconds)."""

    compute_s: Tokens
    memory_s: Tokens

    @property
    def seconds(self) -> Tokens:
        return np.maximum(self.compute_s, self.memory_s)


@dataclass(frozen=True)
class AttainedTime:
    """A phase at attained rates: its products over the weights, then its sequence mixing."""

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


def attained_time(products_s: Tokens, W: Tokens, mixing_s: Tokens, M: Tokens, BW: float) -> AttainedTime:
    """max(products_s, W / BW) + max(mixing_s, M / BW): each part's compute seconds at its rates
    against its bytes at the bandwidth; scalars or arrays."""
    return AttainedTime(PartTime(products_s, W / BW), PartTime(mixing_s, M / BW))


def product_seconds(count: PhaseCount, rate: Callable[[float], float]) -> Tokens:
    """Σ F / R_mm(rows): the routed experts' products at their rows, the rest at the count's tokens."""
    F_w, F_e = count.product_flops, count.expert_flops
    if not np.any(F_e):
        return F_w / rate(count.tokens)
    return (F_w - F_e) / rate(count.tokens) + F_e / rate(count.expert_rows)


def _scalar(x: Tokens) -> Tokens:
    return float(x) if np.ndim(x) == 0 else x


@dataclass(frozen=True)
class PhaseTime:
    """One phase priced (see the module docstring). Arrays where the count has them."""

    count: PhaseCount
    roofline: Roofline
    compute_s: Tokens  # FLOPs / peak
    memory_s: Tokens  # bytes / bandwidth
    efficiency: float = 1.0  # η
    attained: AttainedTime | None = None  # at a bench run's attained rates, where one was given

    @property
    def bound_s(self) -> Tokens:
        """max(FLOPs / peak, bytes / bandwidth): a lower bound."""
        return _scalar(np.maximum(self.compute_s, self.memory_s))

    @property
    def bound_by(self) -> str:
        """ "compute" or "memory": the side that sets the bound (a scalar phase)."""
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def expected_s(self) -> Tokens:
        """The bound ÷ η: the bound itself at η = 1, else an estimate."""
        return self.bound_s / self.efficiency

    @property
    def calibrated_s(self) -> Tokens | None:
        """The time at the attained rates; None without a run."""
        return None if self.attained is None else _scalar(self.attained.seconds)

    @property
    def weights_s(self) -> Tokens:
        """The weights' share of the memory side, W / bandwidth."""
        return self.count.weight_bytes / self.roofline.bandwidth_bytes_per_s

    @property
    def mixing_memory_s(self) -> Tokens:
        """The cache's and the fixed state's share of the memory side, M / bandwidth."""
        return self.count.mixing_bytes / self.roofline.bandwidth_bytes_per_s


def time_phase(
    count: PhaseCount, peaks: Roofline, efficiency: float = 1.0, rates: AttainedRates | None = None
) -> PhaseTime:
    """The phase's roofline bound at ``peaks``, its estimate at ``efficiency`` and, with ``rates``,
    its time at a bench run's attained rates (see the module docstring)."""
    attained = None
    if rates is not None:
        mixing_s = count.core_flops / rates.matmul
        if rates.attention:
            mixing_s = mixing_s + count.attention_flops / rates.attention
        attained = attained_time(
            product_seconds(count, rates.matmul_at), count.weight_bytes, mixing_s, count.mixing_bytes,
            rates.bandwidth,
        )  # fmt: skip
    return PhaseTime(
        count=count,
        roofline=peaks,
        compute_s=count.flops / peaks.flops_per_s,
        memory_s=count.bytes / peaks.bandwidth_bytes_per_s,
        efficiency=efficiency,
        attained=attained,
    )
