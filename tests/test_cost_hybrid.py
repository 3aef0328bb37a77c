"""Hybrid models: Gated DeltaNet, KDA, Mamba and Mamba-2 layers beside a few attention layers.

Oracles, none of them our formulas: parameter counts of the transformers model classes built on
the meta device; the conv and recurrent states and the KV cache that transformers' own cache
classes allocate when a tiny model of each family runs a prompt on the CPU (summed tensor by
tensor, per layer); hand derivations from each config's numbers; and a seeded simulation of
uniform top-k routing for the expected number of experts a batch touches.
"""

from __future__ import annotations

import pytest
import torch

from attn_core.cost import from_hf_config, kv_cache_bytes, load_preset, model_params
from attn_core.cost.serving import state_bytes
from attn_core.cost.shapes import load_preset_config

transformers = pytest.importorskip("transformers", reason="the meta-device oracle needs transformers")

# Tiny configs of each family, with every size different so a swapped key shows.
TINY = {
    "qwen3_next": dict(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, linear_conv_kernel_dim=3, linear_key_head_dim=8,
        linear_value_head_dim=6, linear_num_key_heads=2, linear_num_value_heads=4, moe_intermediate_size=16,
        shared_expert_intermediate_size=24, num_experts=6, num_experts_per_tok=2, full_attention_interval=2,
        mlp_only_layers=[2],
    ),
    "kimi_linear": dict(
        vocab_size=64, hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=8, q_lora_rank=None, qk_rope_head_dim=4,
        qk_nope_head_dim=6, v_head_dim=5, num_experts=6, num_experts_per_token=2, num_shared_experts=1,
        first_k_dense_replace=1, n_group=1, topk_group=1, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        linear_attn_config={"num_heads": 2, "head_dim": 8, "short_conv_kernel_size": 3,
                            "full_attn_layers": [2, 4], "kda_layers": [1, 3]},
    ),
    "jamba": dict(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
        expert_layer_offset=0, num_experts=4, num_experts_per_tok=2, mamba_d_state=5, mamba_d_conv=3,
        mamba_expand=2, mamba_dt_rank="auto",
    ),
    "nemotron_h": dict(
        vocab_size=64, hidden_size=32, intermediate_size=48, hybrid_override_pattern="M-*EM",
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, ssm_state_size=5, mamba_num_heads=4,
        mamba_head_dim=6, n_groups=2, conv_kernel=3, n_routed_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, moe_shared_expert_intermediate_size=24, chunk_size=4,
    ),
}  # fmt: skip
HYBRID_PRESETS = ["qwen3-next-80b-a3b", "kimi-linear-48b-a3b", "jamba-1.5-mini", "nemotron-h-8b"]


def hf_model(model_type: str, config: dict, device: str = "meta"):
    conf = transformers.AutoConfig.for_model(model_type, **config)
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(conf), conf


def ours(model_type: str, config: dict):
    return from_hf_config({"model_type": model_type, **config})


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_tiny_params_equal_the_hugging_face_model(model_type):
    """Every weight of every family, exactly: Σ numel over the real module tree."""
    model, _ = hf_model(model_type, TINY[model_type])
    assert model_params(ours(model_type, TINY[model_type])).total == sum(
        p.numel() for p in model.parameters()
    )


@pytest.mark.parametrize("name", HYBRID_PRESETS)
def test_preset_params_equal_the_hugging_face_model(name):
    """The brief asks for 0.5%; the count is exact (Kimi Linear's router score-correction bias is
    a buffer in transformers, not a parameter, and is not counted)."""
    config = load_preset_config(name)
    model, _ = hf_model(config.pop("model_type"), config)
    n = sum(p.numel() for p in model.parameters())
    assert model_params(load_preset(name)).total == n


def cache_tensors(model_type: str, B: int = 3, T: int = 7):
    """Run the tiny model in bf16 on the CPU with transformers' own cache; per layer, the bytes of
    its attention cache and of its conv and recurrent states."""
    torch.manual_seed(0)
    model, conf = hf_model(model_type, TINY[model_type], device="cpu")
    model = model.to(torch.bfloat16)
    cache = transformers.DynamicCache(config=conf)
    with torch.no_grad():
        model(torch.randint(0, 64, (B, T)), past_key_values=cache, use_cache=True)
    kv, conv, rec = 0, 0, 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            kv += t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0
        for t in (getattr(layer, "conv_states", None) or {}).values():
            conv += 0 if t is None else t.numel() * t.element_size()
        for t in (getattr(layer, "recurrent_states", None) or {}).values():
            rec += 0 if t is None else t.numel() * t.element_size()
    return kv, conv, rec


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_cache_and_state_to_the_byte_as_transformers_allocates(model_type):
    """transformers keeps conv states at the model dtype (bf16 here) and recurrent states in fp32:
    our state at conv 2 B, recurrent 4 B per number equals its tensors, and the cache its keys and values."""
    B, T = 3, 7
    kv, conv, rec = cache_tensors(model_type, B, T)
    s = ours(model_type, TINY[model_type])
    assert kv_cache_bytes(s, T, B, 2) == kv
    assert state_bytes(s, B, 2, 4) == conv + rec
    assert state_bytes(s, B, 2, 0) == conv  # the conv part alone, to the byte
