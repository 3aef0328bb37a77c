"""Card 12's memory bill: naive score bytes vs the online logsumexp, and the recompute FLOPs.

Oracles: the spec's check numbers (written as the card writes them) and the byte size of a real
torch tensor of the stated shape on the meta device (numel · element_size, nothing allocated).
Model shapes come from the project's presets (assets/models/*.json via attn_core.cost.config_reader).
"""

from __future__ import annotations

import pytest
import torch

from attn_core.cost.config_reader import load_preset
from attn_core.cost.flops import score_bytes_naive, score_bytes_online
from attn_core.cost.score_memory import (
    memory_bill,
    memory_sweep,
    naive_score_bytes,
    online_state_bytes,
    recompute_flops,
)
from attn_core.cost.units import format_bytes_binary

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40


def bill(preset: str, T: int):
    shape = load_preset(preset)
    return memory_bill(
        T, layers=shape.n_layers, heads=shape.n_heads, d_model=shape.d_model, bytes_per_value=2
    )


def meta_bytes(*shape: int, dtype=torch.float16) -> int:
    t = torch.empty(*shape, dtype=dtype, device="meta")
    return t.numel() * t.element_size()


def test_llama2_7b_at_4k_fp16():
    b = bill("llama-2-7b", 4096)
    assert b.naive_per_head == 32 * MiB == 33_554_432
    assert b.naive_per_layer == 1 * GiB
    assert b.naive_per_model == 32 * GiB
    assert b.online_per_layer == MiB // 2  # 0.5 MiB
    assert b.online_per_model == 16 * MiB
    assert b.naive_per_layer == meta_bytes(1, 32, 4096, 4096)  # (B, h, T, T) weights in fp16
    assert b.online_per_layer == meta_bytes(1, 32, 4096, dtype=torch.float32)  # (B, h, T) lse
    assert [format_bytes_binary(x) for x in (b.naive_per_head, b.naive_per_layer, b.naive_per_model)] == [
        "32 MiB",
        "1 GiB",
        "32 GiB",
    ]
    assert [format_bytes_binary(x) for x in (b.online_per_layer, b.online_per_model)] == ["512 KiB", "16 MiB"]


def test_llama3_8b_at_128k():
    b = bill("llama-3-8b", 131_072)
    assert b.naive_per_head == 32 * GiB
    assert b.naive_per_layer == 1 * TiB
    assert b.online_per_layer == 16 * MiB  # card 12: "16 MiB per layer, against 1 TiB"
    # GQA shares K and V, not the scores: every one of the 32 query heads has its own T×T
    assert load_preset("llama-3-8b").n_kv_heads == 8 and b.heads == 32


def test_recompute_costs_half_the_forward_quadratic_part():
    b = bill("llama-2-7b", 4096)
    assert b.recompute_flops_per_layer == 2 * 4096**2 * 4096
    assert 2 * b.recompute_flops_per_layer == b.forward_quadratic_flops_per_layer == 4 * 4096**2 * 4096
    assert recompute_flops(4096, 4096, batch=3) == 3 * b.recompute_flops_per_layer


def test_quadratic_vs_linear_growth_and_batch():
    rows = memory_sweep([1024, 2048, 4096], layers=32, heads=32, d_model=4096)
    assert [r.naive_per_layer for r in rows] == [GiB // 16, GiB // 4, GiB]  # ×4 per doubling
    assert [r.online_per_layer for r in rows] == [MiB // 8, MiB // 4, MiB // 2]  # ×2 per doubling
    assert rows[-1].saving == 4096 * 2 / 4  # T·b/4
    assert naive_score_bytes(4096, 32, 2, batch=8) == 8 * GiB
    assert online_state_bytes(4096, 32, batch=8) == 4 * MiB


def test_the_cost_model_sizes_a_preset_by_the_card():
    """attn_core.cost's per-shape functions against card 12's formulas written out here: h·T²·b
    bytes to keep P (b = 2 for fp16) and h·T·4 bytes of fp32 logsumexp, per layer."""
    shape = load_preset("llama-2-7b")  # h = 32
    for T in (1, 77, 4096, 131_072):
        assert score_bytes_naive(shape, T) == 32 * T * T * 2
        assert score_bytes_online(shape, T) == 32 * T * 4


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, 1 << 25])
def test_bad_numbers_raise(bad):
    with pytest.raises(ValueError, match="whole number"):
        naive_score_bytes(bad, 32)
    with pytest.raises(ValueError, match="whole number"):
        memory_bill(4096, layers=bad, heads=32, d_model=4096)
