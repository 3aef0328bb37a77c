"""The serving simulator against closed forms: one request's TTFT and TPOT from the lab's own phase
counts (`attn_core.cost.phases`, not the simulator's tables), a saturated closed loop's throughput,
Little's law on the simulated queue, the KV capacity to the block and preemption exactly when
blocks run out."""

import dataclasses

import numpy as np
import pytest

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.cost.phases import PhaseCount, decode_count, prefill_count
from attn_core.serving.load import Load, make_requests
from attn_core.serving.sim_result import Percentiles
from attn_core.serving.simulate import Deployment, KVLayout, Scheduler, kv_layout, run_replica, simulate
from attn_core.serving.step_time import Engine, estimate_s
from attn_core.serving.step_work import build_tables

BF16 = Precision("bf16")


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(load_preset("llama-3-8b"), load_gpu("h100-sxm"), BF16)


def test_single_request_ttft_is_its_prefill_and_tpot_its_decode_steps(engine):
    P, N = 300, 20  # one prefill chunk (300 ≤ the 8,192-token budget), then N − 1 decode steps
    r = simulate(Deployment(engine), Load(P, N, "max", requests=1))
    ttft = estimate_s(engine, prefill_count(engine.shape, P, 1, BF16))
    steps = [estimate_s(engine, decode_count(engine.shape, c, 1, BF16)) for c in range(P, P + N - 1)]
    # float64 sums of a few dozen terms: 1e-12 relative is far above their rounding
    assert r.ttft.p50 == pytest.approx(ttft, rel=1e-12)
    assert r.tpot.p50 == pytest.approx(np.mean(steps), rel=1e-12)
    assert r.latency.p50 == pytest.approx(ttft + sum(steps), rel=1e-12)


def _chunk(shape, start: int, p: int) -> PhaseCount:
    """A chunk of p prompt tokens after ``start`` cached, from two whole prefills: FLOPs over the
    weights and the weights read for p tokens, attention pairs of (start + p) minus start's, the
    cache written and read before: all start + p tokens."""
    whole, tokens = prefill_count(shape, start + p, 1, BF16), prefill_count(shape, p, 1, BF16)
    before = prefill_count(shape, start, 1, BF16).attention_flops if start else 0
    return dataclasses.replace(
        tokens, attention_flops=whole.attention_flops - before, cache_bytes=whole.cache_bytes
    )


def test_prefill_longer_than_the_budget_takes_its_chunks(engine):
    P = 20_000  # chunks of 8,192 + 8,192 + 3,616 tokens, each after the ones before
    r = simulate(Deployment(engine), Load(P, 2, "max", requests=1))
    chunks = [(0, 8192), (8192, 8192), (16384, 3616)]
    ttft = sum(estimate_s(engine, _chunk(engine.shape, s, p)) for s, p in chunks)
    assert r.ttft.p50 == pytest.approx(ttft, rel=1e-12)  # float64 sums of three terms
    assert r.steps == 4  # three chunks, then one decode step


def test_saturated_closed_loop_makes_batch_tokens_per_step():
    e = Engine(load_preset("llama-3-8b"), load_gpu("h100-sxm"), BF16)
    tau, C = 0.01, 32  # every step 10 ms; C sequences always in the system

    def constant(_engine, count):
        return tau

    r = simulate(Deployment(e), Load(64, 50, "concurrency", concurrency=C, requests=8 * C), constant)
    # Each step every one of the C sequences emits one token (a 64-token prompt is one chunk that
    # emits the first), and K is a multiple of C: exactly C / τ.
    assert r.output_tokens_per_s == pytest.approx(C / tau, rel=1e-9)


def test_closed_loop_throughput_between_its_step_times(engine):
    C, P, N = 64, 128, 100
    r = simulate(Deployment(engine), Load(P, N, "concurrency", concurrency=C, requests=4 * C))
    tables = build_tables(engine.shape, BF16, P + N + 1)
    fastest = estimate_s(engine, decode_count(engine.shape, P, C, BF16))  # every context at its least
    slowest = estimate_s(engine, prefill_count(engine.shape, P, C, BF16))  # all C prompts in one step
    assert tables.max_context >= P + N
    assert C / slowest / N * N < r.output_tokens_per_s <= C / fastest * (1 + 1e-9)


def test_littles_law_on_the_simulated_queue(engine):
    load = Load(256, 64, "rate", rate=30.0, requests=1000, spread=0.5, seed=3)
    r = simulate(Deployment(engine), load)
    run = r.runs[0]
    t = run.trace
    T = float(t.end[-1])  # the system starts empty at 0 and ends empty at the last finish
    mean_in_system = float(np.sum(t.in_system * t.seconds)) / T  # the queue the steps saw
    throughput = len(run.arrival) / T
    mean_latency = float(np.mean(run.finish - run.arrival))
    # The trace counts a request from the start of the first step after it arrives, so each one is
    # counted for less than one step too few: |L − λW| ≤ K · max step / T (deterministic bound,
    # no sampling error: both sides are over the same sample path).
    slack = len(run.arrival) * float(t.seconds.max()) / T
    assert abs(mean_in_system - throughput * mean_latency) <= slack
    assert slack < 0.2 * throughput * mean_latency  # the check is not vacuous


def test_kv_capacity_to_the_block(engine):
    # Llama 3 8B: 8,030,261,248 parameters (its model card), 2 bytes each; KV per token
    # 2 · 32 layers · 8 KV heads · 128 · 2 B = 131,072 B; a 16-token block is 2 MiB.
    sched = Scheduler()
    free = 81_559 * 2**20 * 0.9 - 8_030_261_248 * 2 - 2**30
    blocks = int(free // (16 * 131_072))
    layout = kv_layout(Deployment(engine, 1, sched), build_tables(engine.shape, BF16, 4096))
    assert layout.capacity_blocks == blocks
    assert layout.max_sequences(4000) == blocks // 250  # ⌈4,000 / 16⌉ = 250 blocks each


@pytest.mark.parametrize("spare", [0, -1])
def test_preemption_exactly_when_blocks_run_out(engine, spare):
    P, N, K = 16, 40, 4  # each ends holding ⌈(16 + 40 − 1) / 16⌉ = 4 blocks
    tables = build_tables(engine.shape, BF16, P + N + 1)
    full = kv_layout(Deployment(engine), tables)
    layout = KVLayout(full.block_bytes, K * 4 + spare, full.blocks_at)
    req = make_requests(Load(P, N, "max", requests=K))
    run = run_replica(engine, tables, layout, req, Scheduler())
    assert (run.preemptions > 0) == (spare < 0)
    assert np.all(np.isfinite(run.finish))  # every request still finishes
    assert run.trace.blocks_used.max() <= layout.capacity_blocks


def test_percentiles_by_hand():
    # 1 … 100 with linear interpolation: p50 at rank 49.5 → 50.5, p90 at 89.1 → 90.1, p99 at 98.01 → 99.01
    p = Percentiles.of(np.append(np.arange(1.0, 101.0), np.nan))  # NaN (no TPOT) left out
    assert (p.p50, p.p90, p.p99, p.mean) == pytest.approx((50.5, 90.1, 99.01, 50.5), rel=1e-12)
