"""attn_core.cost.mla: multi-head latent attention read from a config.

Oracle: transformers' DeepseekV3Config defaults and the DeepSeek-V2/V3 papers' cache per token and
layer, d_c + d_h^R = 512 + 64 = 576 numbers (DeepSeek-V2, section 2.1.3)."""

from __future__ import annotations

import pytest
import transformers

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.mla import read_mla


def test_deepseek_v3_caches_576_numbers_per_token_and_layer():
    config = transformers.DeepseekV3Config().to_dict()
    mla = read_mla(config)
    assert mla is not None
    assert mla.cache_width == 576
    assert mla.qk_head_dim == config["qk_nope_head_dim"] + config["qk_rope_head_dim"] == 192
    assert (mla.v_head_dim, mla.q_lora_rank) == (config["v_head_dim"], config["q_lora_rank"])


def test_no_latent_rank_is_no_mla_and_queries_may_skip_their_own_rank():
    assert read_mla({"hidden_size": 64}) is None
    assert read_mla({"kv_lora_rank": None}) is None
    lite = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
    assert read_mla(lite).q_lora_rank is None  # DeepSeek-V2-Lite projects queries straight from d


def test_a_missing_width_is_refused_by_its_key():
    with pytest.raises(ConfigError, match="qk_rope_head_dim"):
        read_mla({"kv_lora_rank": 512, "qk_nope_head_dim": 128, "v_head_dim": 128})
