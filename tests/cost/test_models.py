"""ModelShape and from_hf_config: every shipped preset, the key aliases, malformed configs.

Oracles: the published shapes (Hugging Face config.json files and the cards, as cited in
assets/models/README.md), the spec's weight bytes, and parameter counts of a real torch model
of the same shape built on the meta device (tests/costs_reference.py).
"""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from costs_reference import count_params

from attn_core.cost.config_reader import (
    ConfigError,
    ModelShape,
    from_hf_config,
    list_presets,
    load_preset,
    load_preset_config,
    parse_config_text,
)
from attn_core.cost.params import attention_params, model_params, weight_bytes

# (L, d, h, H_kv, d_h, d_ff, mlp kind, vocab, sliding window, max context) as published.
PUBLISHED = {
    "gpt2": (12, 768, 12, 12, 64, 3072, "plain", 50257, None, 1024),
    "llama-2-7b": (32, 4096, 32, 32, 128, 11008, "gated", 32000, None, 4096),
    "llama-2-70b": (80, 8192, 64, 8, 128, 28672, "gated", 32000, None, 4096),
    "llama-3-8b": (32, 4096, 32, 8, 128, 14336, "gated", 128256, None, 8192),
    "mistral-7b": (32, 4096, 32, 8, 128, 14336, "gated", 32000, 4096, 32768),
    "qwen2.5-7b": (28, 3584, 28, 4, 128, 18944, "gated", 152064, None, 131072),  # window off in its config
    # seed 000's hypothetical: N = 80 layers, 64 KV heads of d = 128 (MHA), or 8 KV heads.
    "seed-80l-mha": (80, 8192, 64, 64, 128, 28672, "gated", 32000, None, 32768),
    "seed-80l-gqa8": (80, 8192, 64, 8, 128, 28672, "gated", 32000, None, 32768),
}

# Total parameter counts. Llama 2 7B and 70B: the spec's fp16 weight bytes / 2 (card 13:
# 13,476,831,232 B; card 14: 2 × 80·10^9 − 22,046,703,616 = 137,953,296,384 B). The others are
# the counts the model publishers report (Hugging Face model cards / safetensors metadata).
PUBLISHED_PARAMS = {
    "gpt2": 124_439_808,
    "qwen2.5-7b": 7_615_616_512,
    "llama-2-7b": 13_476_831_232 // 2,
    "llama-2-70b": (2 * 80 * 10**9 - 22_046_703_616) // 2,
    "llama-3-8b": 8_030_261_248,
    "mistral-7b": 7_241_732_096,
}


def shape_tuple(s: ModelShape) -> tuple:
    return (
        s.n_layers,
        s.d_model,
        s.n_heads,
        s.n_kv_heads,
        s.head_dim,
        s.d_ff,
        s.mlp_kind,
        s.vocab_size,
        s.sliding_window,
        s.max_context,
    )


# The MoE, MLA, hybrid local/global and chunked presets: tested in tests/cost/test_arch.py.
MODERN = {"deepseek-v3", "gemma-3-27b", "gpt-oss-120b", "llama-4-scout", "mixtral-8x7b", "qwen3-30b-a3b"}
# Linear-attention and state-space hybrids: tested in tests/cost/test_cost_hybrid.py.
HYBRID = {"qwen3-next-80b-a3b", "kimi-linear-48b-a3b", "jamba-1.5-mini", "nemotron-h-8b"}


def test_presets_are_exactly_the_shipped_set():
    assert list_presets() == sorted(set(PUBLISHED) | MODERN | HYBRID)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_shape_matches_published(name):
    shape = load_preset(name)
    assert shape_tuple(shape) == PUBLISHED[name]
    assert shape.name == name and shape.source == f"assets/models/{name}.json"


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_from_hf_config_on_each_preset_file(name):
    """The raw config.json parses to the same shape as load_preset (and survives a JSON round trip)."""
    config = load_preset_config(name)
    assert shape_tuple(from_hf_config(config)) == PUBLISHED[name]
    assert shape_tuple(parse_config_text(json.dumps(config))) == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_parameter_count_matches_published(name):
    assert model_params(load_preset(name)).total == PUBLISHED_PARAMS[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_a_real_torch_model(name):
    """Independent count: instantiate the architecture (meta device) and sum numel()."""
    shape = load_preset(name)
    assert model_params(shape).total == count_params(dataclasses.asdict(shape))


def test_spec_weight_bytes():
    # Card 13: Llama 2 7B's fp16 weights take 13,476,831,232 bytes (13.48 GB).
    assert weight_bytes(load_preset("llama-2-7b"), 2) == 13_476_831_232
    # Card 14: Llama 2 70B's take 137.95 GB, leaving 22,046,703,616 of 2 × 80 GB.
    assert 2 * 80 * 10**9 - weight_bytes(load_preset("llama-2-70b"), 2) == 22_046_703_616


def test_derived_fields():
    l70 = load_preset("llama-2-70b")
    assert (l70.group_size, l70.attention_kind, l70.q_width, l70.kv_width) == (8, "GQA", 8192, 1024)
    assert load_preset("llama-2-7b").attention_kind == "MHA"
    mqa = l70.with_kv_heads(1)
    assert (mqa.attention_kind, mqa.group_size, mqa.n_heads) == ("MQA", 64, 64)
    assert load_preset("gpt2").mlp_matrices == 2 and l70.mlp_matrices == 3


def test_shape_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_preset("gpt2").n_layers = 3


# -- aliases and defaults ---------------------------------------------------------------------
LLAMA2_7B_GPT2_KEYS = {
    "n_layer": 32,
    "n_embd": 4096,
    "n_head": 32,
    "n_inner": 11008,
    "vocab_size": 32000,
    "n_positions": 4096,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}


def test_gpt2_style_aliases_give_the_same_shape():
    shape = from_hf_config(LLAMA2_7B_GPT2_KEYS)  # no model_type: SiLU means SwiGLU
    assert shape_tuple(shape) == PUBLISHED["llama-2-7b"]
    assert model_params(shape).total == PUBLISHED_PARAMS["llama-2-7b"]


def test_defaults_follow_hugging_face():
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
    shape = from_hf_config(config)
    assert shape.n_kv_heads == 4  # no num_key_value_heads -> MHA
    assert shape.head_dim == 16  # no head_dim -> d / h
    assert shape.d_ff == 256  # no intermediate_size -> 4d
    assert shape.tie_embeddings  # PretrainedConfig's default is tied
    assert shape.mlp_kind == "plain"  # no architecture, no SiLU
    nulls = config | {"num_key_value_heads": None, "n_inner": None, "head_dim": None, "sliding_window": None}
    assert shape_tuple(from_hf_config(nulls)) == shape_tuple(shape)  # explicit null = absent


def test_explicit_head_dim_and_kv_aliases():
    config = {
        "n_layer": 2,
        "n_embd": 3072,
        "n_head": 16,
        "head_dim": 256,
        "num_kv_heads": 1,
        "vocab_size": 10,
    }
    shape = from_hf_config(config)
    assert (shape.head_dim, shape.q_width, shape.n_kv_heads, shape.attention_kind) == (256, 4096, 1, "MQA")
    assert from_hf_config(config | {"num_kv_heads": None, "multi_query": True}).n_kv_heads == 1


def test_qwen_style_unused_window_is_ignored():
    config = load_preset_config("mistral-7b") | {"use_sliding_window": False}
    assert from_hf_config(config).sliding_window is None


# -- malformed configs --------------------------------------------------------------------------
REQUIRED = [
    ("num_hidden_layers", "num_hidden_layers"),
    ("hidden_size", "hidden_size"),
    ("num_attention_heads", "num_attention_heads"),
    ("vocab_size", "vocab_size"),
]


@pytest.mark.parametrize(("key", "named"), REQUIRED)
def test_missing_key_is_named(key, named):
    config = copy.deepcopy(load_preset_config("llama-2-7b"))
    del config[key]
    with pytest.raises(ConfigError, match=named):
        from_hf_config(config)


@pytest.mark.parametrize(
    ("patch", "named"),
    [
        ({"num_hidden_layers": "32"}, "num_hidden_layers"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"num_attention_heads": -4}, "num_attention_heads"),
        ({"num_key_value_heads": 5}, "multiple of the KV-head count"),
        ({"num_key_value_heads": 64}, "multiple of the KV-head count"),
        ({"intermediate_size": 1.5}, "intermediate_size"),
        ({"intermediate_size": True}, "intermediate_size"),
        ({"vocab_size": 10**12}, "vocab_size"),
        ({"sliding_window": "4k"}, "sliding_window"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"num_attention_heads": 48}, "head_dim"),  # 4096 / 48 is not whole
        ({"num_local_experts": 8}, "'num_local_experts'"),  # no expert layout for model_type llama
    ],
)
def test_malformed_values_are_rejected_with_the_key(patch, named):
    with pytest.raises(ConfigError, match=named):
        from_hf_config(load_preset_config("llama-2-7b") | patch)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ("null", "JSON object"),
        ("{}", "num_hidden_layers"),
    ],
)
def test_malformed_text(text, named):
    with pytest.raises(ConfigError, match=named):
        parse_config_text(text)


def test_unknown_preset():
    with pytest.raises(ConfigError, match="llama-2-7b"):
        load_preset("llama-9")


def test_shape_validation_rejects_non_integers():
    fields = dataclasses.asdict(load_preset("gpt2"))
    with pytest.raises(ConfigError, match="n_layers"):
        ModelShape(**(fields | {"n_layers": 2.0}))
    with pytest.raises(ConfigError, match="mlp_kind"):
        ModelShape(**(fields | {"mlp_kind": "swiglu"}))


def test_qwen2_biases_on_q_k_v_but_not_o():
    """Qwen2.5-7B's published parameter count (its Hugging Face model card: 7,615,616,512) is the
    oracle; it needs the q, k, v biases (28 layers × (3,584 + 2 × 512)) and no bias on o or the MLP."""
    shape = load_preset("qwen2.5-7b")
    assert model_params(shape).total == 7_615_616_512
    d, kv = 3584, 4 * 128
    assert attention_params(shape).biases == d + 2 * kv  # q, k, v; none on o
    assert attention_params(shape, bias=False).biases == 0
    assert attention_params(load_preset("gpt2")).biases == 4 * 768  # GPT-2 keeps all four
