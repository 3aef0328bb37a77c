"""The smallest deployment that serves a load within its SLOs, and why it is that size.

For each tensor-parallel degree t in 1, 2, 4, 8 whose replica holds the weights, the fewest
replicas r whose simulated TTFT p99 and TPOT p99 meet the SLOs (doubling, then bisection: more
replicas never hurt, each sees a thinner Poisson stream); the answer is the fewest GPUs t·r (ties:
the smaller t). As the rate grows each t needs at least as many replicas, so the answer never
shrinks. The same arrivals (one seed) serve every candidate.

What limits it (`limit_of`): offered every request at once, does a replica's KV cache fill before
the scheduler's sequence cap ("KV memory"), or does its decode step sit on the compute or the
bandwidth side of the roofline ("compute", "bandwidth")?
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.gpus import GPU
from attn_core.cost.inputs import Precision
from attn_core.cost.phases import decode_count
from attn_core.serving.load import Load
from attn_core.serving.sim_result import SimResult
from attn_core.serving.simulate import Deployment, Scheduler, simulate
from attn_core.serving.step_time import Engine, TimeModelCoefficients

TP_DEGREES = (1, 2, 4, 8)
MAX_REPLICAS = 256


@dataclass(frozen=True)
class SLO:
    """p99 limits, seconds."""

    ttft_s: float
    tpot_s: float

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s"):
            if not 0 < getattr(self, name) < 1e6:
                raise ValueError(f"SLO {name} must be a positive number of seconds")

    def met(self, r: SimResult) -> bool:
        return r.ttft.p99 <= self.ttft_s and r.tpot.p99 <= self.tpot_s


@dataclass(frozen=True)
class Target:
    """The model, where it runs and what it must serve."""

    shape: ModelShape
    gpu: GPU
    precision: Precision
    load: Load
    slo: SLO
    compute: str = "bf16"
    coefficients: TimeModelCoefficients = dataclasses.field(default_factory=TimeModelCoefficients)
    scheduler: Scheduler = dataclasses.field(default_factory=Scheduler)
    cuda_graphs: bool = True  # steps replayed as captured CUDA graphs (`Engine.cuda_graphs`)


@dataclass(frozen=True)
class Plan:
    """The deployment chosen, its simulation and what limits it; None fields when nothing fits."""

    gpus: int | None
    tp: int | None
    replicas: int | None
    result: SimResult | None
    output_tokens_per_s_per_gpu: float | None
    limit: str
    tried: tuple[tuple[int, int, bool], ...]  # (tp, replicas, met) of every simulation run


def _fits(target: Target, tp: int) -> Deployment | None:
    t = target
    engine = Engine(
        t.shape, t.gpu, t.precision, tp, t.compute, coefficients=t.coefficients, cuda_graphs=t.cuda_graphs
    )
    d = Deployment(engine, 1, target.scheduler)
    try:
        simulate(d, dataclasses.replace(target.load, requests=1, mode="max"))
    except ValueError:
        return None  # the weights (or one request's cache) do not fit t GPUs
    return d


def _fewest_replicas(target: Target, d: Deployment, tried: list) -> tuple[int, SimResult] | None:
    """The fewest replicas meeting the SLOs (doubling, then bisection), or None up to MAX_REPLICAS."""
    runs: dict[int, SimResult] = {}

    def ok(r: int) -> bool:
        if r not in runs:
            runs[r] = simulate(dataclasses.replace(d, replicas=r), target.load)
            tried.append((d.engine.tp, r, target.slo.met(runs[r])))
        return target.slo.met(runs[r])

    hi = 1
    while not ok(hi):
        if hi >= MAX_REPLICAS:
            return None
        hi = min(2 * hi, MAX_REPLICAS)
    lo = hi // 2  # fails (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi, runs[hi]


def limit_of(d: Deployment, load: Load) -> str:
    """What caps one replica's throughput: offered every request at once (up to twice the
    scheduler's sequences), "KV memory" if its cache filled (≥ 90% of blocks, or preemption)
    before the scheduler's sequence cap; else "compute" or "bandwidth", the roofline's side of a
    decode step at the batch it ran and the mean context, in + out/2 tokens."""
    k = min(2 * d.scheduler.max_seqs, 4 * max(d.scheduler.max_seqs, 1))
    sat = simulate(dataclasses.replace(d, replicas=1), dataclasses.replace(load, mode="max", requests=k))
    if sat.preemptions or float(np.max(sat.kv_occupancy, initial=0)) >= 0.9:
        return "KV memory"
    e = d.engine
    b = max(int(np.max(sat.batch, initial=1)), 1)
    count = decode_count(e.shape, load.in_len + load.out_len // 2, b, e.precision)
    peaks = e.peaks
    compute_s, memory_s = count.flops / peaks.flops_per_s, count.bytes / peaks.bandwidth_bytes_per_s
    return "compute" if compute_s >= memory_s else "bandwidth"


def plan(target: Target) -> Plan:
    """The smallest deployment meeting the SLOs (module docstring)."""
    best, tried = None, []
    for tp in TP_DEGREES:
        d = _fits(target, tp)
        if d is None or (best is not None and tp > best[0] * best[1]):
            continue
        found = _fewest_replicas(target, d, tried)
        if found and (best is None or tp * found[0] < best[0] * best[1]):
            best = (tp, found[0], found[1], d)
    if best is None:
        return Plan(
            None, None, None, None, None, "no deployment up to 8 × 256 GPUs meets the SLOs", tuple(tried)
        )
    tp, r, result, d = best
    return Plan(
        tp * r,
        tp,
        r,
        result,
        result.output_tokens_per_s / (tp * r),
        limit_of(d, target.load),
        tuple(tried),
    )
