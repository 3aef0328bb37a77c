"""Published rows replayed by scenario, each against a closed form built from the lab's own phase
counts (`attn_core.cost.phases`, not the simulator's tables or schedule): one request's decode rate
and TTFT, a static batch's end-to-end latency, an offline server in rounds of its concurrency and a
Poisson server so sparse that every request runs alone; fp8 rows priced at the fp8 datasheet peak;
the error's sign and the leave-one-source-out definition; a varying-length row replayed with the
lengths its source's own figures give (the means of its token rates, or its log's listed lengths)."""

import dataclasses
import math

import numpy as np
import pytest

from attn_core.cost.phases import decode_count, prefill_count
from attn_core.cost.published import load_runs
from attn_core.cost.published_lengths import Lengths
from attn_core.cost.published_rows import Replay as RowReplay
from attn_core.serving.fit import errors, fit, fit_report, simulate_replay, slo_met
from attn_core.serving.load import Load, make_requests
from attn_core.serving.replay import log_error, predicted, replay_of
from attn_core.serving.step_time import estimate_s

RUNS = {r.id: r for r in load_runs()}


def _steps(engine, P: int, N: int, B: int) -> tuple[float, list[float]]:
    """A batch of B prompts of P tokens prefilled in one step, then N − 1 decode steps of B."""
    s, prec = engine.shape, engine.precision
    prefill = estimate_s(engine, prefill_count(s, P, B, prec))
    return prefill, [estimate_s(engine, decode_count(s, c, B, prec)) for c in range(P, P + N - 1)]


def test_decode_b1_is_one_request_and_its_rate_is_one_over_tpot():
    r = replay_of(RUNS["gptfast-7b-bf16"])  # 5 prompt, 200 output tokens, batch 1
    assert r.metric == "decode-rate" and r.load.requests == 1
    _, steps = _steps(r.deployment.engine, 5, 200, 1)
    assert predicted(r, simulate_replay(r)) == pytest.approx(1 / np.mean(steps), rel=1e-9)


def test_prefill_b1_is_one_prompts_prefill():
    r = replay_of(RUNS["trtllm-7b-a100-ttft2048"])
    assert r.metric == "ttft" and (r.load.requests, r.load.out_len) == (1, 1)
    ttft, _ = _steps(r.deployment.engine, 2048, 1, 1)
    assert predicted(r, simulate_replay(r)) == pytest.approx(ttft * 1e3, rel=1e-9)


def test_a_fixed_batch_latency_row_is_one_batch_run():
    r = replay_of(RUNS["nemo-7b-h100-tp2-bs8"])  # B 8, 128 in, 20 out, end-to-end latency in ms
    assert r.metric == "latency" and r.load.requests == 8 and r.deployment.scheduler.max_seqs == 8
    prefill, steps = _steps(r.deployment.engine, 128, 20, 8)
    assert predicted(r, simulate_replay(r)) == pytest.approx((prefill + sum(steps)) * 1e3, rel=1e-9)


def test_an_offline_server_runs_rounds_of_its_concurrency():
    base = RUNS["nemo-7b-h100-tp1-bs2"]
    run = dataclasses.replace(
        base,
        scenario="serving-offline",
        metric="output tok/s",
        unit="out tok/s",
        concurrency=2,
        replay=RowReplay(num_requests=6),
    )
    r = replay_of(run)
    prefill, steps = _steps(r.deployment.engine, 128, 20, 2)
    # 6 requests, 2 in flight: three rounds of one batch-2 prefill and 19 decode steps
    assert predicted(r, simulate_replay(r)) == pytest.approx(6 * 20 / (3 * (prefill + sum(steps))), rel=1e-9)


def test_a_sparse_poisson_server_serves_each_request_alone():
    base = RUNS["nemo-7b-a100-tp1-bs1"]
    run = dataclasses.replace(
        base, scenario="serving-server", metric="TTFT ms", unit="ms", replay=RowReplay(5, 0.01, 2000.0, 200.0)
    )
    r = replay_of(run)
    assert r.load.mode == "rate" and r.slo_ms == (2000.0, 200.0)
    sim = simulate_replay(r)
    prefill, steps = _steps(r.deployment.engine, 128, 20, 1)
    arrival = sim.runs[0].arrival
    assert np.all(np.diff(arrival) > prefill + sum(steps))  # the oracle's premise: no overlap
    assert predicted(r, sim) == pytest.approx(prefill * 1e3, rel=1e-9)
    tpot = dataclasses.replace(r, metric="tpot")
    assert predicted(tpot, sim) == pytest.approx(np.mean(steps) * 1e3, rel=1e-9)


def test_fp8_rows_are_priced_at_the_fp8_peak():
    """H100 SXM dense: 989 TFLOP/s bf16, 1,979 fp8; A100 312 bf16/fp16 (the datasheets in gpus.json)."""
    fp8 = replay_of(RUNS["trtllm-70b-h100-ttft2048"]).deployment.engine  # TP4, fp8
    fp16 = replay_of(RUNS["trtllm-7b-a100-ttft2048"]).deployment.engine
    assert fp8.peaks.flops_per_s == 4 * 1979e12 and fp8.precision.compute == "fp8"
    assert fp16.peaks.flops_per_s == 312e12


def test_error_sign_and_leave_one_source_out_definition():
    r = replay_of(RUNS["nemo-7b-h100-tp1-bs1"])  # a time: measured 2x predicted → +log 2
    assert log_error(r, r.run.value / 2) == pytest.approx(math.log(2))
    rate = replay_of(RUNS["gptfast-7b-bf16"])  # a rate: measured at half the predicted rate → +log 2
    assert log_error(rate, rate.run.value * 2) == pytest.approx(math.log(2))
    picked = [
        replay_of(RUNS[i])
        for i in ("gptfast-7b-bf16", "gptfast-7b-tp2", "nemo-7b-a100-tp1-bs1", "nemo-7b-h100-tp2-bs4")
    ]
    rep = fit_report(picked, [], sweeps=1)
    bases = [simulate_replay(p) for p in picked]
    for left in ("gpt-fast", "NeMo Framework"):
        keep = [i for i, p in enumerate(picked) if p.source != left]
        scored = [i for i, p in enumerate(picked) if p.source == left]
        c = fit([picked[i] for i in keep], [bases[i] for i in keep], start=rep.coefficients, sweeps=1)
        expect = errors([picked[i] for i in scored], [bases[i] for i in scored], c)
        got = [rep.rows[i]["log_error_left_out"] for i in scored]
        assert got == pytest.approx(list(expect), rel=1e-12)


def test_a_server_rows_slo_is_judged_on_the_simulated_p99():
    base = RUNS["nemo-7b-a100-tp1-bs1"]
    sparse = dict(scenario="serving-server", metric="TTFT ms", unit="ms")
    r = replay_of(dataclasses.replace(base, **sparse, replay=RowReplay(5, 0.01, 2000.0, 200.0)))
    sim = simulate_replay(r)  # each request alone: p99 TTFT = the prefill, p99 TPOT = its steps' mean
    assert slo_met(r, sim) is True
    tight = dataclasses.replace(
        r, run=dataclasses.replace(r.run, replay=RowReplay(5, 0.01, sim.ttft.p99 * 1e3 * 0.99))
    )
    assert slo_met(tight, sim) is False
    assert slo_met(replay_of(base), sim) is None  # a fixed batch: no SLO


def test_a_rows_cuda_graphs_reach_its_engine_and_unstated_is_eager():
    """gpt-fast compiles its decode step into a CUDA graph; the NeMo page does not say (eager)."""
    assert replay_of(RUNS["gptfast-7b-bf16"]).deployment.engine.cuda_graphs is True
    nemo = RUNS["nemo-7b-h100-tp1-bs1"]
    assert nemo.cuda_graphs is None and replay_of(nemo).deployment.engine.cuda_graphs is False


def test_a_token_rate_row_replays_the_means_its_own_figures_give():
    """LMDeploy llama2-70b, batch 64, 3,000 ShareGPT prompts: 1,000.376 out tok/s and 2,062.7 total
    tok/s at 4.285 requests/s → 233 output and 248 prompt tokens each, 64 in flight, all at once."""
    r = replay_of(RUNS["lmdeploy-70b-a100-tp4-sharegpt-c64"])
    assert (r.load.in_len, r.load.out_len) == (round(1062.324 / 4.285), round(1000.376 / 4.285))
    assert (r.load.mode, r.load.requests, r.deployment.scheduler.max_seqs, r.metric) == (
        "max",
        3000,
        64,
        "throughput",
    )


def test_a_listed_row_sends_each_request_its_logged_lengths():
    r = replay_of(RUNS["lambda-vllm054-mistral7b-2xh100-sharegpt320"])
    req = make_requests(r.load)
    lengths = r.run.replay.lengths
    assert r.load.requests == 286 and r.deployment.engine.tp == 2
    assert req.prompt.tolist() == list(lengths.input_lens) and req.output.tolist() == list(
        lengths.output_lens
    )
    assert int(req.output.sum()) == 71_203  # the log's total_output_tokens
    assert (
        r.load.max_context
        == max(p + n for p, n in zip(lengths.input_lens, lengths.output_lens, strict=True)) + 1
    )


def test_listed_requests_one_in_flight_run_back_to_back_by_hand():
    """Two listed requests, at most one in flight: each is its own prefill and N − 1 decode steps."""
    base = RUNS["nemo-7b-a100-tp1-bs1"]
    lengths = Lengths(96.0, 15.0, input_lens=(128, 64), output_lens=(20, 10))
    run = dataclasses.replace(
        base,
        input_len=None,
        output_len=None,
        scenario="serving-offline",
        metric="output tok/s",
        unit="out tok/s",
        concurrency=1,
        replay=RowReplay(lengths=lengths),
    )
    r = replay_of(run)
    engine = r.deployment.engine
    spans = [p + sum(s) for p, s in (_steps(engine, 128, 20, 1), _steps(engine, 64, 10, 1))]
    assert predicted(r, simulate_replay(r)) == pytest.approx(30 / sum(spans), rel=1e-9)


def test_a_row_whose_lengths_nothing_gives_is_still_skipped():
    assert "lengths vary" in replay_of(RUNS["mlperf41-70b-8xh200"])


def test_listed_lengths_must_pair_up_one_per_request():
    with pytest.raises(ValueError, match="come together"):
        Load(10, 10, requests=2, prompt_lens=(5, 6))
    with pytest.raises(ValueError, match="2 whole numbers"):
        Load(10, 10, requests=2, prompt_lens=(5, 6, 7), output_lens=(1, 2, 3))
    with pytest.raises(ValueError, match="come together"):
        Load(10, 10, requests=1, spread=0.1, prompt_lens=(5,), output_lens=(1,))
