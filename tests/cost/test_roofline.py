"""The one count (attn_core.cost.phases) and the one pricing (attn_core.cost.roofline) every time of
the cost model goes through, and the CLI's readable table of it (attn_core.cost.report_text).

Oracles: hand-made counts and rates worked out here; the hand computation from a config's
dimensions in tests/time_reference.py (nothing of attn_core)."""

from __future__ import annotations

import numpy as np
import pytest
from time_reference import bounds

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.phases import PhaseCount, count_work, decode_count
from attn_core.cost.report import cost_report
from attn_core.cost.report_text import format_report
from attn_core.cost.roofline import AttainedRates, Roofline, time_phase
from attn_core.cost.units import format_seconds


def count(**kw) -> PhaseCount:
    base = dict(
        tokens=64,
        product_flops=6e12,
        expert_flops=2e12,
        expert_rows=8.0,
        attention_flops=1e12,
        core_flops=5e11,
        weight_bytes=10**10,
        cache_bytes=3 * 10**9,
        state_bytes=10**9,
    )
    return PhaseCount(**(base | kw))


def test_the_bound_is_the_slower_side_and_the_estimate_divides_it_by_the_efficiency():
    peaks = Roofline(1e15, 2e12)
    t = time_phase(count(), peaks, efficiency=0.5)
    assert t.compute_s == 7.5e12 / 1e15 and t.memory_s == 1.4e10 / 2e12  # 7.5 ms, 7 ms
    assert t.bound_s == 7.5e-3 and t.bound_by == "compute" and t.expected_s == 15e-3
    assert t.weights_s == 5e-3 and t.mixing_memory_s == 2e-3 and t.calibrated_s is None
    fast = time_phase(count(), Roofline(1e16, 2e12))
    assert fast.bound_s == 7e-3 and fast.bound_by == "memory" and fast.expected_s == fast.bound_s


def test_attained_rates_give_max_within_a_part_and_a_sum_across_parts():
    """Products: the 4e12 non-expert FLOPs at 64 rows (200 TFLOP/s), the experts' 2e12 at 8 rows (50);
    mixing: attention at 400 TFLOP/s, the core at the square 500; bytes at 1 TB/s."""
    rate = {64: 200e12, 8: 50e12}
    rates = AttainedRates(lambda rows: rate[rows], 500e12, 400e12, 1e12)
    t = time_phase(count(), Roofline(1e15, 2e12), rates=rates)
    products = max(4e12 / 200e12 + 2e12 / 50e12, 1e10 / 1e12)  # 60 ms vs 10 ms
    mixing = max(5e11 / 500e12 + 1e12 / 400e12, 4e9 / 1e12)  # 3.5 ms vs 4 ms
    assert t.calibrated_s == pytest.approx(products + mixing, rel=1e-15)
    assert t.bound_s == 7.5e-3  # the roofline beside it is unchanged


def test_the_decode_steps_are_the_first_step_counted_at_each_context():
    s, prec = load_preset("qwen3-next-80b-a3b"), Precision("bf16")
    work = count_work(s, Workload(1000, 2, 700, 5), prec)
    for i in range(5):
        one = decode_count(s, 700 + i, 2, prec)
        assert work.decode_steps.cache_bytes[i] == one.cache_bytes
        assert work.decode_steps.attention_flops[i] == one.attention_flops
    assert work.decode == decode_count(s, 700, 2, prec) and work.prefill.tokens == 1400
    dense = count_work(load_preset("llama-3-8b"), Workload(64, 8), prec)
    assert dense.decode_uniform == dense.decode  # no experts: uniform routing reads the same


def test_a_large_batch_of_short_sequences_is_compute_bound_and_the_table_says_so():
    """Llama 3 8B, 1,024 sequences of 16 tokens on an H100: 2·8e9·1,024 FLOPs at 989 TFLOP/s take
    longer than the 16 GB of weights at 3,350 GB/s; the table prints the hand figure."""
    hand = bounds("llama-3-8b", 16, 1024, 2, 989e12, 3_350e9)
    r = cost_report(
        load_preset("llama-3-8b"), Workload(16, 1024), Precision("bf16"), Hardware(load_gpu("h100-sxm"))
    )
    assert r.decode.bound_by == "compute" and r.decode.seconds_per_step == pytest.approx(
        hand["decode"], rel=1e-12
    )
    text = format_report(r)
    assert f"the step's FLOPs at peak take longer: {format_seconds(hand['decode'])}" in text
    assert f"decode step at P                 {format_seconds(hand['decode'])} (compute-bound)" in text
    assert np.isclose(r.timing.ttft_s, hand["ttft"], rtol=1e-12)


# -- The compute format's dense peak -------------------------------------------------------------
# Datasheet dense peaks (half the "with sparsity" figures): H100 SXM fp8 3,958 / 2; MI300X fp8
# 2,614.9 dense (AMD's data sheet); B200 fp4 144 PFLOPS sparse over 8 GPUs / 2 / 8; L4 fp8 485 / 2.
DATASHEET_DENSE = {
    ("h100-sxm", "fp8"): 1979e12,
    ("h100-sxm", "int8"): 1979e12,
    ("h200", "fp8"): 1979e12,
    ("mi300x", "fp8"): 2614.9e12,
    ("b200", "fp8"): 4500e12,
    ("b200", "fp4"): 9000e12,
    ("l40s", "fp8"): 733e12,
    ("l4", "fp8"): 242.5e12,
    ("a100-80gb", "int8"): 624e12,
}


@pytest.mark.parametrize(("gpu", "dtype"), list(DATASHEET_DENSE))
def test_each_compute_format_has_its_datasheet_dense_peak_and_a_source(gpu, dtype):
    peak = load_gpu(gpu).dense_peak(dtype)
    assert peak.flops_per_s == DATASHEET_DENSE[gpu, dtype]
    assert "http" in peak.source and "dense" in peak.source


def test_a_format_the_gpu_lacks_is_refused_by_name():
    with pytest.raises(
        ValueError, match=r"A100 80GB SXM has no fp8 peak \(it computes in bf16, fp16, int8\)"
    ):
        load_gpu("a100-80gb").dense_flops("fp8")
    with pytest.raises(ValueError, match="--compute-dtype must be one of"):
        Precision("bf16", compute="fp32")


def test_ttft_is_priced_at_the_compute_formats_peak():
    """Llama 2 7B, P = 2,048 on one H100 SXM: compute-bound, so fp8 halves the bf16 bound exactly
    (1,979 vs 989 TFLOP/s dense); fp8 storage on an A100 (no fp8 Tensor Cores) stays at bf16."""
    shape, work = load_preset("llama-2-7b"), Workload(2048, 1, gen_len=0)
    h100 = Hardware(load_gpu("h100-sxm"))
    bf16 = cost_report(shape, work, Precision("bf16"), h100).timing
    fp8 = cost_report(shape, work, Precision("bf16", compute="fp8"), h100).timing
    auto = cost_report(shape, work, Precision("fp8"), h100).timing  # compute follows --dtype
    assert bf16.ttft_bound == fp8.ttft_bound == "compute"
    assert fp8.ttft_bound_s == pytest.approx(bf16.ttft_bound_s * 989 / 1979, rel=1e-12)
    assert auto.prefill_time.roofline.compute == "fp8"
    a100 = cost_report(shape, work, Precision("fp8"), Hardware(load_gpu("a100-80gb"))).timing
    assert a100.prefill_time.roofline.compute == "bf16"
    assert a100.prefill_time.roofline.flops_per_s == 312e12
