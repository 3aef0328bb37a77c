"""attn_core.verify.plan's sizing of the built layers: their weights, the weights one token
runs through, the cache they hold, and a model cut to some of its layers.

Oracles: transformers' own Mixtral built on the meta device (parameters of its decoder layers,
and of the two experts of each layer a token is routed to), the KV cache worked out here as
2 · L · H_kv · d_h · b per token and sequence, and the state of a Qwen3-Next layer as the shapes
transformers' cache keeps (conv window at b bytes, recurrent state in fp32)."""

from __future__ import annotations

import transformers
from conftest import hf_model

from attn_core.cost.config_reader import from_hf_config
from attn_core.verify.plan import active_layer_params, cache_bytes, cut_shape, layer_params

MIXTRAL = dict(
    num_hidden_layers=3,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=48,
    num_local_experts=4,
    num_experts_per_tok=2,
    vocab_size=100,
)


def mixtral():
    return from_hf_config({"model_type": "mixtral", **MIXTRAL}, name="tiny mixtral")


def test_layer_weights_are_transformers_decoder_layers():
    layers = hf_model({"model_type": "mixtral", **MIXTRAL}, base=True).layers
    total = sum(p.numel() for p in layers.parameters())
    assert layer_params(mixtral()) == total
    one_expert = 3 * 64 * 48  # gate, up and down of one SwiGLU expert
    unused = 3 * (4 - 2) * one_expert  # per layer, the experts a token is not routed to
    assert active_layer_params(mixtral()) == total - unused


def test_the_cache_is_kv_for_attention_and_a_fixed_state_for_linear_layers():
    assert cache_bytes(mixtral(), 100, 3, 2) == 2 * 3 * 2 * 16 * 2 * 100 * 3
    sizes = dict(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=96,
        vocab_size=100,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=16,
        linear_conv_kernel_dim=4,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        full_attention_interval=2,
    )
    hybrid = from_hf_config({"model_type": "qwen3_next", **sizes}, name="tiny next")
    conv = (2 * 2 * 8 + 4 * 16) * 4  # channels (q, k and v) × the kernel's window, at b bytes
    recurrent = 4 * 8 * 16  # H_v × d_k × d_v, in fp32
    per_sequence = conv * 2 + recurrent * 4
    kv = 2 * 1 * 2 * 16 * 2  # the one full-attention layer, per token
    assert cache_bytes(hybrid, 10, 2, 2) == 2 * (per_sequence + kv * 10)


def test_a_cut_keeps_the_picked_layers_kinds_and_experts():
    sliding = from_hf_config(
        {
            "model_type": "gemma3_text",
            **transformers.Gemma3TextConfig(
                num_hidden_layers=12,
                hidden_size=64,
                num_attention_heads=4,
                num_key_value_heads=1,
                head_dim=16,
                intermediate_size=96,
                vocab_size=100,
                sliding_window=8,
            ).to_dict(),
        },
        name="g",
    )
    cut = cut_shape(sliding, [0, 5], None)  # layer 5 is the first full-attention one (5 sliding, 1 full)
    assert cut.n_layers == 2 and [cut.layer_kinds[i] for i in range(2)] == ["sliding", "full"]
    small = cut_shape(mixtral(), 2, 3)
    assert small.n_layers == 2 and small.moe.n_experts == 3 and small.n_moe_layers == 2
    config = {"model_type": "mixtral", **MIXTRAL, "num_hidden_layers": 2, "num_local_experts": 3}
    layers = hf_model(config, base=True).layers
    assert layer_params(small) == sum(p.numel() for p in layers.parameters())  # routers of 3 experts too


def test_the_largest_fitting_layer_set_by_bisection_equals_a_linear_scan():
    """Oracle: a scan of every set, largest first; the bisection asks about log2(n) sets."""
    from attn_core.verify.plan import _largest_fitting

    sets = [tuple(range(n)) for n in range(32, 0, -1)]
    for cap in range(0, 34):
        asked = []

        def fits(picked, cap=cap, asked=asked):
            asked.append(picked)
            return len(picked) <= cap

        expected = next((p for p in sets if len(p) <= cap), None)
        assert _largest_fitting(sets, fits) == expected
        assert len(asked) <= 7  # 1 + ceil(log2(32))
