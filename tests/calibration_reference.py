"""A fixture bench run and an independent hand computation of the calibrated times.

The run is built here, in the format benchmarks/kernel_bench.py gpu writes ({"meta", "records"}),
with round rates, so every figure can be worked out by hand. Nothing here imports attn_core:
Llama 2 7B's time at those rates is written from its dimensions (d = 4,096, 32 layers, 32 heads
of 128, d_ff = 11,008, V = 32,000, untied head, 6,738,415,616 parameters) and the formula the
Cost page states, t = max(Σ F_w / R_mm(rows), W / BW) + max(F_a / R_attn, M / BW).
"""

from __future__ import annotations

import itertools
import math

# -- The fixture run: an H200 with round rates ------------------------------------------------
SQUARE = 500e12  # fp16 square matmul, FLOP/s
CURVE = {1: 2e12, 16: 80e12, 64: 300e12, 8192: SQUARE}  # fp16 (m × 8192) products, cold weights
BANDWIDTH = 4e12  # bytes/s
ATTENTION = 300e12  # the one record the lookup must pick for d = 128, causal, L = 2,048


def record(impl, tflops, dtype="fp16", d=128, L=2048, causal=True, ok=True, heads=16, kv_heads=16):
    return {
        "impl": impl,
        "backend": None,
        "device": "cuda",
        "dtype": dtype,
        "seq_len": L,
        "head_dim": d,
        "causal": causal,
        "ms": 1.0,
        "tflops": tflops,
        "peak_mem_bytes": None,
        "max_abs_err": 1e-3,
        "ok": ok,
        "note": "",
        "kv_len": L,
        "batch": 1,
        "heads": heads,
        "kv_heads": kv_heads,
    }


def gpu_run(device: str = "NVIDIA H200") -> dict:
    """A GPU run: datasheet peaks in ``meta.peaks`` (not what it attained), attained rates in
    ``meta.attained``, and records the attention lookup must choose among."""
    meta = {
        "device": device,
        "capability": "9.0",
        "memory_bytes": 150_754_820_096,
        "sm_count": 132,
        "versions": {"torch": "2.11", "triton": "3.6"},
        "peaks": {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12},
        "bandwidth": 4.8e12,
        "peak_source": "H200 datasheet",
        "kind": "cuda",
        "measured": False,
        "attained": {
            "matmul_flop_per_s": {"fp16": SQUARE},
            "matmul_rows": {"fp16": {str(m): r for m, r in CURVE.items()}},
            "bandwidth_bytes_per_s": BANDWIDTH,
            "source": "measured in the fixture",
        },
        "date": "2026-12-05 06:00 UTC",
    }
    records = [
        record("sdpa-flash", ATTENTION / 1e12),
        record("sdpa-math", 100.0),  # slower, same case: the fastest correct one counts
        record("triton", 900.0, ok=False),  # wrong answers set no rate
        record("sdpa-cudnn", 800.0, dtype="bf16"),  # another dtype
        record("sdpa-flash", 600.0, causal=False),  # not causal: prefill counts causal pairs
        record("sdpa-flash", 700.0, d=64),  # another head dim
        record("sdpa-flash", 350.0, L=512),  # farther from P = 2,048
        record("flex", None, ok=None) | {"ms": None, "note": "unsupported: …"},  # did not run
    ]
    return {"meta": meta, "records": records}


def cpu_run() -> dict:
    """This server's sweep as views/kernels publishes it: measured peaks, no datasheet."""
    meta = {
        "device": "Test CPU",
        "kind": "cpu",
        "measured": True,
        "peaks": {"fp32": 80e9},
        "bandwidth": 20e9,
        "peak_source": "measured here",
        "memory_bytes": 16 * 2**30,
        "date": "2026-12-05 06:30 UTC",
        "attained": {
            "matmul_flop_per_s": {"fp32": 80e9},
            "matmul_rows": {"fp32": {"1": 10e9, "1024": 80e9}},
            "bandwidth_bytes_per_s": 25e9,
            "source": "measured here",
        },
    }
    return {"meta": meta, "records": [record("sdpa", 0.03, dtype="fp32", d=64, L=512, heads=4, kv_heads=4)]}


# -- Llama 2 7B by hand -----------------------------------------------------------------------
d, L, d_ff, V, PARAMS = 4096, 32, 11008, 32000, 6_738_415_616


def rate(rows: float) -> float:
    """R_mm(rows): the fixture's curve, linear in log(rows) between its points, held at its ends."""
    points = sorted(CURVE.items())
    if rows <= points[0][0]:
        return points[0][1]
    for (m0, r0), (m1, r1) in itertools.pairwise(points):
        if rows <= m1:
            return r0 + (r1 - r0) * math.log(rows / m0) / math.log(m1 / m0)
    return points[-1][1]


def llama2_7b(P: int, N: int, BW: float = BANDWIDTH, R_attn: float = ATTENTION) -> dict[str, float]:
    """Seconds for batch 1, fp16 everything: prefill, the first decode step, P + N tokens."""
    b = 2
    F_w = (L * (8 * d * d + 6 * d * d_ff) + 2 * d * V) * P  # Q, K, V, O; gate, up, down; the head
    F_a = L * 4 * d * P * (P + 1) // 2  # QKᵀ and PV, 4·h·d_h per causal pair
    W = b * (PARAMS - V * d + P * d)  # the input table only for the P rows looked up
    M = L * 2 * d * b * P  # K and V of every layer written (H_kv · d_h = d)
    prefill = max(F_w / rate(P), W / BW) + max(F_a / R_attn, M / BW)

    def step(ctx: int) -> float:
        F_w1 = L * (8 * d * d + 6 * d * d_ff) + 2 * d * V
        F_a1 = L * 4 * d * (ctx + 1)  # the new token attends to ctx + 1 keys, itself included
        W1 = b * (PARAMS - V * d + d)
        M1 = L * 2 * d * b * ctx
        return max(F_w1 / rate(1), W1 / BW) + max(F_a1 / R_attn, M1 / BW)

    return {"ttft": prefill, "decode": step(P), "total": prefill + sum(step(P + i) for i in range(N))}
