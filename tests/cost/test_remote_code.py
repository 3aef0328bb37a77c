"""A remote-code config (a model_type transformers does not ship, with ``auto_map`` into the
model's own files) that declares a transformers architecture is sized as that architecture's
type, and the output says so: Kimi K2 ships model_type ``kimi_k2`` with DeepSeek-V3's classes.
Oracle: the same config under the declared type (``deepseek_v3``), sized the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.model_types import declared_type
from attn_core.cost.params import model_params

DSV3 = Path(__file__).parents[1] / "data" / "configs" / "deepseek-v3.json"
AUTO_MAP = {  # as Kimi K2's config.json names its remote code
    "AutoConfig": "configuration_deepseek.DeepseekV3Config",
    "AutoModel": "modeling_deepseek.DeepseekV3Model",
    "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
}


def _kimi_like() -> dict:
    """DeepSeek-V3's released config renamed as Kimi K2 ships it (model_type kimi_k2, auto_map),
    with K2's wider expert pool: a fixture for the rule, not an oracle of K2's counts."""
    c = json.loads(DSV3.read_text())
    return c | {
        "model_type": "kimi_k2",
        "auto_map": AUTO_MAP,
        "n_routed_experts": 384,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "first_k_dense_replace": 1,
    }


def test_declared_architecture_names_the_type():
    config, note = declared_type(_kimi_like())
    assert config["model_type"] == "deepseek_v3"
    assert "kimi_k2" in note and "DeepseekV3ForCausalLM" in note


def test_kimi_like_sized_as_deepseek_v3():
    kimi = _kimi_like()
    shape = from_hf_config(kimi)
    same = from_hf_config(kimi | {"model_type": "deepseek_v3"})
    assert model_params(shape).total == model_params(same).total
    assert model_params(shape).active == model_params(same).active
    assert "deepseek_v3" in shape.source and "kimi_k2" in shape.source


def test_a_type_transformers_ships_is_left_alone():
    c = json.loads(DSV3.read_text())
    assert declared_type(c) == (c, None)


def test_unknown_remote_code_stays_refused():
    c = _kimi_like() | {
        "architectures": ["MyOwnForCausalLM"],
        "auto_map": {"AutoModelForCausalLM": "m.MyOwnForCausalLM"},
    }
    with pytest.raises(ConfigError):
        from_hf_config(c)
