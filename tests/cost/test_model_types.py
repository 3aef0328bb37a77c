"""attn_core.cost.model_types: what a model_type implies before any size is read.

Oracle: transformers' own configuration classes (their defaults, built here), and configs written
out by hand for the wrapper and the refusals."""

from __future__ import annotations

import math

import pytest
import transformers

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.families import FAMILIES
from attn_core.cost.model_types import (
    read_quantization,
    read_sinks,
    refuse_unsized_models,
    unwrap_text_config,
    with_class_defaults,
)
from attn_core.cost.type_facts import TypeFacts

CLASS_DEFAULTS = {t: f.class_defaults for t, f in FAMILIES.items() if f.class_defaults}

CLASSES = {
    "qwen3_next": transformers.Qwen3NextConfig,
    "kimi_linear": transformers.KimiLinearConfig,
    "jamba": transformers.JambaConfig,
    "nemotron_h": transformers.NemotronHConfig,
    "gemma4_text": transformers.Gemma4TextConfig,
}


@pytest.mark.parametrize("model_type", sorted(CLASS_DEFAULTS))
def test_class_defaults_are_what_transformers_defaults_to(model_type):
    config = CLASSES[model_type]()
    assert config.model_type == model_type
    stored = config.to_dict()
    for key, value in CLASS_DEFAULTS[model_type].items():
        if (model_type, key) == ("qwen3_next", "full_attention_interval"):
            # the class keeps the rule as its layer list: every 4th layer full attention
            full = [i for i, t in enumerate(config.layer_types) if t == "full_attention"]
            assert full == list(range(value - 1, config.num_hidden_layers, value))
        elif (model_type, key) == ("kimi_linear", "first_k_dense_replace"):
            # the class lists dense/sparse per layer: the first `value` layers dense
            assert config.mlp_layer_types[:value] == ["dense"] * value
            assert set(config.mlp_layer_types[value:]) == {"sparse"}
        elif (model_type, key) == ("jamba", "mamba_dt_rank"):
            assert value == "auto" and config.mamba_dt_rank == math.ceil(config.hidden_size / 16)
        else:
            # (the stored dict first: Gemma 4's head_dim is a per-layer attribute its config refuses to read)
            assert (stored[key] if key in stored else getattr(config, key, None)) == value, (model_type, key)


def test_absent_or_null_keys_take_the_class_default_and_given_ones_stay():
    out = with_class_defaults({"num_experts": None, "head_dim": 128}, "qwen3_next")
    assert out["num_experts"] == transformers.Qwen3NextConfig().num_experts  # null → the default
    assert out["head_dim"] == 128  # given, kept
    assert with_class_defaults({"a": 1}, "llama") == {"a": 1}  # no class table: unchanged


def test_kimi_linear_nested_sizes_are_lifted_to_the_top_level():
    nested = {"linear_attn_config": {"num_heads": 8, "head_dim": 64, "short_conv_kernel_size": 3}}
    out = with_class_defaults(nested, "kimi_linear")
    assert (out["linear_num_heads"], out["linear_head_dim"], out["linear_conv_kernel_dim"]) == (8, 64, 3)
    with pytest.raises(ConfigError, match="linear_attn_config"):
        with_class_defaults({"linear_attn_config": [1, 2]}, "llama")


def test_a_multimodal_wrapper_gives_its_text_config_with_the_top_level_quantization():
    text = {"num_hidden_layers": 4, "hidden_size": 64}
    wrapped = {"text_config": text, "quantization_config": {"quant_method": "fp8"}, "vision_config": {}}
    assert unwrap_text_config(wrapped) == {"quantization_config": {"quant_method": "fp8"}, **text}
    top_level = {"num_hidden_layers": 2, "text_config": text}  # layers at the top: the top level
    assert unwrap_text_config(top_level) is top_level


def test_a_build_with_mixers_the_keys_do_not_size_is_refused_by_name():
    facts = TypeFacts(
        mlp="gated",
        attention_bias="none",
        mlp_bias=False,
        qk_norm=False,
        output_gate=False,
        norms_per_layer=2,
        moe=False,
        learned_positions=False,
        state_mixers=("FalconH1Mixer",),
    )
    with pytest.raises(ConfigError, match=r"falcon_h1.*FalconH1Mixer"):
        refuse_unsized_models("falcon_h1", facts, None)
    refuse_unsized_models("falcon_h1", facts, object())  # a mixer the keys size: read
    refuse_unsized_models("llama", None, None)  # no mixers recorded: read


def test_quantization_is_reported_in_a_phrase_and_sinks_read():
    q = {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}
    assert read_quantization(q) == "fp8, fmt e4m3, weight_block_size [128, 128]"
    assert read_quantization({}) is None
    with pytest.raises(ConfigError, match="quantization_config"):
        read_quantization({"quantization_config": "int4"})
    assert read_sinks({}, "gpt_oss") and read_sinks({"attention_sinks": True}, "llama")
    assert not read_sinks({}, "llama")
