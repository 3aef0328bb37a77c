"""Precision study: the online-softmax kernel in fp64 / fp32 / fp16 / bf16, error against fp64.

The same computation — ``online_attention`` on the same random Q, K, V — runs in each dtype,
with its running state (m, ℓ, u) and arithmetic either in the input dtype or in fp32, as
FlashAttention keeps them. The oracle is plain ``attention`` in float64 on the *same rounded
inputs*, so the error is the arithmetic's, not the cost of storing Q, K, V in fewer bits (that
cost is reported beside it). Note: CPU matmul kernels may accumulate fp16/bf16 products in wider
registers internally; what "accumulate in the input dtype" controls here is every stored
intermediate — scores, P, the running ℓ and u — and each element-wise step (cards 2 and 15).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.dtypes import DTYPES
from attn_core.limits import LIMITS
from attn_core.online import online_attention

MAX_T = LIMITS.precision_len


@dataclass(frozen=True)
class PrecisionRow:
    """One (T, dtype, accumulation) run; errors are max |·| over the (queries, d_v) output."""

    T: int  # keys per row
    dtype: str  # input and output dtype
    accumulate: str  # "input" (state in the input dtype) or "float32"
    max_abs_error: float  # vs float64 attention on the same rounded inputs
    rel_error: float  # max_abs_error / max |reference|: comparable across T and to UNIT_ROUNDOFF
    input_rounding_error: float  # float64 attention: original vs rounded inputs
    finite: bool  # no inf/NaN in the output


def _inputs(T: int, queries: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, queries, d, generator=g, dtype=torch.float64)  # (H=1, L, d)
    k = torch.randn(1, T, d, generator=g, dtype=torch.float64)  # (H=1, S, d)
    v = torch.randn(1, T, d, generator=g, dtype=torch.float64)  # (H=1, S, d_v)
    return q, k, v


def precision_error(
    T: int,
    dtype: str,
    accumulate: str = "float32",
    *,
    queries: int = 16,
    d: int = 64,
    seed: int = 0,
    block_size: int = 128,
) -> PrecisionRow:
    """Run ``online_attention`` on one head with ``queries`` rows of T standard-normal keys and
    values (d = d_k = d_v, scale 1/sqrt(d)) in ``dtype``; state in the input dtype
    (``accumulate="input"``) or fp32. Returns the max abs error against float64."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    if accumulate not in ("input", "float32"):
        raise ValueError(f"accumulate must be 'input' or 'float32', not {accumulate!r}")
    if not 1 <= T <= MAX_T:
        raise ValueError(f"T must lie in 1…{MAX_T:,}, got {T}")
    q, k, v = _inputs(T, queries, d, seed)
    dt = DTYPES[dtype]
    q_r, k_r, v_r = (x.to(dt) for x in (q, k, v))  # what the kernel sees
    acc = dt if accumulate == "input" else torch.float32
    if dt == torch.float64:
        acc = torch.float64  # fp64 in fp32 would be a downcast, not an accumulation choice
    out = online_attention(q_r, k_r, v_r, block_size=block_size, accum_dtype=acc).output
    exact = attention(q, k, v).output  # (1, L, d) float64 on the original inputs
    reference = attention(*(x.to(torch.float64) for x in (q_r, k_r, v_r))).output
    err = float((out.to(torch.float64) - reference).abs().max())
    return PrecisionRow(
        T=T,
        dtype=dtype,
        accumulate=accumulate,
        max_abs_error=err,
        rel_error=err / float(reference.abs().max()),
        input_rounding_error=float((reference - exact).abs().max()),
        finite=bool(torch.isfinite(out).all()),
    )


def precision_study(
    T_values: Sequence[int] = (256, 1024, 4096),
    dtypes: Sequence[str] = ("float64", "float32", "float16", "bfloat16"),
    *,
    queries: int = 16,
    d: int = 64,
    seed: int = 0,
    block_size: int = 128,
) -> tuple[PrecisionRow, ...]:
    """Every (T, dtype, accumulation) of the study: fp16 and bf16 run twice (state in the input
    dtype, state in fp32); fp64 and fp32 once (their own dtype is the accumulation dtype)."""
    rows = []
    for T in T_values:
        for name in dtypes:
            modes = ("input", "float32") if name in ("float16", "bfloat16") else ("input",)
            for mode in modes:
                rows.append(
                    precision_error(T, name, mode, queries=queries, d=d, seed=seed, block_size=block_size)
                )
    return tuple(rows)
