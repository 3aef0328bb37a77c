"""GPU presets for the serving and decode-speed bounds (cards 13 and 14).

Figures are the vendors' datasheet numbers in decimal units (GB = 10^9 B, GB/s, TFLOP/s), read
from ``assets/gpus.json``; the sources are listed there and in ``assets/models/README.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GPUS_FILE = Path(__file__).resolve().parents[2] / "assets" / "gpus.json"


@dataclass(frozen=True)
class GPU:
    """One accelerator: memory (bytes), memory bandwidth (bytes/s), dense bf16 FLOP/s."""

    name: str
    label: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    bf16_flops_per_s: int
    source: str = ""

    def __post_init__(self) -> None:
        for field in ("memory_bytes", "bandwidth_bytes_per_s", "bf16_flops_per_s"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"GPU {field} must be a positive integer, got {value!r}")

    @property
    def ridge_flop_per_byte(self) -> float:
        """FLOP/s ÷ bytes/s: the arithmetic intensity below which a kernel is memory-bound
        (roofline ridge point; A100: 312e12 / 2,039e9 = 153 FLOP/byte, card 14)."""
        return self.bf16_flops_per_s / self.bandwidth_bytes_per_s


def _table() -> dict[str, dict]:
    return {k: v for k, v in json.loads(GPUS_FILE.read_text()).items() if not k.startswith("_")}


def list_gpus() -> list[str]:
    """Names of the GPU presets, e.g. ['a100-80gb', 'h100-sxm', 'h200']."""
    return sorted(_table())


def load_gpu(name: str) -> GPU:
    """A GPU preset by name; ValueError listing the names if unknown."""
    table = _table()
    if name not in table:
        raise ValueError(f"unknown GPU {name!r}; presets: {', '.join(sorted(table))}")
    return GPU(name=name, **table[name])
