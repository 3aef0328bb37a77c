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
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

GPUS_FILE = Path(__file__).resolve().parents[2] / "assets" / "gpus.json"

MemoryConvention = Literal["device", "vendor"]
MEMORY_CONVENTIONS: tuple[MemoryConvention, ...] = ("device", "vendor")


@dataclass(frozen=True)
class GPU:
    """One accelerator: memory (bytes, two conventions), memory bandwidth (bytes/s), dense bf16 FLOP/s."""

    name: str
    label: str
    memory_bytes: int  # what the device reports
    bandwidth_bytes_per_s: int
    bf16_flops_per_s: int
    vendor_memory_bytes: int | None = None  # the datasheet's decimal GB; None: same as memory_bytes
    memory_source: str = ""
    source: str = ""

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
    return GPU(name=name, **table[name])


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
