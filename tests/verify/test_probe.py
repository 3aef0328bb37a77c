"""attn_core.verify.probe: the clock it reads, and the roofline bound and estimate it makes
from counts and probed rates.

Oracles: time.sleep (a sleeping thread spends no CPU time, yet the wall clock moves), and the
bound and estimate worked out here from hand-made counts and rates."""

from __future__ import annotations

import time

import pytest
import torch

from attn_core.verify.counts import AttentionCall, Gemm, PhaseCounts
from attn_core.verify.probe import Probe, bound_ms, estimate_ms, time_call


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_on_one_cpu_thread_a_sleep_costs_no_time_but_wall_time(one_thread):
    cpu_s, wall_s = time_call(lambda: time.sleep(0.05), "cpu")
    assert wall_s >= 0.05 and cpu_s < 0.01  # other processes' slices do not inflate the clock
    spin_cpu, _ = time_call(lambda: sum(range(300_000)), "cpu")
    assert spin_cpu > 0  # work does count


def counts() -> PhaseCounts:
    gemms = (Gemm(64, 128, 256, count=3), Gemm(2.5, 128, 512, count=4.0))
    calls = (AttentionCall("full", 16, 16, 2), AttentionCall("gdn", 16, 16, 1))
    return PhaseCounts(flops=2 * 10**9, bytes=10**9, bytes_expected=10**9, gemms=gemms, attention=calls)


def probe() -> Probe:
    return Probe(
        "cpu", "fp32", matmul_flop_per_s=1e12, bandwidth_bytes_per_s=1e11,
        gemm_flop_per_s={(64, 128, 256): 1e10, (2, 128, 512): 2e9},
        attention_s={("full", 16, 16): 1e-3, ("gdn", 16, 16): 4e-3},
    )  # fmt: skip


def test_the_bound_is_the_slower_of_compute_and_memory():
    assert bound_ms(counts(), probe()) == pytest.approx(1e3 * max(2e9 / 1e12, 1e9 / 1e11))  # 10 ms


def test_the_estimate_sums_products_at_their_rates_and_the_mixer_calls():
    gemm_s = 2 * 64 * 128 * 256 * 3 / 1e10 + 2 * 2.5 * 128 * 512 * 4 / 2e9  # 2.5 rows probed as 2
    assert estimate_ms(counts(), probe()) == pytest.approx(1e3 * (gemm_s + 2 * 1e-3 + 4e-3))


def test_the_json_separates_attention_from_linear_cores():
    out = probe().to_json()
    assert [c["kind"] for c in out["attention_ms"]] == ["full"]
    assert out["state_core_ms"] == [{"kind": "gdn", "q_len": 16, "kv_len": 16, "ms": pytest.approx(4.0)}]
