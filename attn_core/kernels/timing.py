"""Timing done right, and the one untimed profiled call that says which kernel ran and how much
memory it took.

CPU: each round calls every contestant once, in an order that rotates by round, so a burst of
load from other processes hits all of them alike; a contestant's time is the median over rounds
of ``time.perf_counter`` differences. GPU: ``triton.testing.do_bench`` (median, with warm-up and an
L2 flush between runs) when Triton compiles, else CUDA events around each call with
``torch.cuda.synchronize()``. Peak memory is never read from a timed call.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from attn_core.kernels import triton_kernel
from attn_core.kernels.contestants import SDPA_OPS

CUDA_WARMUP_MS = 25  # do_bench's defaults, in ms of running the function
CUDA_REP_MS = 100


@dataclass(frozen=True)
class Probe:
    """What one profiled call showed: the SDPA kernel that ran (or None) and the peak bytes
    allocated during the call above what was live before it (the output included)."""

    backend: str | None
    peak_bytes: int | None
    warnings: tuple[str, ...] = ()


def _profiled_peak(events) -> int:
    """Peak of the running sum of allocations (+) and frees (−) in time order, at op boundaries:
    each op's self allocations (net of what it freed of its children's: the profiler charges a
    free to the op it happens in) count when the op ends, so a child's tensor is live before the
    parent frees it; the allocator's [memory] events count where they happen."""
    live = peak = 0
    for e in sorted(events, key=lambda e: e.time_range.end):
        live += e.self_cpu_memory_usage
        peak = max(peak, live)
    return peak


def probe(fn: Callable[[], object], device: str) -> Probe:
    """Run fn once under the profiler (op names; CPU allocations) and, on CUDA, between
    ``reset_peak_memory_stats`` and ``max_memory_allocated``. Warnings are captured: on a GPU,
    PyTorch explains there why a backend refused."""
    cuda = device == "cuda"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        with profile(activities=[ProfilerActivity.CPU], profile_memory=not cuda) as prof:
            fn()
            if cuda:
                torch.cuda.synchronize()
    events = prof.events()
    backend = next((SDPA_OPS[e.name] for e in events if e.name in SDPA_OPS), None)
    peak = torch.cuda.max_memory_allocated() - base if cuda else _profiled_peak(events)
    messages = tuple(dict.fromkeys(str(w.message).strip() for w in caught))
    return Probe(backend, int(peak), messages)


def median_ms_cpu(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median wall time (ms) of each function over ``rounds`` interleaved rounds, after one
    warm-up call each; round r starts at function r mod n."""
    names = list(fns)
    for name in names:
        fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def median_ms_cuda(fn: Callable[[], object]) -> float:
    """Median ms of fn on the GPU: do_bench when Triton compiles here, else CUDA events."""
    if triton_kernel.AVAILABLE and not triton_kernel.INTERPRETED:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=CUDA_WARMUP_MS, rep=CUDA_REP_MS, return_mode="median"))
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)
