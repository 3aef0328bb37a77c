"""A step-level simulation of one deployment (t-way tensor parallel, r replicas) under continuous
batching, as vLLM and SGLang schedule it:

- every step, each running sequence past its prefill decodes one token; the token budget left
  goes to prefill chunks, first of running sequences still prefilling, then of waiting requests
  (FIFO) while ``max_seqs`` and the free KV blocks allow (chunked prefill);
- a sequence's cache lives in blocks of ``block_size`` tokens' bytes (paged KV; a hybrid's fixed
  state counted in the same blocks); the capacity is t × GPU memory × utilisation − weights −
  t × activation reserve;
- when the running sequences' next tokens need more blocks than are free, the newest running
  sequence is preempted (recompute: its blocks freed, it rejoins the queue's head and later
  prefills its prompt and what it generated again);
- a prefill that finishes emits the sequence's next token in the same step (its first, TTFT).

The step's time is a function of its `PhaseCount` (`step_time.estimate_s` or `bound_s`). Requests
are dealt round-robin to the r replicas, each simulated alone (Poisson arrivals split so stay
Poisson). The loop is per step; per-sequence work is numpy gathers over the running set.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attn_core.cost.params import weight_bytes
from attn_core.cost.phases import PhaseCount
from attn_core.serving.load import Load, Requests, make_requests
from attn_core.serving.sim_result import ReplicaRun, SimResult, summarize
from attn_core.serving.step_time import Engine, estimate_s
from attn_core.serving.step_work import StepBatch, StepTables, build_tables, count_step, expert_rows

StepTime = Callable[[Engine, PhaseCount], float]
MAX_RUN = 1024  # decode steps priced at once


@dataclass(frozen=True)
class Scheduler:
    """The engine's scheduler and memory settings (vLLM's defaults where it has one)."""

    block_size: int = 16  # tokens per KV block
    token_budget: int = 8192  # max tokens per step (max_num_batched_tokens)
    max_seqs: int = 256  # max running sequences (max_num_seqs)
    memory_utilization: float = 0.9  # share of GPU memory the engine takes (gpu_memory_utilization)
    activation_reserve_bytes: int = 2**30  # per GPU: activations, CUDA graphs, workspace

    def __post_init__(self) -> None:
        for name in ("block_size", "token_budget", "max_seqs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1_000_000:
                raise ValueError(f"{name} must be a whole number from 1 to 1,000,000, got {v!r}")
        if not 0 < self.memory_utilization <= 1:
            raise ValueError(f"memory_utilization must be in (0, 1], got {self.memory_utilization!r}")


@dataclass(frozen=True)
class Deployment:
    """``replicas`` copies of one engine (each on ``engine.tp`` GPUs)."""

    engine: Engine
    replicas: int = 1
    scheduler: Scheduler = Scheduler()

    @property
    def gpus(self) -> int:
        return self.engine.tp * self.replicas


@dataclass(frozen=True)
class KVLayout:
    """One replica's paged cache: its block count and the blocks a sequence holds at c tokens."""

    block_bytes: float
    capacity_blocks: int
    blocks_at: np.ndarray  # (max_context + 1,) ⌈(K(c) + state) / block bytes⌉, 0 at c = 0

    def max_sequences(self, tokens: int) -> int:
        """Sequences of ``tokens`` tokens that fit at once, to the block."""
        need = int(self.blocks_at[min(tokens, len(self.blocks_at) - 1)])
        return self.capacity_blocks // need if need else 10**9


def kv_layout(deployment: Deployment, tables: StepTables) -> KVLayout:
    """Blocks of block_size tokens' full-cache bytes; capacity from the replica's free memory.
    ValueError when the weights leave no room."""
    e, s = deployment.engine, deployment.scheduler
    t = e.tp
    free = (
        t * e.gpu.memory_bytes * s.memory_utilization
        - weight_bytes(e.shape, e.precision.b_weight, e.precision.b_expert)
        - t * s.activation_reserve_bytes
    )
    if free <= 0:
        raise ValueError(f"{e.shape.name} does not fit on {t} × {e.gpu.label} beside its activations")
    per_token = float(tables.cache[1]) if len(tables.cache) > 1 else 0.0
    block = s.block_size * per_token if per_token else float(max(tables.state_per_sequence, 1))
    held = tables.cache + tables.state_per_sequence
    blocks_at = np.ceil(held / block).astype(np.int64)
    blocks_at[0] = 0
    return KVLayout(block, int(free // block), blocks_at)


class _Replica:
    """One replica's queues and per-request state, advanced one step at a time."""

    def __init__(self, req: Requests, layout: KVLayout, sched: Scheduler, closed: int | None):
        k = len(req.prompt)
        self.req, self.layout, self.sched, self.closed = req, layout, sched, closed
        self.arrival = req.arrival.copy()
        self.ctx = np.zeros(k, dtype=np.int64)  # tokens cached
        self.target = req.prompt.astype(np.int64).copy()  # tokens to prefill before decoding
        self.gen = np.zeros(k, dtype=np.int64)
        self.blocks = np.zeros(k, dtype=np.int64)
        self.first = np.full(k, np.nan)
        self.finish = np.full(k, np.nan)
        self.free = layout.capacity_blocks
        self.running: list[int] = []
        self.waiting: deque[int] = deque()
        self.next_arrival = 0  # index of the next request not yet queued
        self.spawned = closed if closed is not None else k
        self.preemptions = 0
        self.done = 0
        self.keep_counts = False  # set by `run_replica` when the steps' counts are kept
        self.last_dt = 0.0  # the last step's seconds: when a run of decode steps is worth trying

    def queue_arrivals(self, now: float) -> None:
        a, k = self.arrival, len(self.arrival)
        while self.next_arrival < k and a[self.next_arrival] <= now:
            self.waiting.append(self.next_arrival)
            self.next_arrival += 1

    def preempt_last(self) -> None:
        j = self.running.pop()
        self.free += int(self.blocks[j])
        self.blocks[j] = 0
        self.ctx[j] = 0
        self.target[j] = self.req.prompt[j] + self.gen[j]
        self.waiting.appendleft(j)
        self.preemptions += 1

    def plan(self) -> tuple[np.ndarray, list[int], list[int]]:
        """This step's decoders and prefill chunks (ids, lengths); preempts where blocks run out."""
        blocks_at, budget = self.layout.blocks_at, self.sched.token_budget
        while True:
            run = np.asarray(self.running, dtype=np.int64)
            dec = run[self.ctx[run] >= self.target[run]]
            need = int((blocks_at[self.ctx[dec] + 1] - self.blocks[dec]).sum())
            ids, lens, left = [], [], budget - len(dec)
            for i in run[self.ctx[run] < self.target[run]]:
                p = int(min(self.target[i] - self.ctx[i], max(left, 0)))
                if p:
                    ids.append(int(i)), lens.append(p)
                    need += int(blocks_at[self.ctx[i] + p] - self.blocks[i])
                    left -= p
            if need <= self.free or len(self.running) <= 1:
                break
            self.preempt_last()
        if need > self.free:
            raise ValueError("one sequence needs more KV blocks than a replica holds")
        self.free -= need
        self._admit(ids, lens, left)
        return dec, ids, lens

    def _admit(self, ids: list[int], lens: list[int], left: int) -> None:
        blocks_at = self.layout.blocks_at
        while self.waiting and left > 0 and len(self.running) < self.sched.max_seqs:
            i = self.waiting[0]
            p = int(min(self.target[i], left))
            if blocks_at[self.target[i]] > self.layout.capacity_blocks:
                raise ValueError(
                    f"a request of {int(self.target[i]):,} tokens needs {int(blocks_at[self.target[i]]):,} KV "
                    f"blocks; one replica holds {self.layout.capacity_blocks:,}"
                )
            need = int(blocks_at[p])
            if need > self.free:
                break
            self.waiting.popleft()
            self.running.append(i)
            self.free -= need
            ids.append(i), lens.append(p)
            left -= p

    def decode_run(
        self, tables: StepTables, now: float, step_time: StepTime, engine: Engine
    ) -> tuple[np.ndarray, np.ndarray, PhaseCount] | None:
        """Steps of pure decode over the same running set, all at once: up to the step where the
        first sequences finish (they leave at its end), the last step before the next arrival, or
        the last before the blocks run out (then the step-by-step path preempts). None when the
        next step is not pure decode."""
        if self.waiting or not self.running:
            return None
        k = self.next_arrival
        if k < len(self.arrival) and self.arrival[k] < now + self.last_dt:
            return None  # the next arrival comes within about a step: not worth a run
        run = np.asarray(self.running, dtype=np.int64)
        if np.any(self.ctx[run] < self.target[run]):
            return None
        to_finish = int((self.req.output[run] - self.gen[run]).min())  # its step finishes someone
        J = min(to_finish, MAX_RUN)
        arrival = self.arrival[k] if k < len(self.arrival) else np.inf
        arrival = arrival if np.isfinite(arrival) else np.inf  # a closed loop's next is NaN: none due
        if arrival < np.inf and self.last_dt > 0:  # no need to price steps past the arrival
            J = min(J, int((arrival - now) / self.last_dt * 2) + 2)
        C = self.ctx[run][:, None] + np.arange(J)  # (b, J) tokens cached at each step
        b = len(run)
        if self.free < b * (J // self.sched.block_size + 2):  # J steps might need more than is free
            grow = (self.layout.blocks_at[C + 1] - self.blocks[run][:, None]).sum(0)
            J = int(np.argmax(grow > self.free)) if np.any(grow > self.free) else J
            if J < 1:
                return None  # the next step needs blocks that are not free: `plan` preempts
        C = C[:, :J]
        count = PhaseCount(
            tokens=b,
            product_flops=tables.product_flops_per_token * b,
            expert_flops=tables.expert_flops_per_token * b,
            expert_rows=expert_rows(tables.shape, b),
            attention_flops=tables.decode_attention[C].sum(0),
            core_flops=tables.decode_core * b,
            weight_bytes=float(tables.weight_bytes(b)),
            cache_bytes=tables.cache[C].sum(0),
            state_bytes=tables.state_per_sequence * b,
        )
        dt = np.asarray(step_time(engine, count), dtype=float) * np.ones(J)
        end = now + np.cumsum(dt)
        J = 1 + int(np.sum(end[:-1] < arrival))  # the steps that start before the next arrival
        m = J
        self.ctx[run] += m
        self.gen[run] += m
        new = self.layout.blocks_at[self.ctx[run]]
        self.free -= int((new - self.blocks[run]).sum())
        self.blocks[run] = new
        self.end_sequences(run[self.gen[run] >= self.req.output[run]], float(end[m - 1]))
        if self.keep_counts:  # the fit re-prices these steps: keep exactly the m taken
            count = dataclasses.replace(
                count, attention_flops=count.attention_flops[:m], cache_bytes=count.cache_bytes[:m]
            )
        return dt[:m], end[:m], count

    def advance(self, dec: np.ndarray, ids: list[int], lens: list[int], now: float) -> None:
        """After a step ending at ``now``: decoders and finished prefills emit a token; finished
        sequences free their blocks; a closed loop lets the next request in."""
        blocks_at, out = self.layout.blocks_at, self.req.output
        ended = []
        for i, p in zip(ids, lens, strict=True):  # a few chunks a step: plain indexing beats numpy
            c = int(self.ctx[i]) + p
            self.ctx[i] = c
            self.blocks[i] = blocks_at[c]
            if c >= self.target[i]:  # the prefill is done: it emits a token
                self.gen[i] += 1
                if np.isnan(self.first[i]):
                    self.first[i] = now
                if self.gen[i] >= out[i]:
                    ended.append(i)
        if len(dec):
            self.ctx[dec] += 1
            self.gen[dec] += 1
            self.blocks[dec] = blocks_at[self.ctx[dec]]
            ended.extend(dec[self.gen[dec] >= out[dec]].tolist())
        self.end_sequences(np.asarray(ended, dtype=np.int64), now)

    def end_sequences(self, ended: np.ndarray, now: float) -> None:
        """Sequences that emitted their last token at ``now`` leave: blocks freed, and in a closed
        loop as many new requests arrive."""
        if len(ended):
            self.finish[ended] = now
            self.free += int(self.blocks[ended].sum())
            self.blocks[ended] = 0
            gone = set(ended.tolist())
            self.running = [i for i in self.running if i not in gone]
            self.done += len(ended)
            if self.closed is not None:
                new = min(self.spawned + len(ended), len(self.arrival))
                self.arrival[self.spawned : new] = now
                self.spawned = new


@dataclass(frozen=True)
class _Trace:
    """Per step: its end time, its work (when kept) and what the replica held during it."""

    end: np.ndarray
    seconds: np.ndarray
    running: np.ndarray
    in_system: np.ndarray
    blocks_used: np.ndarray
    counts: list[PhaseCount] | None


def run_replica(
    engine: Engine,
    tables: StepTables,
    layout: KVLayout,
    req: Requests,
    sched: Scheduler,
    closed: int | None = None,
    step_time: StepTime = estimate_s,
    keep_counts: bool = False,
) -> ReplicaRun:
    """Simulate one replica over its requests until every one has finished."""
    r = _Replica(req, layout, sched, closed)
    r.keep_counts = keep_counts
    now, k = 0.0, len(req.prompt)
    ends: list[np.ndarray] = []  # step end times, one array per run of steps or per step
    secs: list[np.ndarray] = []
    held: list[tuple[int, int, int, int]] = []  # (steps, running, in system, blocks used) per entry
    counts: list[PhaseCount] | None = [] if keep_counts else None

    def record(end, seconds, running, in_system, count) -> None:
        ends.append(end), secs.append(np.atleast_1d(seconds))
        held.append((len(end), running, in_system, layout.capacity_blocks - r.free))
        if counts is not None:
            counts.append(count)

    while r.done < k:
        r.queue_arrivals(now)
        if not r.running and not r.waiting:
            now = float(r.arrival[r.next_arrival])  # idle until the next arrival
            continue
        bulk = r.decode_run(tables, now, step_time, engine)
        if bulk is not None:
            dt, end, count = bulk
            record(end, dt, len(r.running), len(r.running), count)
            now = float(end[-1])
            continue
        dec, ids, lens = r.plan()
        if not len(dec) and not ids:
            raise ValueError("the scheduler could not run any token (the budget or memory is too small)")
        pre = np.asarray(ids, dtype=np.int64)
        count = count_step(tables, StepBatch(r.ctx[pre], np.asarray(lens, dtype=np.int64), r.ctx[dec]))
        dt = float(step_time(engine, count))
        r.last_dt = dt
        running, in_system = len(r.running), len(r.running) + len(r.waiting)
        now += dt
        r.advance(dec, ids, lens, now)
        record(np.array([now]), dt, running, in_system, count)
    h = np.array(held, dtype=np.int64).reshape(-1, 4)
    running, in_system, used = (np.repeat(h[:, j], h[:, 0]) for j in (1, 2, 3))
    trace = _Trace(np.concatenate(ends), np.concatenate(secs), running, in_system, used, counts)
    return ReplicaRun(r.arrival, r.first, r.finish, req.output, trace, layout.capacity_blocks, r.preemptions)


def _split(req: Requests, replicas: int, i: int) -> Requests:
    return Requests(req.arrival[i::replicas], req.prompt[i::replicas], req.output[i::replicas])


def simulate(
    deployment: Deployment, load: Load, step_time: StepTime = estimate_s, keep_counts: bool = False
) -> SimResult:
    """The deployment under the load: throughput, TTFT/TPOT/latency percentiles, batch and KV use
    over time (`sim_result.SimResult`). ``step_time``: `estimate_s` (default) or `bound_s`."""
    e, n = deployment.engine, deployment.replicas
    tables = build_tables(e.shape, e.precision, load.max_context)
    layout = kv_layout(deployment, tables)
    req = make_requests(load)
    closed = None
    if load.mode == "concurrency":
        closed = math.ceil(load.concurrency / n)
    runs = []
    for i in range(min(n, load.requests)):
        part = _split(req, n, i)
        if closed is not None:  # the closed loop's first requests of this replica arrive at 0
            part.arrival[:] = np.nan
            part.arrival[: min(closed, len(part.arrival))] = 0.0
        runs.append(
            run_replica(e, tables, layout, part, deployment.scheduler, closed, step_time, keep_counts)
        )
    return summarize(runs, layout.max_sequences(load.in_len + load.out_len))
