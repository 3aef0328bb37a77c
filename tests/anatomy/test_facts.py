"""attn_core.anatomy.facts reads a model type's layers from its module tree. Oracle: the parameter
names of transformers' own build, read here by name (``q_proj.bias``, ``gate_proj.weight``, a
d_h-wide ``q_norm``), which the reader never looks at: it walks modules, not names."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers", reason="the facts come from transformers' build")

from conftest import hf_model  # noqa: E402

from attn_core.anatomy.facts import facts_of  # noqa: E402

TINY = {
    "num_hidden_layers": 1,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 128,
    "head_dim": 16,
}


def _built(model_type: str, **extra):
    model = hf_model({"model_type": model_type, **TINY, **extra})
    return model, model.config


def _names(model) -> set[str]:
    return {n.split("layers.0.", 1)[1] for n, _ in model.named_parameters() if "layers.0." in n}


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3", "gemma2"])
def test_biases_gates_and_norms_as_the_parameter_names_say(model_type):
    model, config = _built(model_type)
    names, facts = _names(model), facts_of(model, config)
    biased = {p for p in ("q_proj", "k_proj", "v_proj", "o_proj") if f"self_attn.{p}.bias" in names}
    expected_bias = (
        "all" if len(biased) == 4 else "qkv" if biased == {"q_proj", "k_proj", "v_proj"} else "none"
    )
    assert facts.attention_bias == expected_bias
    assert facts.mlp == ("gated" if "mlp.gate_proj.weight" in names else "plain")
    assert facts.qk_norm == ("self_attn.q_norm.weight" in names)
    assert facts.norms_per_layer == sum(1 for n in names if n.endswith("norm.weight") and "." not in n[:-7])
    assert not facts.moe and facts.state_mixers == ()


def test_a_mixture_of_experts_is_seen():
    model, config = _built("qwen3_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
    assert facts_of(model, config).moe and any("experts" in n for n in _names(model))
