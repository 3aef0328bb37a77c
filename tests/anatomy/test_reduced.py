"""The cache read where the meta forward cannot run (attn_core/anatomy/reduced.py, cache.py).

Oracles, none of them the code under test: the meta forward of the whole model (for the claim that
a layer's cache does not depend on the layer count, vocabulary or expert count); the tensors a tiny
model's own cache holds after a real forward of the whole model on the CPU, read attribute by
attribute; the Mamba-2 state counted by hand from the config (heads × head_dim × d_state in
float32, the convolution's d_conv − 1 … d_conv columns over expand·d + 2·G·N channels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="the model-derived path needs transformers")

from transformers import AutoConfig, AutoModelForCausalLM

from attn_core.anatomy.build import build_on_meta, text_config
from attn_core.anatomy.cache import layer_caches
from attn_core.anatomy.derive import derive
from attn_core.anatomy.parts import decoder_layers, param_parts
from attn_core.anatomy.reduced import reduced_copy_configs, reduced_layer_caches

# Both paths run on these; each cut is exercised: a hybrid with routed experts (4 of 8 layers,
# the vocabulary, 10 of 32 experts), a 5:1 sliding pattern (6 of 26 layers), an MLA + MoE stack.
BOTH_WORK = {
    "qwen3_next": {
        "model_type": "qwen3_next",
        "num_hidden_layers": 8,
        "hidden_size": 256,
        "num_experts": 32,
        "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 64,
    },
    "gemma3_text": {"model_type": "gemma3_text"},
    "deepseek_v3 (small)": {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 6,
        "first_k_dense_replace": 2,
        "hidden_size": 512,
        "moe_intermediate_size": 64,
        "intermediate_size": 256,
    },
}


@pytest.mark.parametrize("name", list(BOTH_WORK))
def test_the_reduced_copy_equals_the_meta_forward_to_the_byte(name):
    cfg = text_config(BOTH_WORK[name])
    model = build_on_meta(cfg)
    parts = param_parts(model, cfg)
    small, what, standing = next(reduced_copy_configs(cfg, model, parts.experts))
    path, stack = decoder_layers(model)
    assert len(set(standing)) < len(stack) and small.vocab_size < cfg.vocab_size, what  # it was cut
    read = reduced_layer_caches(cfg, model, parts.experts)
    assert read.caches == layer_caches(model, len(stack))
    assert any(c.per_token or c.fixed for c in read.caches)


def _tiny(model_type: str, **over) -> dict:
    return {
        "model_type": model_type,
        "vocab_size": 512,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 96,
        "num_hidden_layers": 3,
    } | over


def _real_cache(config: dict, T: int) -> list[int]:
    """Bytes per layer of the whole tiny model's own cache after a real CPU forward of T tokens."""
    cfg = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(input_ids=torch.arange(T)[None] + 3, use_cache=True).past_key_values
    cache = getattr(cache, "self_attention_cache", cache)
    return [
        sum(t.numel() * t.element_size() for t in (layer.keys, layer.values) if t is not None)
        for layer in cache.layers
    ]


# The meta forward fails on each (`.item()`, a copy to the host); the copy cuts vocabulary and experts.
META_FAILS = {
    "biogpt": _tiny("biogpt"),
    "jetmoe": _tiny("jetmoe", num_local_experts=4, num_experts_per_tok=2, kv_channels=16),
}


@pytest.mark.parametrize("name", list(META_FAILS))
def test_where_meta_fails_the_reduced_copy_matches_the_whole_model_s_real_cache(name):
    config = META_FAILS[name]
    anatomy = derive(config)
    assert anatomy.cache_unread is None and anatomy.cache_read_by.startswith("a reduced copy"), anatomy
    assert "vocabulary 256" in anatomy.cache_read_by
    T = 7
    assert anatomy.cache_bytes(T) == sum(_real_cache(config, T)) > 0


def test_an_encoder_keeps_no_cache_and_says_so():
    config = _tiny("bert", num_key_value_heads=4)
    anatomy = derive(config)
    assert anatomy.cache_unread is None and "no cache" in anatomy.cache_absent
    assert anatomy.cache_bytes(100) == 0
    cfg = AutoConfig.for_model("bert", **{k: v for k, v in config.items() if k != "model_type"})
    with torch.no_grad():  # transformers' own forward returns none
        out = AutoModelForCausalLM.from_config(cfg).eval()(
            input_ids=torch.arange(4)[None] + 3, use_cache=True
        )
    assert getattr(out, "past_key_values", None) is None


def test_a_hybrid_with_no_attention_layer_reports_its_fixed_state():
    # bamba at class defaults has no attention layer: the mask builder's length question fails
    heads, head_dim, N, G, d_conv, d = 4, 16, 8, 1, 4, 64
    config = _tiny(
        "bamba",
        mamba_n_heads=heads,
        mamba_d_head=head_dim,
        mamba_d_state=N,
        mamba_n_groups=G,
        mamba_d_conv=d_conv,
        mamba_expand=1,
        attn_layer_indices=[],
    )
    anatomy = derive(config)
    assert anatomy.cache_unread is None and anatomy.cache_bytes_per_token == 0
    ssm = heads * head_dim * N * 4  # float32
    conv = (d + 2 * G * N) * d_conv * 2  # bf16; transformers keeps d_conv columns
    assert anatomy.fixed_state_bytes == 3 * (ssm + conv)


# -- one layer of each kind: the forwards of the build check -------------------------------------
# Presets whose layers are of several kinds: a 5:1 sliding pattern, a 3:1 Gated DeltaNet hybrid
# with experts, alternating sliding and full layers with experts, a Mamba/attention/MoE hybrid
# (its cache read on a reduced copy on the CPU where meta cannot run), MLA with dense first layers.
# And a real config whose class keeps per-layer settings (Gemma 4's per_layer_config: its full
# layers' 512-wide heads), which the cut must carry for the layers it keeps.
PREFIX_PRESETS = ["gemma-3-27b", "qwen3-next-80b-a3b", "gpt-oss-120b", "jamba-1.5-mini", "deepseek-v3",
                  "tests/data/configs/gemma-4-26b-a4b.json"]  # fmt: skip


def _config(name: str) -> dict:
    """A preset's config, or a real config by its path from the repository root."""
    from attn_core.cost.config_reader import load_preset_config

    if name.endswith(".json"):
        return json.loads((Path(__file__).parents[2] / name).read_text())
    return load_preset_config(name)


@pytest.mark.parametrize("name", PREFIX_PRESETS)
def test_one_layer_of_each_kind_gives_the_whole_builds_figures(name):
    """The forwards of the prefix holding one layer of each kind, each layer's figures those of
    the prefix layer standing for it, give the whole model's meta forwards' anatomy: parameters,
    every layer group's cache to the byte, FLOPs per layer and part (oracle: `_derive` over every
    layer of the whole build)."""
    from attn_core.anatomy.derive import _derive
    from attn_core.anatomy.reduced import meta_prefix

    config = _config(name)
    cfg = text_config(config)
    model = build_on_meta(cfg)
    prefix = meta_prefix(cfg, model)
    assert prefix is not None  # the prefix is shorter: the fast path is the one under test
    _, standing = prefix
    assert max(standing) + 1 < len(decoder_layers(model)[1])
    fast, whole = _derive(config, one_of_each=True).to_json(), _derive(config, one_of_each=False).to_json()
    assert fast == whole
    assert fast["cache_bytes_per_token"] > 0 and fast["flops"] is not None


def test_a_layer_count_sized_map_outside_the_layers_keeps_the_whole_forward():
    """A cut that changes what lies outside the layers (a map sized by the layer count) is not a
    prefix of the same model: `meta_prefix` declines it (oracle: the parameter shapes of the two
    builds outside their stacks)."""
    from attn_core.anatomy.reduced import _outside_shapes, meta_prefix

    config = {
        "model_type": "llama",
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 64,
        "vocab_size": 128,
    }
    cfg = text_config(config)
    model = build_on_meta(cfg)
    assert meta_prefix(cfg, model) is not None  # 1 of 4 alike layers
    model.model.register_buffer("per_layer", torch.zeros(4, 3, device="meta"))  # sized by L
    path = decoder_layers(model)[0]
    assert ("model.per_layer", (4, 3)) in _outside_shapes(model, path)
    assert meta_prefix(cfg, model) is None
