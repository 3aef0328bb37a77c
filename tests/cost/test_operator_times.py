"""Vidur's measured operator times (assets/published/vidur/, attn_core/cost/operator_times.py).

Oracles: the figures checked by hand in the source CSVs (/work/shared/notes/serving-data.md: H100
Llama 2 7B TP 1, QKV 0.584 ms at 4,096 tokens, 0.038 ms at 1 token) and the models' configs
(Llama 2 7B: d 4,096 → QKV 3·d² weights; the QKV product at 4,096 tokens is 2·4,096·3·4,096²
FLOPs)."""

from __future__ import annotations

import pytest

from attn_core.cost import operator_times as ot


def test_h100_llama_2_7b_qkv_at_4096_tokens_is_the_published_median():
    row = ot.operator_time("h100", "llama-2-7b", 4096, tp=1)
    assert row.median_ms["attn_pre_proj"] == 0.584  # the first of the two 4,096-token rows
    assert row.median_ms["mlp_up_proj"] == 0.987 and row.median_ms["mlp_down_proj"] == 0.441
    assert "microsoft/vidur" in row.source and row.source.endswith("Llama-2-7b-hf/mlp.csv")
    # 2·T·3·d² FLOPs in 0.584 ms ≈ 706 TFLOP/s: below the H100's 989 TFLOP/s dense bf16 peak.
    flops = 2 * 4096 * 3 * 4096**2
    assert 0.6 < flops / (row.median_ms["attn_pre_proj"] * 1e-3) / 989e12 < 0.8


def test_one_token_rows_are_the_weight_read_floor():
    row = ot.operator_time("h100", "llama-2-7b", 1)
    assert row.median_ms["attn_pre_proj"] == 0.038 and row.median_ms["mlp_up_proj"] == 0.064
    # 3·d² bf16 weights read in 0.038 ms: below 3.35 TB/s.
    assert 3 * 4096**2 * 2 / 0.038e-3 < 3.35e12


def test_every_profile_covers_tp_1_to_8_and_tensor_parallel_shards_run_faster():
    for gpu, model in (
        ("h100", "llama-2-7b"),
        ("h100", "llama-2-70b"),
        ("a100", "llama-2-7b"),
        ("a100", "llama-2-70b"),
        ("a100", "meta-llama-3-8b"),
    ):
        rows = ot.operator_times(gpu, model)
        assert {r.tp for r in rows} == {1, 2, 4, 8}
        keys = [(r.num_tokens, r.tp) for r in rows]
        assert len(keys) == len(set(keys)) > 500
        big = {r.tp: r.median_ms["attn_pre_proj"] for r in rows if r.num_tokens == 4096}
        assert big[1] > big[2] > big[4] > big[8] > 0, (gpu, model)


@pytest.mark.parametrize(("node", "nvlink"), [("h100_dgx", 450e9), ("a100_dgx", 300e9)])
def test_all_reduce_grows_with_the_message_below_nvlink_bandwidth(node, nvlink):
    """A ring all-reduce moves 2·(n − 1)/n of the message through each GPU's link; NVLink 4 (H100)
    carries 450 GB/s each way, NVLink 3 (A100) 300 GB/s: no median can beat that."""
    rows = ot.all_reduce_times(node)
    assert {r.num_workers for r in rows} == {2, 4, 8}
    eight = [r for r in rows if r.num_workers == 8]
    assert eight[0].size_bytes == 2048 and eight[-1].size_bytes == 64 * 2**20
    assert eight[-1].median_ms > 5 * eight[0].median_ms
    for r in rows:
        bus = 2 * (r.num_workers - 1) / r.num_workers * r.size_bytes / (r.median_ms * 1e-3)
        assert bus < nvlink, r


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ot.operator_times("h100", "meta-llama-3-8b"), "no Vidur file"),
        (lambda: ot.operator_times("b200", "llama-2-7b"), "gpu one of"),
        (lambda: ot.operator_time("h100", "llama-2-7b", 3, tp=3), "did not profile"),
        (lambda: ot.all_reduce_times("h200_dgx"), "node one of"),
    ],
)
def test_a_profile_vidur_does_not_have_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()
