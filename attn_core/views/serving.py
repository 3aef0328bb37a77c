"""The Serving page's view: one model on one GPU type under one load, simulated under continuous
batching (attn_core/serving/simulate.py), sized to its SLOs (attn_core/serving/plan.py).

Every time is given three ways: the estimate at the fitted time model's coefficients, its
calibrated 80% interval (attn_core/serving/fitted.py: ``time_range`` / ``rate_range``) and the
same load simulated at the roofline bound (`step_time.bound_s`), which an estimate never beats.
Sizes are bounded for a shared server: at most `MAX_PAGE_REQUESTS` requests and
`MAX_PAGE_OUTPUT_TOKENS` output tokens per simulation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.inputs import Precision
from attn_core.limits import ServerSlot
from attn_core.serving.fitted import FittedModel, load_fitted
from attn_core.serving.load import Load
from attn_core.serving.plan import SLO, TP_DEGREES, Plan, Target, plan
from attn_core.serving.sim_result import SimResult
from attn_core.serving.simulate import Deployment, simulate
from attn_core.serving.step_time import Engine, bound_s

MAX_PAGE_REQUESTS = 2_000  # requests one simulation on the page may run
MAX_PAGE_OUTPUT_TOKENS = 250_000  # requests × output tokens: a thin Poisson stream decodes in small batches
MAX_PAGE_STEPS = 6_000  # scheduler steps one simulation may take (~150 µs each; the plan runs up to ~30)
MAX_PAGE_IN_LEN, MAX_PAGE_OUT_LEN = 32_768, 4_096
MAX_PAGE_GPUS = 64
MAX_PAGE_CONCURRENCY = 1024
CURVE_CONCURRENCY = (1, 4, 16, 64, 256)  # the latency-vs-throughput curve's points
GPUS = list_gpus()
COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp4")


class LoadMode(StrEnum):
    """How requests arrive (the values are the labels shown; `Load.mode` is the member's name)."""

    RATE = "Poisson arrivals (req/s)"
    CONCURRENCY = "fixed concurrency"
    MAX = "max load (all at once)"

    @property
    def kind(self) -> str:
        return self.name.lower()


class Section(StrEnum):
    PLAN = "Plan & latency"
    CURVE = "Latency vs throughput"
    TIMELINE = "Batch & KV over time"
    VARIANTS = "MHA / GQA / MLA / hybrid"


@dataclass(frozen=True)
class Ask:
    """What the page asks: the model, where it runs (GPU type, a cap on their number, dtypes), the
    load and the p99 SLOs."""

    shape: ModelShape
    gpu: str
    max_gpus: int
    precision: Precision
    compute: str
    load: Load
    slo: SLO
    cuda_graphs: bool = True  # the engine replays steps as CUDA graphs (else eager)


@dataclass(frozen=True)
class Timed:
    """One figure: the estimate, its 80% interval (low, high) and the roofline bound."""

    estimate: float
    low: float
    high: float
    bound: float

    def text(self, unit: str) -> str:
        return f"{self.estimate:,.1f} {unit} (80%: {self.low:,.1f}–{self.high:,.1f}; bound {self.bound:,.1f})"


@dataclass(frozen=True)
class ServingView:
    ask: Ask
    gpus: int
    tp: int
    replicas: int
    met: bool  # the simulated p99s meet the SLOs on this deployment
    verdict: str  # what was chosen and why, or why the SLOs cannot be met within the cap
    limit: str  # what caps a replica's throughput
    throughput: Timed  # output tok/s, all GPUs
    per_gpu: Timed  # output tok/s per GPU
    ttft_p99: Timed  # ms
    tpot_p99: Timed  # ms
    percentiles: list[dict]  # TTFT, TPOT, latency × p50/p90/p99/mean, ms
    timeline: dict[str, np.ndarray]  # time s, batch, KV occupancy % (replica 0)
    max_concurrency: int
    preemptions: int
    time_model: str


# Simulations take a core for up to seconds each: one at a time per server (a repeat of the same
# inputs is served from the shared view cache, lab_ui/view_cache.py).
SIMULATION = ServerSlot("serving simulation")


def make_load(mode: str, lengths: tuple[int, int], rate: float, concurrency: int, requests: int) -> Load:
    """The page's load, within the page's caps (a ValueError naming the cap that bites)."""
    if lengths[0] > MAX_PAGE_IN_LEN or lengths[1] > MAX_PAGE_OUT_LEN:
        raise ValueError(
            f"At most {MAX_PAGE_IN_LEN:,} input and {MAX_PAGE_OUT_LEN:,} output tokens on this page."
        )
    if lengths[1] < 2:
        raise ValueError("At least 2 output tokens: TPOT is the time between output tokens.")
    if requests > MAX_PAGE_REQUESTS:
        raise ValueError(f"At most {MAX_PAGE_REQUESTS:,} requests on this page (asked {requests:,}).")
    if requests * lengths[1] > MAX_PAGE_OUTPUT_TOKENS:
        raise ValueError(
            f"requests × output length = {requests * lengths[1]:,} tokens is over this page's cap of "
            f"{MAX_PAGE_OUTPUT_TOKENS:,}: fewer requests or shorter outputs."
        )
    kw = {"rate": rate} if mode == "rate" else {"concurrency": concurrency} if mode == "concurrency" else {}
    return Load(lengths[0], lengths[1], mode, requests=requests, **kw)


def _smallest_replica(ask: Ask, fitted: FittedModel) -> tuple[int, int]:
    """(TP, sequences of in + out tokens it holds) of the smallest TP that holds the weights and one
    request; a ValueError when not even 8 GPUs do."""
    one = dataclasses.replace(ask.load, mode="max", requests=1)
    for tp in TP_DEGREES:
        try:
            return tp, simulate(Deployment(engine_of(ask, tp, fitted), 1), one).max_concurrency
        except ValueError:
            continue
    raise ValueError(
        f"{ask.shape.name} does not fit 8 {ask.gpu} GPUs at these dtypes (weights + one request)."
    )


def check_size(ask: Ask, fitted: FittedModel) -> int:
    """The smallest TP that holds the model; a ValueError when a simulation of the load there would
    take over `MAX_PAGE_STEPS` steps: K·out / B decode steps (B sequences at once, at most the
    scheduler's 256) plus K·in / 8,192 prefill steps."""
    tp, held = _smallest_replica(ask, fitted)
    k, load = ask.load.requests, ask.load
    steps = k * load.out_len / max(min(held, 256, k), 1) + k * load.in_len / 8192
    if steps > MAX_PAGE_STEPS:
        raise ValueError(
            f"This load needs about {steps:,.0f} scheduler steps on TP {tp} ({min(held, 256):,} sequences "
            f"at once); the page simulates at most {MAX_PAGE_STEPS:,}: fewer requests or shorter lengths."
        )
    return tp


def make_slo(ttft_ms: float, tpot_ms: float) -> SLO:
    """The p99 limits, given in ms."""
    return SLO(ttft_ms / 1e3, tpot_ms / 1e3)


def _timed(est: float, bound: float, fitted: FittedModel, rate: bool = False) -> Timed:
    """A time (s → ms) or a rate with its interval, the estimate kept on its bound's side."""
    if rate:
        e = min(est, bound)
        lo, hi = fitted.rate_range(e)
        return Timed(e, lo, min(hi, bound), bound)
    e_ms, b_ms = 1e3 * max(est, bound), 1e3 * bound
    lo, hi = fitted.time_range(e_ms)
    return Timed(e_ms, max(lo, b_ms), hi, b_ms)


def _out_of_reach(ask: Ask, fitted: FittedModel, tp_min: int) -> bool:
    """Whether one request alone, on any TP that holds the model, already misses an SLO (at the
    estimate, as the plan judges): no number of replicas can then meet it, so the plan's search up
    to 8 × 256 GPUs is skipped."""
    one = dataclasses.replace(ask.load, mode="max", requests=1)
    alone = [simulate(Deployment(engine_of(ask, tp, fitted), 1), one) for tp in TP_DEGREES if tp >= tp_min]
    return min(r.ttft.p99 for r in alone) > ask.slo.ttft_s or min(r.tpot.p99 for r in alone) > ask.slo.tpot_s


def _deployment(ask: Ask, fitted: FittedModel, tp_min: int) -> tuple[int, int, Plan | None]:
    """(TP, replicas) within the cap: the plan's when it fits the cap, else the smallest TP that
    holds the weights with as many replicas as the cap allows (and None for a plan out of reach)."""
    chosen = None
    if not _out_of_reach(ask, fitted, tp_min):
        chosen = plan(target_of(ask, fitted))
        if chosen.gpus is not None and chosen.gpus <= ask.max_gpus:
            return chosen.tp, chosen.replicas, chosen
    if tp_min > ask.max_gpus:
        raise ValueError(f"The weights need at least {tp_min} {ask.gpu} GPUs; the GPU cap is {ask.max_gpus}.")
    return tp_min, ask.max_gpus // tp_min, chosen


def _verdict(ask: Ask, chosen: Plan | None, gpus: int, met: bool) -> str:
    slo = f"TTFT p99 ≤ {1e3 * ask.slo.ttft_s:,.4g} ms and TPOT p99 ≤ {1e3 * ask.slo.tpot_s:,.4g} ms"
    if chosen is not None and chosen.gpus is not None and chosen.gpus <= ask.max_gpus:
        deployment = f"**{chosen.gpus}** = TP {chosen.tp} × {chosen.replicas} replica(s)"
        return f"The fewest GPUs meeting {slo}: {deployment}."
    need = (
        "one request alone on any TP already misses them, so no number of GPUs can"
        if chosen is None
        else "no deployment up to 8 × 256 GPUs does"
        if chosen.gpus is None
        else f"it needs {chosen.gpus} GPUs"
    )
    state = "meet them" if met else "do **not** meet them"
    return (
        f"**The SLOs cannot be met within the cap of {ask.max_gpus} GPUs** ({slo}: {need}). Shown: the "
        f"cap's {gpus} GPUs, which {state}."
    )


def _percentiles(est: SimResult, bound: SimResult, fitted: FittedModel) -> list[dict]:
    rows = []
    for name in ("ttft", "tpot", "latency"):
        for q in ("p50", "p90", "p99", "mean"):
            t = _timed(getattr(getattr(est, name), q), getattr(getattr(bound, name), q), fitted)
            label = {"ttft": "TTFT", "tpot": "TPOT", "latency": "end-to-end latency"}[name]
            row = {"time": label, "statistic": q, "estimate (ms)": t.estimate}
            rows.append(row | {"low (ms)": t.low, "high (ms)": t.high, "bound (ms)": t.bound})
    return rows


def engine_of(ask: Ask, tp: int, fitted: FittedModel) -> Engine:
    """One replica of ``tp`` GPUs as the page asks for it, at the fitted coefficients."""
    c, graphs = fitted.coefficients, ask.cuda_graphs
    return Engine(
        ask.shape, load_gpu(ask.gpu), ask.precision, tp, ask.compute, coefficients=c, cuda_graphs=graphs
    )


def target_of(ask: Ask, fitted: FittedModel) -> Target:
    """What the planner sizes for the page's question."""
    a = ask
    return Target(
        a.shape,
        load_gpu(a.gpu),
        a.precision,
        a.load,
        a.slo,
        a.compute,
        fitted.coefficients,
        cuda_graphs=a.cuda_graphs,
    )


@SIMULATION.guard
def serving_view(ask: Ask) -> ServingView:
    """The deployment for the load (plan, or the cap's), simulated at the estimate and the bound."""
    fitted = load_fitted()
    tp, replicas, chosen = _deployment(ask, fitted, check_size(ask, fitted))
    d = Deployment(engine_of(ask, tp, fitted), replicas)
    est, bound = simulate(d, ask.load), simulate(d, ask.load, bound_s)
    met = ask.slo.met(est)
    throughput = _timed(est.output_tokens_per_s, bound.output_tokens_per_s, fitted, rate=True)
    n = tp * replicas
    per_gpu = Timed(*(x / n for x in dataclasses.astuple(throughput)))
    fits = chosen is not None and chosen.gpus is not None and chosen.gpus <= ask.max_gpus
    return ServingView(
        ask=ask,
        gpus=n,
        tp=tp,
        replicas=replicas,
        met=met,
        verdict=_verdict(ask, chosen, n, met),
        limit=chosen.limit if fits else "the SLOs (not met within the cap)",
        throughput=throughput,
        per_gpu=per_gpu,
        ttft_p99=_timed(est.ttft.p99, bound.ttft.p99, fitted),
        tpot_p99=_timed(est.tpot.p99, bound.tpot.p99, fitted),
        percentiles=_percentiles(est, bound, fitted),
        timeline={
            "time (s)": est.time_s,
            "batch (sequences)": est.batch,
            "KV occupancy (%)": 100 * est.kv_occupancy,
        },
        max_concurrency=est.max_concurrency,
        preemptions=est.preemptions,
        time_model=fitted.source,
    )
