"""Mixture of experts, MLA, per-layer attention types, nested configs, whole-model prefill.

Oracles, none of them our formulas: parameter counts of the real Hugging Face model classes built
on the meta device (``transformers.AutoModelForCausalLM.from_config``, no weights downloaded), the
publishers' own parameter totals (with the tolerance each test states), and KV-cache bytes derived
by hand in each test from the config's numbers.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import hf_model, hf_numel

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config, load_preset, load_preset_config
from attn_core.cost.flops import attention_pairs, pair_flops, prefill_flops
from attn_core.cost.params import model_params
from attn_core.cost.serving import kv_cache_bytes

transformers = pytest.importorskip("transformers", reason="the meta-device oracle needs transformers")

MODERN = ["deepseek-v3", "gemma-3-27b", "gpt-oss-120b", "llama-4-scout", "mixtral-8x7b", "qwen3-30b-a3b"]
GiB = 2**30


def meta_model(name: str):
    """The Hugging Face model of a preset's (text) config, on the meta device: allocates nothing."""
    config = load_preset_config(name)
    config.pop("quantization_config", None)  # sizes, not the checkpoint's storage format
    conf = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    conf = getattr(conf, "text_config", None) or conf  # Gemma 3, Llama 4: the language model
    return hf_model(conf)


@pytest.mark.parametrize("name", MODERN)
def test_total_params_equal_the_hugging_face_model(name):
    """Σ numel over the real module tree. DeepSeek-V3's checkpoint also stores one score-correction
    bias of E numbers per MoE router, which transformers keeps as a buffer: counted here too."""
    model = meta_model(name)
    n = sum(p.numel() for p in model.parameters())
    n += sum(b.numel() for k, b in model.named_buffers() if k.endswith("e_score_correction_bias"))
    assert model_params(load_preset(name)).total == n


# (total, active) as the publishers state them, and the relative tolerance their rounding allows.
PUBLISHED = {
    "mixtral-8x7b": (46.7e9, 12.9e9, 0.005),  # Mistral AI, "Mixtral of experts" (46.7B, 12.9B)
    "qwen3-30b-a3b": (30.5e9, 3.3e9, 0.02),  # Qwen3 model card: 30.5B total, 3.3B activated
    "deepseek-v3": (671e9, 37e9, 0.02),  # DeepSeek-V3 report: 671B total, 37B activated, MTP excluded
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_total_and_active_match_the_published_counts(name):
    total, active, tol = PUBLISHED[name]
    p = model_params(load_preset(name))
    assert p.total == pytest.approx(total, rel=tol) and p.active == pytest.approx(active, rel=tol)


def test_gpt_oss_counts_as_its_model_card():
    """gpt-oss model card: 116.83B total, 5.13B active — counted without the input embedding table
    (201,088 × 2,880), with the unembedding. Attention 0.96B, MLP 114.71B, both tables 1.16B."""
    p = model_params(load_preset("gpt-oss-120b"))
    assert round(p.total / 1e9, 2) == 116.83 and round(p.active_without_embeddings / 1e9, 2) == 5.13
    assert p.active - p.active_without_embeddings == 201_088 * 2880
    # Sinks: one logit per query head per layer; q/k/v/o biases 4,096 + 2·512 + 2,880.
    per_layer = 2880 * (4096 + 2 * 512) + 4096 * 2880 + (4096 + 2 * 512 + 2880) + 64
    assert round(p.attention / 1e9, 2) == 0.96 and p.attention == 36 * per_layer


def test_mixtral_active_by_hand():
    """Active = total − 6 of the 8 experts in each of 32 layers (one expert: 3·4,096·14,336)."""
    p = model_params(load_preset("mixtral-8x7b"))
    assert p.active == p.total - 32 * 6 * 3 * 4096 * 14336
    assert p.active_without_embeddings == p.active - 32_000 * 4096


def test_deepseek_v3_leaves_out_the_mtp_layer_and_has_dense_layers():
    s = load_preset("deepseek-v3")
    assert s.nextn_layers_left_out == 1 and s.n_layers == 61
    assert dense_layers(s) == [0, 1, 2] and (s.moe.n_experts, s.moe.top_k, s.moe.n_shared) == (256, 8, 1)
    assert s.quantization == "fp8, fmt e4m3, weight_block_size [128, 128]"  # reported, not applied
    assert s.attention_kind == "MLA" and s.mla.cache_width == 512 + 64


def dense_layers(s) -> list[int]:
    """The layers without experts, found one by one (the shape itself never loops over layers)."""
    return [i for i in range(s.n_layers) if not s.is_moe_layer(i)]


# -- KV cache: hand derivations ---------------------------------------------------------------------
def test_mla_caches_the_latent_and_the_rotary_key():
    """DeepSeek-V3 at 128K in bf16: 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B per
    token — no per-head K and V (128 heads × (192 + 128) × 2 B would be 71× more)."""
    s = load_preset("deepseek-v3")
    assert kv_cache_bytes(s, 131_072) == 61 * (512 + 64) * 2 * 131_072 == 9_210_691_584
    assert kv_cache_bytes(s, 131_072, batch=4, bytes_per_value=1) == 61 * 576 * 131_072 * 4


@pytest.mark.parametrize("T", [1, 100, 128, 129, 4096, 131_072])
def test_gpt_oss_sliding_layers_keep_the_window(T):
    """18 full layers hold T tokens, 18 sliding ones min(T, W − 1 = 127) (transformers' dynamic cache);
    2·8·64·2 B per token per layer."""
    assert kv_cache_bytes(load_preset("gpt-oss-120b"), T) == 2 * 8 * 64 * 2 * (18 * T + 18 * min(T, 127))


@pytest.mark.parametrize("T", [1, 1024, 1025, 32_768, 131_072])
def test_gemma3_five_local_layers_per_global(T):
    """62 layers, every 6th global (indices 5, 11, …, 59: 10 layers); window 1,024, a sliding layer
    keeps W − 1 = 1,023 tokens; 2·16·128·2 B."""
    s = load_preset("gemma-3-27b")
    assert [i for i in range(62) if s.layer_kinds[i] == "full"] == list(range(5, 62, 6))
    assert kv_cache_bytes(s, T) == 2 * 16 * 128 * 2 * (10 * T + 52 * min(T, 1023))


@pytest.mark.parametrize("T", [1, 8191, 8192, 8193, 20_000, 10_000_000])
def test_llama4_chunked_layers_keep_one_chunk(T):
    """Scout: 3 of every 4 layers attend within chunks of 8,192 (those with RoPE), every 4th globally.
    A chunked layer keeps what transformers' dynamic cache keeps for it, C − 1 = 8,191 tokens at most."""
    s = load_preset("llama-4-scout")
    assert s.kind_counts["chunked"] == 36 and s.layer_kinds.each(48)[3::4] == ("full",) * 12
    assert kv_cache_bytes(s, T) == 2 * 8 * 128 * 2 * (12 * T + 36 * min(T, 8191))


def test_mistral_window_on_every_layer_still_caps():
    # W − 1 tokens: 512 MiB − 128 KiB
    assert kv_cache_bytes(load_preset("mistral-7b"), 32_768) == 32 * 2 * 8 * 128 * 2 * 4095


# -- Pairs and FLOPs --------------------------------------------------------------------------------
@pytest.mark.parametrize(("T", "C"), [(1, 4), (7, 4), (8, 4), (100, 16), (37, 64)])
def test_chunked_pairs_equal_a_mask_count(T, C):
    """Causal pairs inside chunks of C, counted from an explicit mask (torch, not our formula)."""
    i = torch.arange(T)
    mask = (i[None, :] <= i[:, None]) & (i[None, :] // C == i[:, None] // C)
    assert attention_pairs(T, causal=True, chunk=C) == int(mask.sum())


def test_mla_pair_flops_naive_and_absorbed():
    """Convention: per query–key pair per layer, QKᵀ + PV. Naive: 2h(d_nope + d_rope + d_v) =
    2·128·(128 + 64 + 128); absorbed (queries and outputs in the latent): 2h(2·r_kv + d_rope)."""
    s = load_preset("deepseek-v3")
    assert pair_flops(s) == 2 * 128 * (128 + 64 + 128) == 81_920
    assert pair_flops(s, absorbed=True) == 2 * 128 * (2 * 512 + 64) == 278_528


def test_prefill_flops_of_mixtral_by_hand():
    """Convention: matrix products only (2 per multiply-add); norms, softmax, rotary excluded.
    Per token per layer: Q, K, V, O = 2·4,096·(2·4,096 + 2·1,024); router 2·4,096·8; two experts of
    3 matrices 2·3·4,096·14,336 each. Causal pairs T(T + 1)/2 at 4·32·128 FLOPs each; head 2·d·V."""
    T, B = 1000, 2
    f = prefill_flops(load_preset("mixtral-8x7b"), T, batch=B, causal=True)
    per_token_layer = 2 * 4096 * (2 * 4096 + 2 * 1024) + 2 * 4096 * 8 + 2 * 2 * 3 * 4096 * 14336
    expected = B * (32 * (per_token_layer * T + 4 * 32 * 128 * T * (T + 1) // 2) + 2 * 4096 * 32_000 * T)
    assert f.total == expected


def test_prefill_flops_match_torch_for_a_small_mixtral():
    """A 2-layer Mixtral run on the meta device under torch's FLOP counter (matmuls only: 2mnk).
    HF routes every token through the top-k experts it picks, so the expert matmuls are
    exactly 2 of 4 per token; eager attention counts all T² pairs. (The default grouped expert
    kernel is invisible to the counter, hence the eager experts.)"""
    from torch.utils.flop_counter import FlopCounterMode

    cfg = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
               num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2, vocab_size=50,
               max_position_embeddings=64, tie_word_embeddings=False)  # fmt: skip
    conf = transformers.MixtralConfig(**cfg)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        conf, attn_implementation="eager", experts_implementation="eager"
    ).eval()
    T = 16
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randint(0, 50, (1, T)))
    ours = prefill_flops(from_hf_config(cfg | {"model_type": "mixtral"}), T, causal=False)
    assert counter.get_total_flops() == ours.total


# -- Configs: nesting, refusals ---------------------------------------------------------------------
def test_nested_text_config_reads_the_language_model():
    config = load_preset_config("gemma-3-27b")
    assert "num_hidden_layers" not in config
    s = from_hf_config(config)
    assert (s.n_layers, s.d_model, s.n_kv_heads, s.sliding_window) == (62, 5376, 16, 1024)


@pytest.mark.parametrize(
    ("patch", "named"),
    [
        ({"num_experts_per_tok": float("inf")}, "num_experts_per_tok"),
        ({"num_experts_per_tok": float("nan")}, "num_experts_per_tok"),
        ({"n_routed_experts": 1e309}, "n_routed_experts"),
        ({"kv_lora_rank": "512"}, "kv_lora_rank"),
        ({"num_experts_per_tok": 300}, "top-k"),
        ({"layer_types": ["full_attention"] * 60}, "layer_types"),
    ],
)
def test_unsizable_values_name_the_key(patch, named):
    with pytest.raises(ConfigError, match=named):
        from_hf_config(load_preset_config("deepseek-v3") | patch)


GDN_SIZES = {"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
             "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"model_type": "mamba2", "num_hidden_layers": 4, "ssm_state_size": 128}, "'mamba2'"),
        ({"model_type": "zamba2"}, "'zamba2'"),
        ({"model_type": "llama", "layer_types": ["linear_attention", "full_attention"]}, "'layer_types'"),
        ({"model_type": "llama", "mamba_d_state": 16}, "'mamba_expand'"),
        ({"model_type": "llama", "ssm_foo": 1}, "'ssm_foo'"),
        ({"model_type": "llama", "hybrid_override_pattern": "M*X"}, "'X'"),
        ({"model_type": "llama", **GDN_SIZES}, "which layers"),
        ({"model_type": "llama", **GDN_SIZES, "layer_types": ["linear_attention"] * 2}, "no attention layer"),
        ({"model_type": "llama", **GDN_SIZES, "full_attention_interval": 0}, "'full_attention_interval'"),
        ({"model_type": "jamba", "attn_layer_period": 2, "attn_layer_offset": 2}, "'attn_layer_offset'"),
    ],
)
def test_unsizable_layer_kinds_are_refused_by_name(config, named):
    """Whatever cannot be sized is refused in one line naming the key (or the model_type)."""
    base = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
            "intermediate_size": 96}  # fmt: skip
    with pytest.raises(ConfigError, match=named):
        from_hf_config(base | config)


def test_unknown_moe_layout_is_refused():
    with pytest.raises(ConfigError, match=r"'num_experts'.*model_type 'olmoe'"):
        from_hf_config(load_preset_config("qwen3-30b-a3b") | {"model_type": "olmoe"})


def test_quantization_is_reported_not_applied():
    s = load_preset("gpt-oss-120b")
    assert s.quantization.startswith("mxfp4") and math.isfinite(model_params(s).total)


# -- Layouts the presets do not cover: small configs against the Hugging Face classes -------------------
def hf_count(model_type: str, cfg: dict) -> int:
    return hf_numel({"model_type": model_type, **cfg})


def test_qwen_moe_dense_layers_mixed_in():
    """mlp_only_layers and decoder_sparse_step: layers 0 and 1 dense by list, odd-numbered steps dense."""
    cfg = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, num_hidden_layers=6, num_experts=8, num_experts_per_tok=2,
               vocab_size=100, mlp_only_layers=[0, 1], decoder_sparse_step=2, tie_word_embeddings=False)  # fmt: skip
    s = from_hf_config(cfg | {"model_type": "qwen3_moe"})
    assert dense_layers(s) == [0, 1, 2, 4]  # MoE iff not listed and (i + 1) % 2 == 0: layers 3 and 5
    p = model_params(s)
    assert p.total == hf_count("qwen3_moe", cfg)
    assert p.active == p.total - 2 * (8 - 2) * 3 * 64 * 32  # two MoE layers, 6 idle experts each


def test_gemma2_alternates_sliding_and_global():
    """Gemma 2: even layers slide (window W), odd layers attend globally; 4 norms per layer."""
    cfg = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
               num_hidden_layers=6, vocab_size=100, sliding_window=8, max_position_embeddings=256)  # fmt: skip
    s = from_hf_config(cfg | {"model_type": "gemma2"})
    assert s.layer_kinds.each(6) == ("sliding", "full") * 3
    assert model_params(s).total == hf_count("gemma2", cfg)
    for T in (1, 8, 9, 100):
        assert kv_cache_bytes(s, T) == 2 * 2 * 16 * 2 * (3 * T + 3 * min(T, 7))


def test_ttft_and_decode_bounds_by_hand():
    """Llama 2 7B on one A100 at P = 4,096, causal. TTFT = max(FLOPs / 312 TFLOP/s, bytes / 2,039 GB/s):
    FLOPs = 32 layers × (per-token 2·(4d² + 3·d·d_ff)·P + 4d·P(P + 1)/2) + 2·d·V·P; bytes = the fp16
    weights less the V − P embedding rows no token looks up, plus the 2 GiB of cache written. The first
    decode step reads one embedding row, the rest of the weights and the 2 GiB cache."""
    from attn_core.cost.gpus import load_gpu
    from attn_core.cost.inputs import Hardware, Precision, Workload
    from attn_core.cost.whole_model import timing

    d, d_ff, V, P = 4096, 11008, 32000, 4096
    t = timing(load_preset("llama-2-7b"), Workload(P), Precision("fp16"), Hardware(load_gpu("a100-80gb")))
    flops = 32 * (2 * (4 * d * d + 3 * d * d_ff) * P + 4 * d * P * (P + 1) // 2) + 2 * d * V * P
    assert t.prefill.total == flops
    read = (6_738_415_616 - (V - P) * d) * 2 + 2 * GiB
    assert t.ttft_s == max(flops / 312e12, read / 2.039e12) and t.ttft_bound == "compute"
    assert t.decode_step_s == ((6_738_415_616 - V * d + d) * 2 + 2 * GiB) / 2.039e12
    assert t.tokens_per_s == 0  # nothing generated


def test_llama4_interleaved_moe_layers():
    """Maverick's layout: every 2nd layer MoE (16 experts + 1 shared, width intermediate_size), the others
    dense of width intermediate_size_mlp; chunked attention on 3 of 4 layers."""
    cfg = dict(hidden_size=64, intermediate_size=32, intermediate_size_mlp=96, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=1,
               vocab_size=100, interleave_moe_layer_step=2, attention_chunk_size=8, no_rope_layers=[1, 1, 1, 0],
               tie_word_embeddings=False)  # fmt: skip
    s = from_hf_config(cfg | {"model_type": "llama4_text"})
    assert dense_layers(s) == [0, 2] and s.d_ff == 96 and s.moe.expert_d_ff == 32
    assert s.layer_kinds.each(4) == (
        "chunked",
        "chunked",
        "chunked",
        "full",
    )  # RoPE layers chunk, NoPE ones are global
    with pytest.raises(ConfigError, match="attention_chunk_size"):  # which layers chunk? never guessed
        from_hf_config(
            {k: v for k, v in cfg.items() if k != "no_rope_layers"} | {"model_type": "llama4_text"}
        )
    p = model_params(s)
    assert p.total == hf_count("llama4_text", cfg)
    assert p.active == p.total - 2 * 3 * 3 * 64 * 32  # two MoE layers, 3 idle experts each
