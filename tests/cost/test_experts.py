"""attn_core.cost.experts: the expert layout and which layers hold experts.

Oracle: transformers' configuration classes (their defaults) and their modelling code's rule for
which decoder layers are sparse, written out here per family; configs by hand for the refusals."""

from __future__ import annotations

import pytest
import transformers

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.experts import MoE, read_moe


def moe_layers(moe: MoE, n_layers: int) -> list[int]:
    return [i for i in range(n_layers) if i in moe.moe_layers]


def test_mixtral_routes_two_of_eight_experts_of_its_own_width_in_every_layer():
    config = transformers.MixtralConfig().to_dict()
    moe = read_moe(config, "mixtral")
    assert (moe.n_experts, moe.top_k, moe.expert_d_ff) == (8, 2, config["intermediate_size"])
    assert moe.n_shared == 0 and not moe.router_bias
    assert moe_layers(moe, config["num_hidden_layers"]) == list(range(config["num_hidden_layers"]))


def test_deepseek_v3_dense_first_layers_then_experts_with_a_shared_one():
    c = transformers.DeepseekV3Config()
    moe = read_moe(c.to_dict(), "deepseek_v3")
    assert (moe.n_experts, moe.top_k) == (c.n_routed_experts, c.num_experts_per_tok)
    assert (moe.expert_d_ff, moe.n_shared, moe.shared_d_ff) == (
        c.moe_intermediate_size,
        c.n_shared_experts,
        c.moe_intermediate_size,
    )
    # modeling_deepseek_v3: a layer is sparse iff i >= first_k_dense_replace (moe_layer_freq 1)
    expected = [i for i in range(c.num_hidden_layers) if i >= c.first_k_dense_replace]
    assert moe_layers(moe, c.num_hidden_layers) == expected


def test_qwen2_moe_sparse_step_and_mlp_only_layers():
    config = {
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "decoder_sparse_step": 2,
        "mlp_only_layers": [3],
    }
    moe = read_moe(config, "qwen2_moe")
    # modeling_qwen2_moe: sparse iff i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    assert moe_layers(moe, 8) == [i for i in range(8) if i not in (3,) and (i + 1) % 2 == 0] == [1, 5, 7]
    assert (moe.n_shared, moe.shared_d_ff, moe.shared_gate) == (1, 5632, True)


def test_jamba_expert_period_and_offset():
    c = transformers.JambaConfig()
    moe = read_moe(c.to_dict(), "jamba")
    period, offset = c.expert_layer_period, c.expert_layer_offset
    assert moe_layers(moe, c.num_hidden_layers) == [
        i for i in range(c.num_hidden_layers) if i % period == offset
    ]


def test_dense_models_have_no_experts():
    assert read_moe({"hidden_size": 64}, "llama") is None
    assert read_moe({"num_local_experts": 1}, "mixtral") is None  # one expert is a dense MLP


def test_unknown_layouts_and_impossible_top_k_are_refused_by_name():
    with pytest.raises(ConfigError, match="my_moe"):
        read_moe({"num_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 64}, "my_moe")
    with pytest.raises(ConfigError, match="top-k = 9"):
        read_moe({"num_local_experts": 8, "num_experts_per_tok": 9, "intermediate_size": 64}, "mixtral")
    with pytest.raises(ConfigError, match="moe_latent_size"):
        read_moe({"num_experts": 8, "num_experts_per_tok": 2, "moe_latent_size": 4}, "nemotron_h")
