"""Cost model (cards 9, 11–14 and seed 000's KV-cache section): every spec number to the digit.

Oracles, none of them attn_core.cost itself:
- the spec's check numbers (the cards' and seed 000's), written here as the spec writes them;
- a real torch model of the same shape on the meta device: FlopCounterMode for FLOPs (2mnk per
  matmul, card 11's rule), numel · element_size for cache and score bytes (tests/costs_reference.py);
- attn_core.masks for the number of query–key pairs a causal or sliding-window mask allows;
- exact integer arithmetic for the vectorized (float64 array) paths.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from costs_reference import cache_tensor_bytes, count_decode_attention, count_layer_flops
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core.cost.config_reader import ModelShape, from_hf_config, list_presets, load_preset
from attn_core.cost.dtypes import bytes_per_value
from attn_core.cost.flops import (
    attention_pairs,
    crossover_seq_len,
    doubling_ratio,
    layer_flops,
    score_bytes_naive,
    score_bytes_online,
)
from attn_core.cost.gpus import custom_gpu, list_gpus, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.params import attention_params, weight_bytes
from attn_core.cost.report import cost_report
from attn_core.cost.serving import (
    decode_intensity,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    serving_capacity,
)
from attn_core.cost.units import format_bytes_binary, format_flops, format_percent, format_seconds
from attn_core.cost.whole_model import decode_lower_bound
from attn_core.masks import causal_mask, sliding_window_mask

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
L7, L70, L3, GPT2 = (load_preset(n) for n in ("llama-2-7b", "llama-2-70b", "llama-3-8b", "gpt2"))
A100 = load_gpu("a100-80gb")


def fields(shape: ModelShape) -> dict:
    return dataclasses.asdict(shape)


def toy_shape(**kw) -> ModelShape:
    """Small awkward shapes for the torch oracle (d_h·h ≠ d allowed, odd d_ff)."""
    base = dict(name="toy", n_layers=3, d_model=48, n_heads=6, n_kv_heads=6, head_dim=8, d_ff=97,
                mlp_kind="gated", vocab_size=50)  # fmt: skip
    return ModelShape(**(base | kw))


# -- Card 13 and seed 000: KV cache --------------------------------------------------------------
def test_card13_llama2_7b_cache():
    assert kv_cache_bytes_per_token(L7, 2) == 524_288 == 512 * KiB
    assert kv_cache_bytes(L7, 4096) == 2 * GiB
    assert kv_cache_bytes(L7, 4096, batch=8) == 16 * GiB
    assert kv_cache_bytes_per_token(L7, bytes_per_value("int8")) == 256 * KiB
    assert format_bytes_binary(kv_cache_bytes_per_token(L7)) == "512 KiB"
    assert format_bytes_binary(kv_cache_bytes(L7, 4096, batch=8)) == "16 GiB"


def test_card13_other_models():
    assert kv_cache_bytes_per_token(GPT2) == 2 * 12 * 12 * 64 * 2 == 36 * KiB
    assert kv_cache_bytes_per_token(L70) == 2 * 80 * 8 * 128 * 2 == 320 * KiB
    assert kv_cache_bytes_per_token(L3) == 2 * 32 * 8 * 128 * 2 == 128 * KiB
    # Llama 3 8B's shape at Llama 3.1's 131,072-token context.
    assert kv_cache_bytes(L3, 131_072) == 16 * GiB


def test_card14_mha_gqa_mqa_cache():
    assert kv_cache_bytes_per_token(L70.with_kv_heads(64)) == 2560 * KiB
    assert kv_cache_bytes_per_token(L70.with_kv_heads(1)) == 40 * KiB
    assert kv_cache_bytes_per_token(L70.with_kv_heads(64)) // kv_cache_bytes_per_token(L70) == 64 // 8


def test_seed000_hypothetical_80_layer():
    mha, gqa = load_preset("seed-80l-mha"), load_preset("seed-80l-gqa8")
    assert kv_cache_bytes(mha, 32_768) == 85_899_345_920 == 80 * GiB
    assert kv_cache_bytes(gqa, 32_768) == 10 * GiB
    assert kv_cache_bytes(mha, 4096) == 10 * GiB
    assert kv_cache_bytes(gqa, 4096) == 1.25 * GiB
    assert f"{kv_cache_bytes(mha, 32_768) / 1e9:.3f} GB" == "85.899 GB"
    assert f"{kv_cache_bytes(gqa, 32_768) / 1e9:.3f} GB" == "10.737 GB"


@pytest.mark.parametrize("name", ["gpt2", "llama-2-7b", "llama-2-70b", "llama-3-8b"])
@pytest.mark.parametrize(("dtype", "torch_dtype"), [("fp16", torch.float16), ("fp32", torch.float32),
                                                    ("int8", torch.int8), ("bf16", torch.bfloat16)])  # fmt: skip
def test_cache_bytes_equal_the_real_tensors(name, dtype, torch_dtype):
    shape = load_preset(name)
    got = kv_cache_bytes(shape, 4097, batch=3, bytes_per_value=bytes_per_value(dtype))
    assert got == cache_tensor_bytes(fields(shape), 4097, 3, torch_dtype)


def test_sliding_window_caps_the_cache():
    mistral = load_preset("mistral-7b")
    assert (
        kv_cache_bytes(mistral, 32_768) == kv_cache_bytes(mistral, 4096) == 4095 * 128 * KiB
    )  # W − 1 tokens
    assert kv_cache_bytes(mistral, 32_768, use_window=False) == 32_768 * 128 * KiB
    assert kv_cache_bytes(mistral, 100) == 100 * 128 * KiB


# -- Card 9: attention parameters ------------------------------------------------------------------
def test_card9_params():
    toy = toy_shape(n_layers=1, d_model=4, n_heads=1, n_kv_heads=1, head_dim=4, d_ff=16)
    assert attention_params(toy).total == 64
    assert attention_params(toy, bias=True).total == 80
    # One big head or 64 small ones: 4d² either way.
    for h in (1, 32, 64):
        assert (
            attention_params(toy_shape(d_model=4096, n_heads=h, n_kv_heads=h, head_dim=4096 // h)).total
            == 67_108_864
        )
    assert attention_params(L7).total == 67_108_864
    assert attention_params(GPT2).total == 2_362_368 and attention_params(GPT2).biases == 3_072
    assert attention_params(L70).total == 150_994_944
    assert attention_params(L70.with_kv_heads(64)).total == 268_435_456
    assert attention_params(L70.with_kv_heads(1)).total == 136_314_880
    assert 1 - attention_params(L70).total / attention_params(L70.with_kv_heads(64)).total == 0.4375


# The reference block is plain (GQA) attention; MLA, sinks and QK-norms are checked against the
# Hugging Face modules in tests/cost/test_arch.py.
PLAIN_ATTENTION = [
    n
    for n, s in ((n, load_preset(n)) for n in list_presets())
    if not (s.mla or s.attention_sinks or s.qk_norm)
]


@pytest.mark.parametrize("name", PLAIN_ATTENTION)
def test_attention_params_equal_the_real_modules(name):
    from costs_reference import ref_block

    shape = load_preset(name)
    block = ref_block(fields(shape))
    real = sum(p.numel() for m in (block.q, block.k, block.v, block.o) for p in m.parameters())
    assert attention_params(shape).total == real


# -- Card 11: FLOPs and the crossover --------------------------------------------------------------
def test_card11_llama2_7b_at_4k():
    f = layer_flops(L7, 4096)
    assert f.projections == 8 * 4096 * 4096**2  # 8Td²
    assert (format_flops(f.projections), format_flops(f.attention)) == ("549.8 GFLOP", "274.9 GFLOP")
    assert format_flops(f.mlp, unit="GFLOP") == "1,108.1 GFLOP"
    assert format_percent(f.attention_share) == "14.2%"
    assert format_percent(layer_flops(L7, 4096, causal=True).attention_share) == "7.66%"
    assert format_percent(layer_flops(L7, 512).attention_share) == "2.03%"
    assert format_percent(layer_flops(L7, 32_768).attention_share) == "57.0%"
    per_token = f.per_token()
    assert [round(x / 1e6) for x in (per_token.projections, per_token.mlp, per_token.attention)] == [
        134,
        271,
        67,
    ]


def test_card11_crossover():
    assert crossover_seq_len(L7) == 24_704 == 2 * 4096 + 1.5 * 11008
    assert crossover_seq_len(L7, causal=True) == 49_407
    # At T* the quadratic part equals the rest exactly (integers, no rounding).
    for causal, T in ((False, 24_704), (True, 49_407)):
        f = layer_flops(L7, T, causal=causal)
        assert f.attention == f.projections + f.mlp


@pytest.mark.parametrize(
    "shape",
    [toy_shape(), toy_shape(n_kv_heads=2), toy_shape(n_kv_heads=1, mlp_kind="plain"),
     toy_shape(head_dim=16, attention_bias=True, mlp_bias=True, mlp_kind="plain", norm_kind="layer")],
    ids=["mha-gated", "gqa-gated", "mqa-plain", "wide-heads-plain"],
)  # fmt: skip
@pytest.mark.parametrize(("T", "batch"), [(1, 1), (37, 2), (130, 1)])
def test_flops_split_equals_torch_flop_counter(shape, T, batch):
    got = layer_flops(shape, T, batch)
    want = count_layer_flops(fields(shape), T, batch)
    assert (got.projections, got.attention, got.mlp) == (want["projections"], want["attention"], want["mlp"])


@pytest.mark.parametrize("name", ["gpt2", "llama-2-7b", "llama-2-70b", "llama-3-8b"])
def test_preset_flops_equal_torch_flop_counter(name):
    shape = load_preset(name)
    got = layer_flops(shape, 4096)
    want = count_layer_flops(fields(shape), 4096)
    assert (got.projections, got.attention, got.mlp) == (want["projections"], want["attention"], want["mlp"])


@pytest.mark.parametrize(
    ("T", "window"), [(1, None), (7, None), (64, None), (9, 4), (4, 9), (33, 1), (50, 50)]
)
def test_causal_pairs_equal_mask_counts(T, window):
    mask = causal_mask(T, T) if window is None else sliding_window_mask(T, T, window)
    assert attention_pairs(T, causal=True, window=window) == int(mask.sum())
    assert attention_pairs(T) == T * T


@pytest.mark.parametrize(
    "shape",
    [toy_shape(), toy_shape(n_kv_heads=2), toy_shape(n_kv_heads=1, mlp_kind="plain"), GPT2, L3, L70],
    ids=["mha-gated", "gqa-gated", "mqa-plain", "gpt2", "llama-3-8b", "llama-2-70b"],
)
@pytest.mark.parametrize("causal", [False, True])
def test_crossover_is_where_the_counted_flops_cross(shape, causal):
    """The quadratic part is below the rest just before T* and at or above it just after.
    Linear FLOPs per token come from the torch counter; pairs from the mask formula checked above."""
    T_star = crossover_seq_len(shape, causal)
    counted = count_layer_flops(fields(shape), 1)
    linear_per_token = counted["projections"] + counted["mlp"]
    per_pair = counted["attention"]  # T = 1: one pair

    def quadratic_minus_rest(T):
        return per_pair * attention_pairs(T, causal) - linear_per_token * T

    lo, hi = math.floor(T_star), math.ceil(T_star)
    assert quadratic_minus_rest(lo) <= 0 <= quadratic_minus_rest(hi)
    assert quadratic_minus_rest(max(lo - 1, 1)) < 0 < quadratic_minus_rest(hi + 1)


def test_gqa_and_plain_mlp_move_the_crossover():
    """The spec's 2d + 1.5 d_ff is MHA + gated only: GQA shrinks projections (T* falls),
    a plain MLP has 2 matrices not 3 (1.5 becomes 1)."""
    assert crossover_seq_len(L3) == (2 * 4096 * (2 * 4096 + 2 * 1024) + 6 * 4096 * 14336) / (4 * 4096)
    assert crossover_seq_len(L3) < 2 * 4096 + 1.5 * 14336
    assert crossover_seq_len(GPT2) == 2 * 768 + 1.0 * 3072


def test_sliding_window_crossover():
    mistral = load_preset("mistral-7b")
    # Causal with W = 4,096: the quadratic part grows at most like 4·h·d_h·W·T = 67,108,864·T,
    # below the rest's 2·4096·(2·4096 + 2·1024) + 6·4096·14336 = 436,207,616 per token: never crosses.
    assert 4 * 4096 * 4096 < 2 * 4096 * (2 * 4096 + 2 * 1024) + 6 * 4096 * 14336
    assert crossover_seq_len(mistral, causal=True) is None
    assert layer_flops(mistral, np.array([10**6, 10**7]), causal=True).attention_share.max() < 0.5
    # Without the window the causal crossover is 2C/a − 1 as for any model.
    assert crossover_seq_len(mistral, causal=True, use_window=False) == 2 * 436_207_616 / (4 * 4096) - 1
    # A window wide enough is reached after T* is: same as no window.
    wide = dataclasses.replace(mistral, sliding_window=10**6)
    assert crossover_seq_len(wide, causal=True) == crossover_seq_len(mistral, causal=True, use_window=False)


def test_windowed_crossover_when_it_exists():
    """A window W with a·W > C (toy with d_ff = 8: a = 192, C = 20,736, W = 150) and T* beyond W: the root of
    a·(T·W − W(W−1)/2) = C·T. Oracle: the sign change, with pairs counted on the real mask and
    the per-pair and per-token FLOPs from the torch counter."""
    shape = toy_shape(d_ff=8, sliding_window=150)
    T_star = crossover_seq_len(shape, causal=True)
    assert T_star == 192 * 150 * 149 / (2 * (192 * 150 - 20_736))  # ≈ 266.07
    counted = count_layer_flops(fields(shape), 1)
    per_pair, per_token = counted["attention"], counted["projections"] + counted["mlp"]
    assert (per_pair, per_token) == (192, 20_736)

    def quadratic_minus_rest(T):
        return per_pair * int(sliding_window_mask(T, T, 150).sum()) - per_token * T

    assert quadratic_minus_rest(math.floor(T_star)) < 0 < quadratic_minus_rest(math.ceil(T_star))


def test_doubling_context_does_not_quadruple_cost():
    # Card 11's slip: at 4K only the 14.2% quadratic part quadruples: 0.858·2 + 0.142·4 ≈ 2.28.
    f = layer_flops(L7, 4096)
    expected = (2 * (f.projections + f.mlp) + 4 * f.attention) / f.total
    assert doubling_ratio(L7, 4096) == pytest.approx(expected, rel=1e-15)  # same sum, reordered
    assert 2 < doubling_ratio(L7, 4096) < 2.3


# -- Card 12: score memory -------------------------------------------------------------------------
def test_card12_numbers():
    assert score_bytes_naive(L7, 4096) // 32 == 4096**2 * 2 == 32 * MiB  # per head
    assert score_bytes_naive(L7, 4096) == 1 * GiB  # per layer
    assert 32 * score_bytes_naive(L7, 4096) == 32 * GiB  # per model
    assert score_bytes_naive(L3, 131_072) // 32 == 32 * GiB and score_bytes_naive(L3, 131_072) == 1 * TiB
    assert score_bytes_online(L7, 4096) == 0.5 * MiB and 32 * score_bytes_online(L7, 4096) == 16 * MiB
    assert score_bytes_online(L3, 131_072) == 16 * MiB


@pytest.mark.parametrize(("T", "batch"), [(1, 1), (257, 3)])
def test_score_bytes_equal_the_real_tensors(T, batch):
    h = L7.n_heads
    P = torch.empty(batch, h, T, T, dtype=torch.float16, device="meta")  # (B, h, T, T)
    lse = torch.empty(batch, h, T, dtype=torch.float32, device="meta")  # (B, h, T)
    assert score_bytes_naive(L7, T, batch, 2) == P.numel() * P.element_size()
    assert score_bytes_online(L7, T, batch) == lse.numel() * lse.element_size()


# -- Cards 13 and 14: serving, decode, intensity ---------------------------------------------------
def test_card13_serving_budget():
    # Card 13's convention: vendor GB (80·10^9 B) over GiB-sized caches.
    s = serving_capacity(L7, Hardware(A100), 4096, memory="vendor")
    assert s.weight_bytes == 13_476_831_232
    assert s.max_sequences == (80 * 10**9 - 13_476_831_232) // (2 * 2**30) == 30
    # What the device reports (nvidia-smi: 81,920 MiB on an A100 80GB) holds three more.
    device = serving_capacity(L7, Hardware(A100), 4096)
    assert device.memory_bytes == 81_920 * 2**20 and device.memory_convention == "device"
    assert device.max_sequences == (81_920 * 2**20 - 13_476_831_232) // (2 * 2**30) == 33


def test_card14_serving_gqa_vs_mha():
    gqa = serving_capacity(L70, Hardware(A100, n_gpus=2), 4096, memory="vendor")
    assert gqa.free_bytes == 22_046_703_616 and gqa.kv_bytes_per_sequence == 1.25 * GiB
    assert gqa.max_sequences == 16
    # Cache-only what-if: same weights, 64 KV heads.
    mha = serving_capacity(
        L70.with_kv_heads(64), Hardware(A100, n_gpus=2), 4096, weights=gqa.weight_bytes, memory="vendor"
    )
    assert mha.kv_bytes_per_sequence == 10 * GiB and mha.max_sequences == 2
    # 2 × 80 GiB as reported: ⌊(171,798,691,840 − 137,953,296,384) / 1.25 GiB⌋ = 25.
    assert serving_capacity(L70, Hardware(A100, n_gpus=2), 4096).max_sequences == 25


def test_serving_is_floor_and_zero_when_weights_do_not_fit():
    s = serving_capacity(L70, Hardware(A100), 4096)  # 137.95 GB of weights on one 80 GiB card
    assert s.free_bytes < 0 and s.max_sequences == 0
    T = np.array([1, 100, 4096, 131_072])
    arr = serving_capacity(L7, Hardware(A100), T, memory="vendor")
    for t, n in zip(T, arr.max_sequences, strict=True):
        per_seq = 524_288 * int(t)
        assert n * per_seq <= 80 * 10**9 - 13_476_831_232 < (n + 1) * per_seq


def test_card13_decode_bound():
    d = decode_lower_bound(L7, Workload(4096), Precision(), Hardware(A100))
    # Card 13 reads every weight: 6.61 ms of weights + 1.05 ms of cache, at most 130 tokens/s.
    assert format_seconds(d.kv_seconds) == "1.05 ms"
    assert format_seconds(d.card13_seconds_per_step - d.kv_seconds) == "6.61 ms"
    assert math.floor(1 / d.card13_seconds_per_step) == 130  # "≤ 130 tokens/s"
    # A step reads 1 of the 32,000 rows of Llama 2's untied embedding table.
    # Hand count: (6,738,415,616 − 32,000·4,096 + 4,096) parameters × 2 bytes.
    assert d.weight_bytes == (6_738_415_616 - 32_000 * 4096 + 4096) * 2 == 13_214_695_424
    assert format_seconds(d.weight_seconds) == "6.48 ms"
    # Batch 8 reads the weights once for 8 tokens (and 8 embedding rows): more tokens/s, longer steps.
    d8 = decode_lower_bound(L7, Workload(4096, 8), Precision(), Hardware(A100))
    expected = ((6_738_415_616 - 32_000 * 4096 + 8 * 4096) * 2 + 8 * 2 * GiB) / 2.039e12
    assert d8.seconds_per_step == pytest.approx(expected, rel=1e-15)  # float division order only
    assert d8.tokens_per_s > d.tokens_per_s


def test_decode_bound_reads_a_tied_table_whole():
    """GPT-2 ties its embeddings to the head: the head reads the whole table, nothing is skipped."""
    d = decode_lower_bound(GPT2, Workload(512), Precision(), Hardware(A100))
    assert d.weight_bytes == d.card13_weight_bytes == 124_439_808 * 2


def test_card14_intensity_and_ridge():
    assert [decode_intensity(s) for s in (L7, L3, L70)] == [1, 4, 8]
    assert round(A100.ridge_flop_per_byte) == 153


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3-8b", "llama-2-70b"])
def test_intensity_equals_counted_flops_over_cache_bytes(name):
    shape = load_preset(name)
    T = 512
    flops = count_decode_attention(fields(shape), T)
    bytes_read = cache_tensor_bytes(fields(shape), T, 1, torch.float16) // shape.n_layers  # one layer
    assert decode_intensity(shape, 2) == flops / bytes_read


def test_gpu_presets():
    assert list_gpus() == ["a100-40gb", "a100-80gb", "b200", "h100-pcie", "h100-sxm", "h200", "l4", "l40s",
                           "mi300x", "rtx-4090"]  # fmt: skip
    h200 = load_gpu("h200")
    assert (h200.vendor_memory_bytes, h200.bandwidth_bytes_per_s, h200.bf16_flops_per_s) == (
        141e9,
        4.8e12,
        989e12,
    )
    assert round(h200.memory_bytes / 2**30, 1) == 140.4  # "an H200 reports about 140 GiB"
    # nvidia-smi totals: 81,559 MiB (H100 80GB), 81,920 MiB (A100 80GB).
    assert load_gpu("h100-sxm").memory_bytes == 81_559 * 2**20 and A100.memory_bytes == 81_920 * 2**20
    assert (A100.bandwidth_bytes_per_s, A100.bf16_flops_per_s, A100.vendor_memory_bytes) == (
        2039e9,
        312e12,
        80e9,
    )
    for name in list_gpus():
        gpu = load_gpu(name)
        assert gpu.source and gpu.memory_source  # every number has a source
        assert gpu.memory("vendor") == gpu.vendor_memory_bytes and gpu.memory() == gpu.memory_bytes
    with pytest.raises(ValueError, match="a100-80gb"):
        load_gpu("v100")


def test_custom_gpu():
    g = custom_gpu(80, 312, 2039)
    assert (g.memory_bytes, g.bf16_flops_per_s, g.bandwidth_bytes_per_s) == (80 * 2**30, 312e12, 2039e9)
    for bad in (0, -1, float("nan"), float("inf"), "80"):
        with pytest.raises(ValueError, match="--gpu-mem-gib"):
            custom_gpu(bad, 312, 2039)


# -- Vectorization: arrays agree with exact scalars -------------------------------------------------
def test_sweep_matches_scalars_exactly():
    T = np.unique(np.r_[np.arange(1, 10_001, 7), 4096, 24_704, 49_407])
    mistral = load_preset("mistral-7b")
    for shape in (L7, mistral):
        f = layer_flops(shape, T, causal=True)
        kv = kv_cache_bytes(shape, T)
        for i in (0, 1, len(T) // 2, -1):
            g = layer_flops(shape, int(T[i]), causal=True)
            # Every value here is an integer below 2^53, so float64 holds it exactly.
            assert (f.projections[i], f.attention[i], f.mlp[i]) == (g.projections, g.attention, g.mlp)
            assert kv[i] == kv_cache_bytes(shape, int(T[i]))
    assert f.attention.shape == T.shape


@settings(max_examples=60, deadline=None)
@given(
    L=st.integers(1, 100), h_kv=st.integers(1, 16), group=st.integers(1, 8), d_h=st.integers(1, 256),
    T=st.integers(1, 10**6), B=st.integers(1, 64), b=st.sampled_from([1, 2, 4]),
)  # fmt: skip
def test_cache_ratio_is_h_over_hkv(L, h_kv, group, d_h, T, B, b):
    """Card 14: cache_MHA / cache_GQA = h / H_kv for any shape, and the cache never uses h."""
    h = h_kv * group
    shape = toy_shape(n_layers=L, n_heads=h, n_kv_heads=h_kv, head_dim=d_h, d_model=h * d_h)
    gqa = kv_cache_bytes(shape, T, B, b)
    assert gqa == 2 * L * h_kv * d_h * b * T * B
    assert kv_cache_bytes(shape.with_kv_heads(h), T, B, b) == group * gqa


def test_bad_inputs():
    assert bytes_per_value("fp8") == 1  # fp8 caches and weights
    with pytest.raises(ValueError, match="dtype"):
        bytes_per_value("fp6")
    with pytest.raises(ValueError, match="T"):
        kv_cache_bytes(L7, -1)
    with pytest.raises(ValueError, match="whole"):
        layer_flops(L7, np.array([1.5, 2]))
    with pytest.raises(ValueError, match="batch"):
        kv_cache_bytes(L7, 10, batch=0)
    with pytest.raises(ValueError, match="T must be a whole number"):
        cost_report(L7, Workload(np.array([1, 2])))


def test_cost_report_bundles_the_same_numbers():
    r = cost_report(L7, Workload(4096), hardware=Hardware(A100))
    j = r.to_json()
    assert j["kv_cache_bytes_per_token"] == 524_288 and j["kv_cache_bytes"] == 2 * GiB
    assert j["attention_params_per_layer"] == 67_108_864
    assert j["crossover_seq_len"] == 24_704 and isinstance(j["crossover_seq_len"], int)
    assert j["max_sequences"] == 33  # the 80 GiB the device reports; card 13's 80·10^9 B gives 30
    assert j["max_sequences_card13_convention"] == 30
    assert j["decode_ms_per_token_lower_bound"] == pytest.approx(
        6.48 + 1.05, abs=0.01
    )  # 2 decimals, as the card
    assert j["decode_ms_per_token_card13"] == pytest.approx(6.61 + 1.05, abs=0.01)
    assert not r.beyond_max_context and cost_report(L3, Workload(131_072)).beyond_max_context
    int8 = cost_report(L7, Workload(4096), Precision("fp16", kv="int8")).to_json()
    assert int8["kv_cache_bytes_per_token"] == 256 * KiB and int8["weight_bytes"] == 13_476_831_232


def test_from_hf_config_roundtrip_costs():
    """A pasted config of Llama 2 7B gives the same cache as the preset (names don't matter)."""
    from attn_core.cost.config_reader import load_preset_config

    pasted = from_hf_config(load_preset_config("llama-2-7b"))
    assert kv_cache_bytes(pasted, 4096) == 2 * GiB and weight_bytes(pasted) == 13_476_831_232


# -- Page tables and sweeps ---------------------------------------------------------------------------
def test_kv_head_variants_reproduce_card14():
    from attn_core.cost.report import kv_head_variants

    rows = {r.kind: r for r in kv_head_variants(L70, Workload(4096), hardware=Hardware(A100, 2))}
    assert [rows[k].kv_bytes_per_token for k in ("MHA", "GQA", "MQA")] == [2560 * KiB, 320 * KiB, 40 * KiB]
    assert [rows[k].attention_params_per_layer for k in ("MHA", "GQA", "MQA")] == [
        268_435_456, 150_994_944, 136_314_880]  # fmt: skip
    # Same weights, card 14's 2 × 80·10⁹ B: (2, 16); the 2 × 81,920 MiB the devices report hold more.
    assert (rows["MHA"].max_sequences_card14, rows["GQA"].max_sequences_card14) == (2, 16)
    free = 2 * 81_920 * 2**20 - 137_953_296_384
    assert (
        (rows["MHA"].max_sequences, rows["GQA"].max_sequences)
        == (free // (10 * GiB), free // (1.25 * GiB))
        == (3, 25)
    )
    assert (rows["MHA"].decode_intensity, rows["GQA"].decode_intensity) == (1, 8)
    assert rows["GQA"].cache_ratio_to_mha == 8
    without_gpu = kv_head_variants(L7, Workload(4096))
    assert [r.n_kv_heads for r in without_gpu] == [32, 8, 1]  # MHA, a middle group (as Llama 3), MQA
    assert without_gpu[0].max_sequences is None


def test_cost_sweep_columns_match_scalars():
    from attn_core.cost.report import cost_sweep, sweep_grid

    grid = sweep_grid(4096, extra=(24_704.0, 49_407.0, None))
    assert {4096, 24_704, 49_407} <= set(grid.tolist()) and grid[0] == 1 and grid.max() == 4 * 49_407
    assert np.all(np.diff(grid) > 0) and len(grid) <= 241 + 3
    cols = cost_sweep(L7, grid).columns()
    i = int(np.flatnonzero(grid == 4096)[0])
    assert cols["attention, all pairs (FLOP)"][i] == 4 * 4096**2 * 4096
    assert cols["attention, causal pairs (FLOP)"][i] == 2 * 4096 * 4096 * 4097  # 2Td(T + 1)
    assert cols["KV cache (B)"][i] == 2 * GiB and cols["scores naive per layer (B)"][i] == GiB
    assert cols["scores online per layer (B)"][i] == 0.5 * MiB


def test_recompute_flops_are_one_more_qk():
    from attn_core.cost.flops import recompute_flops

    # Card 12: rebuilding P repeats S = QKᵀ, 2T²d per layer, half the forward quadratic part.
    assert recompute_flops(L7, 4096) == 2 * 4096**2 * 4096
    for shape in (toy_shape(), toy_shape(n_kv_heads=2, head_dim=16)):
        assert 2 * recompute_flops(shape, 37, 2) == count_layer_flops(fields(shape), 37, 2)["attention"]


def test_sweep_column_groups():
    from attn_core.cost.report import cost_sweep

    sweep = cost_sweep(L7, [1, 4096])
    assert list(sweep.columns("kv")) == ["T (tokens)", "KV cache (B)"]
    assert set(sweep.columns()) == set().union(*(sweep.columns(g) for g in ("flops", "kv", "scores")))
    with pytest.raises(ValueError, match="group"):
        sweep.columns("bytes")


def test_layer_flops_shares():
    f = layer_flops(L7, 4096)
    p, a, m, t = f.shares()
    assert format_percent(a) == "14.2%" and t == 1.0
    assert p + a + m == pytest.approx(1.0, abs=1e-15)  # three float divisions of exact ints, summed
