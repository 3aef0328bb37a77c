"""`attn_core.anatomy.gpu_text` on a record written by hand: a 10B-parameter model, 8B of it in
routed experts, 2B active, 1,000 bytes of cache per token on 4 layers and a 64-byte state, on
2 H100s. Oracle: the arithmetic of its module docstring done here, and the GPU's datasheet."""

from __future__ import annotations

import pytest

from attn_core.anatomy.gpu_text import fit_text, gpu_lines, gpu_rows, on_gpu
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision

RECORD = {
    "params_total": 10_000_000_000,
    "params_active": 2_000_000_000,
    "params_by_part": {"embeddings": 500_000_000, "routed experts": 8_000_000_000},
    "layer_groups": [{"count": 4, "window": None, "cache_bytes_per_token": 250, "fixed_bytes": 16}],
    "cache_unread": None,
    "cache_absent": None,
}


def test_weights_fit_and_bounds_by_hand():
    gpu, T = load_gpu("h100-sxm"), 100_000
    o = on_gpu(RECORD, gpu, 2, Precision("bf16", weights="fp8", experts="int4-g128"), T)
    weights = 2e9 * 1 + 8e9 * Precision("bf16", experts="int4-g128").b_expert
    assert o.weights_bytes == pytest.approx(weights)
    one_seq = 4 * (250 * T + 16)
    assert o.sequences == int((2 * gpu.memory_bytes - weights) // one_seq)
    assert o.decode_s == pytest.approx((2e9 * 1 + one_seq) / (2 * gpu.bandwidth_bytes_per_s))
    assert o.prefill_flops == 2 * (2e9 - 5e8) * T
    assert o.prefill_s == pytest.approx(o.prefill_flops / (2 * gpu.dense_flops("bf16")))
    assert len(gpu_lines(o)) == 5 and gpu_rows(o)[0]["figure"] == "weights"


def test_weights_that_do_not_fit_and_a_model_without_a_cache():
    gpu = load_gpu("l4")  # 24 GB: 10B parameters at 32 bits (40 GB) do not fit
    assert fit_text(on_gpu(RECORD, gpu, 1, Precision("bf16", weights="fp32"), 1024)).startswith("none")
    no_cache = RECORD | {"cache_absent": "an encoder"}
    assert on_gpu(no_cache, load_gpu("h200"), 1, Precision("bf16"), 1024).sequences is None
    with pytest.raises(ValueError):  # a compute format the GPU has no peak for
        on_gpu(RECORD, load_gpu("a100-80gb"), 1, Precision("bf16", compute="fp8"), 1024)
