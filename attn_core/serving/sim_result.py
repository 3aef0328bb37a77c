"""What a serving simulation reports: throughput, TTFT, TPOT and end-to-end latency percentiles over
requests, and the batch and KV occupancy over time (downsampled), from each replica's run.

TTFT = first token − arrival; TPOT = (finish − first token) / (output tokens − 1), for requests
of more than one output token; latency = finish − arrival. Throughput counts every replica's
output tokens over the span from the first arrival to the last finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_POINTS = 200  # points kept of each over-time series


@dataclass(frozen=True)
class ReplicaRun:
    """One replica's requests (arrival, first token, finish in s; output tokens) and its steps."""

    arrival: np.ndarray
    first: np.ndarray
    finish: np.ndarray
    output: np.ndarray
    trace: Any  # simulate._Trace: per-step end time, seconds, running, in system, blocks used
    capacity_blocks: int
    preemptions: int


@dataclass(frozen=True)
class Percentiles:
    """p50, p90, p99 and the mean of one per-request time, seconds."""

    p50: float
    p90: float
    p99: float
    mean: float

    @staticmethod
    def of(x: np.ndarray) -> Percentiles:
        x = x[np.isfinite(x)]
        if not len(x):
            return Percentiles(*(4 * [float("nan")]))
        p50, p90, p99 = np.percentile(x, [50, 90, 99])
        return Percentiles(float(p50), float(p90), float(p99), float(x.mean()))


@dataclass(frozen=True)
class SimResult:
    """One deployment under one load (see the module docstring); times in seconds."""

    output_tokens_per_s: float
    requests_per_s: float
    ttft: Percentiles
    tpot: Percentiles
    latency: Percentiles
    time_s: np.ndarray  # (≤ MAX_POINTS,) step end times of the downsampled series
    batch: np.ndarray  # running sequences in those steps (replica 0)
    kv_occupancy: np.ndarray  # share of replica 0's KV blocks in use
    max_concurrency: int  # sequences of in + out tokens that memory allows per replica
    preemptions: int
    steps: int
    span_s: float  # first arrival → last finish
    runs: tuple[ReplicaRun, ...]


def _downsample(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, MAX_POINTS)).astype(int)) if n else np.zeros(0, int)


def summarize(runs: list[ReplicaRun], max_concurrency: int) -> SimResult:
    """Merge the replicas' requests and keep replica 0's series, downsampled."""
    cat = {k: np.concatenate([getattr(r, k) for r in runs]) for k in ("arrival", "first", "finish", "output")}
    span = float(np.nanmax(cat["finish"]) - np.nanmin(cat["arrival"]))
    span = span if span > 0 else float("nan")
    multi = cat["output"] > 1
    tpot = (cat["finish"] - cat["first"])[multi] / (cat["output"][multi] - 1)
    t = runs[0].trace
    keep = _downsample(len(t.end))
    return SimResult(
        output_tokens_per_s=float(cat["output"].sum() / span),
        requests_per_s=float(len(cat["output"]) / span),
        ttft=Percentiles.of(cat["first"] - cat["arrival"]),
        tpot=Percentiles.of(tpot),
        latency=Percentiles.of(cat["finish"] - cat["arrival"]),
        time_s=t.end[keep],
        batch=t.running[keep],
        kv_occupancy=t.blocks_used[keep] / max(runs[0].capacity_blocks, 1),
        max_concurrency=int(max_concurrency),
        preemptions=sum(r.preemptions for r in runs),
        steps=sum(len(r.trace.end) for r in runs),
        span_s=span,
        runs=tuple(runs),
    )
