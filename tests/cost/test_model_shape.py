"""attn_core.cost.model_shape: the validated shape and what is derived from it.

Oracle: transformers' own model classes built on the meta device from the same configs (the
projection widths they allocate, which layers slide or hold experts), and the cards' definitions
(MHA, GQA, MQA by H_kv against h; G = h / H_kv), applied by hand."""

from __future__ import annotations

import dataclasses

import pytest
import transformers
from conftest import hf_model

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.model_shape import ModelShape

LLAMA = dict(
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=8,
    num_key_value_heads=2,
    intermediate_size=96,
    vocab_size=100,
)


def llama_shape(**changes) -> ModelShape:
    return from_hf_config({"model_type": "llama", **LLAMA, **changes}, name="tiny llama")


def test_widths_are_the_projections_transformers_allocates():
    attn = hf_model({"model_type": "llama", **LLAMA}, base=True).layers[0].self_attn
    shape = llama_shape()
    assert shape.q_width == attn.q_proj.out_features  # h·d_h
    assert shape.kv_width == attn.k_proj.out_features == attn.v_proj.out_features  # H_kv·d_h
    assert shape.group_size == 8 // 2
    assert shape.mlp_matrices == 3  # SwiGLU: gate, up, down


@pytest.mark.parametrize(("kv", "kind"), [(8, "MHA"), (4, "GQA"), (2, "GQA"), (1, "MQA")])
def test_attention_kind_follows_the_kv_head_count(kv, kind):
    shape = llama_shape().with_kv_heads(kv)
    assert shape.attention_kind == kind and shape.group_size == 8 // kv
    assert shape.n_kv_heads == kv and "H_kv=" in shape.name


def test_a_mistral_window_slides_every_layer_and_gemma3_mixes_kinds():
    mistral = from_hf_config({"model_type": "mistral", **LLAMA, "sliding_window": 16}, name="m")
    assert mistral.kind_counts == {"sliding": 2} and mistral.uniform_window == 16
    gemma = transformers.Gemma3TextConfig(
        num_hidden_layers=12,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        intermediate_size=96,
        vocab_size=100,
        sliding_window=32,
    )
    shape = from_hf_config({**gemma.to_dict(), "model_type": "gemma3_text"}, name="g")
    expected = {
        k: gemma.layer_types.count(t)
        for k, t in (("sliding", "sliding_attention"), ("full", "full_attention"))
    }
    assert shape.kind_counts == expected  # transformers' own pattern: 5 sliding, then 1 full
    assert shape.uniform_window is None and shape.n_attention_layers == 12 and not shape.is_hybrid
    assert shape.representative_layer == (
        "full" if gemma.layer_types[-1] == "full_attention" else "sliding",
        False,
    )


def test_shapes_no_formula_can_size_are_refused():
    shape = llama_shape()
    with pytest.raises(ConfigError, match="multiple of the KV-head count"):
        dataclasses.replace(shape, n_kv_heads=3)
    with pytest.raises(ConfigError, match="n_layers"):
        dataclasses.replace(shape, n_layers=0)
    with pytest.raises(ConfigError, match="mlp_kind"):
        dataclasses.replace(shape, mlp_kind="relu")
    with pytest.raises(ConfigError, match="d_model"):
        dataclasses.replace(shape, d_model=True)  # a bool is no width
