"""Next-token-prediction (MTP) layers a config declares are named and sized (DeepSeek-V3's layout:
a 2d × d map, three norms, one decoder layer like the last). Oracle: a hand count from DeepSeek-V3's
config, and its maker's 685B on the Hub = 671B main model + 14B MTP module (whose checkpoint also
carries its own copies of the embedding table and output head)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.params import attention_params, mtp_layer_params

DSV3 = Path(__file__).parents[1] / "data" / "configs" / "deepseek-v3.json"


def test_deepseek_v3_mtp_layer_by_hand():
    c = json.loads(DSV3.read_text())
    shape = from_hf_config(c)
    d, E, f = c["hidden_size"], c["n_routed_experts"], c["moe_intermediate_size"]
    moe = (
        E * 3 * d * f + c["n_shared_experts"] * 3 * d * f + d * E + E
    )  # experts, shared, router (+ its bias)
    hand = 2 * d * d + 5 * d + attention_params(shape).total + moe
    assert mtp_layer_params(shape) == hand
    with_tables = hand + 2 * c["vocab_size"] * d  # the checkpoint's own embedding and head copies
    assert round(with_tables / 1e9) in (13, 14)  # DeepSeek: "14B", 685B − 671B


ROOT = Path(__file__).parents[2]
QWEN3_MOE = ROOT / "tests" / "data" / "configs" / "qwen3-30b-a3b.json"


# Each maker's key for its MTP layers (hand count: the layers the keys declare). The keys are read
# whatever the model_type: every case adds them to the same Qwen3-MoE config.
MTP_DECLARATIONS = [
    ({"num_nextn_predict_layers": 1}, 1),  # DeepSeek-V3, GLM-4.5 (glm4_moe), MiMo
    ({"mtp_num_hidden_layers": 2}, 2),  # Qwen3-Next, Qwen3.5
    ({"num_mtp_layers": 1}, 1),  # transformers' own attribute name (the others map onto it)
    ({"num_mtp_modules": 3, "mtp_transformer_layers": 1}, 3),  # MiniMax-M2: 3 modules of 1 layer
    ({"num_mtp_modules": 2, "mtp_transformer_layers": 2}, 4),
    ({"num_mtp_modules": 3}, 3),  # one layer a module where the config does not say
]


@pytest.mark.parametrize("keys, layers", MTP_DECLARATIONS)
def test_mtp_layers_read_from_every_makers_key(keys, layers):
    c = json.loads(QWEN3_MOE.read_text()) | keys
    assert from_hf_config(c).nextn_layers_left_out == layers
    nested = {"model_type": "x_vl", "text_config": c}  # a multimodal config's text model
    assert from_hf_config(nested).nextn_layers_left_out == layers


def test_mtp_key_that_is_not_a_count_is_refused():
    c = json.loads(QWEN3_MOE.read_text()) | {"mtp_num_hidden_layers": "one"}
    with pytest.raises(ConfigError, match="mtp_num_hidden_layers"):
        from_hf_config(c)


@pytest.mark.parametrize("keys, layers", MTP_DECLARATIONS[1:4])
def test_cost_cli_names_and_sizes_mtp_layers_in_text_and_json(tmp_path, keys, layers):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads(QWEN3_MOE.read_text()) | keys))
    argv = ["-m", "attn_core", "cost", "--config", str(path), "--seq-len", "64", "--analytic-only"]
    env = {"PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, *argv, "--json"], capture_output=True, text=True, env=env, check=True
    )
    j = json.loads(out.stdout)
    shape = from_hf_config(json.loads(path.read_text()))
    assert j["nextn_layers_left_out"] == layers
    assert j["mtp_params_per_layer"] == mtp_layer_params(shape)
    assert j["mtp_in_params"] is False  # the formulas' total is the main model's
    text = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, check=True).stdout
    assert f"next-token prediction (MTP): {layers} layer(s)" in text
    assert f"{mtp_layer_params(shape):,} parameters each" in text


def test_the_cost_page_notes_size_the_mtp_layers():
    """The Cost page's architecture notes name the MTP layers with one's size (the hand count
    above for DeepSeek-V3) and why the totals leave them out."""
    from attn_core.views.costs_whole import architecture_notes

    shape = from_hf_config(json.loads(DSV3.read_text()))
    note = next(n for n in architecture_notes(shape) if "next-token-prediction" in n)
    assert f"{mtp_layer_params(shape):,} parameters each" in note and "beside the model" in note
