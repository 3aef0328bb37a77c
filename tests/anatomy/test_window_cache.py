"""A sliding layer's cache: the formulas (cost/serving.py) hold what transformers' dynamic cache
holds, W − 1 tokens once T ≥ W − 1 (`DynamicSlidingWindowLayer` keeps the last W − 1 keys: the
query's own key makes W), and a chunked layer C − 1 (the same cache layer, its window C). Oracle: transformers' build (`attn_core.anatomy.derive`, whose cache is
checked against a real forward in test_anatomy.py) and a hand count from the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from attn_core.anatomy.derive import derive
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.serving import kv_cache_bytes

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


@pytest.mark.parametrize("name", ["gpt-oss-120b", "gemma-3-27b", "llama-4-scout"])
@pytest.mark.parametrize("T", [10_000, 8_192, 1_024, 128, 127, 5])
def test_formulas_and_build_agree_to_the_byte_past_the_window(name, T):
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    assert derive(config).cache_bytes(T) == kv_cache_bytes(from_hf_config(config), T)


def test_gpt_oss_120b_hand_count_at_8192():
    """18 full + 18 sliding layers (W = 128), 8 KV heads of 64, bf16: 2·8·64·2 = 2,048 B per
    token per layer; full layers hold 8,192 tokens, sliding ones W − 1 = 127."""
    shape = from_hf_config(json.loads((CONFIGS / "gpt-oss-120b.json").read_text()))
    per = 2 * 8 * 64 * 2
    assert kv_cache_bytes(shape, 8_192) == 18 * per * 8_192 + 18 * per * 127
