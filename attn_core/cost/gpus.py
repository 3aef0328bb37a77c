"""GPU presets for the serving and decode-speed bounds (cards 13 and 14).

Read once from ``assets/gpus.json`` (sources there and in ``assets/models/README.md``). Each
preset carries two memory sizes:

- ``memory_bytes``: the total the device reports (nvidia-smi's MiB). An "80 GB" A100 reports
  81,920 MiB = 80 GiB, an H100 81,559 MiB. The "fits" answers use this one.
- ``vendor_memory_bytes``: the datasheet label in decimal GB (80 × 10⁹ B). Cards 13 and 14
  divide this by cache sizes in GiB; their check numbers (30 sequences, 16 vs 2) need it, so
  ``memory="vendor"`` reproduces them wherever a card is quoted.

The two differ by the GB/GiB factor (80 GiB = 85.9 × 10⁹ B, 7% more than 80 GB) and by the
part's real stack size, so the vendor convention understates what a card holds.

Compute peaks: ``bf16_flops_per_s`` (fp16 the same on every preset) and, in ``dense_peaks``, the
dense Tensor Core rate of each other format the part computes in (fp8, int8, fp4), each with its
datasheet. `GPU.dense_flops` reads them; a format the part lacks is refused by name.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from attn_core.cost.dtypes import COMPUTE_DTYPES

GPUS_FILE = Path(__file__).resolve().parents[2] / "assets" / "gpus.json"

MemoryConvention = Literal["device", "vendor"]


@dataclass(frozen=True)
class DensePeak:
    """One compute format's dense Tensor Core rate (FLOP/s; int8: operations/s) and its datasheet."""

    dtype: str
    flops_per_s: int
    source: str


def _dense_peaks(table: dict | None) -> tuple[DensePeak, ...]:
    """``{"fp8": {"flops_per_s": …, "source": …}, …}`` as DensePeaks; ValueError for a bad entry."""
    peaks = []
    for dtype, row in (table or {}).items():
        if dtype not in COMPUTE_DTYPES[2:] or not isinstance(row, dict):
            raise ValueError(f"dense_peaks: {dtype!r} is not one of {', '.join(COMPUTE_DTYPES[2:])}")
        value = row.get("flops_per_s")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or not row.get("source"):
            raise ValueError(f"dense_peaks.{dtype} needs a positive integer flops_per_s and a source")
        peaks.append(DensePeak(dtype, value, str(row["source"])))
    return tuple(peaks)


MEMORY_CONVENTIONS: tuple[MemoryConvention, ...] = ("device", "vendor")


@dataclass(frozen=True)
class GPU:
    """One accelerator: memory (bytes, two conventions), memory bandwidth (bytes/s), dense bf16 FLOP/s
    and the dense peaks of its other compute formats (`DensePeak`, datasheet sources)."""

    name: str
    label: str
    memory_bytes: int  # what the device reports
    bandwidth_bytes_per_s: int
    bf16_flops_per_s: int
    vendor_memory_bytes: int | None = None  # the datasheet's decimal GB; None: same as memory_bytes
    memory_source: str = ""
    source: str = ""
    dense_peaks: tuple[DensePeak, ...] = ()

    def __post_init__(self) -> None:
        if self.vendor_memory_bytes is None:
            object.__setattr__(self, "vendor_memory_bytes", self.memory_bytes)
        for field in ("memory_bytes", "vendor_memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"GPU {field} must be a positive integer, got {value!r}")

    def memory(self, convention: MemoryConvention = "device") -> int:
        """Bytes of memory under a convention: 'device' (reported) or 'vendor' (cards 13/14)."""
        if convention not in MEMORY_CONVENTIONS:
            raise ValueError(f"memory convention must be 'device' or 'vendor', not {convention!r}")
        return self.memory_bytes if convention == "device" else self.vendor_memory_bytes

    def compute_dtypes(self) -> tuple[str, ...]:
        """The formats this part has a dense peak for: bf16, fp16 and those of ``dense_peaks``."""
        return ("bf16", "fp16", *(p.dtype for p in self.dense_peaks))

    def dense_peak(self, dtype: str) -> DensePeak:
        """The dense Tensor Core peak of one compute format (fp16 = bf16 on every preset);
        ValueError naming the formats this part has when it has no ``dtype`` peak."""
        if dtype in ("bf16", "fp16"):
            return DensePeak(dtype, self.bf16_flops_per_s, self.source)
        for peak in self.dense_peaks:
            if peak.dtype == dtype:
                return peak
        if dtype not in COMPUTE_DTYPES:
            raise ValueError(f"compute dtype must be one of {', '.join(COMPUTE_DTYPES)}, not {dtype!r}")
        raise ValueError(
            f"{self.label} has no {dtype} peak (it computes in {', '.join(self.compute_dtypes())})"
        )

    def dense_flops(self, dtype: str) -> int:
        """FLOP/s of `dense_peak` (H100 SXM: bf16 989e12, fp8 1,979e12; MI300X fp8 2,614.9e12)."""
        return self.dense_peak(dtype).flops_per_s

    @property
    def ridge_flop_per_byte(self) -> float:
        """FLOP/s ÷ bytes/s: the arithmetic intensity below which a kernel is memory-bound
        (roofline ridge point; A100: 312e12 / 2,039e9 = 153 FLOP/byte, card 14)."""
        return self.bf16_flops_per_s / self.bandwidth_bytes_per_s


@functools.cache
def _table() -> dict[str, dict]:
    return {k: v for k, v in json.loads(GPUS_FILE.read_text()).items() if not k.startswith("_")}


def list_gpus() -> list[str]:
    """Names of the GPU presets, sorted, e.g. ['a100-40gb', 'a100-80gb', …, 'rtx-4090']."""
    return sorted(_table())


def load_gpu(name: str) -> GPU:
    """A GPU preset by name; ValueError listing the names if unknown."""
    table = _table()
    if name not in table:
        raise ValueError(f"unknown GPU {name!r}; presets: {', '.join(sorted(table))}")
    row = dict(table[name])
    peaks = _dense_peaks(row.pop("dense_peaks", None))
    return GPU(name=name, **row, dense_peaks=peaks)


def custom_gpu(memory_gib: float, tflops: float, bandwidth_gbs: float) -> GPU:
    """Your own accelerator: memory in GiB, dense TFLOP/s, bandwidth in GB/s (10⁹ B/s)."""
    values = {"--gpu-mem-gib": memory_gib, "--gpu-tflops": tflops, "--gpu-bandwidth-gbs": bandwidth_gbs}
    for flag, value in values.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < 1e7:
            raise ValueError(f"{flag} must be a positive number below 10,000,000, got {value!r}")
    memory = round(memory_gib * 2**30)
    return GPU(
        name="custom",
        label=f"custom GPU ({memory_gib:g} GiB, {tflops:g} TFLOP/s, {bandwidth_gbs:g} GB/s)",
        memory_bytes=memory,
        bandwidth_bytes_per_s=round(bandwidth_gbs * 1e9),
        bf16_flops_per_s=round(tflops * 1e12),
        memory_source="given by the user (GiB)",
        source="given by the user",
    )
