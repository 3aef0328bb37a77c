"""Cross-attention layers (the config's ``cross_attention_layers``, Llama 3.2 Vision) attend to the
image's keys and values: they keep nothing that grows with T. Oracle: transformers' build
(`attn_core.anatomy.derive`) and a hand count from the config."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from attn_core.anatomy.build import completed_config
from attn_core.anatomy.derive import derive
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.serving import kv_cache_bytes, kv_cache_bytes_per_token

SMALL = {
    "model_type": "mllama",
    "text_config": {
        "model_type": "mllama_text_model", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 6,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "cross_attention_layers": [1, 4],
    },
    "vision_config": {"model_type": "mllama_vision_model", "hidden_size": 32, "num_hidden_layers": 1,
                      "num_global_layers": 1, "intermediate_size": 64, "attention_heads": 2, "image_size": 56,
                      "patch_size": 14, "vision_output_dim": 64},
}  # fmt: skip


def test_cross_attention_layers_keep_no_growing_cache():
    """6 layers, 2 of them cross-attention: 4 self-attention layers × 2·H_kv·d_h·b = 2·2·16·2."""
    shape = from_hf_config(SMALL)
    assert kv_cache_bytes_per_token(shape) == 4 * 2 * 2 * 16 * 2
    assert kv_cache_bytes(shape, 100) == 100 * 4 * 2 * 2 * 16 * 2


def test_mllama_class_defaults_agree_with_the_build():
    """MllamaTextConfig's defaults: 40 layers, 8 of them cross-attention; the rest 2·8·128·2 B."""
    config = {"model_type": "mllama"}
    shape = from_hf_config(completed_config(config))
    assert kv_cache_bytes_per_token(shape) == derive(config).cache_bytes_per_token == 32 * 2 * 8 * 128 * 2
