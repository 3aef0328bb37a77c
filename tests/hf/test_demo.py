"""attn_core.hf.demo: the seeded tiny Mistral-style model of the Hugging Face pages.

Oracles: the parameter count of its configuration worked out here by hand (embeddings, per layer
Q, K, V, O with 2 of 4 heads' width for K and V, a SwiGLU MLP, two RMSNorms; final norm; an untied
head), transformers' own config read back from the model, and torch's global generator, which a
build must leave where it was."""

from __future__ import annotations

import torch

from attn_core.hf.capture import CAPTURE
from attn_core.hf.demo import build_demo

V, D, FF, LAYERS, H, HKV = 100, 64, 128, 2, 4, 2


def test_the_parameter_count_is_the_configs_worked_out_by_hand():
    loaded = build_demo(256, "demo")
    d_h = D // H
    per_layer = D * D + 2 * D * HKV * d_h + D * D + 3 * D * FF + 2 * D
    assert loaded.n_params == V * D + LAYERS * per_layer + D + V * D == 86_848
    c = loaded.model.config
    # the lab's capture function, which runs the model's own eager attention
    assert (c.num_key_value_heads, c.sliding_window, c._attn_implementation) == (HKV, 8, CAPTURE)
    assert not loaded.model.training


def test_the_same_seed_gives_the_same_weights_at_any_context_and_leaves_the_global_rng():
    before = torch.random.get_rng_state()
    a, b = build_demo(256, "a").model, build_demo(4096, "b").model
    assert torch.equal(torch.random.get_rng_state(), before)
    assert b.config.max_position_embeddings == 4096
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name
    assert float(a.model.layers[0].self_attn.q_proj.weight.std()) > 0.2  # N(0, 0.3²): maps not flat
