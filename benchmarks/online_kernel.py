"""The project's tiled online-softmax kernel on CPU, side by side with naive attention and SDPA.

The speed goal: attn_core.online_attention (eager PyTorch; default tiles 512 queries × 128 keys)
against attn_core.attention (forms the full L×S matrix) and torch's fused SDPA kernel, at
T ∈ {1024, 4096}, fp32, B = 1, H = 8, d = 64. Targets: ≤ 2.5× SDPA's wall time at T = 4096 with
the default block size; extra memory O(T·d), far below naive's T²; stretch: a torch.compile'd
variant within 1.2× of SDPA.

Method. Every implementation is first checked against SDPA (max |Δ| ≤ 1e-5 in fp32). Timing runs
R rounds; each round calls every implementation once, in rotating order, so a burst of load on
the shared machine hits all of them alike; reported: the median time and the median of the
per-round ratios to SDPA, and the fastest round of each (the least disturbed) with its ratio. Peak extra memory: resident-set high-water mark (VmHWM, reset through
/proc/self/clear_refs after malloc_trim) minus the resident set before the call — it includes the
output tensor (8 MiB at T = 4096). THP_MEM_ALLOC_ENABLE=1 (PyTorch's huge-page allocator) is set
unless --no-thp: fresh allocations are slow on this VM (see shared/notes/cpu-baseline.md).

Usage: .venv/bin/python benchmarks/online_kernel.py [--T 1024 4096] [--rounds 5] [--causal]
       [--compile] [--no-thp]
"""

from __future__ import annotations

import os
import sys

if "--no-thp" not in sys.argv:
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # must precede the torch import

import argparse
import ctypes
import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from attn_core.attention import attention
from attn_core.cost.units import format_bytes_binary
from attn_core.masks import causal_mask
from attn_core.online import online_attention

B, H, D = 1, 8, 64


@dataclass(frozen=True)
class Record:
    name: str
    T: int
    causal: bool
    median_ms: float
    ratio_to_sdpa: float  # median over rounds of (this / SDPA in the same round)
    best_ms: float  # fastest round: the least disturbed by other processes
    best_ratio: float  # best / SDPA's best
    peak_extra_bytes: int
    max_abs_diff: float  # against SDPA


# -- peak memory --------------------------------------------------------------------------------
_libc = ctypes.CDLL("libc.so.6")


def _status_bytes(key: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{key}:\s+(\d+) kB", text).group(1)) * 1024


def peak_extra_bytes(fn: Callable[[], torch.Tensor]) -> int:
    """Resident-set high-water mark during fn() minus the resident set before it."""
    _libc.malloc_trim(0)  # hand freed heap back so the next peak is not hidden by a cache
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current VmRSS
    before = _status_bytes("VmRSS")
    out = fn()
    peak = _status_bytes("VmHWM") - before
    del out
    return max(peak, 0)


# -- the torch.compile variant (stretch) --------------------------------------------------------
def _query_block(q_tile: torch.Tensor, K: torch.Tensor, V1: torch.Tensor, bk: int) -> torch.Tensor:
    """The same recurrence, functional, for one query tile (BH, B_q, d) over all key tiles;
    V1 = [V, 1] so the last column of acc is ℓ. Inductor fuses max/exp/rescale into C++ loops."""
    m = torch.full((*q_tile.shape[:2], 1), -math.inf, dtype=q_tile.dtype)
    acc = torch.zeros((*q_tile.shape[:2], V1.shape[-1]), dtype=q_tile.dtype)
    for c0 in range(0, K.shape[1], bk):
        S = torch.bmm(q_tile, K[:, c0 : c0 + bk].transpose(1, 2))  # (BH, B_q, B_k)
        m_new = torch.maximum(m, S.amax(-1, keepdim=True))
        acc = acc * torch.exp(m - m_new) + torch.bmm(torch.exp(S - m_new), V1[:, c0 : c0 + bk])
        m = m_new
    return acc[..., :-1] / acc[..., -1:]


def compiled_online(bq: int = 512, bk: int = 128) -> Callable[..., torch.Tensor]:
    kernel = torch.compile(_query_block, dynamic=False)

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        BH, T, d = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
        Q = (q * d**-0.5).reshape(BH, T, d)  # (BH, T, d)
        K = k.reshape(BH, T, d)
        V1 = torch.cat([v.reshape(BH, T, -1), q.new_ones(BH, T, 1)], -1)  # (BH, T, d_v + 1)
        out = torch.cat([kernel(Q[:, r0 : r0 + bq], K, V1, bk) for r0 in range(0, T, bq)], 1)
        return out.reshape(q.shape[0], q.shape[1], T, -1)

    return run


# -- the run ------------------------------------------------------------------------------------
def implementations(T: int, causal: bool, compile_: bool) -> dict[str, Callable[..., torch.Tensor]]:
    mask = causal_mask(T, T) if causal else None
    impls: dict[str, Callable[..., torch.Tensor]] = {
        "SDPA (torch, fused)": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
        "naive attention (L×S)": lambda q, k, v: attention(q, k, v, mask).output,
        "online, default (512×128 tiles)": lambda q, k, v: online_attention(q, k, v, causal=causal).output,
        "online, 128×128 tiles": lambda q, k, v: (
            online_attention(q, k, v, causal=causal, query_block_size=128).output
        ),
    }
    if compile_ and not causal:
        impls["online, torch.compile 512×128"] = compiled_online()
    return impls


def bench(T: int, causal: bool, rounds: int, compile_: bool) -> list[Record]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, generator=g) for _ in range(3))
    impls = implementations(T, causal, compile_)
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    diffs = {}
    for name, fn in impls.items():  # correctness first; also the warm-up (and the compile)
        diffs[name] = float((fn(q, k, v) - reference).abs().max())
        if diffs[name] > 1e-5:  # fp32: a few unit roundoffs (6e-8) on |o| ≲ 1
            raise AssertionError(f"{name} differs from SDPA by {diffs[name]:.2e} at T={T}")
    names = list(impls)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            impls[name](q, k, v)
            times[name].append(time.perf_counter() - start)
    sdpa = times[names[0]]
    records = []
    for name in names:
        ratios = [t / s for t, s in zip(times[name], sdpa, strict=True)]
        peak = peak_extra_bytes(lambda fn=impls[name]: fn(q, k, v))
        records.append(
            Record(
                name=name,
                T=T,
                causal=causal,
                median_ms=statistics.median(times[name]) * 1e3,
                ratio_to_sdpa=statistics.median(ratios),
                best_ms=min(times[name]) * 1e3,
                best_ratio=min(times[name]) / min(sdpa),
                peak_extra_bytes=peak,
                max_abs_diff=diffs[name],
            )
        )
    return records


def markdown(records: list[Record]) -> str:
    lines = [
        "| T | mask | implementation | median | × SDPA (median of rounds) | best | × SDPA (best) "
        "| peak extra memory | max abs diff vs SDPA |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r.T:,} | {'causal' if r.causal else 'none'} | {r.name} | {r.median_ms:,.1f} ms "
            f"| {r.ratio_to_sdpa:.2f} | {r.best_ms:,.1f} ms | {r.best_ratio:.2f} "
            f"| {format_bytes_binary(r.peak_extra_bytes, 1)} | {r.max_abs_diff:.1e} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--causal", action="store_true", help="also time the causal variants")
    parser.add_argument("--compile", action="store_true", help="add the torch.compile variant (~1 min)")
    parser.add_argument("--no-thp", action="store_true", help="leave THP_MEM_ALLOC_ENABLE unset")
    args = parser.parse_args()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', 'unset')}, "
        f"B={B} H={H} d={D} fp32, median of {args.rounds} interleaved rounds"
    )
    print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    records = []
    for T in args.T:
        for causal in (False, True) if args.causal else (False,):
            records += bench(T, causal, args.rounds, args.compile)
            print(markdown([r for r in records if r.T == T and r.causal == causal]), flush=True)
    print()
    print(markdown(records))
    # Many small ops per tile make the eager kernel far more sensitive to other processes on
    # the cores than one fused SDPA call: compare runs only at similar load.
    print("load average (1, 5, 15 min) after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
