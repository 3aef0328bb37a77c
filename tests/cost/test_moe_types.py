"""The families with an expert layout (attn_core/cost/families.py) held against the
model itself. Oracle: transformers' build of each type (the record assets/derived/model_types.json,
itself held against fresh builds in test_type_facts.py, and tiny builds here), never the table.

- every listed type that transformers builds has experts in its build, and the formulas' reading
  of its class defaults agrees with the build to the parameter (``formulas_cover``), or, where the
  class defaults cannot be checked, a tiny config of it does;
- a type whose build has experts is never sized as a dense model from a config that names no
  expert count."""

from __future__ import annotations

import pytest
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.families import FAMILIES
from attn_core.cost.type_facts import recorded_facts

# class defaults that cannot be checked as they stand: a tiny config of the type is checked instead
TINY = {
    "deepseek_v2": dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
                        num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2,
                        n_shared_experts=1, first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=None,
                        qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, vocab_size=128),  # top-k left None
    "glm4_moe": dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=8,
                     num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1, vocab_size=128),
    "nemotron_h": dict(hidden_size=64, num_hidden_layers=4, hybrid_override_pattern="M*-E", num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16, intermediate_size=96, moe_intermediate_size=32,
                       n_routed_experts=8, num_experts_per_tok=2, moe_shared_expert_intermediate_size=48,
                       mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=8, n_groups=1, vocab_size=128),
}  # fmt: skip  # nemotron_h: its completed class defaults carry no layer count; glm4_moe: no head_dim
# default, and 4,096 / 96 heads does not divide (its modelling code floors it to 42)


@pytest.mark.parametrize("model_type", sorted(t for t, f in FAMILIES.items() if f.experts is not None))
def test_each_listed_layout_agrees_with_the_build(model_type):
    if model_type not in CONFIG_MAPPING_NAMES:  # remote code (kimi_k2: DeepSeek-V3's layout)
        assert recorded_facts(model_type) is None
        pytest.skip(f"{model_type}: not a transformers model type (remote code): no build to hold it to")
    facts = recorded_facts(model_type)
    assert facts is not None and facts.moe, f"{model_type}: its build at class defaults has no experts"
    if model_type in TINY:
        from attn_core.anatomy.compare import compare_config

        check = compare_config({"model_type": model_type, **TINY[model_type]})
        assert check.anatomy is not None and check.anatomy.experts is not None
        assert check.agrees, check.lines()
    else:
        assert facts.formulas_cover, f"{model_type}: the formulas differ from its build at class defaults"


@pytest.mark.parametrize("model_type", ["mixtral", "qwen3_moe", "olmoe"])
def test_a_config_without_its_expert_count_is_not_sized_dense(model_type):
    """The class builds experts by default; a config.json leaving the count out must not read as a
    dense model on the formulas' own path (where transformers completes it, the count is there)."""
    assert recorded_facts(model_type).moe
    config = {
        "model_type": model_type,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 128,
    }
    with pytest.raises(ConfigError, match="builds experts"):
        from_hf_config(config)
