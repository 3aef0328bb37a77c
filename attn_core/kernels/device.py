"""What this machine can do: the device's name and size, and the peak the bench compares with.

On a GPU the peaks come from datasheets (``assets/gpus.json`` for bandwidth and bf16, the bench's
``assets/bench/gpu_peaks.json`` for fp16 and fp32), each with its source. On a CPU no datasheet
applies to a shared VM, so the peaks are measured here: a square matmul (2·n³ FLOPs) and a tensor
copy (reads and writes every byte: 2 × size bytes moved), each the best of a few runs, and
labelled as measured.

`attained_rates` is what a device attains, for a calibration (`attn_core.cost.calibration`, the
Cost page's calibrated times): the square matmul, products of few rows with cold weights (what a
decode step's or an expert's products attain) and a stream's bandwidth, on a CPU or a GPU.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attn_core.cost.calibration import preset_for_device
from attn_core.kernels.records import DTYPES

ASSETS = Path(__file__).resolve().parents[2] / "assets"
MATMUL_N = 1024  # 2·1024³ ≈ 2.1 GFLOP: ~10 ms in fp32 on one modern core
COPY_BYTES = 64 * 2**20  # well past the last-level cache, so this measures DRAM
PROBE_RUNS = 5
# The rows curve: (m × n) @ (n × n) for each m, n as wide as a model's layers (a 1-row product of
# a 1024² matrix streams ~30% slower here than one of 4096²), weights cycled through copies
# past COLD_BYTES, as a model's come from memory. A CPU stops at 64 rows (beyond, the square
# rate holds within ~10% here) to keep the Kernels page's first load short.
MATMUL_ROWS = {"cpu": (1, 4, 16, 64), "cuda": (1, 4, 16, 64, 256, 1024)}
ROWS_N = {"cpu": 4096, "cuda": 8192}
COLD_BYTES = {"cpu": 96 * 2**20, "cuda": 512 * 2**20}  # > 3× the last-level cache
ROWS_BUDGET_S = 1.0  # a dtype without a fast path here (fp16 on most CPUs) gets no rows curve
ROWS_RUNS = 3
GPU_MATMUL_N, GPU_STREAM_BYTES = 8192, 2 * 2**30


@dataclass(frozen=True)
class DeviceFacts:
    """One device. ``peak_flops`` maps a bench dtype ("fp32", …) to FLOP/s; ``bandwidth`` is
    bytes/s; ``measured`` says the peaks were measured here rather than read from a datasheet."""

    kind: str  # "cpu" or "cuda"
    name: str
    measured: bool
    peak_flops: dict[str, float] = field(default_factory=dict)
    bandwidth: float | None = None
    source: str = ""
    capability: str | None = None  # CUDA compute capability, e.g. "9.0"
    memory_bytes: int | None = None
    sm_count: int | None = None
    threads: int | None = None
    versions: dict[str, str] = field(default_factory=dict)

    def ridge(self, dtype: str) -> float | None:
        """Arithmetic intensity (FLOP/byte) above which the peak FLOP/s, not bandwidth, bounds."""
        peak = self.peak_flops.get(dtype)
        return peak / self.bandwidth if peak and self.bandwidth else None

    def percent_of_peak(self, dtype: str, flops_per_s: float) -> float | None:
        peak = self.peak_flops.get(dtype)
        return 100.0 * flops_per_s / peak if peak else None


def versions() -> dict[str, str]:
    from attn_core.kernels import triton_kernel

    out = {"torch": torch.__version__}
    if triton_kernel.AVAILABLE:
        out["triton"] = triton_kernel.triton.__version__ + (
            " (interpreter)" if triton_kernel.INTERPRETED else ""
        )
    return out


def gpu_peaks(device_name: str) -> tuple[dict[str, float], float | None, str]:
    """(peak FLOP/s per dtype, bandwidth bytes/s, sources) for a CUDA device name; empty when the
    tables do not know the device (the bench then reports no % of peak rather than a guess)."""
    gpu_id = preset_for_device(device_name)
    if gpu_id is None:
        return {}, None, f"no datasheet peak on file for {device_name!r}"
    row = json.loads((ASSETS / "bench" / "gpu_peaks.json").read_text())[gpu_id]
    sheet = json.loads((ASSETS / "gpus.json").read_text())[gpu_id]
    peaks = {
        "bf16": sheet["bf16_flops_per_s"],
        "fp16": row["fp16_flops_per_s"],
        "fp32": row["fp32_flops_per_s"],
    }
    return peaks, sheet["bandwidth_bytes_per_s"], f"{sheet['source']}; {row['source']}"


def _best_seconds(fn, runs: int = PROBE_RUNS, device: str = "cpu") -> float:
    sync = torch.cuda.synchronize if device == "cuda" else lambda: None
    fn()  # warm-up: allocation, thread pool start
    best = float("inf")
    for _ in range(runs):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache
def measure_cpu_matmul(dtype: str, n_max: int = MATMUL_N) -> float:
    """FLOP/s of a square matmul in ``dtype`` on this CPU (best of a few runs; random inputs).
    The size doubles from 128 until one product takes ≥ 5 ms or reaches ``n_max``: a dtype the
    CPU has no fast path for (fp16 on most) would otherwise take seconds."""
    n = 128
    while True:
        a, b = (torch.randn(n, n).to(DTYPES[dtype]) for _ in range(2))
        out = torch.empty(n, n, dtype=DTYPES[dtype])
        seconds = _best_seconds(
            lambda a=a, b=b, out=out: torch.matmul(a, b, out=out), runs=1 if n < n_max else PROBE_RUNS
        )
        if n >= n_max or seconds >= 5e-3:
            return 2.0 * n**3 / _best_seconds(lambda a=a, b=b, out=out: torch.matmul(a, b, out=out))
        n *= 2


@functools.cache
def measure_cpu_copy(nbytes: int = COPY_BYTES) -> float:
    """Bytes/s of copying a tensor into a reused buffer: 2 × nbytes moved per copy."""
    src = torch.randn(nbytes // 4)
    dst = torch.empty_like(src)
    return 2.0 * nbytes / _best_seconds(lambda: dst.copy_(src))


def measure_matmul_rows(dtype: str, device: str = "cpu", square: float | None = None) -> dict[int, float]:
    """FLOP/s of (m × n) @ (n × n) for each m of MATMUL_ROWS[device], n = ROWS_N[device], cycling
    through enough copies of the (n × n) operand to pass COLD_BYTES. Empty when ``square`` (the
    dtype's square rate) says the curve would take over ROWS_BUDGET_S."""
    n, dt = ROWS_N[device], DTYPES[dtype]
    copies = max(1, COLD_BYTES[device] // (n * n * dt.itemsize))
    work = sum(2.0 * m * n * n * copies for m in MATMUL_ROWS[device]) * (ROWS_RUNS + 1)
    if square is not None and work / square > ROWS_BUDGET_S:
        return {}
    ws = [torch.randn(n, n, device=device).to(dt) for _ in range(copies)]
    rates = {}
    for m in MATMUL_ROWS[device]:
        x, out = torch.randn(m, n, device=device).to(dt), torch.empty(m, n, device=device, dtype=dt)

        def run(x=x, out=out) -> None:
            for w in ws:
                torch.matmul(x, w, out=out)

        rates[m] = 2.0 * m * n * n * copies / _best_seconds(run, ROWS_RUNS, device)
    return rates


def measure_stream(device: str = "cpu", nbytes: int = COPY_BYTES) -> float:
    """Bytes/s of the faster of a streaming read (a sum) and a copy (2 × bytes moved)."""
    src = torch.randn(nbytes // 4, device=device)
    dst = torch.empty_like(src)
    return max(
        nbytes / _best_seconds(src.sum, device=device),
        2.0 * nbytes / _best_seconds(lambda: dst.copy_(src), device=device),
    )


@functools.cache
def attained_rates(device: str, dtypes: tuple[str, ...] = ("bf16", "fp16", "fp32")) -> dict:
    """What ``device`` attains, not its datasheet, as a bench run's ``meta.attained`` (read by
    `attn_core.cost.calibration`): per dtype the square matmul and the rows curve (its last point
    the square one, at m = its n), and a stream's bandwidth. A CPU's square rate is device_facts'."""
    matmul, rows = {}, {}
    for d in dtypes:
        if device == "cuda":
            n = GPU_MATMUL_N
            a, b = (torch.randn(n, n, device=device).to(DTYPES[d]) for _ in range(2))
            matmul[d] = 2.0 * n**3 / _best_seconds(lambda a=a, b=b: torch.matmul(a, b), device=device)
            del a, b
        else:
            n, matmul[d] = MATMUL_N, measure_cpu_matmul(d)
        curve = measure_matmul_rows(d, device, matmul[d])
        rows[d] = {str(m): r for m, r in curve.items()} | ({str(n): matmul[d]} if curve else {})
    nbytes = GPU_STREAM_BYTES if device == "cuda" else COPY_BYTES
    n_rows = ROWS_N[device]
    source = (
        f"measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: {n}² matmul; "
        f"(m × {n_rows}) @ ({n_rows} × {n_rows}) with cold weights; "
        f"the faster of a {nbytes // 2**20:,} MiB read and copy; best of {ROWS_RUNS}–{PROBE_RUNS}"
    )
    bandwidth = measure_stream(device, nbytes)
    return {
        "matmul_flop_per_s": matmul,
        "matmul_rows": rows,
        "bandwidth_bytes_per_s": bandwidth,
        "source": source,
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def device_facts(device: str = "cpu", dtypes: tuple[str, ...] = ("fp32",)) -> DeviceFacts:
    """Facts of ``device`` ("cpu" or "cuda"). On CPU the matmul peak of each of ``dtypes`` and the
    copy bandwidth are measured now (cached per process, ~0.1 s each)."""
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("no CUDA device on this machine")
        props = torch.cuda.get_device_properties(0)
        peaks, bandwidth, source = gpu_peaks(props.name)
        return DeviceFacts(
            kind="cuda",
            name=props.name,
            measured=False,
            peak_flops=peaks,
            bandwidth=bandwidth,
            source=source,
            capability=f"{props.major}.{props.minor}",
            memory_bytes=int(props.total_memory),
            sm_count=int(props.multi_processor_count),
            versions=versions(),
        )
    if device != "cpu":
        raise ValueError(f"device must be cpu or cuda, not {device!r}")
    return DeviceFacts(
        kind="cpu",
        name=_cpu_name(),
        measured=True,
        peak_flops={d: measure_cpu_matmul(d) for d in dtypes},
        bandwidth=measure_cpu_copy(),
        source=f"measured here: {MATMUL_N}² matmul and a {COPY_BYTES // 2**20} MiB copy, best of {PROBE_RUNS}",
        threads=torch.get_num_threads(),
        versions=versions(),
    )


def load_average() -> float | None:
    """The 1-minute load average (other processes competing for the cores), None if unknown."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
