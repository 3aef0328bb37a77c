"""Next-token-prediction (MTP) layers a config declares are named and sized (DeepSeek-V3's layout:
a 2d × d map, three norms, one decoder layer like the last). Oracle: a hand count from DeepSeek-V3's
config, and its maker's 685B on the Hub = 671B main model + 14B MTP module (whose checkpoint also
carries its own copies of the embedding table and output head)."""

from __future__ import annotations

import json
from pathlib import Path

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
