"""attn_core.cost.ledger: the ledger by layer kind, the all-attention twin, memory against T.

Oracle: transformers' own Qwen3-Next (a hybrid of Gated DeltaNet and full-attention layers, with
experts), built tiny here: its parameters counted layer by layer on the meta device, and the cache
it actually fills on a 5-token forward pass (keys and values per token; the fixed conv and
recurrent state per sequence), at 2 bytes a number."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import torch
import transformers
from conftest import hf_model

from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.ledger import attention_twin, layer_ledger, memory_sweep_T

SIZES = dict(
    num_hidden_layers=4,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=128,
    vocab_size=100,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    linear_conv_kernel_dim=4,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=32,
    full_attention_interval=2,
    decoder_sparse_step=1,
)
KIND = {"linear_attention": "gdn", "full_attention": "full"}
B = 2  # bytes per cached number


@cache
def reference() -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Per ledger kind: parameters, cached numbers per token, state numbers per sequence."""
    config = transformers.Qwen3NextConfig(**SIZES)
    params: dict[str, int] = {}
    meta = hf_model(config, base=True)
    for kind, layer in zip(config.layer_types, meta.layers, strict=True):
        params[KIND[kind]] = params.get(KIND[kind], 0) + sum(p.numel() for p in layer.parameters())
    torch.manual_seed(0)
    model = transformers.Qwen3NextForCausalLM(config).eval()
    tokens = 5
    with torch.no_grad():
        kv = model(torch.arange(1, tokens + 1)[None], use_cache=True).past_key_values
    per_token = {"full": 0, "gdn": 0}
    state = {"full": 0, "gdn": 0}
    for i, kind in enumerate(config.layer_types):
        if kind == "full_attention":
            layer = kv.layers[i]
            per_token["full"] += (layer.keys.numel() + layer.values.numel()) // tokens
        else:
            state["gdn"] += kv.get_conv_state(i).numel() + kv.get_recurrent_state(i).numel()
    return params, per_token, state


def shape():
    return from_hf_config({"model_type": "qwen3_next", **SIZES}, name="tiny Qwen3-Next")


def test_each_kind_has_the_parameters_transformers_builds():
    params, _, _ = reference()
    rows = {r.kind: r for r in layer_ledger(shape(), 16)}
    assert set(rows) == {"full", "gdn"}
    assert {k: r.params for k, r in rows.items()} == params
    assert {k: r.layers for k, r in rows.items()} == {"full": 2, "gdn": 2}
    assert {k: r.moe_layers for k, r in rows.items()} == {"full": 2, "gdn": 2}  # sparse step 1
    assert rows["gdn"].label == "Gated DeltaNet"


def test_the_cache_and_state_are_what_transformers_keeps():
    _, per_token, state = reference()
    rows = {r.kind: r for r in layer_ledger(shape(), 16, kv_bytes_per_value=B)}
    assert rows["full"].cache_bytes_per_token == B * per_token["full"]  # 2 · 2 · H_kv · d_h · b
    assert rows["gdn"].cache_bytes_per_token == 0  # a state, not a cache
    assert rows["gdn"].state_bytes_per_sequence == B * state["gdn"]
    assert rows["full"].state_bytes_per_sequence == 0


def test_the_twin_swaps_every_state_layer_for_full_attention():
    hybrid = shape()
    twin = attention_twin(hybrid)
    rows = layer_ledger(twin, 16)
    assert [(r.kind, r.layers) for r in rows] == [("full", 4)]
    assert rows[0].state_bytes_per_sequence == 0
    full = {r.kind: r for r in layer_ledger(hybrid, 16)}["full"]
    assert rows[0].params == 2 * full.params  # the same attention + experts, four layers of it
    assert attention_twin(twin) is twin  # nothing left to swap


def test_memory_grows_with_T_by_the_cache_alone():
    _, per_token, state = reference()
    T = np.array([1, 1024, 4096])
    batch = 3
    sweep = memory_sweep_T(shape(), T, weight_bytes=10**6, batch=batch, kv_bytes_per_value=B)
    np.testing.assert_array_equal(sweep.kv_cache_bytes, batch * B * per_token["full"] * T)
    assert sweep.state_bytes == batch * B * state["gdn"]
    np.testing.assert_array_equal(sweep.total, 10**6 + sweep.kv_cache_bytes + sweep.state_bytes)
    with pytest.raises(ValueError):
        memory_sweep_T(shape(), [0, 5], weight_bytes=0)  # T ≥ 1
