"""Token counts as exact ints or float64 sweeps, and bytes per number: what every cost formula takes.

Activations and the KV cache take whole bytes per number (DTYPE_BYTES). Weights may also be
quantized in groups, each group sharing a scale: their bits per weight include the scales
(WEIGHT_BITS; int4 at group 64 with fp16 scales is 4 + 16/64 = 4.25 bits)."""

from __future__ import annotations

from typing import Any

import numpy as np

Tokens = int | np.ndarray

DTYPE_BYTES = {
    "fp16": 2,
    "bf16": 2,
    "fp32": 4,
    "fp8": 1,
    "int8": 1,
}  # b, bytes per number (the default first)
# Bits per weight, scales included: int4 in groups of g weights with one fp16 scale each is
# 4 + 16/g; MXFP4 (OCP microscaling) groups 32 fp4 values under one 8-bit power-of-two scale.
WEIGHT_BITS = {name: 8.0 * b for name, b in DTYPE_BYTES.items()} | {
    "int4-g64": 4 + 16 / 64,  # 4.25
    "int4-g128": 4 + 16 / 128,  # 4.125
    "mxfp4": 4 + 8 / 32,  # 4.25
}


# Compute formats: the Tensor Core format a phase's matrix products run in, which sets the peak
# its compute time is priced at (`GPU.dense_peak`; H100 SXM: bf16/fp16 989, fp8/int8 1,979 TFLOP/s
# dense). fp4 is Blackwell's (B200: 9 PFLOP/s dense).
COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp4")


def check_compute_dtype(dtype: str | None) -> str | None:
    """``dtype`` if it is a compute format (or None: follow the activations); ValueError otherwise."""
    if dtype is not None and dtype not in COMPUTE_DTYPES:
        raise ValueError(f"--compute-dtype must be one of {', '.join(COMPUTE_DTYPES)}, got {dtype!r}")
    return dtype


def bytes_per_value(dtype: str) -> int:
    """b for a dtype name: fp32 4, fp16/bf16 2, fp8/int8 1."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def weight_bytes_per_param(dtype: str) -> float:
    """Bytes per weight, scales included: fp16 2, int4-g64 0.53125 (4.25 bits), mxfp4 0.53125."""
    if dtype not in WEIGHT_BITS:
        raise ValueError(f"unknown weight dtype {dtype!r}; choose one of {', '.join(WEIGHT_BITS)}")
    return WEIGHT_BITS[dtype] / 8


def _tokens(value: Any, name: str = "T", minimum: int = 0) -> Tokens:
    """A count of tokens as an exact int (scalar) or a float64 array (sweep); rejects negatives."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int | np.integer):
        if value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {value}")
        return int(value)
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        if not float(arr).is_integer():
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        return _tokens(int(arr), name, minimum)
    if not np.all(np.isfinite(arr)) or np.any(arr < minimum) or np.any(arr != np.floor(arr)):
        raise ValueError(f"every {name} must be a whole number ≥ {minimum}")
    return arr


def _minimum(a: Tokens, b: int | None) -> Tokens:
    """min(a, b) for an int or an array; b = None means no cap."""
    if b is None:
        return a
    return np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)
